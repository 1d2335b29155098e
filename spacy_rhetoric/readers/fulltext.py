"""What the full-text paper readers share (``tei``, ``jats``, ``s2orc``,
``text``; the entry point is ``papers.read_papers``).

Each format module parses one file into a :class:`Paper`: the title and a
flat list of :class:`Paragraph` (abstract paragraphs first, with the heading
``"Abstract"``), each with its raw heading, plain text, citation character
spans and, where the source has them (GROBID ``<s>``), gold sentence spans.
:func:`paper_doc` turns a Paper into one Doc:

* paragraphs joined by a single space, tokenized by ``nlp.make_doc``;
* sentence starts preset: every paragraph starts a sentence; with gold
  sentences those are the sentences; otherwise a sentence splitter
  (:func:`sentence_splitter`: spaCy's rule-based ``sentencizer`` or the
  trained ``senter`` of ``en_core_web_sm``) fills in the rest, never
  starting a sentence inside a citation span or after an abbreviation such
  as "Fig." or "et al." (:data:`ABBREVIATIONS`). ``doc.sents`` works without a
  parser. Chinese and Japanese text, whose sentences are not followed by a
  space, is cut after its own full stops (``。！？``, :func:`split_cjk`),
  whatever the pipeline's tokenizer leaves in one token. A sentence longer than :data:`MAX_SENTENCE_TOKENS` tokens (a
  paragraph without punctuation) is cut into sentences of at most that many
  (:func:`bound_sentences`), so no model sees an unbounded sentence; the
  Doc's text stays the paper's;
* per sentence, through :mod:`spacy_rhetoric.extensions`: ``HEADING`` (raw
  heading text with its number, e.g. ``"4.1 Experimental Results"``;
  ``"Abstract"``; nothing for text before the first heading) and
  ``PARAGRAPH`` (index in the paper, abstract paragraphs included, from 0);
  doc-level ``TITLE`` (the title is not part of the Doc's text) and
  ``DOC_ID`` (the file stem);
* citations as the span group ``doc.spans["citations"]`` (label ``"bibr"``,
  the bibliography entry id, if any, as ``kb_id_``).

All of it survives ``DocBin(store_user_data=True)``. ``SECTION`` is left to
the section tagger.
"""
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc, Span

from .. import extensions
from ..errors import RhetoricError
from ..io import path_text
from ..long_docs import make_doc
from .budget import check_budget
from .common import ReaderError, split_cjk

ABSTRACT = "Abstract"
CITATIONS_KEY = "citations"  # doc.spans key of the citation spans
CITATION_LABEL = "bibr"


def set_citation_spans(doc: Doc, sents: List[Span], cites: List[Optional[List[Tuple[int, int, Optional[str]]]]]) -> None:
    """``doc.spans[CITATIONS_KEY]`` from each sentence's citations as
    ``(start, end, target)`` character offsets within the sentence (None: no
    offsets to trust for it); a span is widened to whole tokens, ``target``
    is its ``kb_id`` (the bibliography id, or None)."""
    spans = []
    for sent, found in zip(sents, cites):
        for start, end, target in found or ():
            span = doc.char_span(sent.start_char + start, sent.start_char + end, alignment_mode="expand")
            if span is not None and len(span):
                spans.append(Span(doc, span.start, span.end, label=CITATION_LABEL, kb_id=target or ""))
    doc.spans[CITATIONS_KEY] = spans
YEAR = r"(?:1[89]|20)\d\d[a-z]?"  # a publication year in a citation: 1800-2099, "2018a"
# A citation in running text: "(Ammar et al., 2018; Wu, 2014)", "Peters et al. (2017)", "[3, 5-7]" (the PDF
# reader's citation spans; the CL-SciSumm facet reader's sentences that cite others)
CITATION = re.compile(
    rf"\((?:[^()]{{0,250}}?\b{YEAR}\b[^()]{{0,250}}?)\)"
    rf"|\b[A-Z][\w'’\-]{{1,60}}(?: et al\.| and [A-Z][\w'’\-]{{1,60}})? \({YEAR}(?:, [^()]{{1,40}})?\)"
    r"|\[\d{1,3}(?:\s*[,–-]\s*\d{1,3})*\]")
