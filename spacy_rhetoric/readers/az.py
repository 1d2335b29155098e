"""AZ-CL: Simone Teufel's Argumentative Zoning corpus (Teufel 1999; Teufel &
Moens 2002): computational-linguistics conference papers whose every
sentence carries one of 7 zones, labelled by an expert
(``../shared/data/az-cl/*.annot``, via WING-NUS/RAZ; licence CC BY-SA 3.0).

Format: one paper per file, ISO-8859-1, XML-like but not always well-formed,
so it is read by pattern (a tag at a time, unclosed or stray tags
tolerated): ``<PAPER><METADATA><FILENO>…</FILENO><TITLE>…</TITLE>…
</METADATA><ABSTRACT><A-S ID='A-0' AZ='AIM'>…</A-S>…</ABSTRACT><BODY>
<DIV DEPTH='1'><HEADER ID='H-0'> Introduction </HEADER><P><S ID='S-0'
AZ='BKG'>…</S>…</P></DIV>…</BODY><REFERENCES>…</REFERENCES></PAPER>``.

One Doc per paper, read as a paper reader reads a paper:

* every ``<A-S>`` of the abstract and ``<S>`` of the body, in document
  order, is one sentence of the Doc; the linguistic examples of the body
  (``<EX-S>`` in ``<EXAMPLE>``) are sentences too, without a label (they
  are in the text users hand in); the references, images and metadata are
  left out; the title is ``doc._.rhetoric_title``, not in the Doc's text;
* the text is detokenised so that it reads like the text users hand in
  (:func:`detokenise`: ``do n't`` -> ``don't``, ``word ,`` -> ``word,``,
  ```` `` x '' ```` -> ``"x"``, ``( x )`` -> ``(x)``); a citation
  ``<REF TYPE='P'>Smith 1990</REF>`` (parenthetical) becomes
  ``(Smith 1990)``, ``<REF TYPE='A'>`` and ``<REFAUTHOR>`` (in the running
  text) their text; an equation ``<EQN/>`` is :data:`EQUATION` and a
  cross-reference ``<CREF/>`` (to a section, an example or an equation,
  whose number the source drops) :data:`CROSS_REFERENCE`;
* ``sent._.rhetoric_heading``: ``"Abstract"`` for the abstract; in the body,
  the header of the innermost ``DIV``, numbered by its place in the ``DIV``
  tree (``"2 Collecting Word Collocations"``, ``"2.1 …"``), as the CoreSC
  reader numbers them (the source drops the printed numbers);
* ``sent._.rhetoric_paragraph``: the paragraph (``P``) index, the abstract
  being paragraph 0;
* citations (``<REF>``) as the span group ``doc.spans["citations"]``
  (label ``"bibr"``), as in ``readers.fulltext``;
* ``doc._.rhetoric_doc_id``: the ``FILENO`` (else the file stem),
  ``doc._.rhetoric_source``: ``"az-cl"``.

Gold labels. The fine label (field ``fine_label``) is the zone
(:data:`ZONES`: ``AIM``, ``BAS``, ``BKG``, ``CTR``, ``OTH``, ``OWN``,
``TXT``); the sentences' other attributes (``IA``, ``R``, ``HUMAN``, the
``ABSTRACTC``/``DOCUMENTC`` links) are not the zone and are not read. The
coarse labels (:data:`COARSE`): BKG, OTH, CTR, BAS -> background (work that
is not the authors'); AIM -> objective; OWN -> method or result (AZ does
not tell them apart: both accepted); TXT (a statement of the paper's own
structure) has no coarse label. As for MuLMS-AZ and CoreSC,
``sent._.rhetoric_gold_labels`` holds every acceptable label and ``label``
the first of them; a sentence without a coarse label is in the Doc as
context and is not a training target of the coarse head. For OWN, the first
(``label``: what single-label learners such as the fitted members of the
full-paper classifier learn) is ``result`` under a results or conclusion
heading (``section_headings.rule_category`` of the heading, else of its
numbered parent's: "4.2 …" under "4 Experiments") and ``method`` elsewhere
(:func:`own_work_labels`); both stay acceptable.

A file that is not usable (no ``<PAPER>``, no zoned sentence, an unknown
zone) is skipped with one line naming it and counted, the rest of the folder
read (``errors="skip"``), or raises a ReaderError naming it.
"""
import html
import re
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .. import extensions
from ..extensions import FINE_LABEL, GOLD_LABELS, HEADING, PARAGRAPH
from ..section_headings import CONCLUSION, RESULTS, rule_category
from .common import ReaderError, ReadStats, check_errors_mode, doc_from_sentences, handle, suffix_files
from .fulltext import set_citation_spans

