"""CL-SciSumm (Task 1a/1b) reader.

Layout of one topic directory (``<TOPIC>/``)::

    Reference_XML/<TOPIC>.xml         reference paper (RP), one <S sid=.. ssid=..> per sentence
    Citance_XML/<CP>.xml              citing papers (manual topics only); a few are
                                      plain text ``<CP>word.docx.txt`` instead
    annotation/<TOPIC>.ann.txt        one record per citance, fields joined by " | "
      (or .annv3.txt; older releases: .csv with a header row of the same names)
    citing_sentences.json             ScisummNet (auto) topics only

Quirks handled here (see ../shared/data/README.md):

* RP XML files mixing UTF-8 with stray cp1252 bytes (decoded byte by byte),
  ``<SUBSECTION>`` headings inside sections, sentences directly under
  ``<PAPER>`` (no abstract), empty ``<S>`` elements (dropped and counted in
  ``ReferencePaper.n_empty``). XML that is still not well-formed raises a
  :class:`~spacy_rhetoric.readers.common.ReaderError` naming file and line.
* Annotation records: the line is split only at the known field names
  (``| Citation Text:`` ...), so a ``|`` inside a text is kept; stray spaces
  around keys and values; duplicated trailing fields (the first value wins);
  a missing ``Annotator`` (None); ``NA`` offsets (empty list); facets spelled
  ``Method_Citation``, ``Method citation``, ``Result_Citation``,
  ``['Aim_Citation','Method_Citation']`` ... normalised to lists of
  ``method, results, implication, aim, hypothesis``. A record missing a
  required field (citance number, articles, reference offsets) is skipped and
  counted.
"""
import codecs
import csv
import html
import io
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import srsly
from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from ..errors import RhetoricError
from ..section_headings import RELATED_WORK, rule_category
from .common import ReaderError, ReadStats, check_errors_mode, doc_from_sentences
from .fulltext import CITATION, parse_xml_data

FACETS = ("method", "results", "implication", "aim", "hypothesis")
ABSTRACT = "abstract"
TITLE = "title"


@dataclass
class RefSentence:
    sid: str
    ssid: Optional[str]
    text: str
    section: Optional[str]  # section title; "abstract" in <ABSTRACT>; "title" for the paper title


@dataclass
class ReferencePaper:
    paper_id: str
    title: Optional[str]
    sentences: List[RefSentence]
    path: Path
    n_empty: int = 0  # <S> elements without text, left out of ``sentences``

    def sentence_by_sid(self) -> Dict[str, RefSentence]:
        return {s.sid: s for s in self.sentences}


@dataclass
class CitanceRecord:
    topic: str
    citance_number: str
    reference_article: str  # paper id, file extension removed
    citing_article: str  # paper id, file extension removed
    citation_offsets: List[str]
    citation_text: str  # plain text, <S> tags stripped
    reference_offsets: List[str]  # gold RP sids (task 1a)
    reference_text: str
    facets: List[str]  # normalised, see FACETS
    annotator: Optional[str]
    path: Path
    line: int


@dataclass
class Topic:
    topic_id: str
    root: Path
    reference_xml: Path
    annotation_files: List[Path]
    citance_dir: Optional[Path]
    citing_sentences_json: Optional[Path]
    auto: bool  # ScisummNet automatically annotated topic


# --------------------------------------------------------------------------
# Reference papers


def _cp1252_fallback(err: UnicodeDecodeError) -> Tuple[str, int]:
    bad = err.object[err.start:err.end]
    return bad.decode("cp1252", errors="replace"), err.end


codecs.register_error("spacy_rhetoric_cp1252", _cp1252_fallback)


def decode_mixed(data: bytes) -> str:
    """UTF-8, with undecodable bytes read as cp1252 (the corpus mixes both)."""
    text = data.decode("utf8", errors="spacy_rhetoric_cp1252")
    return text.lstrip("\ufeff")


_WS = re.compile(r"\s+")