SPLITTERS = ("sentencizer", "senter")
# File name endings dropped to make the doc id ("N18-3011.tei.xml" -> "N18-3011").
_ID_SUFFIXES = (".xml", ".nxml", ".json", ".tei", ".grobid", ".txt", ".md", ".markdown", ".pdf")

_WS = re.compile(r"\s+")


def norm_space(text: Optional[str]) -> str:
    return _WS.sub(" ", text or "").strip()


@dataclass
class Paragraph:
    text: str
    heading: Optional[str]
    citations: List[Tuple[int, int, str]] = field(default_factory=list)  # char start, end, target id
    sentences: Optional[List[Tuple[int, int]]] = None  # gold sentence char spans


@dataclass
class Paper:
    doc_id: str
    title: Optional[str]
    paragraphs: List[Paragraph]
    headings: List[Optional[str]]  # body sections in order (with or without paragraphs)

    @property
    def body(self) -> List[Paragraph]:
        return [p for p in self.paragraphs if p.heading != ABSTRACT]


def doc_id_from_path(path: Union[str, Path]) -> str:
    """The file name without its format's extensions (``io.path_text``: a
    name that is not UTF-8 gets its odd bytes escaped)."""
    name = path_text(Path(path).name)
    changed = True
    while changed:
        changed = False
        for suffix in _ID_SUFFIXES:
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                changed = True
    return name


def heading_text(number: Optional[str], title: Optional[str]) -> Optional[str]:
    """``"4.1"``, ``"Results"`` -> ``"4.1 Results"``; None when both are empty."""
    parts = [norm_space(number), norm_space(title)]
    text = " ".join(p for p in parts if p)
    return text or None


class TextBuilder:
    """Collects a paragraph's text from XML pieces with whitespace collapsed,
    recording character marks (citations, sentences) as it goes."""

    def __init__(self):
        self.parts: List[str] = []
        self.length = 0
        self.citations: List[Tuple[int, int, str]] = []
        self.sentences: List[Tuple[int, int]] = []

    def _ends_with_space(self) -> bool:
        return not self.parts or self.parts[-1].endswith(" ")

    def add(self, text: Optional[str]) -> None:
        if not text:
            return
        text = _WS.sub(" ", text)
        if text.startswith(" ") and self._ends_with_space():
            text = text[1:]
        if text:
            self.parts.append(text)
            self.length += len(text)

    def separate(self) -> None:
        """Make sure what comes next starts a new word (between sentences)."""
        if not self._ends_with_space():
            self.add(" ")

    def paragraph(self, heading: Optional[str]) -> Paragraph:
        text = "".join(self.parts)
        stripped = text.rstrip()
        lead = len(stripped) - len(stripped.lstrip())
        stripped = stripped.lstrip()
        end = len(stripped)

        def clip(start: int, stop: int) -> Tuple[int, int]:
            return max(0, start - lead), min(end, stop - lead)

        cites = [(*clip(s, e), t) for s, e, t in self.citations]
        sents = [clip(s, e) for s, e in self.sentences]
        return Paragraph(
            text=stripped,
            heading=heading,
            citations=[c for c in cites if c[1] > c[0]],
            sentences=[s for s in sents if s[1] > s[0]] or None,
        )


# --------------------------------------------------------------------------
# XML


_ROOT_TAG = re.compile(rb"<([A-Za-z_][\w.\-]*(?::[\w.\-]+)?)")


def xml_root_name(data: bytes) -> Optional[str]:
    """Local name of the first element of an XML document (the root), found
    without parsing; None when there is none."""
    match = _ROOT_TAG.search(data)
    return match.group(1).decode("ascii", "replace").rsplit(":", 1)[-1] if match else None


