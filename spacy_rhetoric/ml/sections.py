"""Section-aware sentence classification: the section category of a sentence
is an input of the classifier, and back matter is ``other`` by rule.

``spacy_rhetoric.SectionAwareSentenceClassifier.v3`` wraps the trunk of
``ContextSentenceClassifier.v1`` (pooled sentence vectors -> Maxout ->
the ``encoder`` block, context CNN/BiLSTM, over each doc's sentences -> +
position features) and
concatenates a one-hot vector of each sentence's section (``SECTION_FEATURES``)
to that representation before the (optional Maxout hidden layer and the)
sequence head (emissions + sparse n-grams -> CRF).

Where the section comes from (:func:`sentence_sections`): the extension values, as
``rhetoric_section_tagger`` writes it (``sent._.rhetoric_section``, one of
``section_headings.CATEGORIES``) -- so in a pipeline put the tagger before the
classifier (``spacy_rhetoric.apps.assemble`` does). The section of a sentence is
the value covering its first token; a sentence without one (PMC-Sents-FULL,
where the section text is lost, or a raw heading that is no category) is
``unknown``. A sentence in back matter is ``back matter``: its section is
not a body category and its heading, or a heading before it in the doc
(``sent._.rhetoric_heading``), is matched by a ``back_matter`` rule of
``assets/section_rules.json`` (acknowledgements, references, appendix,
funding...).

The rule: sentences whose section is in ``forced_sections`` (default
``["back matter"]``) get probability 1 for ``forced_label`` ("other") and no
gradient, so a thank-you note or a reference entry is never a guess. The
label names come from ``model.attrs["labels"]``, which
``rhetoric_function_classifier`` fills at ``initialize`` (and which is saved
with the model); without ``forced_label`` among them nothing is forced.
``use_sections = false`` gives the same network with all-zero section
features and no rule: the baseline of ``benchmarks/classifier/bench_sections.py``.
"""
from typing import Any, Callable, List, Optional, Sequence, Tuple

import numpy
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Dropout, Maxout, Model, chain, concatenate
from thinc.types import Floats2d, Ragged

from ..errors import RhetoricError
from ..section_headings import (  # noqa: F401 - BODY_SECTIONS, UNKNOWN... re-exported from here
    ACKNOWLEDGEMENT,
    BACK_MATTER,
    BODY_SECTIONS,
    OTHER,
    SENTENCE_SECTIONS,
    UNKNOWN,
    is_acknowledgement,
    is_back_matter_heading,
    sentence_sections,
    token_values,
)
from .assembly import CONTEXT_TRUNK, SECTION_ARGUMENTS, SEQUENCE_HEAD, architecture, sentence_model
from .classifier import N_POSITION_FEATURES, append_positions, build_context_trunk
from .segments import as_batch, sections_of, segments_of
from .sequence import crf_layer, emitters

# The one-hot feature order (never reorder: trained models depend on it).
SECTION_FEATURES = SENTENCE_SECTIONS
_FEATURE_INDEX = {name: i for i, name in enumerate(SECTION_FEATURES)}


def section_features(use_sections: bool = True, scale: float = 1.0,
                     acknowledgements: bool = False) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """(docs, sentence indices) -> one-hot rows over ``SECTION_FEATURES``
    times ``scale`` (all zeros with ``use_sections=False``); no parameters."""
    return Model("section_features", _features_forward, dims={"nO": len(SECTION_FEATURES)},
                 attrs={"use_sections": use_sections, "scale": float(scale), "acknowledgements": acknowledgements})


def _features_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool) -> Tuple[Floats2d, Callable]:
    n_rows = int(X[1].dataXd.shape[0])
    feats = numpy.zeros((n_rows, len(SECTION_FEATURES)), dtype="f")  # built on the host, copied once
    if model.attrs["use_sections"] and n_rows:
        for row, section in enumerate(sections_of(X, model.attrs.get("acknowledgements", False))):
            feats[row, _FEATURE_INDEX[section]] = model.attrs.get("scale", 1.0)
    feats = model.ops.asarray2f(feats)

    def backprop(dY: Floats2d):
        return ()  # nothing to pass back to the docs (concatenate adds it to the trunk's tuple)

    return feats, backprop