def _norm_text(text: str) -> str:
    return _WS.sub(" ", text).strip()


def read_reference_xml(path: Union[str, Path]) -> ReferencePaper:
    """Read a reference-paper XML file into sentences with sids and sections."""
    path = Path(path)
    text = decode_mixed(path.read_bytes())
    text = re.sub(r"^\s*<\?xml[^>]*\?>", "", text)  # the encoding is handled above
    root = parse_xml_data(text, path)  # defusedxml: no entities, no deep nesting
    paper_id = path.name.split(".")[0]
    sentences: List[RefSentence] = []
    title: Optional[str] = None
    n_empty = 0

    def add(elem: ET.Element, section: Optional[str]) -> None:
        nonlocal n_empty
        if "sid" not in elem.attrib:
            raise ReaderError(path, None, "<S> element without a sid", field="sid")
        sent_text = _norm_text("".join(elem.itertext()))
        if not sent_text:
            n_empty += 1
            return
        ssid = elem.attrib.get("ssid")
        sentences.append(RefSentence(elem.attrib["sid"].strip(), ssid.strip() if ssid else None,
                                     sent_text, section))

    def walk(children: List[ET.Element], section: Optional[str]) -> None:
        for child in children:
            if child.tag == "S":
                add(child, section)
            elif child.tag == "ABSTRACT":
                walk(list(child), ABSTRACT)
            elif child.tag == "SECTION":
                walk(list(child), _norm_text(child.attrib.get("title", "")) or None)
            else:  # SUBSECTION headings and anything unknown: keep its sentences
                walk(list(child), section)

    children = list(root)
    if children and children[0].tag == "S":
        # The paper title is the first <S> directly under <PAPER> (sid 0).
        add(children[0], TITLE)
        if sentences:
            title = sentences[0].text
        children = children[1:]
    walk(children, None)
    return ReferencePaper(paper_id=paper_id, title=title, sentences=sentences, path=path,
                          n_empty=n_empty)


def reference_doc(nlp_or_vocab: Union[Language, Vocab], paper: ReferencePaper,
                  *, labels: Optional[List[Optional[str]]] = None) -> Doc:
    """The reference paper as one Doc: gold sentence boundaries, sids,
    sections and doc id (the paper id)."""
    sents = paper.sentences
    return doc_from_sentences(
        nlp_or_vocab,
        [s.text for s in sents],
        labels=labels,
        sections=[s.section for s in sents],
        sids=[s.sid for s in sents],
        doc_id=paper.paper_id,
    )


# --------------------------------------------------------------------------
# Annotation files

FIELDS = {
    "citance number": "citance_number",
    "reference article": "reference_article",
    "citing article": "citing_article",
    "citation marker offset": "citation_marker_offset",
    "citation marker": "citation_marker",
    "citation offset": "citation_offsets",
    "citation text": "citation_text",
    "reference offset": "reference_offsets",
    "reference text": "reference_text",
    "discourse facet": "facets",
    "annotator": "annotator",
}
REQUIRED = ("citance_number", "reference_article", "citing_article", "reference_offsets")
_KEY_RE = re.compile(
    r"(?:^|\|)\s*("
    + "|".join(re.escape(k).replace(r"\ ", r"\s+") for k in sorted(FIELDS, key=len, reverse=True))
    + r")\s*:",
    re.IGNORECASE,
)
_S_TAG = re.compile(r"</?S\b[^>]*>", re.IGNORECASE)
_FACET_RE = re.compile(r"(method|results?|implication|aim|hypothesis)", re.IGNORECASE)


def split_fields(line: str) -> Dict[str, str]:
    """Split an annotation line at the known field names (so ``|`` inside a
    text is kept). The first occurrence of a field wins; values are stripped
    of spaces and trailing field separators."""
    matches = list(_KEY_RE.finditer(line))
    out: Dict[str, str] = {}
    for i, match in enumerate(matches):
        key = FIELDS[_WS.sub(" ", match.group(1).lower())]
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        # Strip spaces and the field separator(s) left before the next key.
        value = line[match.end():end].strip().rstrip("| \t")
        out.setdefault(key, value)
    return out