# Deeper than this is no paper (GROBID TEI and JATS nest about 10-20 levels): the
# readers' tree walks recurse, so a deeper file is refused before them.
MAX_XML_DEPTH = 200


def parse_xml(path: Path) -> ET.Element:
    """Parse an XML file safely (:func:`parse_xml_data`)."""
    return parse_xml_data(Path(path).read_bytes(), path)


def parse_xml_data(data: Union[bytes, str], path: Union[str, Path]) -> ET.Element:
    """Parse XML with ``defusedxml``: nothing is loaded from a DTD or the
    network, and a document that declares entities (billion laughs, external
    entities; in any encoding, UTF-16 included) is refused; so is one nested
    deeper than :data:`MAX_XML_DEPTH`. Any problem is a ReaderError naming
    ``path`` (and the line)."""
    from defusedxml import DefusedXmlException
    from defusedxml.ElementTree import fromstring

    try:
        root = fromstring(data, forbid_dtd=False, forbid_entities=True, forbid_external=True)
    except ET.ParseError as exc:
        line, col = exc.position
        raise ReaderError(path, line, f"broken XML (column {col}): {exc}") from None
    except DefusedXmlException:
        raise ReaderError(path, _line_of(data, "<!ENTITY"), "refused XML: entity declarations are not allowed") \
            from None
    depth = xml_depth(root, MAX_XML_DEPTH)
    if depth > MAX_XML_DEPTH:
        raise ReaderError(path, None, f"refused XML: elements nested more than {MAX_XML_DEPTH} levels deep")
    return root


def _line_of(data: Union[bytes, str], needle: str) -> Optional[int]:
    """The line of the first ``needle`` in an XML document (UTF-8 or, with a
    BOM, UTF-16), or None."""
    if isinstance(data, bytes):
        encoding = "utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8"
        data = data.decode(encoding, errors="replace")
    at = data.find(needle)
    return data[:at].count("\n") + 1 if at >= 0 else None


def xml_depth(root: ET.Element, stop: int) -> int:
    """Nesting depth of the tree under ``root`` (counted without recursion),
    or ``stop + 1`` as soon as it exceeds ``stop``."""
    deepest = 0
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        deepest = max(deepest, depth)
        if deepest > stop:
            return deepest
        stack.extend((child, depth + 1) for child in element)
    return deepest


