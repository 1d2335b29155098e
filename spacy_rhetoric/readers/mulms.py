"""MuLMS-AZ (Schrader et al. 2023): materials-science full papers whose
sentences carry expert argumentative zones, converted to JSON lines (one
paper per line; ``../shared/data/mulms-az/README``): ``doc_id``, ``title``,
``fold``, ``sentences`` = ``[{text, heading, structure, az, coarse}]`` in
reading order.

One Doc per paper, read as a paper reader reads a paper:

* the annotators' sentences, exactly as split, each a sentence of the Doc;
* text that is not body text is left out: ``Heading`` lines (they become the
  ``heading`` of the sentences under them), ``Metadata`` (authors, journal
  lines), ``Caption`` and ``Figure/Table`` text and ``References``;
* ``sent._.rhetoric_heading``: the heading above the sentence; abstract
  sentences (structure ``Abstract``, or under a letter-spaced
  ``A B S T R A C T``) get ``"Abstract"``, so the section tagger calls them
  ``abstract`` as it does for the other readers;
* back matter (``Acknowledgment``, ``Author Contribution``,
  ``Conflict_of_Interest``, ``Supporting Information``) is kept under a
  heading the packaged back-matter rules know (``BACK_MATTER_HEADINGS``)
  when its own heading is not one, so a section-aware classifier files it
  under ``other`` by rule; it carries no gold label;
* ``doc._.rhetoric_title`` the title, ``doc._.rhetoric_doc_id`` the paper id,
  and the doc-level field ``fold`` (``train1``..``train5``: the dataset's own
  document-disjoint folds).

Gold labels. ``coarse`` lists every coarse label of the sentence's zones
(11 % of zoned sentences have two or more). They are stored twice:
``sent._.rhetoric_gold_labels`` (field ``gold_labels``) holds the set a
prediction may be (:func:`acceptable_labels`: ``conclusion`` stands for
``result`` or ``other``, as CSAbstruct files conclusions), and the usual
``label`` field holds one of them (:func:`primary_label`: the first listed
zone; ``conclusion`` -> ``result``) for spaCy's scorer and single-label
tools. ``rhetoric_function_classifier`` trains on the set: the loss of a
sentence is ``-log`` of the probability of *any* of its acceptable labels
(``pipeline/function_classifier.py``), so a "background + result" sentence
is not pushed away from either. Sentences without a zone (a stray "a" of a
sub-figure, "10-13" of a citation) are in the Doc without a label.
The fine label (field ``fine_label``) is the sentence's first expert zone
(``az``: "Experiment", "Results", "Motivation"...; None without a zone or
in back matter), the class a sentence encoder learns from.
"""
import re
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .. import extensions
from ..extensions import FINE_LABEL, GOLD_LABELS, HEADING
from ..section_headings import ABSTRACT, is_back_matter_heading
from .common import ReaderError, ReadStats, doc_from_sentences, jsonl_docs, require

ABSTRACT_HEADING = "Abstract"
CONCLUSION = "conclusion"
COARSE = ("background", "objective", "method", "result", CONCLUSION)
# conclusion: CSAbstruct files conclusions under result (mostly) or other
ACCEPTED_FOR = {CONCLUSION: ("result", "other")}
FOLD = "fold"  # doc-level field
SOURCE_NAME = "mulms-az"  # doc._.rhetoric_source of every paper read here
LEFT_OUT = frozenset({"Heading", "Metadata", "Caption", "Figure/Table", "References"})
BACK_MATTER_HEADINGS = {
    "Acknowledgment": "Acknowledgments",
    "Author Contribution": "Author contributions",
    "Conflict_of_Interest": "Conflicts of interest",
    "Conflict of Interest": "Conflicts of interest",
    "Supporting Information": "Supplementary material",
}
_SPACED = re.compile(r"^(?:\S ){3,}\S$")  # "A B S T R A C T"


def acceptable_labels(coarse: Sequence[str]) -> List[str]:
    """The coarse labels a prediction may be for a sentence with these zones
    (order kept, no repeats): ``["background", "conclusion"]`` ->
    ``["background", "result", "other"]``."""
    out: List[str] = []
    for label in coarse:
        for accepted in ACCEPTED_FOR.get(label, (label,)):
            if accepted not in out:
                out.append(accepted)
    return out