def parse_offsets(value: str) -> List[str]:
    """``['39','40']``, ``[39, 40]``, ``39,40`` or ``NA`` -> list of str ids."""
    value = value.strip()
    if not value or value.upper() == "NA":
        return []
    value = value.strip("[]")
    items = [item.strip().strip("'\"").strip() for item in value.split(",")]
    return [item for item in items if item and item.upper() != "NA"]


def strip_sentence_tags(value: str) -> str:
    """Plain text of an ``<S sid=..>...</S>`` sequence (entities unescaped)."""
    return _norm_text(html.unescape(_S_TAG.sub(" ", value)))


def normalise_facets(value: str) -> List[str]:
    """``Method_Citation``, ``Result citation``, ``['Aim_Citation','Method_Citation']``
    -> ``["method"]``, ``["results"]``, ``["aim", "method"]``; ``NA`` -> []."""
    out: List[str] = []
    for match in _FACET_RE.finditer(value):
        facet = match.group(1).lower()
        facet = "results" if facet.startswith("result") else facet
        if facet not in out:
            out.append(facet)
    return out


def _article_id(value: str) -> str:
    value = value.strip()
    return re.sub(r"\.(xml|txt)$", "", value, flags=re.IGNORECASE)


def annotation_topic(path: Union[str, Path]) -> str:
    """Topic id from an annotation file name: ``C00-2123.ann.txt`` and
    ``A00-2030_annotator.csv`` -> the ACL Anthology id."""
    name = Path(path).name
    match = re.match(r"[A-Z]\d{2}-\d{4}", name)
    return match.group(0) if match else name.split(".")[0]