ABSTRACT_HEADING = "Abstract"
ENCODING = "iso-8859-1"
SUFFIX = ".annot"
SOURCE_NAME = "az-cl"  # doc._.rhetoric_source of every paper read here
ZONES = {
    "AIM": "the paper's goal",
    "BAS": "other work this paper builds on",
    "BKG": "generally accepted background",
    "CTR": "contrast with, or weakness of, other work",
    "OTH": "other specific work, described neutrally",
    "OWN": "the authors' own work: method, results, their own theory",
    "TXT": "the paper's own structure",
}
# zone -> acceptable coarse labels, the primary one first; TXT: none (not a coarse target)
COARSE = {
    "AIM": ("objective",), "BAS": ("background",), "BKG": ("background",), "CTR": ("background",),
    "OTH": ("background",), "OWN": ("method", "result"), "TXT": (),
}
OTHERS_WORK = ("BKG", "OTH", "CTR", "BAS")  # the zones of work that is not the authors'
EQUATION = "formula"  # the text of an <EQN/>
CROSS_REFERENCE = "1"  # the text of a <CREF/>: the source drops the number it points to
# AZ-CL's document-disjoint folds (benchmarks and training corpora agree on them): :func:`az_folds`
N_FOLDS, FOLD_SEED = 5, 0

_TOKEN = re.compile(r"<(/?)([A-Za-z][\w-]*)([^<>]*?)(/?)>|<!--.*?-->|<\?.*?\?>|([^<]+|<)", re.S)
_ATTR = re.compile(r"([\w-]+)\s*=\s*(?:'([^']*)'|\"([^\"]*)\"|(\S+))")
_SENTENCE_TAGS = {"S": True, "A-S": True, "EX-S": False}  # tag -> carries a zone
_SKIPPED = {"REFERENCES", "METADATA", "IMAGE"}

# Detokenisation: (pattern, replacement), applied in order to text whose tokens are single-spaced.
_DETOKENISE = [
    (re.compile(r"``\s*"), '"'),  # opening double quote
    (re.compile(r"\s*''"), '"'),
    (re.compile(r"(?<=\w) (?=n't\b)", re.I), ""),  # do n't -> don't
    (re.compile(r"(?<=[^\s(\[]) (?='(?:s|re|ve|ll|d|m)\b)", re.I), ""),  # we 're -> we're, John 's -> John's
    (re.compile(r"(?<=\S) (?=[,.;:!?%]+(?:\s|$|[\"')\]]))"), ""),  # word , -> word,  80 % -> 80%
    (re.compile(r"(?<=\w) (?=_ )|(?<=\w _) (?=\w)"), ""),  # lexical _ sign -> lexical_sign
    (re.compile(r"(?<=[(\[]) "), ""),  # ( x -> (x
    (re.compile(r" (?=[)\]])"), ""),  # x ) -> x)
]
_QUOTED = re.compile(r'"\s*([^"]*?)\s*"')
_OPEN, _CLOSE = "\ue000", "\ue001"  # around a citation while its sentence is detokenised


