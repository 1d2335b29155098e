"""The Span/Doc extension attributes of spacy_rhetoric, and the helpers that
read and write them by field name.

One store, spaCy's own. Every per-sentence value is a ``Span`` extension
registered with ``default=None``, so spaCy keeps it in
``doc.user_data[("._.", name, start_char, end_char)]``: it is there for every
new ``Span`` over the same characters (``doc.sents`` makes new ones), and it
survives ``DocBin(store_user_data=True)``, ``Doc.to_bytes``, ``Doc.copy``,
``Span.as_doc(copy_user_data=True)`` and ``Doc.from_docs`` (which shifts the
offsets). Doc-level values (``doc._.rhetoric_doc_id``, ``citance_links``...)
are ``Doc`` extensions with ``default=None`` (key ``("._.", name, None,
None)``; ``Doc.from_docs`` drops those, ``long_docs`` carries them). The
attributes can be written directly (``sent._.rhetoric_label = "method"``) or
in bulk through ``set_span_values``, which checks the value types.

Stored forms (msgpack-safe): str labels, sections, headings, sids; int
paragraph; ``{label: float}`` scores; a float32 ``numpy`` array vector; a list
of str gold labels. Two attributes have a getter, because it adds something:
``sent._.phrase_match`` stores token offsets relative to the sentence (so
they need no shifting) and gives back the ``Span``; ``sent._.rhetoric_gold_labels``
gives back a list (msgpack reads tuples back). ``sent._.rhetoric_similarity``
is a method.

Components are configured with field names (``label_field = "fine_label"``):
``SPAN_EXTENSIONS`` / ``DOC_EXTENSIONS`` map the attributes to them; another
field name gets the attribute ``rhetoric_<field>`` when first used.

Span groups (``doc.spans["rhetoric"]``, ``doc.spans["sections"]``) are views
for displaCy and span-group tools (``render`` among them): the component
that writes the values builds its group from the same values in the same
call; scorers, training, ``long_docs`` and the record builders read the
extension values.

Docs saved before this layout (one mapping in
``doc.user_data["spacy_rhetoric"]``, keyed by token offsets) are converted by
``upgrade_legacy_store``, which ``docbin_docs`` (how this package reads
every ``.spacy`` file) calls.
"""
import functools
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy
from spacy.tokens import Doc, DocBin, Span
from spacy.vocab import Vocab

from .errors import RhetoricError

# Field names (component configs, readers) of the per-sentence values.
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
GOLD_LABELS = "gold_labels"  # every acceptable gold label of a sentence (MuLMS-AZ), list of str
# Field names of the doc-level values.
CITANCE_LINKS = "citance_links"
DOC_ID = "doc_id"  # source id (paper id, abstract index), str
TITLE = "title"  # paper title (paper readers), str
SOURCE = "source"  # the corpus a doc comes from (readers of labelled corpora: "mulms-az", "coresc-art"), str
CHUNKS = "chunks"  # section chunks (rhetoric_section_encoder): list of dicts

SCORE_FIELDS = (SCORES, FINE_SCORES)
STR_FIELDS = (LABEL, FINE_LABEL, SECTION, HEADING, PHRASE_LABEL, SID)

# doc.spans key of the coarse classifier's sentence spans ("rhetoric_fine" for the fine one)
SPANS_KEY = "rhetoric"

# extension attribute -> field
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
_SPAN_ATTR = {field: name for name, field in SPAN_EXTENSIONS.items()}
_DOC_ATTR = {field: name for name, field in DOC_EXTENSIONS.items()}
EXT_KEY = "._."  # first item of spaCy's user_data keys of extension values


def _key(name: str, span: Span) -> Tuple[str, str, int, int]:
    """spaCy's ``doc.user_data`` key of the value of ``span._.<name>``."""
    return (EXT_KEY, name, span.start_char, span.end_char)


# -- the two getters that add something ---------------------------------------


def _get_phrase_match(span: Span) -> Optional[Span]:
    stored = span.doc.user_data.get(_key("phrase_match", span))
    if stored is None:
        return None
    start, end = stored
    return span.doc[span.start + int(start):span.start + int(end)]


def _set_phrase_match(span: Span, value: Any) -> None:
    """A Span of the same Doc, (start, end) token offsets into the Doc, or None."""
    key = _key("phrase_match", span)
    if value is None:
        span.doc.user_data.pop(key, None)
        return
    if isinstance(value, Span):
        if value.doc is not span.doc:
            raise ValueError("phrase_match: the match belongs to another Doc")
        value = (value.start, value.end)
    start, end = (int(v) for v in value)
    span.doc.user_data[key] = [start - span.start, end - span.start]


def _get_gold_labels(span: Span) -> Optional[List[str]]:
    stored = span.doc.user_data.get(_key("rhetoric_gold_labels", span))
    return None if stored is None else list(stored)