def _csv_rows(text: str) -> Iterator[Tuple[int, Dict[str, str]]]:
    """``(line, values)`` per data row of a CSV annotation file (header row
    with the same field names as the ``.ann.txt`` records; unknown columns
    such as ``Citation Text Clean`` are ignored)."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        return
    keys = [FIELDS.get(_WS.sub(" ", h.strip().lower())) for h in header]
    line = reader.line_num + 1
    for row in reader:
        values = {k: v.strip() for k, v in zip(keys, row) if k is not None}
        if any(v.strip() for v in row):
            yield line, values
        line = reader.line_num + 1


def _txt_rows(text: str) -> Iterator[Tuple[int, Dict[str, str]]]:
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield i, split_fields(line)


def read_annotations(path: Union[str, Path], *, topic: Optional[str] = None,
                     stats: Optional[ReadStats] = None) -> Tuple[List[CitanceRecord], int]:
    """All citance records of one annotation file (``.ann.txt``/``.annv3.txt``
    with `` | ``-separated fields, or ``.csv`` with a header row), and the
    number of records skipped as malformed (missing a required field:
    citance number, reference/citing article, reference offset). ``stats``
    (optional) gets the counts and the reasons with file:line.

    ``topic``: the topic the file belongs to (its topic directory), default
    the id in the file name. When it is given, an empty ``Reference Article``
    is that topic (CSV releases leave the column empty), not a missing field.
    """
    path = Path(path)
    from_place = topic
    topic = topic or annotation_topic(path)
    records: List[CitanceRecord] = []
    skipped = 0
    text = decode_mixed(path.read_bytes())
    rows = _csv_rows(text) if path.suffix.lower() == ".csv" else _txt_rows(text)
    for i, values in rows:
        if stats is not None:
            stats.read += 1
        if from_place and not values.get("reference_article"):
            values["reference_article"] = from_place
        missing = [k for k in REQUIRED if not values.get(k)]
        if missing:
            skipped += 1
            if stats is not None:
                stats.skip(ReaderError(path, i, "missing field", field=missing[0]))
            continue
        annotator = values.get("annotator") or None
        records.append(CitanceRecord(
            topic=topic,
            citance_number=values["citance_number"],
            reference_article=_article_id(values["reference_article"]),
            citing_article=_article_id(values["citing_article"]),
            citation_offsets=parse_offsets(values.get("citation_offsets", "")),
            citation_text=strip_sentence_tags(values.get("citation_text", "")),
            reference_offsets=parse_offsets(values["reference_offsets"]),
            reference_text=strip_sentence_tags(values.get("reference_text", "")),
            facets=normalise_facets(values.get("facets", "")),
            annotator=annotator,
            path=path,
            line=i,
        ))
        if stats is not None:
            stats.used += 1
    return records, skipped


def read_topic_annotations(topic: "Topic", *, stats: Optional[ReadStats] = None
                           ) -> Tuple[List[CitanceRecord], int]:
    """All records of all annotation files of ``topic`` (their topic is the
    topic directory's id) and the number of malformed records skipped."""
    records: List[CitanceRecord] = []
    skipped = 0
    for path in topic.annotation_files:
        recs, n_bad = read_annotations(path, topic=topic.topic_id, stats=stats)
        records.extend(recs)
        skipped += n_bad
    return records, skipped


def read_citing_sentences(path: Union[str, Path]) -> List[Dict[str, Any]]:
    """``citing_sentences.json`` of a ScisummNet topic (a list of dicts with
    ``citance_No``, ``citing_paper_id``, ``raw_text``, ``clean_text`` ...)."""
    path = Path(path)
    try:
        data = srsly.read_json(path)
    except ValueError as exc:
        raise ReaderError(path, None, f"invalid JSON: {exc}") from None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ReaderError(path, None, "expected a list of objects")
    return data


def citing_paper_path(topic: Topic, citing_article: str) -> Optional[Path]:
    """The citing paper's file in ``Citance_XML``: ``<CP>.xml`` or, for a few
    papers, the plain-text ``<CP>word.docx.txt``; None when absent."""
    if topic.citance_dir is None:
        return None
    for name in (f"{citing_article}.xml", f"{citing_article}word.docx.txt"):
        candidate = topic.citance_dir / name
        if candidate.exists():
            return candidate
    return None


# --------------------------------------------------------------------------
# Topics


def _topic_from_dir(path: Path) -> Topic:
    topic_id = path.name
    ref_dir = path / "Reference_XML"
    reference = ref_dir / f"{topic_id}.xml"
    if not reference.exists():
        candidates = sorted(ref_dir.glob("*.xml"))
        if len(candidates) != 1:
            raise ReaderError(ref_dir, None, f"expected {topic_id}.xml (found {len(candidates)} XML files)")
        reference = candidates[0]
    ann_dir = path / "annotation"
    annotations = sorted(
        p for p in ann_dir.iterdir()
        if re.search(r"\.ann[^.]*\.txt$|\.csv$", p.name, re.IGNORECASE)
    ) if ann_dir.exists() else []
    citance_dir = path / "Citance_XML"
    citing_json = path / "citing_sentences.json"
    has_json = citing_json.exists()
    return Topic(
        topic_id=topic_id,
        root=path,
        reference_xml=reference,
        annotation_files=annotations,
        citance_dir=citance_dir if citance_dir.exists() else None,
        citing_sentences_json=citing_json if has_json else None,
        auto=has_json or "scisummnet" in str(path).lower(),
    )


def iter_topics(root: Union[str, Path]) -> Iterator[Topic]:
    """Topics under ``root`` in sorted order: ``root`` may be one topic
    directory, a directory of topics (training-40-manual,
    scisummnet-2019-auto) or a directory of such directories (cl-scisumm/)."""
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"No such directory: {root}")
    if (root / "Reference_XML").is_dir():
        yield _topic_from_dir(root)
        return
    for child in sorted(p for p in root.iterdir() if p.is_dir()):
        if (child / "Reference_XML").is_dir():
            yield _topic_from_dir(child)
        else:
            for grandchild in sorted(p for p in child.iterdir() if p.is_dir()):
                if (grandchild / "Reference_XML").is_dir():
                    yield _topic_from_dir(grandchild)


