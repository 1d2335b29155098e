"""One builder of per-sentence records: what a pipeline stored for each
sentence of a Doc (label, scores, fine label, section, heading, paragraph,
sid, phrase evidence, vector), read in one place.

``annotate`` writes these records as its JSONL; ``render`` shows them;
the search index stores them as its metadata rows and reads a corpus' gold
labels through them (``search.sources``).
"""
from typing import Any, Dict, List, Optional

from spacy.tokens import Doc, Span

from .. import extensions as ext

# One sentence's record, in this order (``vector`` only when asked for).
RECORD_FIELDS = ("paper_id", "index", "sid", "section", "heading", "paragraph", "text", "start_char",
                 "end_char", "label", "scores", "fine_label", "fine_scores", "phrase_label", "phrase_ngram")


def doc_sentences(doc: Doc) -> List[Span]:
    """The sentences of ``doc``; the whole Doc when it has no sentence
    boundaries."""
    return list(doc.sents) if doc.has_annotation("SENT_START") else [doc[:]]


def sentence_record(sent: Span, index: int, paper_id: Optional[str] = None, *,
                    vector: bool = False) -> Dict[str, Any]:
    """The record (``RECORD_FIELDS``) of the ``index``-th sentence of its Doc:
    char offsets into ``doc.text``, the stored values (None where a component
    is absent or gave nothing), the phrase labeler's evidence n-gram as text;
    with ``vector``, the sentence vector (a numpy array, or None)."""
    get = lambda field: ext.get_span_value(sent, field)  # noqa: E731
    match = get(ext.PHRASE_MATCH)
    record = {
        "paper_id": paper_id, "index": index, "sid": get(ext.SID), "section": get(ext.SECTION),
        "heading": get(ext.HEADING), "paragraph": get(ext.PARAGRAPH), "text": sent.text,
        "start_char": sent.start_char, "end_char": sent.end_char, "label": get(ext.LABEL),
        "scores": get(ext.SCORES), "fine_label": get(ext.FINE_LABEL), "fine_scores": get(ext.FINE_SCORES),
        "phrase_label": get(ext.PHRASE_LABEL), "phrase_ngram": match.text if match is not None else None,
    }
    if vector:
        record["vector"] = get(ext.VECTOR)
    return record


def doc_records(doc: Doc, *, vector: bool = False, skip_blank: bool = False) -> List[Dict[str, Any]]:
    """:func:`sentence_record` of every sentence of ``doc`` (``index``: its
    position among all of them; ``skip_blank``: whitespace-only sentences
    left out), with the Doc's paper id."""
    paper_id = ext.get_doc_value(doc, ext.DOC_ID)
    paper_id = None if paper_id is None else str(paper_id)
    return [sentence_record(sent, i, paper_id, vector=vector) for i, sent in enumerate(doc_sentences(doc))
            if not skip_blank or sent.text.strip()]