def force_sections(scorer: Model, forced_sections: Sequence[str], forced_label: str,
                   use_sections: bool = True, acknowledgements: bool = False) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """Run ``scorer`` (probabilities over the labels) and set the rows of
    sentences in ``forced_sections`` to probability 1 for ``forced_label``
    (index from ``attrs["labels"]``), with zero gradient."""
    unknown = [s for s in forced_sections if s not in _FEATURE_INDEX]
    if unknown:
        raise RhetoricError(f"forced_sections {unknown} are not section names: use some of {list(SECTION_FEATURES)}")
    return Model(
        "force_sections",
        _force_forward,
        layers=[scorer],
        init=_force_init,
        attrs={"labels": [], "forced_sections": list(forced_sections), "forced_label": forced_label,
               "use_sections": use_sections, "acknowledgements": acknowledgements},
        dims={"nO": None},
    )


def _force_init(model: Model, X=None, Y=None) -> None:
    model.layers[0].initialize(X=None if X is None else as_batch(X))


def forced_rows(model: Model, X: Tuple[List[Doc], Ragged]) -> Tuple[List[int], Optional[int]]:
    """Rows the rule decides, and the index of the forced label (None: no rule)."""
    labels = list(model.attrs.get("labels") or [])
    forced = set(model.attrs["forced_sections"])
    label = model.attrs["forced_label"]
    if not model.attrs["use_sections"] or not forced or label not in labels:
        return [], None
    rows = [i for i, section in enumerate(sections_of(X, model.attrs.get("acknowledgements", False)))
            if section in forced]
    return rows, labels.index(label)


def _force_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool) -> Tuple[Floats2d, Callable]:
    X = as_batch(X)  # the layers below share the sections of this batch (ml/segments.py)
    probs, bp_scorer = model.layers[0](X, is_train)
    rows, label = forced_rows(model, X)
    forced = model.ops.asarray1i(rows) if rows else None  # one copy of the row ids
    if forced is not None:
        probs = model.ops.xp.array(probs, copy=True)
        n_labels = len(model.attrs["labels"])
        probs[forced, :n_labels] = 0.0  # columns after the labels (a trunk's vectors) are kept
        probs[forced, label] = 1.0

    def backprop(dY: Floats2d):
        if forced is not None:
            dY = model.ops.xp.array(dY, copy=True)
            dY[forced, :] = 0.0
        return bp_scorer(dY)

    return probs, backprop


def with_segment_positions(pooler: Model, context: Model[Ragged, Ragged],
                           segments: str = "sections") -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """(docs, sentence indices) -> ``pooler`` -> ``context`` over each doc's
    sentences, with the position features (``classifier.position_features``:
    relative position, is-first, is-last) counted within each segment of
    ``ml.segments.segments_of`` instead of the doc: with "sections", the last
    sentence of a paper's abstract is last (as in an abstract-only training
    doc), not 4 sentences into a 200-sentence doc."""
    return Model("with_segment_positions", _segment_positions_forward, init=_segment_positions_init,
                 layers=[pooler, context], dims={"nO": None}, attrs={"segments": segments})


def _segment_positions_init(model: Model, X=None, Y=None) -> None:
    pooler, context = model.layers
    pooler.initialize(X=X)
    if X is None:
        context.initialize()
        return
    pooled = pooler.predict(X)
    context.initialize(X=pooled)
    model.set_dim("nO", context.predict(pooled).dataXd.shape[1] + N_POSITION_FEATURES, force=True)


def _segment_positions_forward(model: Model, X: Tuple[List[Doc], Ragged], is_train: bool):
    pooler, context = model.layers
    pooled, bp_pooler = pooler(X, is_train)
    Y, bp_context = context(pooled, is_train)
    lengths, _ = segments_of(X, model.attrs["segments"])
    out, to_Y = append_positions(model.ops, Y, lengths)

    def backprop(dOut: Floats2d):
        return bp_pooler(bp_context(to_Y(dOut)))

    return out, backprop


POSITIONS = ("docs", "sections")