def select_topics(
    roots: Sequence[Union[str, Path]],
    *,
    include: Optional[Iterable[str]] = None,
    exclude: Optional[Iterable[str]] = None,
) -> List[Topic]:
    """Topics under ``roots`` (see ``iter_topics``), keeping
    only ids in ``include`` (when given) and dropping ids in ``exclude``.
    Unknown ids in ``include`` raise an error naming them."""
    topics = [t for root in roots for t in iter_topics(root)]
    if include is not None:
        wanted = [t.strip() for t in include if t.strip()]
        have = {t.topic_id for t in topics}
        missing = [t for t in wanted if t not in have]
        if missing:
            raise RhetoricError(f"topics not found under {[str(r) for r in roots]}: {missing}")
        keep = set(wanted)
        topics = [t for t in topics if t.topic_id in keep]
    if exclude is not None:
        drop = {t.strip() for t in exclude}
        topics = [t for t in topics if t.topic_id not in drop]
    return topics


def read_reference_docs(
    root: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
) -> Iterator[Doc]:
    """One Doc per topic's reference paper (sentences, sids, sections, doc id).

    A reference XML that cannot be parsed is skipped and counted
    (``errors="skip"``) or raises its ReaderError; empty ``<S>`` elements are
    counted in ``stats.reasons`` (they are not records of their own).
    """
    check_errors_mode(errors)
    stats = stats if stats is not None else ReadStats(name=str(root))
    for topic in iter_topics(root):
        stats.read += 1
        try:
            paper = read_reference_xml(topic.reference_xml)
            if not paper.sentences:
                raise ReaderError(topic.reference_xml, None, "no sentences")
        except ReaderError as err:
            if errors == "raise":
                raise
            stats.skip(err)
            continue
        if paper.n_empty:
            stats.notes["empty <S> dropped"] += paper.n_empty
        stats.used += 1
        stats.docs += 1
        stats.sentences += len(paper.sentences)
        yield reference_doc(nlp_or_vocab, paper)
        if limit > 0 and stats.docs >= limit:
            return


# --------------------------------------------------------------------------
# Reference papers labelled by their cited spans' discourse facets

FACET_SOURCE = "cl-scisumm"  # doc._.rhetoric_source of the facet-labelled papers
# Discourse facet of a cited span -> acceptable coarse labels, the primary one first. A span cited for its
# method describes the reference paper's own work; in the abstract or introduction such a sentence often
# states the aim ("We present a parser that ..."), so there objective is accepted too.
FACET_COARSE = {
    "method": ("method",), "results": ("result",), "implication": ("result", "other"),
    "aim": ("objective",), "hypothesis": ("objective",),
}
# Heading categories (section_headings.rule_category) where a cited method may state the aim, and a citing
# sentence that does not speak of the paper is background; a related-work section's sentences are background.
FRONT_SECTIONS = ("abstract", "introduction")
# In the abstract or the introduction, a sentence that cites (fulltext.CITATION: "(Melamed, 1997)", "Brown et al.
# (1993)", "[3]") and does not speak of the paper itself ("we", "our", "this paper") is taken as background
OWN = re.compile(r"\b(?:we|our|us|this paper|this work|this article|here)\b", re.IGNORECASE)


def facet_labels(facets: Sequence[str], section: Optional[str]) -> List[str]:
    """The acceptable coarse labels of a reference-paper sentence cited with
    ``facets`` (one per citance that cites it, repeats counted): the most
    frequent facet's labels first (ties: ``FACETS`` order), then the others';
    ``[]`` without a known facet."""
    counts: Dict[str, int] = {}
    for facet in facets:
        if facet in FACET_COARSE:
            counts[facet] = counts.get(facet, 0) + 1
    order = sorted(counts, key=lambda f: (-counts[f], FACETS.index(f)))
    labels: List[str] = []
    for facet in order:
        for label in FACET_COARSE[facet]:
            if label not in labels:
                labels.append(label)
    if labels and labels[0] == "method" and rule_category(section) in FRONT_SECTIONS and "objective" not in labels:
        labels.append("objective")
    return labels


