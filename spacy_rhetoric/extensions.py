"""Doc-level storage of per-sentence outputs and the Span/Doc extensions
that expose them.

``doc.sents`` creates new ``Span`` objects on every access, so nothing may
be stored on a Span itself. Every per-sentence value lives in
``doc.user_data[STORE_KEY]``, a msgpack-safe mapping::

    {field: {"<start>:<end>": value}}

keyed by the sentence's token offsets. The extensions below are read-only
getters over that store, so the values survive ``DocBin(store_user_data=True)``
and ``Doc.to_bytes``/``nlp.to_disk`` round trips.
"""
import warnings
from itertools import chain
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy
from spacy.language import Language
from spacy.tokens import Doc, Span

STORE_KEY = "spacy_rhetoric"

# Field names inside the store.
LABEL = "label"  # coarse function (CSAbstruct-style), and the gold label of every reader
SCORES = "scores"
FINE_LABEL = "fine_label"  # fine communicative function (a second classifier's output)
FINE_SCORES = "fine_scores"
VECTOR = "vector"
SECTION = "section"  # section category (section tagger) or, from older readers, the raw heading
HEADING = "heading"  # raw heading text of the section a sentence is in (paper readers), str
PARAGRAPH = "paragraph"  # paragraph index within the paper (paper readers), int
PHRASE_LABEL = "phrase_label"
PHRASE_MATCH = "phrase_match"
SID = "sid"  # source sentence id (e.g. CL-SciSumm ``sid``), str
CITANCE_LINKS = "citance_links"  # doc-level, not per sentence
DOC_ID = "doc_id"  # doc-level source id (paper id, abstract index), str
TITLE = "title"  # doc-level paper title (paper readers), str
GOLD_LABELS = "gold_labels"  # every acceptable gold label of a sentence (MuLMS-AZ), list of str
CHUNKS = "chunks"  # doc-level section chunks (rhetoric_section_encoder): list of dicts

SCORE_FIELDS = (SCORES, FINE_SCORES)

# doc.spans key of the coarse classifier's sentence spans ("rhetoric_fine" for the fine one)
SPANS_KEY = "rhetoric"

SPAN_EXTENSIONS = {
    "rhetoric_label": LABEL,
    "rhetoric_scores": SCORES,
    "rhetoric_fine_label": FINE_LABEL,
    "rhetoric_fine_scores": FINE_SCORES,
    "rhetoric_vector": VECTOR,
    "rhetoric_section": SECTION,
    "phrase_label": PHRASE_LABEL,
    "phrase_match": PHRASE_MATCH,
    "rhetoric_sid": SID,
    "rhetoric_heading": HEADING,
    "rhetoric_paragraph": PARAGRAPH,
    "rhetoric_gold_labels": GOLD_LABELS,
}
DOC_EXTENSIONS = {"citance_links": CITANCE_LINKS, "rhetoric_doc_id": DOC_ID, "rhetoric_title": TITLE,
                  "rhetoric_chunks": CHUNKS}


def span_key(span: Span) -> str:
    return f"{span.start}:{span.end}"


def _field(doc: Doc, field: str) -> Dict[str, Any]:
    return doc.user_data.get(STORE_KEY, {}).get(field, {})


def encode_value(field: str, value: Any) -> Any:
    """Convert a Python value into its msgpack-safe stored form."""
    if value is None:
        return None
    if field == VECTOR:
        arr = numpy.asarray(value, dtype="float32").ravel()
        return arr.tobytes()
    if field == PHRASE_MATCH:
        if isinstance(value, Span):
            return [int(value.start), int(value.end)]
        start, end = value
        return [int(start), int(end)]
    if field in SCORE_FIELDS:
        return {str(k): float(v) for k, v in dict(value).items()}
    if field == PARAGRAPH:
        return int(value)
    if field == GOLD_LABELS:
        if isinstance(value, str) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"{field!r} values must be lists of str or None, got {value!r}")
        return list(value)
    if field in (LABEL, FINE_LABEL, SECTION, HEADING, PHRASE_LABEL, SID):
        if not isinstance(value, str):
            raise TypeError(f"{field!r} values must be str or None, got {type(value).__name__}")
        return value
    return value


def get_span_value(span: Span, field: str) -> Any:
    """Read one per-sentence value for ``span`` (None when absent)."""
    stored = _field(span.doc, field).get(span_key(span))
    if stored is None:
        return None
    if field == VECTOR:
        return numpy.frombuffer(stored, dtype="float32").copy()
    if field == PHRASE_MATCH:
        start, end = stored
        return span.doc[start:end]
    if field in SCORE_FIELDS:
        return dict(stored)
    if field == GOLD_LABELS:  # msgpack gives tuples back
        return list(stored)
    return stored