def local_name(tag) -> str:
    """Tag without namespace (comments and processing instructions: "")."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


# --------------------------------------------------------------------------
# Sentence splitting

_SPLITTER_CACHE: Dict[str, Callable[[Doc], None]] = {}


def sentence_splitter(name: str = "sentencizer") -> Callable[[Doc], None]:
    """A callable that fills in the unset sentence starts of a Doc (preset
    starts are kept: ``overwrite=False``), then cuts over-long sentences
    (:func:`bound_sentences`). ``"sentencizer"``: spaCy's
    punctuation rules; ``"senter"``: the trained sentence recognizer of
    ``en_core_web_sm`` (``util.load_parser``), run on a copy of the tokens
    in its own vocab."""
    if name not in SPLITTERS:
        raise RhetoricError(f"sentence splitter must be one of {SPLITTERS}, got {name!r}")
    if name not in _SPLITTER_CACHE:
        if name == "sentencizer":
            from spacy.pipeline import Sentencizer

            sentencizer = Sentencizer()

            def split(doc: Doc) -> None:
                sentencizer(doc)
                bound_sentences(doc)
        else:
            from ..util import load_parser

            nlp = load_parser("en_core_web_sm", exclude=["tok2vec", "tagger", "parser",
                                                         "attribute_ruler", "lemmatizer", "ner"])
            nlp.enable_pipe("senter")
            senter = nlp.get_pipe("senter")

            def split(doc: Doc) -> None:
                starts = [t.is_sent_start for t in doc]
                copy = Doc(nlp.vocab, words=[t.text for t in doc],
                           spaces=[bool(t.whitespace_) for t in doc], sent_starts=starts)
                copy = senter(copy)
                for token, other in zip(doc, copy):
                    token.is_sent_start = other.is_sent_start
                bound_sentences(doc)
        _SPLITTER_CACHE[name] = split
    return _SPLITTER_CACHE[name]


MAX_SENTENCE_TOKENS = 256  # no sentence of a paper is longer; the models cost grows with it (a 1 MB one: 3.5 GB)
_SOFT_ENDS = frozenset(",;:")


def bound_sentences(doc: Doc, max_tokens: int = MAX_SENTENCE_TOKENS) -> int:
    """Cut every sentence of ``doc`` longer than ``max_tokens`` tokens into
    sentences of at most that many: after the last comma, semicolon or colon
    of the second half of each piece, else after ``max_tokens`` tokens (never
    before a whitespace token); linear in the length of the Doc, its text
    unchanged. A parsed Doc (whose sentences its parse fixes) is left as it
    is. Returns how many sentence starts were added."""
    if not len(doc) or doc.has_annotation("DEP") or not doc.has_annotation("SENT_START"):
        return 0
    from spacy.attrs import SENT_START

    cuts: List[int] = []
    start = 0
    for end in [sent.end for sent in doc.sents]:
        while end - start > max_tokens:
            limit = start + max_tokens
            cut = next((j for j in range(limit, start + max_tokens // 2, -1) if doc[j - 1].text in _SOFT_ENDS), limit)
            while cut < end and doc[cut].is_space:
                cut += 1
            if cut >= end:
                break
            cuts.append(cut)
            start = cut
        start = end
    if cuts:  # in one go (token.is_sent_start = True scans the whole Doc each time)
        values = doc.to_array([SENT_START])
        values[cuts] = 1
        doc.from_array([SENT_START], values)
    return len(cuts)


# Abbreviations a sentence does not end with in papers ("see Fig. 2", "cf. Table 1",
# "Smith et al. (2020)"): 123 false splits after "Fig." in the 16 samples.
ABBREVIATIONS = frozenset(
    "fig figs eq eqs eqn eqns ref refs tab tabs sec secs sect suppl cf al approx ca vs e.g i.e "
    "resp no nos vol pp ch chap app".split()
)


_OPENERS = frozenset("([{\"'\u201c\u2018")


def unsplit_abbreviations(doc: Doc, candidates: List[int]) -> None:
    """Undo a splitter's sentence start at token ``i`` (of ``candidates``,
    the starts the source did not fix) right after an abbreviation's full
    stop, opening brackets or quotes between them ("et al. (2020)")."""
    for i in candidates:
        if i < 2 or not doc[i].is_sent_start:
            continue
        j = i - 1
        while j >= 2 and doc[j].text in _OPENERS:
            j -= 1
        prev = doc[j]
        if prev.text == "." and not doc[j - 1].whitespace_:
            word = doc[j - 1].lower_
        elif prev.text.endswith(".") and len(prev.text) > 1:
            word = prev.lower_[:-1]
        else:
            continue
        if word in ABBREVIATIONS:
            doc[i].is_sent_start = False


# --------------------------------------------------------------------------
# Paper -> Doc


def paper_doc(nlp: Language, paper: Paper, *, splitter: str = "sentencizer") -> Doc:
    """One Doc for ``paper`` (see the module docstring). Paragraphs without
    tokens are left out."""
    words: List[str] = []
    spaces: List[bool] = []
    starts: List[Optional[bool]] = []
    para_spans: List[Tuple[int, int, int, Optional[str]]] = []  # start, end, index, heading
    cites: List[Tuple[int, int, str]] = []
    index = 0
    for para in paper.paragraphs:
        check_budget()
        pdoc = make_doc(nlp, para.text)  # any length (long_docs)
        if not len(pdoc) or not para.text.strip():
            continue
        pdoc, cjk_starts = split_cjk(pdoc)
        offset = len(words)
        local: List[Optional[bool]] = [None] * len(pdoc)
        if para.sentences:
            local = [False] * len(pdoc)
            for s_start, s_end in para.sentences:
                span = pdoc.char_span(s_start, s_end, alignment_mode="expand")
                if span is not None and len(span):
                    local[span.start] = True
        for c_start, c_end, target in para.citations:
            span = pdoc.char_span(c_start, c_end, alignment_mode="expand")
            if span is None or not len(span):
                continue
            cites.append((offset + span.start, offset + span.end, target))
            for i in range(span.start + 1, span.end):
                if local[i] is None:
                    local[i] = False
        for i in cjk_starts:
            if local[i] is None:
                local[i] = True
        local[0] = True
        for token in pdoc:
            words.append(token.text)
            spaces.append(bool(token.whitespace_))
        spaces[-1] = True
        starts.extend(local)
        para_spans.append((offset, len(words), index, para.heading))
        index += 1
    if spaces:
        spaces[-1] = False
    doc = Doc(nlp.vocab, words=words, spaces=spaces, sent_starts=starts if words else None)
    if any(s is None for s in starts):
        sentence_splitter(splitter)(doc)
        unsplit_abbreviations(doc, [i for i, s in enumerate(starts) if s is None])
    bound_sentences(doc)  # gold or preset sentences too
    sents = list(doc.sents) if len(doc) else []
    headings: List[Optional[str]] = []
    paragraphs: List[int] = []
    j = 0
    for sent in sents:
        while para_spans[j][1] <= sent.start:
            j += 1
        headings.append(para_spans[j][3])
        paragraphs.append(para_spans[j][2])
    extensions.set_span_values(doc, extensions.HEADING, sents, headings)
    extensions.set_span_values(doc, extensions.PARAGRAPH, sents, paragraphs)
    doc.spans[CITATIONS_KEY] = [Span(doc, s, e, label=CITATION_LABEL, kb_id=t or "") for s, e, t in cites]
    if paper.title:
        extensions.set_doc_value(doc, extensions.TITLE, paper.title)
    extensions.set_doc_value(doc, extensions.DOC_ID, paper.doc_id)
    return doc


class ParagraphWalk:
    """How an XML paper format's paragraph element becomes a :class:`Paragraph`:
    its text in document order with whitespace collapsed (a
    :class:`TextBuilder`), where each child element is, in this order of
    tests, a citation (``citation(element, local name)`` gives its target,
    else None: its text is marked), a sentence (``sentence_tag``: its text is
    marked, starting a new word), left out (``skip(local name)``: its text
    but not its tail), or walked into. ``separate_citations``: a citation
    starts a new word (superscript numbers glued to the word before them in
    the source: "effects<REF>11</REF>" -> "effects 11")."""

    def __init__(self, citation: Callable[[Any, str], Optional[str]], skip: Callable[[str], bool],
                 sentence_tag: Optional[str] = None, separate_citations: bool = False):
        self.citation = citation
        self.skip = skip
        self.sentence_tag = sentence_tag
        self.separate_citations = separate_citations

    def walk(self, elem, builder: TextBuilder) -> None:
        builder.add(elem.text)
        for child in elem:
            name = local_name(child.tag)
            target = self.citation(child, name)
            if target is not None:
                if self.separate_citations and builder.parts and builder.parts[-1][-1:] not in _OPENERS:
                    builder.separate()
                start = builder.length
                self.walk(child, builder)
                builder.citations.append((start, builder.length, target))
            elif self.sentence_tag is not None and name == self.sentence_tag:
                builder.separate()
                start = builder.length
                self.walk(child, builder)
                builder.sentences.append((start, builder.length))
            elif not self.skip(name):
                self.walk(child, builder)
            builder.add(child.tail)

    def paragraph(self, element, heading: Optional[str]) -> Paragraph:
        builder = TextBuilder()
        self.walk(element, builder)
        return builder.paragraph(heading)
