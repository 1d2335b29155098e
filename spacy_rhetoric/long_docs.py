"""Process a text too long to hold all of its intermediate arrays at once.

A pipeline with a transformer keeps, while it processes one Doc, arrays per
word piece and per token for the whole Doc (transformer output, the token
vectors each listener aligns, the parser's states): peak memory grows with
the length of the Doc.
``process_long_text`` bounds it: the text is cut into pieces of at most
``max_chars`` characters at paragraph breaks (blank lines), else line breaks,
else sentence ends (". "), else whitespace, never inside a word; the pieces go
through ``nlp.pipe`` one at a time (nothing but the finished pieces is kept),
and the processed pieces are joined into one Doc with ``Doc.from_docs``.

The joined Doc has exactly the input text, every token and sentence boundary
of the pieces, and every extension value of the pieces' sentences (labels,
scores, vectors, phrase matches, sections, sids: ``Doc.from_docs`` shifts
their character offsets itself); the doc-level values, which ``from_docs``
drops, are carried here: ``doc._.citance_links`` of all pieces with their
citance character offsets shifted, the other ones from the first piece that
has them. Span groups (``doc.spans["rhetoric"]``) are joined by ``from_docs``,
their ``attrs["scores"]`` here; the ``sent.vector`` / ``sent.similarity``
hooks of the sentence encoder are reinstalled. ``doc._.trf_data`` (the
transformer output of one piece) is dropped before joining; other user data
is joined by spaCy's ``from_docs`` (its warnings name what it cannot join). A
sentence never crosses a piece boundary, so a cut inside a paragraph (only
when a paragraph alone exceeds ``max_chars``) can split what the parser would
have kept as one sentence.

``process_long_doc`` does the same for a Doc a reader made (preset sentence
starts, headings, sids, citations): cut at sentence starts into pieces of at
most ``max_chars`` characters (a longer sentence is a piece of its own; the
readers cut sentences at 256 tokens, ``readers.fulltext.bound_sentences``), each
piece with its sentences' extension values and its slice of the span groups, run
one at a time and joined as above; ``annotate``, ``index`` and ``render`` run
a paper longer than :func:`long_threshold` characters through it
(:data:`LONG_DOC_CHARS`, or ``nlp.max_length`` where that is lower: a 1 MB
text in one piece took 3.4 GB through a tiny pipeline, in pieces 0.7 GB).

``make_doc`` is the readers' tokenizer for a text of any length: a text over
``nlp.max_length`` characters (where ``nlp.make_doc`` raises spaCy's E088) is
cut the same way and its pieces' tokens joined, so one long paper is read
like any other instead of stopping a batch.
"""
import copy
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
from spacy.language import Language
from spacy.tokens import Doc, Span

from . import extensions as ext
from .errors import RhetoricError

DEFAULT_MAX_CHARS = 50_000
LONG_DOC_CHARS = 100_000  # a paper longer than this is run in pieces (a long paper has 60-100k characters)
TRF_DATA_KEY = ("._.", "trf_data", None, None)
# cut after these, in order of preference (the separator stays with the left piece)
_BREAKS = [re.compile(r"\n[ \t]*\n\s*"), re.compile(r"\n\s*"), re.compile(r"(?<=[.!?])\s+"), re.compile(r"\s+")]


def split_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> List[str]:
    """Pieces of ``text`` (joined, they give ``text`` back) of at most
    ``max_chars`` characters each, cut at the best break available. A run of
    more than ``max_chars`` characters without whitespace is cut hard."""
    if max_chars < 1:
        raise RhetoricError(f"max_chars must be >= 1, got {max_chars}")
    pieces: List[str] = []
    start = 0
    n = len(text)
    while n - start > max_chars:
        window = text[start:start + max_chars]
        cut = None
        for pattern in _BREAKS:
            ends = [m.end() for m in pattern.finditer(window) if m.start() > 0]
            if ends:
                cut = ends[-1]
                break
        if cut is None:
            cut = max_chars
        pieces.append(text[start:start + cut])
        start += cut
    if start < n or not pieces:
        pieces.append(text[start:])
    return pieces


def make_doc(nlp: Language, text: str) -> Doc:
    """``nlp.make_doc(text)`` for a text of any length: over
    ``nlp.max_length`` characters, the pieces of :func:`split_text` are
    tokenized one by one and joined (``Doc.from_docs``; the same text)."""
    if len(text) <= nlp.max_length:
        return nlp.make_doc(text)
    return Doc.from_docs([nlp.make_doc(piece) for piece in split_text(text, nlp.max_length)],
                         ensure_whitespace=False)


def _pop_doc_values(doc: Doc) -> Dict[Tuple, Any]:
    """Take the doc-level extension values (``Doc.from_docs`` would drop
    them with warning W101) out of ``doc.user_data``."""
    keys = [k for k in doc.user_data if isinstance(k, tuple) and len(k) == 4 and k[0] == ext.EXT_KEY
            and k[2] is None and k[3] is None]
    return {k: doc.user_data.pop(k) for k in keys}