def section_aware_layers(tok2vec: Model, *, hidden_size: int, use_sections: bool, section_scale: float,
                         acknowledgements: bool, positions: str = "docs", **trunk: Any) -> Tuple[Model, List[Model]]:
    """The pooler and the layers all versions share, up to the output:
    context trunk (``trunk``: the arguments of ``build_context_trunk``)
    concatenated with the section one-hot, Dropout, optional Maxout.
    ``positions``: "docs" counts the trunk's position features over
    the doc, "sections" within each run of same-section sentences
    (``with_segment_positions``)."""
    if positions not in POSITIONS:
        raise RhetoricError(f"Unknown positions {positions!r}: use one of {POSITIONS}")
    pooler, in_context = build_context_trunk(tok2vec, **trunk)
    # in_context is with_positions(project >> context) over whole docs
    trunk_model = chain(pooler, in_context) if positions == "docs" else with_segment_positions(pooler, in_context.layers[0])
    layers = [concatenate(trunk_model, section_features(use_sections, section_scale, acknowledgements)),
              Dropout(trunk["dropout"])]
    if hidden_size > 0:
        layers.append(Maxout(nO=hidden_size, nP=trunk["maxout_pieces"], dropout=trunk["dropout"], normalize=True))
    return pooler, layers


def _section_aware_model(scorer: Model, tok2vec: Model, pooler: Model, output_layer: Model,
                         forced_sections: Sequence[str], forced_label: str, use_sections: bool,
                         acknowledgements: bool) -> Model[Tuple[List[Doc], Ragged], Floats2d]:
    """``scorer`` with the back-matter rule, and the refs and attrs the
    rhetoric_function_classifier reads."""
    model = force_sections(scorer, forced_sections, forced_label, use_sections, acknowledgements)
    return sentence_model(model, tok2vec=tok2vec, pooler=pooler, output_layer=output_layer, context=True)


@registry.architectures("spacy_rhetoric.SectionAwareSentenceClassifier.v3")
@architecture(*CONTEXT_TRUNK, *SECTION_ARGUMENTS, *SEQUENCE_HEAD, "segments", "positions", "nO")
def build_section_aware_sentence_classifier_v3(tok2vec: Model, forced_sections: Sequence[str], forced_label: str,
                                               ngram_size: int, ngram_length: int, decode: str, head_scale: float,
                                               segments: str, nO: Optional[int], **layer_args: Any) -> Model:
    """Context classifier (as ``ContextSentenceClassifier.v1``) whose
    representation also holds a one-hot of the sentence's section, with the
    sequence head of ``SequenceSentenceClassifier.v1`` (Linear emissions plus
    the sentence's hashed 1..``ngram_size``-grams and position buckets ->
    SparseLinear, summed -> linear-chain CRF: ``ml.sequence.crf_layer``,
    marginals or the Viterbi path with ``decode = "viterbi"``); sentences in
    ``forced_sections`` get ``forced_label`` by rule (module docstring).

    ``segments = "sections"`` (default) chains the CRF over each run of
    same-section sentences and counts the position buckets within it, hashed
    with the section's name (a full paper's introduction is not read as the
    middle of an abstract); "docs" over whole docs. ``positions =
    "sections"`` (default) counts the trunk's position features within each
    section too (``with_segment_positions``), "docs" over the doc.
    ``ngram_size = 0`` leaves the sparse part out.

    hidden_size: a Maxout layer of this width after the concatenation (0:
    none, the section only shifts the logits). section_scale: the value of
    the one-hot entry; larger values let Adam move the section's logit
    shifts faster. acknowledgements: a thank-you or funding sentence outside
    the abstract ("We would like to thank...") is back matter wherever it
    stands. use_sections: false gives the same network without section
    information (all-zero features, no rule). Other arguments (tok2vec,
    encoder (block), pooling, width, maxout_pieces, dropout, nO):
    as ``ContextSentenceClassifier.v1`` (declared in ``assembly.ARGUMENTS``).
    """
    pooler, layers = section_aware_layers(tok2vec, **layer_args)
    crf = crf_layer(emitters(layers, ngram_size, ngram_length, segments), nO=nO, decode=decode,
                    head_scale=head_scale, segments=segments)
    return _section_aware_model(crf, tok2vec, pooler, crf, forced_sections, forced_label,
                                layer_args["use_sections"], layer_args["acknowledgements"])
