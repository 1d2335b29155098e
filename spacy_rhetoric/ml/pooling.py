"""Sentence pooling shared by the sentence-level components.

A sentence-level model takes ``(docs, indices)``: ``indices`` is a Ragged
array of ``(start, end)`` token offsets with one row per sentence and one
length per doc (spancat's input format). At prediction time the offsets come
from ``doc.sents``; during ``update`` they come from the gold sentences of
the reference Doc, aligned to the predicted Doc, so training never depends
on a sentencizer having run on the predicted side.

``build_sentence_pooler`` maps that input to a Ragged array of sentence
vectors (one row per sentence, lengths = sentences per doc), so layers that
need a sentence's neighbours can still see the document structure.
"""
from typing import Callable, List, Optional, Sequence, Tuple

from spacy.ml.extract_spans import extract_spans
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry
from thinc.api import (
    Model,
    chain,
    concatenate,
    list2ragged,
    reduce_first,
    reduce_last,
    reduce_max,
    reduce_mean,
    with_getitem,
)
from thinc.types import Floats2d, Ragged

from ..extensions import LABEL, get_span_value

Offsets = List[Tuple[int, int]]

POOLINGS = {
    "mean": reduce_mean,
    "first": reduce_first,  # [CLS]-style: the first token's vector
    "last": reduce_last,
    "max": reduce_max,
}


def doc_sentence_offsets(doc: Doc) -> Offsets:
    """(start, end) token offsets of ``doc.sents``, with a clear error when the
    doc has no sentence boundaries."""
    if len(doc) and not doc.has_annotation("SENT_START"):
        raise ValueError(
            "The Doc has no sentence boundaries: add a 'sentencizer', 'senter' or "
            "'parser' before the spacy_rhetoric components, or set them in your reader."
        )
    return [(s.start, s.end) for s in doc.sents] if len(doc) else []


def example_sentences(
    example: Example, field: str = LABEL
) -> Tuple[Offsets, List[Optional[str]]]:
    """Gold sentences of an Example, as offsets into ``example.predicted``, and
    their gold values for ``field`` (None where a sentence has none).

    Reference sentences whose tokens do not align one-to-one with the predicted
    tokenization are mapped through ``Example.get_aligned_spans_y2x``.
    """
    ref = example.reference
    sents = list(ref.sents) if len(ref) else []
    if not sents:
        return [], []
    labels = [get_span_value(s, field) for s in sents]
    if example.predicted.text == ref.text and len(example.predicted) == len(ref):
        return [(s.start, s.end) for s in sents], labels
    offsets, out_labels = [], []
    for sent, label in zip(sents, labels):
        aligned = example.get_aligned_spans_y2x([sent], allow_overlap=True)
        if aligned:
            offsets.append((aligned[0].start, aligned[0].end))
            out_labels.append(label)
    return offsets, out_labels


def make_indices(ops, offsets_per_doc: Sequence[Offsets]) -> Ragged:
    """Ragged (start, end) indices, one row per sentence, one length per doc."""
    lengths = ops.asarray1i([len(o) for o in offsets_per_doc])
    flat = [pair for offsets in offsets_per_doc for pair in offsets]
    if flat:
        data = ops.asarray2i(flat)
    else:
        data = ops.alloc2i(0, 2)
    return Ragged(data, lengths)


def build_sentence_pooler(
    tok2vec: Model[List[Doc], List[Floats2d]], pooling: str = "mean"
) -> Model[Tuple[List[Doc], Ragged], Ragged]:
    """tok2vec over the docs, then one vector per sentence span.

    pooling: "mean", "first" ([CLS]-style first token), "last", "max", or
    several joined by "+" (e.g. "mean+first"), which concatenates them.
    """
    names = [p.strip() for p in pooling.split("+") if p.strip()]
    unknown = [n for n in names if n not in POOLINGS]
    if not names or unknown:
        raise ValueError(f"Unknown pooling {pooling!r}: use one or more of {sorted(POOLINGS)} joined by '+'")
    reducers = [POOLINGS[n]() for n in names]
    reducer = reducers[0] if len(reducers) == 1 else concatenate(*reducers)
    spans = chain(with_getitem(0, chain(tok2vec, list2ragged())), extract_spans())
    model = Model(
        "sentence_pooler",
        _pooler_forward,
        layers=[spans, reducer],
        init=_pooler_init,
        dims={"nO": None},
        attrs={"pooling": pooling, "n_reducers": len(reducers)},
    )
    model.set_ref("tok2vec", tok2vec)
    return model


def _pooler_init(model: Model, X=None, Y=None) -> None:
    spans, reducer = model.layers
    if X is not None:
        spans.initialize(X=X)
        reducer.initialize(X=spans.predict(X))
    else:
        spans.initialize()
        reducer.initialize()
    tok2vec = model.get_ref("tok2vec")
    if tok2vec.has_dim("nO") and tok2vec.get_dim("nO") is not None:
        model.set_dim("nO", tok2vec.get_dim("nO") * model.attrs["n_reducers"], force=True)


def _pooler_forward(
    model: Model, X: Tuple[List[Doc], Ragged], is_train: bool
) -> Tuple[Ragged, Callable]:
    spans, reducer = model.layers
    docs, indices = X
    token_spans, bp_spans = spans(X, is_train)
    vectors, bp_reduce = reducer(token_spans, is_train)
    if not model.has_dim("nO") or model.get_dim("nO") is None:
        model.set_dim("nO", vectors.shape[1], force=True)
    lengths = indices.lengths

    def backprop(dY: Ragged):
        return bp_spans(bp_reduce(dY.dataXd))

    return Ragged(vectors, lengths), backprop


@registry.architectures("spacy_rhetoric.SentencePooler.v1")
def sentence_pooler_v1(
    tok2vec: Model[List[Doc], List[Floats2d]], pooling: str = "mean"
) -> Model[Tuple[List[Doc], Ragged], Ragged]:
    """Registered form of ``build_sentence_pooler``."""
    return build_sentence_pooler(tok2vec, pooling)