def set_span_values(doc: Doc, field: str, spans: Sequence[Span], values: Sequence[Any]) -> None:
    """Write ``values`` for ``spans`` into ``doc``'s store in one go.

    The field's mapping is replaced (copy-on-write), so documents made with
    ``Doc.copy`` never share a mutable store.
    """
    spans = list(spans)
    values = list(values)
    if len(spans) != len(values):
        raise ValueError(
            f"set_span_values: {len(spans)} spans but {len(values)} values for field {field!r}"
        )
    store = dict(doc.user_data.get(STORE_KEY, {}))
    data = dict(store.get(field, {}))
    for span, value in zip(spans, values):
        if span.doc is not doc:
            raise ValueError("set_span_values: span belongs to another Doc")
        key = span_key(span)
        if value is None:
            data.pop(key, None)
        else:
            data[key] = encode_value(field, value)
    store[field] = data
    doc.user_data[STORE_KEY] = store


def clear_field(doc: Doc, field: str) -> None:
    store = dict(doc.user_data.get(STORE_KEY, {}))
    store.pop(field, None)
    doc.user_data[STORE_KEY] = store


def set_doc_value(doc: Doc, field: str, value: Any) -> None:
    store = dict(doc.user_data.get(STORE_KEY, {}))
    store[field] = value
    doc.user_data[STORE_KEY] = store


def get_doc_value(doc: Doc, field: str, default: Any = None) -> Any:
    return doc.user_data.get(STORE_KEY, {}).get(field, default)


def set_sent_labels(doc: Doc, labels: Sequence[Optional[str]], *, field: str = LABEL) -> None:
    """Write gold labels, one per sentence in ``doc.sents`` order.

    This is how every reader stores gold labels, and where trainable
    components read them from (``sent._.rhetoric_label`` on the reference
    Doc of an Example). ``None`` leaves a sentence unlabelled.
    """
    sents = list(doc.sents)
    labels = list(labels)
    if len(sents) != len(labels):
        raise ValueError(
            f"set_sent_labels: the doc has {len(sents)} sentences but {len(labels)} labels were given"
        )
    set_span_values(doc, field, sents, labels)


def set_sent_sections(doc: Doc, sections: Sequence[Optional[str]]) -> None:
    """Write section names, one per sentence in ``doc.sents`` order."""
    set_sent_labels(doc, sections, field=SECTION)


def get_sent_labels(doc: Doc, *, field: str = LABEL) -> List[Optional[str]]:
    data = _field(doc, field)
    return [data.get(span_key(s)) for s in doc.sents]


def labelled_spans(doc: Doc, *, field: str = LABEL) -> List[Tuple[int, int, str]]:
    """All ``(start, end, label)`` token spans that carry a value for ``field``,
    in document order, whether or not the doc has sentence boundaries."""
    out = []
    for key, value in _field(doc, field).items():
        start, end = key.split(":")
        out.append((int(start), int(end), value))
    out.sort()
    return out


# --------------------------------------------------------------------------
# sent.vector / sent.similarity: the encoder's vectors through Doc hooks
# --------------------------------------------------------------------------


def _default_span_vector(span: Span) -> numpy.ndarray:
    """spaCy's own Span.vector (mean of token vectors), without the hooks."""
    if not len(span):
        return numpy.zeros((0,), dtype="float32")
    return numpy.asarray([t.vector for t in span], dtype="float32").mean(axis=0)


def sentence_vector_hook(span: Span) -> numpy.ndarray:
    """``doc.user_span_hooks["vector"]``: the encoder's vector for a sentence
    span; spans that are not encoded sentences fall back to spaCy's mean of
    token vectors."""
    vector = get_span_value(span, VECTOR)
    if vector is None:
        return _default_span_vector(span)
    return vector