def cites_others(text: str) -> bool:
    """A sentence with a citation that does not speak of the paper itself
    (``fulltext.CITATION``, ``OWN``)."""
    return bool(CITATION.search(text)) and not OWN.search(text)


def facet_doc(nlp_or_vocab: Union[Language, Vocab], paper: ReferencePaper,
              facets: Dict[str, List[str]]) -> Doc:
    """The reference paper as one Doc (title kept as ``doc._.rhetoric_title``,
    not a sentence; each sentence's section title as its heading) whose
    sentences cited in a task-1a annotation carry gold coarse labels from
    their discourse facets (``facet_labels``; ``facets``: sid -> the facets of
    the citances citing it); the sentences of a related-work section (its
    heading's ``section_headings.rule_category``) are background, cited or
    not, and so are the abstract's and introduction's sentences that cite
    other work without a facet (``cites_others``); every other sentence is
    unlabelled."""
    from .. import extensions
    from ..extensions import GOLD_LABELS, HEADING

    sents = [s for s in paper.sentences if s.section != TITLE]
    golds = []
    for s in sents:
        category = rule_category(s.section)
        gold = ["background"] if category == RELATED_WORK else facet_labels(facets.get(s.sid, ()), s.section)
        if not gold and category in FRONT_SECTIONS and cites_others(s.text):
            gold = ["background"]
        golds.append(gold)
    doc = doc_from_sentences(nlp_or_vocab, [s.text for s in sents], labels=[g[0] if g else None for g in golds],
                             sids=[s.sid for s in sents], doc_id=paper.paper_id)
    spans = list(doc.sents)
    extensions.set_span_values(doc, GOLD_LABELS, spans, [g or None for g in golds])
    extensions.set_span_values(doc, HEADING, spans,
                               ["Abstract" if s.section == ABSTRACT else s.section for s in sents])
    if paper.title:
        extensions.set_doc_value(doc, extensions.TITLE, paper.title)
    extensions.set_doc_value(doc, extensions.SOURCE, FACET_SOURCE)
    return doc


def read_facet_docs(root: Union[str, Path], nlp_or_vocab: Union[Language, Vocab], *,
                    topics: Optional[Sequence[str]] = None,
                    stats: Optional[ReadStats] = None) -> Iterator[Doc]:
    """One ``facet_doc`` per manually annotated topic under ``root`` (the
    ScisummNet topics, whose facets are ``NA``, are left out; ``topics``:
    only these topic ids). A reference XML that cannot be read, or a topic
    without a faceted citance, is skipped and counted in ``stats``."""
    stats = stats if stats is not None else ReadStats(name=str(root))
    wanted = set(topics) if topics is not None else None
    for topic in iter_topics(root):
        if topic.auto or (wanted is not None and topic.topic_id not in wanted):
            continue
        stats.read += 1
        try:
            paper = read_reference_xml(topic.reference_xml)
        except ReaderError as err:
            stats.skip(err)
            continue
        records, _ = read_topic_annotations(topic, stats=stats)
        facets: Dict[str, List[str]] = {}
        for rec in records:
            for sid in rec.reference_offsets:
                facets.setdefault(sid, []).extend(rec.facets)
        if not any(facet_labels(f, None) for f in facets.values()):
            stats.skip(ReaderError(topic.reference_xml, None, "no cited sentence with a discourse facet"))
            continue
        doc = facet_doc(nlp_or_vocab, paper, facets)
        stats.used += 1
        stats.docs += 1
        stats.sentences += len(paper.sentences)
        yield doc