def primary_label(coarse: Sequence[str]) -> Optional[str]:
    """One label for single-label use: the first listed zone's
    (``conclusion`` -> ``result``); None without zones."""
    return acceptable_labels(coarse[:1])[0] if coarse else None


def clean_heading(heading: Optional[str]) -> Optional[str]:
    """``"A B S T R A C T"`` -> ``"ABSTRACT"``; whitespace folded."""
    if heading is None:
        return None
    heading = " ".join(str(heading).split())
    if _SPACED.match(heading):
        heading = heading.replace(" ", "")
    return heading or None


def _sentence_rows(record: dict, path: Path, line: int) -> List[Tuple[str, Optional[str], List[str], Optional[str]]]:
    """(text, heading, coarse labels, first zone) of the body sentences of one record."""
    sentences = require(record, "sentences", path, line, list)
    title = clean_heading(record.get("title"))
    rows = []
    for j, sent in enumerate(sentences):
        if not isinstance(sent, dict) or not isinstance(sent.get("text"), str):
            raise ReaderError(path, line, f"sentence {j} is not an object with a text", field="sentences")
        structure = set(sent.get("structure") or ())
        text = " ".join(sent["text"].split())
        if not text or structure & LEFT_OUT:
            continue
        coarse = sent.get("coarse") or []
        if not all(isinstance(c, str) and c in COARSE for c in coarse):
            raise ReaderError(path, line, f"sentence {j}: unknown coarse label in {coarse!r}", field="coarse")
        heading = clean_heading(sent.get("heading"))
        back = [BACK_MATTER_HEADINGS[s] for s in sorted(structure) if s in BACK_MATTER_HEADINGS]
        if back:
            coarse = []
            if not (heading and is_back_matter_heading(heading)):
                heading = back[0]
        elif "Abstract" in structure or (heading and heading.lower() == ABSTRACT) or (
                heading is not None and heading == title and not _rows_have_body(rows)):
            heading = ABSTRACT_HEADING
        zones = [z for z in sent.get("az") or () if isinstance(z, str)] if coarse else []
        rows.append((text, heading, list(coarse), zones[0] if zones else None))
    return rows


def _rows_have_body(rows) -> bool:
    """True once a sentence under a heading other than the abstract was read."""
    return any(row[1] not in (None, ABSTRACT_HEADING) for row in rows)


def read_mulms(
    path: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
    folds: Optional[Sequence[str]] = None,
) -> Iterator[Doc]:
    """Yield one Doc per paper of a MuLMS-AZ ``.jsonl`` file (see the module
    docstring); ``folds``: only papers of these folds. A record without
    ``doc_id``/``sentences``, with a malformed sentence or an unknown coarse
    label is skipped and counted (``errors="skip"``) or raises a ReaderError
    naming file, line and field."""
    stats = stats if stats is not None else ReadStats(name=str(path))
    wanted = set(folds) if folds is not None else None

    def record_doc(record, path: Path, line: int) -> Optional[Doc]:
        doc_id = require(record, "doc_id", path, line, str)
        fold = record.get("fold")
        if wanted is not None and fold not in wanted:
            stats.notes["paper of another fold"] += 1
            return None
        rows = _sentence_rows(record, path, line)
        if not rows:
            raise ReaderError(path, line, "no body sentences", field="sentences")
        texts = [t for t, _, _, _ in rows]
        doc = doc_from_sentences(nlp_or_vocab, texts, labels=[primary_label(c) for _, _, c, _ in rows],
                                 doc_id=doc_id)
        sents = list(doc.sents)
        extensions.set_span_values(doc, HEADING, sents, [h for _, h, _, _ in rows])
        extensions.set_span_values(doc, GOLD_LABELS, sents, [acceptable_labels(c) or None for _, _, c, _ in rows])
        extensions.set_span_values(doc, FINE_LABEL, sents, [z for _, _, _, z in rows])
        if record.get("title"):
            extensions.set_doc_value(doc, extensions.TITLE, " ".join(str(record["title"]).split()))
        if fold:
            extensions.set_doc_value(doc, FOLD, str(fold))
        extensions.set_doc_value(doc, extensions.SOURCE, SOURCE_NAME)
        return doc

    return jsonl_docs(path, record_doc, limit=limit, errors=errors, stats=stats)