def detokenise(text: str) -> str:
    """Tokenised text (single tokens separated by spaces, as in AZ-CL and the
    Penn Treebank) as written text: ``"We do n't ( see Sect. 2 ) ."`` ->
    ``"We don't (see Sect. 2)."``; ```` `` x '' ```` -> ``"x"``."""
    text = " ".join(text.split())
    for pattern, repl in _DETOKENISE:
        text = pattern.sub(repl, text)
    text = _QUOTED.sub(lambda m: f'"{m.group(1)}"', text)
    return text.strip()


def coarse_labels(zone: Optional[str]) -> List[str]:
    """The acceptable coarse labels of a zone, the primary one first; ``[]``
    for TXT, an unknown zone or None."""
    return list(COARSE.get(zone or "", ()))


def own_work_labels(headings: Sequence[Optional[str]]) -> List[List[str]]:
    """The acceptable labels of an OWN sentence under each heading, its
    likelier one first: ``["result", "method"]`` under a results or
    conclusion heading (or a sub-heading of one: ``"4.2 Data"`` under
    ``"4 Experiments"``), else ``["method", "result"]``."""
    category: dict = {}
    out = []
    for heading in headings:
        if heading not in category:
            number = (heading or "").split(" ", 1)[0]
            found = rule_category(heading) if heading else None
            parent = next((category.get(h) for h in category if h and h.split(" ", 1)[0] == number.split(".")[0]), None)
            category[heading] = found or parent
        out.append(["result", "method"] if category[heading] in (RESULTS, CONCLUSION) else ["method", "result"])
    return out


def _attrs(text: str) -> dict:
    return {m.group(1).upper(): next(g for g in m.groups()[1:] if g is not None) for m in _ATTR.finditer(text)}


class _Sentence:
    __slots__ = ("pieces", "zone", "heading", "paragraph")

    def __init__(self, zone, heading, paragraph):
        self.pieces: List[Tuple[str, bool]] = []  # (detokenisable text, is a citation)
        self.zone, self.heading, self.paragraph = zone, heading, paragraph

    def text_and_citations(self) -> Tuple[str, List[Tuple[int, int]]]:
        """The detokenised text and its citations' character offsets (each
        citation detokenised as one word between two markers)."""
        raw = "".join(f" {_OPEN}{' '.join(p.split())}{_CLOSE} " if citation else p
                      for p, citation in self.pieces)
        text, cites, start = "", [], 0
        for char in detokenise(raw):
            if char == _OPEN:
                start = len(text)
            elif char == _CLOSE:
                if len(text) > start:
                    cites.append((start, len(text)))
            else:
                text += char
        return text, cites


