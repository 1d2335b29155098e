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
from typing import Any, Callable, List, Optional, Sequence, Tuple

from spacy.ml.extract_spans import extract_spans
from spacy.tokens import Doc, Span
from spacy.training import Example
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

from ..errors import RhetoricError
from ..extensions import LABEL, get_span_value

Offsets = List[Tuple[int, int]]

POOLINGS = {
    "mean": reduce_mean,
    "first": reduce_first,  # [CLS]-style: the first token's vector
    "last": reduce_last,
    "max": reduce_max,
}


def model_offsets(span: Span) -> Optional[Tuple[int, int]]:
    """The ``(start, end)`` token offsets a model sees for a sentence span:
    leading and trailing whitespace tokens (``"\\n\\n"`` after a paragraph) left
    out, so "A sentence." and "A sentence.\\n\\n" get the same prediction; None
    for a sentence of whitespace only."""
    start, end = span.start, span.end
    doc = span.doc
    while start < end and doc[start].is_space:
        start += 1
    while end > start and doc[end - 1].is_space:
        end -= 1
    return (start, end) if end > start else None


def doc_sentences(doc: Doc) -> Tuple[List[Span], Offsets]:
    """The sentences of ``doc.sents`` a sentence-level component labels (all but
    whitespace-only ones) and the offsets its model sees for them
    (``model_offsets``). Raises a clear error when the doc has no sentence
    boundaries."""
    if len(doc) and not doc.has_annotation("SENT_START"):
        raise RhetoricError(
            "The Doc has no sentence boundaries: add a 'sentencizer', 'senter' or "
            "'parser' before the spacy_rhetoric components, or set them in your reader."
        )
    sents, offsets = [], []
    for sent in doc.sents if len(doc) else []:
        offs = model_offsets(sent)
        if offs is not None:
            sents.append(sent)
            offsets.append(offs)
    return sents, offsets


def doc_sentence_offsets(doc: Doc) -> Offsets:
    """Model offsets of the sentences of ``doc`` (see ``doc_sentences``)."""
    return doc_sentences(doc)[1]


def gold_sentences(example: Example, field: str = LABEL) -> Tuple[List[Span], List[Optional[str]]]:
    """Gold sentences of an Example as spans of ``example.predicted`` (whole
    sentences, as the extension values key them), and their gold values for ``field``
    (None where a sentence has none). Whitespace-only sentences are left out.

    Reference sentences whose tokens do not align one-to-one with the predicted
    tokenization are mapped through ``Example.get_aligned_spans_y2x``.
    """
    spans, values = gold_sentence_values(example, (field,))
    return spans, [v[0] for v in values]


def gold_sentence_values(example: Example, fields: Sequence[str]) -> Tuple[List[Span], List[Tuple[Any, ...]]]:
    """``gold_sentences`` reading several fields in one alignment: the spans
    and, per sentence, the tuple of its values for ``fields``."""
    ref, pred = example.reference, example.predicted
    if not len(ref):
        ref_sents = []
    elif ref.has_annotation("SENT_START"):
        ref_sents = ref.sents
    else:
        # No boundaries at all (e.g. the dummy example of a bare
        # ``nlp.initialize()``): the whole doc is one sentence.
        ref_sents = [ref[:]]
    sents = [s for s in ref_sents if model_offsets(s) is not None]
    values = [tuple(get_span_value(s, f) for f in fields) for s in sents]
    if pred.text == ref.text and len(pred) == len(ref):
        return [pred[s.start : s.end] for s in sents], values
    spans, out_values = [], []
    for sent, value in zip(sents, values):
        aligned = example.get_aligned_spans_y2x([sent], allow_overlap=True)
        if aligned:
            spans.append(aligned[0])
            out_values.append(value)
    return spans, out_values


def example_sentences(
    example: Example, field: str = LABEL
) -> Tuple[Offsets, List[Optional[str]]]:
    """Gold sentences of an Example as model offsets into ``example.predicted``
    (``gold_sentences`` through ``model_offsets``) and their gold values for
    ``field``, so training sees sentences the way prediction does."""
    offsets, values = example_sentence_values(example, (field,))
    return offsets, [v[0] for v in values]


def example_sentence_values(example: Example, fields: Sequence[str]) -> Tuple[Offsets, List[Tuple[Any, ...]]]:
    """``example_sentences`` reading several fields in one alignment: the
    offsets and, per sentence, the tuple of its values for ``fields``."""
    spans, values = gold_sentence_values(example, fields)
    offsets, out_values = [], []
    for span, value in zip(spans, values):
        offs = model_offsets(span)
        if offs is not None:
            offsets.append(offs)
            out_values.append(value)
    return offsets, out_values


def make_indices(ops, offsets_per_doc: Sequence[Offsets]) -> Ragged:
    """Ragged (start, end) indices, one row per sentence, one length per doc."""
    lengths = ops.asarray1i([len(o) for o in offsets_per_doc])
    flat = [pair for offsets in offsets_per_doc for pair in offsets]
    if flat:
        data = ops.asarray2i(flat)
    else:
        data = ops.alloc2i(0, 2)
    return Ragged(data, lengths)


def ragged_to_array() -> Model[Ragged, Floats2d]:
    """Ragged sentence vectors (grouped per doc) -> their data rows, one flat
    Floats2d (the lengths are dropped; backprop restores them)."""
    return Model("ragged_to_array", _ragged_to_array_forward)


def _ragged_to_array_forward(model: Model, X: Ragged, is_train: bool) -> Tuple[Floats2d, Callable]:
    lengths = X.lengths

    def backprop(dY: Floats2d) -> Ragged:
        return Ragged(dY, lengths)

    return X.dataXd, backprop


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
        raise RhetoricError(f"Unknown pooling {pooling!r}: use one or more of {sorted(POOLINGS)} joined by '+'")
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