def rhetoric_similarity(span: Span, other: Any) -> float:
    """Cosine of the encoder vectors of two sentences (``sent.similarity``
    with the hooks, ``sent._.rhetoric_similarity(other)`` always). Raises
    ValueError when either has no encoder vector, rather than comparing with
    another model's numbers."""
    a = get_span_value(span, VECTOR)
    b = get_span_value(other, VECTOR) if isinstance(other, Span) else None
    if a is None or b is None:
        which = span if a is None else other
        raise ValueError(
            f"similarity: {which!r} has no encoder vector (sent._.rhetoric_vector is None); "
            "only sentences of docs processed by rhetoric_sentence_encoder can be compared"
        )
    if a.shape != b.shape:
        raise ValueError(f"similarity: encoder vectors of different widths ({a.shape[0]} and {b.shape[0]})")
    norm = float(numpy.linalg.norm(a) * numpy.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


sentence_similarity_hook = rhetoric_similarity  # doc.user_span_hooks["similarity"]


def install_vector_hooks(doc: Doc) -> Doc:
    """Make ``sent.vector`` / ``sent.similarity`` use the stored encoder
    vectors. Idempotent."""
    doc.user_span_hooks["vector"] = sentence_vector_hook
    doc.user_span_hooks["similarity"] = sentence_similarity_hook
    return doc


def restore_vector_hooks(docs: Union[Doc, Iterable[Doc]]) -> Union[Doc, List[Doc]]:
    """Reinstall the ``sent.vector`` / ``sent.similarity`` hooks on docs that
    carry encoder vectors (others are left alone). spaCy does not serialise
    hooks, so a Doc read back from ``DocBin`` or ``Doc.from_bytes`` needs this
    (``nlp.pipe(..., n_process>1)`` and ``process_long_text`` call it
    themselves). Takes a Doc (returned) or an iterable of Docs (returned as a
    list)."""
    if isinstance(docs, Doc):
        if _field(docs, VECTOR):
            install_vector_hooks(docs)
        return docs
    return [restore_vector_hooks(doc) for doc in docs]


class RestoreHooksPipe:
    """``nlp.pipe`` of a pipeline with the encoder: ``Language.pipe`` plus
    ``restore_vector_hooks`` on every doc it yields. With ``n_process > 1``
    spaCy rebuilds each doc from bytes in the calling process
    (``Language._multiprocessing_pipe``) and hooks are not serialised, so
    ``sent.vector`` / ``sent.similarity`` would otherwise fall back to other
    numbers (``doc.tensor`` rows, or 0.0)."""

    def __init__(self, nlp: Language) -> None:
        self.nlp = nlp

    def __call__(self, texts, *args, **kwargs):
        items = type(self.nlp).pipe(self.nlp, texts, *args, **kwargs)
        with warnings.catch_warnings():
            # The worker processes (forked by the first next()) serialise the
            # docs and spaCy would warn that the hooks are lost (W109): they
            # are restored here, so the workers do not say so.
            warnings.filterwarnings("ignore", message=r"\[W109\]")
            first = next(items, None)
        if first is None:
            return
        for item in chain([first], items):
            restore_vector_hooks(item[0] if isinstance(item, tuple) else item)
            yield item


def restore_hooks_in_pipe(nlp: Language) -> Language:
    """Give ``nlp`` the ``pipe`` of ``RestoreHooksPipe`` (idempotent). The
    factory does it; a pipeline that gets the encoder with
    ``nlp.add_pipe(..., source=other)`` (no factory call) needs it in memory,
    ``spacy.load`` of the saved pipeline does it again."""
    if not isinstance(nlp.__dict__.get("pipe"), RestoreHooksPipe):
        nlp.pipe = RestoreHooksPipe(nlp)
    return nlp


def _make_getter(field: str):
    def getter(span: Span) -> Any:
        return get_span_value(span, field)

    getter.__name__ = f"get_{field}"
    return getter


def _make_setter(name: str):
    def setter(obj: Any, value: Any) -> None:
        raise AttributeError(
            f"._.{name} is read-only: components and readers write it through "
            f"spacy_rhetoric.extensions (e.g. set_sent_labels)"
        )

    return setter


def _make_doc_getter(field: str):
    def getter(doc: Doc) -> Any:
        return get_doc_value(doc, field)

    getter.__name__ = f"get_doc_{field}"
    return getter


def install_extensions() -> None:
    """Register the read-only extensions. Safe to call any number of times."""
    for name, field in SPAN_EXTENSIONS.items():
        if not Span.has_extension(name):
            Span.set_extension(name, getter=_make_getter(field), setter=_make_setter(name))
    if not Span.has_extension("rhetoric_similarity"):
        Span.set_extension("rhetoric_similarity", method=rhetoric_similarity)
    for name, field in DOC_EXTENSIONS.items():
        if not Doc.has_extension(name):
            Doc.set_extension(name, getter=_make_doc_getter(field), setter=_make_setter(name))