class _Parse:
    """One pass over the tags and text of a file (see the module docstring)."""

    def __init__(self, path: Path, stats: ReadStats):
        self.path, self.stats = path, stats
        self.fileno: Optional[str] = None
        self.title: Optional[str] = None
        self.sentences: List[_Sentence] = []
        self.paper = False
        self.paragraph = 0
        self.in_abstract = False
        self.skipping: List[str] = []  # open elements whose content is left out
        self.meta: Optional[str] = None  # FILENO / TITLE being read
        self.meta_text = ""
        self.sentence: Optional[_Sentence] = None
        self.ref: Optional[str] = None  # open REF: "P" (parenthetical) or "A" (in the text)
        self.ref_text = ""
        self.header: Optional[str] = None  # header text being read
        # DIV numbering: the count of headed sections under the body and under each open DIV
        self.numbers: List[int] = [0]
        self.headings: List[Optional[str]] = []  # heading of each open DIV

    def run(self, text: str) -> None:
        for m in _TOKEN.finditer(text):
            close, name, attrs, empty, chars = m.groups()
            if name is None:
                if chars is not None:
                    self.chars(html.unescape(chars))
                continue
            name = name.upper()
            if close:
                self.end(name)
            else:
                self.start(name, _attrs(attrs))
                if empty:
                    self.end(name)

    # -- text --
    def chars(self, chars: str) -> None:
        if self.skipping:
            if self.meta:
                self.meta_text += chars
            return
        if self.header is not None:
            self.header += chars
        elif self.ref is not None:
            self.ref_text += chars
        elif self.sentence is not None:
            self.sentence.pieces.append((chars, False))
        elif chars.strip():
            self.stats.notes["text outside sentences left out"] += 1

    # -- tags --
    def start(self, name: str, attrs: dict) -> None:
        if name == "PAPER":
            self.paper = True
        elif name in _SKIPPED:
            self.skipping.append(name)
        elif name in ("FILENO", "TITLE") and self.skipping:
            self.meta, self.meta_text = name, ""
        elif self.skipping:
            return
        elif name == "ABSTRACT":
            self.in_abstract = True
        elif name == "DIV":
            self.headings.append(self.headings[-1] if self.headings else None)
            self.numbers.append(0)
        elif name == "HEADER":
            self.header = ""
        elif name == "P":
            self._close_sentence()
            self.paragraph += 1
        elif name in _SENTENCE_TAGS:
            self._close_sentence()  # an unclosed sentence ends where the next begins
            zone = attrs.get("AZ") if _SENTENCE_TAGS[name] else None
            if zone is not None and zone not in ZONES:
                raise ReaderError(self.path, None, f"sentence {attrs.get('ID')!r}: unknown zone {zone!r}", field="AZ")
            heading = ABSTRACT_HEADING if self.in_abstract else (self.headings[-1] if self.headings else None)
            self.sentence = _Sentence(zone, heading, 0 if self.in_abstract else self.paragraph)
        elif name in ("REF", "REFAUTHOR") and self.sentence is not None:
            self.ref = "P" if name == "REF" and (attrs.get("TYPE") or "").upper() == "P" else "A"
            self.ref_text = ""
        elif name == "EQN":
            self.chars(f" {EQUATION} ")
        elif name == "CREF":
            self.chars(f" {CROSS_REFERENCE} ")

    def end(self, name: str) -> None:
        if name in _SKIPPED:
            while self.skipping:  # forgiving: close up to the matching element
                if self.skipping.pop() == name:
                    break
            return
        if name in ("FILENO", "TITLE") and self.meta == name:
            value = " ".join(self.meta_text.split())
            if name == "FILENO":
                self.fileno = self.fileno or value or None
            else:
                self.title = self.title or detokenise(value) or None
            self.meta = None
            return
        if self.skipping:
            return
        if name == "ABSTRACT":
            self._close_sentence()
            self.in_abstract = False
        elif name == "HEADER" and self.header is not None:
            self._header(detokenise(self.header))
            self.header = None
        elif name == "DIV" and self.headings:
            self._close_sentence()
            self.headings.pop()
            self.numbers.pop()
        elif name in ("REF", "REFAUTHOR") and self.ref is not None:
            self._close_ref()
        elif name in _SENTENCE_TAGS or name in ("P", "BODY", "EXAMPLE", "PAPER"):
            self._close_sentence()

    def _header(self, title: str) -> None:
        """Number the open DIV's header by its place among its headed siblings."""
        if not title or not self.headings:
            return
        self.numbers[-2] += 1
        self.headings[-1] = ".".join(str(n) for n in self.numbers[:-1]) + " " + title

    def _close_ref(self) -> None:
        text = " ".join(self.ref_text.split())
        if text and self.sentence is not None:
            self.sentence.pieces.append((f"({text})" if self.ref == "P" else text, True))
        self.ref, self.ref_text = None, ""

    def _close_sentence(self) -> None:
        if self.ref is not None:
            self._close_ref()
        if self.sentence is not None:
            self.sentences.append(self.sentence)
            self.sentence = None