def _set_gold_labels(span: Span, value: Any) -> None:
    key = _key("rhetoric_gold_labels", span)
    if value is None:
        span.doc.user_data.pop(key, None)
    elif isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{GOLD_LABELS!r} values must be lists of str or None, got {value!r}")
    else:
        span.doc.user_data[key] = list(value)


_ACCESSORS = {"phrase_match": (_get_phrase_match, _set_phrase_match),
              "rhetoric_gold_labels": (_get_gold_labels, _set_gold_labels)}


def _attr(cls: Any, names: Dict[str, str], field: str) -> str:
    name = names.get(field)
    if name is None:
        name = f"rhetoric_{field}"
        if not cls.has_extension(name):
            cls.set_extension(name, default=None)
    return name


def span_attr(field: str) -> str:
    """The ``Span`` extension of a field (``"label"`` -> ``"rhetoric_label"``);
    a field of no listed attribute gets ``rhetoric_<field>``, registered now."""
    return _attr(Span, _SPAN_ATTR, field)


def doc_attr(field: str) -> str:
    """The ``Doc`` extension of a doc-level field (as ``span_attr``)."""
    return _attr(Doc, _DOC_ATTR, field)


def encode_value(field: str, value: Any) -> Any:
    """Check a value and give its stored (msgpack-safe) form."""
    if value is None:
        return None
    if field == VECTOR:
        return numpy.array(value, dtype="float32").ravel()
    if field in SCORE_FIELDS:
        return {str(k): float(v) for k, v in dict(value).items()}
    if field == PARAGRAPH:
        return int(value)
    if field in STR_FIELDS and not isinstance(value, str):
        raise TypeError(f"{field!r} values must be str or None, got {type(value).__name__}")
    return value


def get_span_value(span: Span, field: str) -> Any:
    """``span._.<attribute of field>`` (None when absent); vectors and scores
    as copies, so the caller may change them."""
    value = span._.get(span_attr(field))
    if value is None:
        return None
    if field == VECTOR:
        return numpy.array(value, dtype="float32")
    if field in SCORE_FIELDS:
        return dict(value)
    return value


def set_span_values(doc: Doc, field: str, spans: Sequence[Span], values: Sequence[Any]) -> None:
    """Set the attribute of ``field`` of each span to its value (None
    removes it), with the types checked."""
    spans = list(spans)
    values = list(values)
    if len(spans) != len(values):
        raise ValueError(
            f"set_span_values: {len(spans)} spans but {len(values)} values for field {field!r}"
        )
    name = span_attr(field)
    for span, value in zip(spans, values):
        if span.doc is not doc:
            raise ValueError("set_span_values: span belongs to another Doc")
        value = encode_value(field, value)
        if value is None:
            doc.user_data.pop(_key(name, span), None)
        else:
            span._.set(name, value)


def _stored_spans(doc: Doc, name: str) -> Iterable[Tuple[int, int, Any]]:
    """``(start_char, end_char, stored value)`` of every span value of
    attribute ``name`` in ``doc``."""
    for key, value in doc.user_data.items():
        if (isinstance(key, tuple) and len(key) == 4 and key[0] == EXT_KEY and key[1] == name
                and key[2] is not None and key[3] is not None):
            yield key[2], key[3], value


def clear_field(doc: Doc, field: str) -> None:
    """Remove every span value of ``field`` from ``doc``."""
    name = span_attr(field)
    for start, end, _ in list(_stored_spans(doc, name)):
        del doc.user_data[(EXT_KEY, name, start, end)]


def set_doc_value(doc: Doc, field: str, value: Any) -> None:
    doc._.set(doc_attr(field), value)


def get_doc_value(doc: Doc, field: str, default: Any = None) -> Any:
    value = doc._.get(doc_attr(field))
    return default if value is None else value


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
    return [get_span_value(s, field) for s in doc.sents]


def labelled_spans(doc: Doc, *, field: str = LABEL) -> List[Tuple[int, int, Any]]:
    """All ``(start, end, value)`` token spans that carry a value for
    ``field``, in document order, whether or not the doc has sentence
    boundaries (values as ``get_span_value`` gives them)."""
    out = []
    for start_char, end_char, _ in _stored_spans(doc, span_attr(field)):
        span = doc.char_span(start_char, end_char)
        if span is not None:
            out.append((span.start, span.end, get_span_value(span, field)))
    out.sort(key=lambda item: (item[0], item[1]))
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
        raise RhetoricError(
            f"similarity: {which!r} has no encoder vector (sent._.rhetoric_vector is None); "
            "only sentences of docs processed by rhetoric_sentence_encoder can be compared"
        )
    if a.shape != b.shape:
        raise RhetoricError(f"similarity: encoder vectors of different widths ({a.shape[0]} and {b.shape[0]})")
    norm = float(numpy.linalg.norm(a) * numpy.linalg.norm(b))
    return float(a @ b) / norm if norm else 0.0


sentence_similarity_hook = rhetoric_similarity  # doc.user_span_hooks["similarity"]


