"""Process a text too long to hold all of its intermediate arrays at once.

A pipeline with a transformer keeps, while it processes one Doc, arrays per
word piece and per token for the whole Doc (transformer output, the token
vectors each listener aligns, the parser's states): peak memory grows with
the length of the Doc (benchmarks/README.md, "Pipeline speed and memory").
``process_long_text`` bounds it: the text is cut into pieces of at most
``max_chars`` characters at paragraph breaks (blank lines), else line breaks,
else sentence ends (". "), else whitespace, never inside a word; the pieces go
through ``nlp.pipe`` one at a time (nothing but the finished pieces is kept),
and the processed pieces are joined into one Doc with ``Doc.from_docs``.

The joined Doc has exactly the input text, every token and sentence boundary
of the pieces, and the per-sentence store of ``spacy_rhetoric.extensions``
with its token offsets shifted (labels, scores, vectors, phrase matches,
sections, sids); ``doc._.citance_links`` entries get their citance character
offsets shifted; span groups (``doc.spans["rhetoric"]``) with their
``attrs["scores"]``; the ``sent.vector`` / ``sent.similarity`` hooks of the
sentence encoder. ``doc._.trf_data`` (the transformer output of one piece) is
dropped before joining; other user data is joined by spaCy's ``from_docs``
(its warnings name what it cannot join). A sentence never crosses a piece
boundary, so a cut inside a paragraph (only when a paragraph alone exceeds
``max_chars``) can split what the parser would have kept as one sentence.

``process_long_doc`` does the same for a Doc a reader made (preset sentence
starts, headings, sids, citations): cut at sentence starts into pieces of at
most ``max_chars`` characters (a longer sentence is a piece of its own), each
piece with its slice of the per-sentence store and of the span groups, run
one at a time and joined as above; ``annotate``, ``index`` and ``render`` run
a paper longer than ``nlp.max_length`` through it.

``make_doc`` is the readers' tokenizer for a text of any length: a text over
``nlp.max_length`` characters (where ``nlp.make_doc`` raises spaCy's E088) is
cut the same way and its pieces' tokens joined, so one long paper is read
like any other instead of stopping a batch.
"""
import re
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy
from spacy.language import Language
from spacy.tokens import Doc

from . import extensions as ext

DEFAULT_MAX_CHARS = 50_000
TRF_DATA_KEY = ("._.", "trf_data", None, None)
# cut after these, in order of preference (the separator stays with the left piece)
_BREAKS = [re.compile(r"\n[ \t]*\n\s*"), re.compile(r"\n\s*"), re.compile(r"(?<=[.!?])\s+"), re.compile(r"\s+")]


def split_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> List[str]:
    """Pieces of ``text`` (joined, they give ``text`` back) of at most
    ``max_chars`` characters each, cut at the best break available. A run of
    more than ``max_chars`` characters without whitespace is cut hard."""
    if max_chars < 1:
        raise ValueError(f"max_chars must be >= 1, got {max_chars}")
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


def _shift_key(key: str, offset: int) -> str:
    start, end = key.split(":")
    return f"{int(start) + offset}:{int(end) + offset}"


def merge_stores(docs: Sequence[Doc]) -> Dict[str, Any]:
    """The ``spacy_rhetoric`` user-data store of ``Doc.from_docs(docs,
    ensure_whitespace=False)``: per-sentence keys (token offsets) and phrase
    matches shifted by each doc's token offset, citance links by its
    character offset, other doc-level values from the first doc that has
    them."""
    merged: Dict[str, Any] = {}
    tok_offset = 0
    char_offset = 0
    for doc in docs:
        store = doc.user_data.get(ext.STORE_KEY, {})
        for field, values in store.items():
            if field == ext.CITANCE_LINKS:
                entries = merged.setdefault(field, [])
                for entry in values or []:
                    entry = dict(entry)
                    for k in ("start_char", "end_char"):
                        if entry.get(k) is not None:
                            entry[k] = int(entry[k]) + char_offset
                    entries.append(entry)
            elif isinstance(values, dict) and field not in (ext.DOC_ID,):
                target = merged.setdefault(field, {})
                for key, value in values.items():
                    if field == ext.PHRASE_MATCH and value is not None:
                        value = [int(value[0]) + tok_offset, int(value[1]) + tok_offset]
                    target[_shift_key(key, tok_offset)] = value
            elif field not in merged:
                merged[field] = values
        tok_offset += len(doc)
        char_offset += len(doc.text)
    return merged


def join_docs(docs: Sequence[Doc]) -> Doc:
    """``Doc.from_docs`` (texts joined as they are) plus the merged
    ``spacy_rhetoric`` store; the pieces' ``doc._.trf_data`` is dropped."""
    saved = []
    for doc in docs:
        doc.user_data.pop(TRF_DATA_KEY, None)
        saved.append(doc.user_data.pop(ext.STORE_KEY, None))
    try:
        joined = Doc.from_docs(list(docs), ensure_whitespace=False)
    finally:
        for doc, store in zip(docs, saved):
            if store is not None:
                doc.user_data[ext.STORE_KEY] = store
    store = merge_stores(docs)
    if store:
        joined.user_data[ext.STORE_KEY] = store
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
    """``doc[start:end]`` as a Doc with its sentence starts, its share of the
    ``spacy_rhetoric`` store (per-sentence values shifted; doc-level values
    kept) and of the span groups."""
    from spacy.tokens import Span

    piece = doc[start:end].as_doc()
    store: Dict[str, Any] = {}
    for field, values in doc.user_data.get(ext.STORE_KEY, {}).items():
        if field == ext.CITANCE_LINKS:
            continue  # char offsets into the whole Doc: not a reader's value
        if isinstance(values, dict) and field != ext.DOC_ID:
            kept = {}
            for key, value in values.items():
                s, e = (int(x) for x in key.split(":"))
                if start <= s and e <= end:
                    if field == ext.PHRASE_MATCH and value is not None:
                        value = [int(value[0]) - start, int(value[1]) - start]
                    kept[f"{s - start}:{e - start}"] = value
            store[field] = kept
        else:
            store[field] = values
    if store:
        piece.user_data[ext.STORE_KEY] = store
    for key, group in doc.spans.items():
        piece.spans[key] = [Span(piece, span.start - start, span.end - start, label=span.label,
                                 kb_id=span.kb_id) for span in group if start <= span.start and span.end <= end]
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


def process_long_doc(nlp: Language, doc: Doc, *, max_chars: int = DEFAULT_MAX_CHARS,
                     threshold: Optional[int] = None, disable: Sequence[str] = ()) -> Doc:
    """``nlp(doc)`` for a Doc with preset sentence starts; one longer than
    ``threshold`` characters (default ``nlp.max_length``) in pieces of whole
    sentences of at most ``max_chars`` characters (see the module
    docstring); ``disable``: components left out (the sentence splitters)."""
    ext.install_extensions()
    threshold = nlp.max_length if threshold is None else threshold
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