def join_docs(docs: Sequence[Doc]) -> Doc:
    """``Doc.from_docs`` (texts joined as they are) plus the doc-level
    values (see the module docstring); the pieces' ``doc._.trf_data`` is
    dropped."""
    saved = []
    for doc in docs:
        doc.user_data.pop(TRF_DATA_KEY, None)
        saved.append(_pop_doc_values(doc))
    try:
        joined = Doc.from_docs(list(docs), ensure_whitespace=False)
    finally:
        for doc, values in zip(docs, saved):
            doc.user_data.update(values)
    links_key = (ext.EXT_KEY, ext.doc_attr(ext.CITANCE_LINKS), None, None)
    links: List[Dict[str, Any]] = []
    char_offset = 0
    for doc, values in zip(docs, saved):
        for entry in values.get(links_key) or []:
            entry = dict(entry)
            for k in ("start_char", "end_char"):
                if entry.get(k) is not None:
                    entry[k] = int(entry[k]) + char_offset
            links.append(entry)
        for key, value in values.items():
            if key != links_key:
                joined.user_data.setdefault(key, copy.copy(value))
        char_offset += len(doc.text)
    if any(links_key in values for values in saved):
        joined.user_data[links_key] = links
    _join_span_scores(joined, docs)
    return ext.restore_vector_hooks(joined)


def _join_span_scores(joined: Doc, docs: Sequence[Doc]) -> None:
    """``Doc.from_docs`` joins the span groups but not their attrs: concatenate
    each group's ``attrs["scores"]`` (one score per span, as spancat and
    ``rhetoric_function_classifier`` write them)."""
    for key, group in joined.spans.items():
        parts = [doc.spans[key] for doc in docs if key in doc.spans and len(doc.spans[key])]
        scores = [part.attrs.get("scores") for part in parts]
        if parts and all(s is not None and len(s) == len(p) for s, p in zip(scores, parts)):
            group.attrs["scores"] = numpy.concatenate([numpy.asarray(s) for s in scores])


def _pieces(nlp: Language, texts: Sequence[Any], batch_size: int) -> Iterator[Doc]:
    for doc in nlp.pipe(texts, batch_size=batch_size):
        doc.user_data.pop(TRF_DATA_KEY, None)  # free the transformer output now
        yield doc


def slice_doc(doc: Doc, start: int, end: int) -> Doc:
    """``doc[start:end]`` as a Doc with its sentence starts, the extension
    values of its spans (offsets shifted), the doc-level values but the
    citance links (offsets into the whole Doc), and its share of the span
    groups."""
    span = doc[start:end]
    piece = span.as_doc()
    links_key = (ext.EXT_KEY, ext.doc_attr(ext.CITANCE_LINKS), None, None)
    for key, value in doc.user_data.items():
        if not (isinstance(key, tuple) and len(key) == 4 and key[0] == ext.EXT_KEY) or key == links_key:
            continue
        if key[2] is None and key[3] is None:
            piece.user_data[key] = copy.copy(value)
        elif key[2] is not None and key[3] is not None and span.start_char <= key[2] and key[3] <= span.end_char:
            piece.user_data[(key[0], key[1], key[2] - span.start_char, key[3] - span.start_char)] = copy.copy(value)
    for key, group in doc.spans.items():
        piece.spans[key] = [Span(piece, s.start - start, s.end - start, label=s.label,
                                 kb_id=s.kb_id) for s in group if start <= s.start and s.end <= end]
    return piece


def sentence_pieces(doc: Doc, max_chars: int) -> List[Tuple[int, int]]:
    """Token ranges of whole sentences, each at most ``max_chars``
    characters (a longer sentence alone)."""
    ranges: List[Tuple[int, int]] = []
    start = 0
    for sent in doc.sents:
        if sent.start > start and sent.end_char - doc[start].idx > max_chars:
            ranges.append((start, sent.start))
            start = sent.start
    if start < len(doc) or not ranges:
        ranges.append((start, len(doc)))
    return ranges


def long_threshold(nlp: Language) -> int:
    """Characters above which a paper is run in pieces: :data:`LONG_DOC_CHARS`,
    or ``nlp.max_length`` where that is lower."""
    return min(nlp.max_length, LONG_DOC_CHARS)


def is_long_doc(nlp: Language, doc: Doc) -> bool:
    """A paper :func:`process_long_doc` runs in pieces."""
    return len(doc.text) > long_threshold(nlp)


def process_long_doc(nlp: Language, doc: Doc, *, max_chars: int = DEFAULT_MAX_CHARS,
                     threshold: Optional[int] = None, disable: Sequence[str] = ()) -> Doc:
    """``nlp(doc)`` for a Doc with preset sentence starts; one longer than
    ``threshold`` characters (default :func:`long_threshold`) in pieces of whole
    sentences of at most ``max_chars`` characters (see the module
    docstring); ``disable``: components left out (the sentence splitters)."""
    ext.install_extensions()
    threshold = long_threshold(nlp) if threshold is None else threshold
    with nlp.select_pipes(disable=list(disable)):
        if len(doc.text) <= threshold or not doc.has_annotation("SENT_START"):
            return nlp(doc)
        pieces = [slice_doc(doc, a, b) for a, b in sentence_pieces(doc, max_chars)]
        return join_docs(list(_pieces(nlp, pieces, 1)))


def process_long_text(
    nlp: Language, text: str, *, max_chars: int = DEFAULT_MAX_CHARS, batch_size: int = 1,
    progress: bool = False,
) -> Doc:
    """Run ``nlp`` over ``text`` in pieces of at most ``max_chars`` characters
    and return one Doc (see the module docstring). ``batch_size`` pieces are
    processed together (1 = lowest memory)."""
    ext.install_extensions()
    pieces = split_text(text, max_chars)
    if len(pieces) == 1:
        return nlp(text)
    stream = _pieces(nlp, pieces, batch_size)
    if progress:
        from tqdm import tqdm

        stream = tqdm(stream, total=len(pieces), desc="pieces", unit="piece")
    docs = list(stream)
    return join_docs(docs)