def parse_az(path: Union[str, Path], stats: Optional[ReadStats] = None,
             text: Optional[str] = None) -> Tuple[str, Optional[str], List[_Sentence]]:
    """(doc id, title, sentences) of one AZ ``.annot`` file (``text``: its
    content, else read from ``path`` as ISO-8859-1); a ReaderError naming
    the file when it is not one."""
    path = Path(path)
    stats = stats if stats is not None else ReadStats(name=str(path))
    if text is None:
        text = path.read_bytes().decode(ENCODING)
    parse = _Parse(path, stats)
    parse.run(text)
    parse._close_sentence()
    if not parse.paper:
        raise ReaderError(path, None, "not an AZ paper: no <PAPER> element")
    if not any(s.zone for s in parse.sentences):
        raise ReaderError(path, None, "no sentence with a zone (AZ attribute)", field="AZ")
    stem = path.name[: -len(SUFFIX)] if path.name.endswith(SUFFIX) else path.stem
    return parse.fileno or stem, parse.title, parse.sentences


def az_doc(nlp_or_vocab: Union[Language, Vocab], doc_id: str, title: Optional[str],
           sentences: List[_Sentence], stats: Optional[ReadStats] = None) -> Doc:
    """One Doc from :func:`parse_az`'s output (see the module docstring);
    empty sentences are left out (counted in ``stats``' notes)."""
    rows = []
    for sentence in sentences:
        text, cites = sentence.text_and_citations()
        if text:
            rows.append((sentence, text, cites))
        elif stats is not None:
            stats.notes["empty sentence left out"] += 1
    own = own_work_labels([s.heading for s, _, _ in rows])
    golds = [own[i] if s.zone == "OWN" else coarse_labels(s.zone) for i, (s, _, _) in enumerate(rows)]
    doc = doc_from_sentences(nlp_or_vocab, [t for _, t, _ in rows], labels=[g[0] if g else None for g in golds],
                             doc_id=doc_id)
    sents = list(doc.sents)
    extensions.set_span_values(doc, GOLD_LABELS, sents, [g or None for g in golds])
    extensions.set_span_values(doc, FINE_LABEL, sents, [s.zone for s, _, _ in rows])
    extensions.set_span_values(doc, HEADING, sents, [s.heading for s, _, _ in rows])
    extensions.set_span_values(doc, PARAGRAPH, sents, [s.paragraph for s, _, _ in rows])
    # where the tokenizer changed a sentence's text there are no offsets to trust
    set_citation_spans(doc, sents, [[(s, e, None) for s, e in cites] if sent.text == text else None
                                    for sent, (_, text, cites) in zip(sents, rows)])
    if title:
        extensions.set_doc_value(doc, extensions.TITLE, title)
    extensions.set_doc_value(doc, extensions.SOURCE, SOURCE_NAME)
    return doc


def az_folds(docs: Sequence[Doc], *, n_folds: int = N_FOLDS, seed: int = FOLD_SEED) -> List[str]:
    """Each paper's fold, ``"fold1"``..``"fold<n_folds>"``: the
    document-disjoint folds of their ids (``splits.doc_folds``, seeded)."""
    from .splits import doc_folds

    return doc_folds(docs, n_folds=n_folds, seed=seed)


def read_az(
    path: Union[str, Path],
    nlp_or_vocab: Union[Language, Vocab],
    *,
    limit: int = 0,
    errors: str = "skip",
    stats: Optional[ReadStats] = None,
) -> Iterator[Doc]:
    """Yield one Doc per AZ paper of ``path`` (an ``.annot`` file, or a
    folder read recursively), see the module docstring. A file that is not
    usable is skipped and counted (``errors="skip"``: its one-line reason in
    the summary) or raises a ReaderError naming it; ``limit`` > 0 stops
    after that many Docs."""
    check_errors_mode(errors)
    stats = stats if stats is not None else ReadStats(name=str(path))
    for file in suffix_files(path, SUFFIX):
        if limit > 0 and stats.docs >= limit:
            return
        stats.read += 1
        try:
            doc = az_doc(nlp_or_vocab, *parse_az(file, stats), stats=stats)
        except ReaderError as err:
            handle(err, errors, stats)
            continue
        except OSError as err:
            handle(ReaderError(file, None, f"cannot read: {err}"), errors, stats)
            continue
        stats.used += 1
        stats.docs += 1
        stats.sentences += sum(1 for _ in doc.sents)
        yield doc