def install_vector_hooks(doc: Doc) -> Doc:
    """Make ``sent.vector`` / ``sent.similarity`` use the stored encoder
    vectors. Idempotent."""
    doc.user_span_hooks["vector"] = sentence_vector_hook
    doc.user_span_hooks["similarity"] = sentence_similarity_hook
    return doc


def has_vectors(doc: Doc) -> bool:
    return any(True for _ in _stored_spans(doc, _SPAN_ATTR[VECTOR]))


def restore_vector_hooks(docs: Union[Doc, Iterable[Doc]]) -> Union[Doc, List[Doc]]:
    """Reinstall the ``sent.vector`` / ``sent.similarity`` hooks on docs that
    carry encoder vectors (others are left alone). spaCy does not serialise
    hooks, so a Doc read back from ``DocBin`` or ``Doc.from_bytes``, or made
    by ``nlp.pipe(..., n_process>1)`` (whose docs spaCy sends back from the
    workers as bytes) needs this; ``sent._.rhetoric_vector`` and
    ``sent._.rhetoric_similarity(other)`` need nothing. Takes a Doc
    (returned) or an iterable of Docs (returned as a list)."""
    if isinstance(docs, Doc):
        if has_vectors(docs):
            install_vector_hooks(docs)
        return docs
    return [restore_vector_hooks(doc) for doc in docs]


def install_docbin_hook() -> None:
    """Make ``DocBin.get_docs`` give docs whose ``sent.vector`` /
    ``sent.similarity`` read the stored sentence vectors at once (spaCy keeps
    the vectors in ``user_data`` but not the hooks): each doc it yields goes
    through :func:`restore_vector_hooks`, which leaves docs without sentence
    vectors alone. Installed once, on import of the package (as spaCy's
    entry points import it with any pipeline of ours). ``Doc.from_bytes`` and
    the docs of ``nlp.pipe(n_process>1)`` still need
    :func:`restore_vector_hooks`."""
    original = DocBin.get_docs
    if getattr(original, "_restores_vector_hooks", False):
        return

    @functools.wraps(original)
    def get_docs(self, vocab):
        for doc in original(self, vocab):
            yield restore_vector_hooks(doc)

    get_docs._restores_vector_hooks = True  # type: ignore[attr-defined]
    DocBin.get_docs = get_docs


# --------------------------------------------------------------------------
# Registration, and docs of the earlier layout
# --------------------------------------------------------------------------


def install_extensions() -> None:
    """Register the extensions. Safe to call any number of times."""
    for name in SPAN_EXTENSIONS:
        getter, setter = _ACCESSORS.get(name, (None, None))
        wanted = (None, None, getter, setter)
        if not Span.has_extension(name) or Span.get_extension(name) != wanted:
            if getter is None:
                Span.set_extension(name, default=None, force=True)
            else:
                Span.set_extension(name, getter=getter, setter=setter, force=True)
    if not Span.has_extension("rhetoric_similarity"):
        Span.set_extension("rhetoric_similarity", method=rhetoric_similarity)
    for name in DOC_EXTENSIONS:
        if not Doc.has_extension(name) or Doc.get_extension(name) != (None, None, None, None):
            Doc.set_extension(name, default=None, force=True)


LEGACY_STORE_KEY = "spacy_rhetoric"  # doc.user_data key of the layout before extension values


def upgrade_legacy_store(doc: Doc) -> Doc:
    """Move the values of a Doc saved by an earlier version (one mapping in
    ``doc.user_data["spacy_rhetoric"]``: ``{field: {"<start>:<end>": value}}``
    keyed by token offsets, vectors as float32 bytes, phrase matches as Doc
    token offsets; doc-level values as they are) to the extension values.
    A Doc without that mapping is returned unchanged."""
    store = doc.user_data.pop(LEGACY_STORE_KEY, None)
    if not store:
        return doc
    for field, values in store.items():
        if field in _DOC_ATTR or not isinstance(values, dict):  # doc-level (e.g. a reader's "fold")
            set_doc_value(doc, field, values)
            continue
        spans, converted = [], []
        for key, value in (values or {}).items():
            start, end = (int(x) for x in key.split(":"))
            if field == VECTOR and isinstance(value, bytes):
                value = numpy.frombuffer(value, dtype="float32")
            spans.append(doc[start:end])
            converted.append(value)
        if field == PHRASE_MATCH:
            for span, value in zip(spans, converted):
                _set_phrase_match(span, value)
        else:
            set_span_values(doc, field, spans, converted)
    return doc


def docbin_docs(docbin: DocBin, vocab: Vocab) -> Iterator[Doc]:
    """``docbin.get_docs(vocab)``, with docs of the earlier layout upgraded
    (``upgrade_legacy_store``): how this package reads every ``.spacy`` file."""
    for doc in docbin.get_docs(vocab):
        yield upgrade_legacy_store(doc)
