"""Ordered PDF lines -> the paper model of ``fulltext`` (title, abstract,
numbered headings, body paragraphs, back matter).

What each line is, decided from font size and weight, position and text:

* ``margin``: above or below the text block of the paper (the highest and
  lowest body-size lines wider than half a column), unless bold or large:
  running headers and footers, page numbers, the first page's venue and
  copyright lines;
  digit-only lines outside the columns (line numbers of review copies);
* ``title`` (page 1, the largest font in its top half) and ``front``
  (authors, affiliations: page 1 before the abstract or first heading);
* ``heading``: bold or larger than the body font, short, on a line of its
  own: a numbered heading ("2.1 Node Types"; letters "A", "A.1" after the
  references), or a usual unnumbered one ("Abstract", "Acknowledgments",
  "References"), or any other short bold line (a paragraph heading);
* ``caption``: a line starting "Figure 3:" / "Table 2." / "Fig. 1" and the
  lines that follow it closely in the same column;
* ``table``: lines with wide gaps (cells) and the lines packed between them;
* ``formula``: lines mostly in math fonts;
* ``note``: anything smaller than the body font outside the abstract and the
  references (footnotes, figure labels, table cells in a small font);
* ``body``: the rest.

Body lines become paragraphs: a new paragraph after a heading, at an
indented line after a short one, or after a vertical gap; a paragraph goes
on across columns and pages (floats, footnotes and page furniture in
between are skipped). Citations found by pattern ("(Ammar et al., 2018)",
"Peters et al. (2017)", "[3, 5]") become the paragraph's citation spans
(no sentence starts inside one; ``doc.spans["citations"]``, no target).
Lines are joined with a space, a hyphen at a line end
is dropped ("litera-" + "ture") unless the hyphenated word is written with
its hyphen elsewhere in the paper ("co-" + "authors" where "co-authors"
occurs). The references become one paragraph per entry (hanging indent),
each one sentence, under the heading "References"; acknowledgements and
appendices keep their headings: the section tagger's back-matter rules make
every sentence from the acknowledgements on ``other``.
"""
import re
from collections import Counter
from statistics import median
from typing import Dict, List, Optional, Tuple

from ..budget import check_budget
from ..fulltext import ABSTRACT, CITATION, Paper, Paragraph, heading_text, norm_space
from .layout import Line, Page, order_lines

_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+(\S.*)$")
_LETTERED = re.compile(r"^([A-H](?:\.\d{1,2}){0,3})\.?\s+(\S.*)$")
_ROMAN = re.compile(r"^([IVX]{1,4})\.\s+(\S.*)$")
_NAMED = re.compile(
    r"^(abstract|acknowledge?ments?|references|bibliography|appendix|appendices|"
    r"supplementary material|limitations|ethics statement|ethical considerations|broader impact)\b",
    re.IGNORECASE)
_RUN_IN_ABSTRACT = re.compile(r"^abstract\s*[—–:.-]\s*(?=\S)", re.IGNORECASE)
_BACK = re.compile(r"^(acknowledge?ments?|funding)\b", re.IGNORECASE)
_REFS = re.compile(r"^(references|bibliography|literature cited)\s*$", re.IGNORECASE)
_CAPTION = re.compile(r"^(figure|fig\.|table|tab\.|algorithm|listing)\s*[0-9IVX]+[a-z]?\s*[:.|]", re.IGNORECASE)
_END = re.compile(r"[.?!:;]['\")\]”’]*$")
_TAIL = 64  # characters: the end of a joined paragraph that the next line's join looks at
_WORD_HYPHEN = re.compile(r"(?<!\w)(\w{1,%d})-$" % (_TAIL - 1))  # bounded: no backtracking over a long word
_FIRST_WORD = re.compile(r"\w{1,%d}" % _TAIL)
_COMPOUND = re.compile(r"(?<!\w)\w{1,%d}(?:-\w{1,%d})+" % (_TAIL, _TAIL))  # "co-authors" (bounded pieces)


def _mode(values, default: float) -> float:
    values = list(values)
    return Counter(values).most_common(1)[0][0] if values else default


def _edges(lines: List[Line]) -> Tuple[float, float]:
    """The left and right edge of a column's lines (10th percentile of their
    left ends, 80th of their right ends)."""
    return (sorted(ln.x0 for ln in lines)[int(0.1 * (len(lines) - 1))],
            sorted(ln.x1 for ln in lines)[int(0.8 * (len(lines) - 1))])


class _Geometry:
    """Body font size, text block and column edges of one paper."""

    def __init__(self, pages: List[Page], lines: List[List[Line]]):
        sizes = Counter()
        for page in pages:
            for g in page.glyphs:
                if g.text.isalnum():
                    sizes[g.size] += 1
        self.size = sizes.most_common(1)[0][0] if sizes else 10.0
        body = [ln for page_lines in lines for ln in page_lines if self.is_body_size(ln)]
        self.left: Dict[Tuple[int, int], float] = {}
        self.right: Dict[Tuple[int, int], float] = {}
        for column in (0, 1, 2):
            col = [ln for ln in body if ln.column == column]
            if not col:
                continue
            width = median(ln.x1 - ln.x0 for ln in col)
            wide = [ln for ln in col if ln.x1 - ln.x0 > 0.7 * width] or col
            by_page: Dict[int, List[Line]] = {}
            for ln in wide:
                by_page.setdefault(ln.page, []).append(ln)
            edges = _edges(wide)  # a page with fewer than 5 such lines takes the paper's
            for page in pages:
                on_page = by_page.get(page.number, [])
                self.left[(page.number, column)], self.right[(page.number, column)] = \
                    _edges(on_page) if len(on_page) >= 5 else edges
        widths = [ln.x1 - ln.x0 for ln in body]
        half = 0.5 * median(widths) if widths else 0.0
        wide = [ln for ln in body if ln.x1 - ln.x0 > half and not ln.text.isdigit()]
        self.top = min((ln.top for ln in wide), default=0.0)
        self.bottom = max((ln.bottom for ln in wide), default=1e9)

    def is_body_size(self, line: Line) -> bool:
        return abs(line.size - self.size) <= 0.08 * self.size

    def col_left(self, line: Line) -> float:
        return self.left.get((line.page, line.column), line.x0)

    def col_right(self, line: Line) -> float:
        return self.right.get((line.page, line.column), line.x1)

    def is_margin(self, line: Line) -> bool:
        outside = line.bottom < self.top - 1 or line.top > self.bottom + 1
        if outside and (line.text.isdigit() or line.bold < 0.8 and line.size < 1.08 * self.size):
            return True  # a bold or large line above the text block: a title or a heading
        # line numbers of review copies: digits outside the text columns
        return line.text.isdigit() and (line.x1 < self.col_left(line) - 2 or line.column == 0 and len(line.text) < 4
                                        and line.x1 - line.x0 < self.size * 2)


def _heading(line: Line, geo: _Geometry, after_refs: bool) -> Optional[Tuple[Optional[str], str]]:
    """(number, title) when ``line`` is a heading."""
    text = line.text.strip()
    if not (line.bold >= 0.8 or line.size >= 1.08 * geo.size) or line.size < 0.9 * geo.size:
        return None
    if len(text.split()) > 14 or len(text) < 2:
        return None
    for pattern in (_NUMBERED, _ROMAN) + ((_LETTERED,) if after_refs else ()):
        match = pattern.match(text)
        if match and match.group(2)[:1].isupper() and not text.endswith((".", ",")):
            return match.group(1), match.group(2)
    if _NAMED.match(text) and len(text.split()) <= 4:
        return None, text.rstrip(".:")
    if text.endswith((".", ",", ":")) or not text[:1].isupper() or any(c.isdigit() for c in text[:1]):
        return None
    return None, text


_NUMERIC_CELL = re.compile(r"^[^A-Za-z]*\d[^A-Za-z]*$|^[A-Za-z]{0,3}\d[\w.%]*$")


def _is_table_row(line: Line) -> bool:
    """Cells apart with wide gaps, short or numeric (a justified line of text
    has long pieces)."""
    if line.gaps < 1 or line.gaps == 1 and (_NUMBERED.match(line.text) or line.bold >= 0.8):
        return False
    cells = line.cells
    if any(_NUMERIC_CELL.match(c) for c in cells):
        return True
    return sum(len(c) for c in cells) / len(cells) < 16


def _plain_kind(line: Line, geo: "_Geometry") -> str:
    if line.math > 0.5 and line.x0 > geo.col_left(line) + 1.5 * geo.size:
        return "formula"
    return "note" if line.size < 0.9 * geo.size else "body"


def _column_neighbours(lines: List[Line]) -> List[Tuple[Optional[Line], Optional[Line]]]:
    """(the line before, the line after) each line in its column, found in
    one pass each way."""
    before: List[Optional[Line]] = []
    last: Dict[int, Line] = {}
    for line in lines:
        before.append(last.get(line.column))
        last[line.column] = line
    after: List[Optional[Line]] = []
    last = {}
    for line in reversed(lines):
        after.append(last.get(line.column))
        last[line.column] = line
    return list(zip(before, reversed(after)))


def _classify(lines: List[Line], geo: _Geometry, page_no: int) -> None:
    """Set ``line.kind`` on the lines of one page (module docstring)."""
    caption_open: Optional[Line] = None
    for i, line in enumerate(lines):
        text = line.text
        if geo.is_margin(line):
            line.kind = "margin"
            continue
        if _CAPTION.match(text):
            line.kind = "caption"
            caption_open = line
            continue
        if caption_open is not None:
            near = (line.column == caption_open.column and 0 < line.top - caption_open.top < 1.6 * line.size
                    and abs(line.size - caption_open.size) < 0.5)
            if near:
                line.kind = "caption"
                caption_open = line
                continue
            caption_open = None
        line.kind = "table" if _is_table_row(line) else _plain_kind(line, geo)
    # a row with one wide gap and no table or caption next to it is a
    # justified line of text ("m2 -> m1." after an arrow, "min_count=3,   alpha=0.025,")
    neighbours = _column_neighbours(lines)
    for line, pair in zip(lines, neighbours):
        if line.kind != "table" or line.gaps != 1:
            continue
        near = [ln for ln in pair if ln is not None and abs(ln.base - line.base) < 2.5 * line.size]
        if not any(ln.kind in ("table", "caption") for ln in near):
            line.kind = _plain_kind(line, geo)
    # a body line between two table lines of the same column is a table row too
    for line, (prev, nxt) in zip(lines, neighbours):
        if line.kind != "body" or line.gaps == 0 and len(line.text.split()) > 6:
            continue
        if prev is not None and nxt is not None and prev.kind == "table" and nxt.kind == "table":
            line.kind = "table"


class _Builder:
    def __init__(self, geo: _Geometry, words: set):
        self.geo = geo
        self.words = words
        self.paragraphs: List[Paragraph] = []
        self.headings: List[Optional[str]] = []
        self.lines: List[Line] = []
        self.heading: Optional[str] = None
        self.references = False

    def flush(self) -> None:
        if not self.lines:
            return
        text = self.join(self.lines)
        if text:
            if self.references:
                self.paragraphs.append(Paragraph(text=text, heading=self.heading, sentences=[(0, len(text))]))
            else:
                cites = [(m.start(), m.end(), "") for m in CITATION.finditer(text)]
                self.paragraphs.append(Paragraph(text=text, heading=self.heading, citations=cites))
        self.lines = []

    def join(self, lines: List[Line]) -> str:
        """The lines' text joined (module docstring), in time linear in the
        paragraph's length: only the last characters joined so far are
        looked at (a word longer than :data:`_TAIL` is no word to rejoin)."""
        parts: List[str] = []
        tail = ""  # the last _TAIL characters of "".join(parts)
        for line in lines:
            text = line.text.strip()
            if not text:
                continue
            if not parts:
                parts.append(text)
                tail = text[-_TAIL:]
                continue
            match = _WORD_HYPHEN.search(tail)
            if match and text[:1].isalpha() and len(match.group(1)) > 1:
                first = _FIRST_WORD.match(text)
                compound = f"{match.group(1)}-{first.group(0) if first else ''}".lower()
                if compound in self.words or (text[:1].isupper() and match.group(1)[-1:].islower()):
                    piece = text
                else:
                    parts[-1] = parts[-1][:-1]
                    tail = tail[:-1]
                    piece = text
            else:
                piece = " " + text
            parts.append(piece)
            tail = (tail + piece)[-_TAIL:] if len(piece) < _TAIL else piece[-_TAIL:]
        return norm_space("".join(parts))

    def start(self, heading: Optional[str]) -> None:
        self.flush()
        self.heading = heading

    def add(self, line: Line, prev: Optional[Line]) -> None:
        if self.lines and self.new_paragraph(line, prev):
            self.flush()
        self.lines.append(line)

    def new_paragraph(self, line: Line, prev: Optional[Line]) -> bool:
        geo = self.geo
        if prev is None:
            return True
        size = geo.size
        if self.references:
            return line.x0 <= geo.col_left(line) + 0.4 * size and prev.x0 > geo.col_left(prev) + 0.4 * size \
                or line.x0 <= geo.col_left(line) + 0.4 * size and prev.x1 < geo.col_right(prev) - 3 * size
        same_column = prev.page == line.page and prev.column == line.column
        # indented against the line before (the abstract is narrower than its column)
        indented = line.x0 > (prev.x0 if same_column else geo.col_left(line)) + 0.5 * size
        prev_short = prev.x1 < geo.col_right(prev) - 1.2 * size
        if indented and (prev_short or _END.search(prev.text)):
            return True
        if same_column and line.top - prev.top > 2.0 * max(line.size, prev.size) and _END.search(prev.text):
            return True
        return False


def _title(lines: List[Line], page: Page) -> Tuple[Optional[str], List[Line]]:
    """The title of page 1: the lines of the largest font in its top half."""
    top = [ln for ln in lines if ln.top < page.height / 2 and ln.kind != "margin" and re.search(r"[A-Za-z]{2}", ln.text)]
    if not top:
        return None, []
    biggest = max(ln.size for ln in top)
    chosen = [ln for ln in top if ln.size >= biggest - 0.2]
    if len(chosen) > 4:
        return None, []
    return norm_space(" ".join(ln.text for ln in chosen)), chosen


def classify_lines(pages: List[Page]) -> Tuple[List[List[Line]], "_Geometry"]:
    """Each page's lines in reading order with their ``kind`` set (module
    docstring), and the paper's geometry."""
    lines = []
    for page in pages:
        check_budget()
        lines.append(order_lines(page))
    geo = _Geometry(pages, lines)
    for page, page_lines in zip(pages, lines):
        check_budget()
        _classify(page_lines, geo, page.number)
    return lines, geo


def build_paper(pages: List[Page], doc_id: str) -> Paper:
    lines, geo = classify_lines(pages)
    words = set()
    for page_lines in lines:
        for line in page_lines:
            words.update(w.lower() for w in _COMPOUND.findall(line.text))
    title, title_lines = _title(lines[0], pages[0]) if lines else (None, [])
    has_headings = any(_heading(ln, geo, False) for page_lines in lines for ln in page_lines
                       if ln.kind == "body")
    builder = _Builder(geo, words)
    mode = "front" if has_headings else "body"
    after_refs = False
    prev: Optional[Line] = None
    for page_lines in lines:
        check_budget()
        if mode == "front" and page_lines is not lines[0]:
            mode = "body"  # no heading on the first page: the rest is text
        for line in page_lines:
            if line in title_lines or line.kind == "margin":
                continue
            run_in = _RUN_IN_ABSTRACT.match(line.text) if mode == "front" and line.kind == "body" else None
            if run_in:  # "Abstract—We ..." (IEEE), "Abstract. We ..." (Springer)
                mode = "abstract"
                builder.start(ABSTRACT)
                line.text = line.text[run_in.end():]
                builder.add(line, None)
                prev = line
                continue
            found = _heading(line, geo, after_refs) if line.kind == "body" else None
            if found is not None:
                number, name = found
                if mode == "front" and page_lines is lines[0] and number is None and not _NAMED.match(name):
                    continue  # authors in bold
                raw = heading_text(number, name)
                if number is None and name.lower() == "abstract":
                    mode = "abstract"
                    builder.start(ABSTRACT)
                    builder.references = False
                elif _REFS.match(name):
                    mode = "references"
                    after_refs = True
                    builder.start("References")
                    builder.references = True
                else:
                    if mode == "references" and number is None and not _NAMED.match(name):
                        # a bold line inside the references is no heading
                        builder.add(line, prev)
                        prev = line
                        continue
                    mode = "back" if (_BACK.match(name) or after_refs) else "body"
                    builder.start(raw)
                    builder.references = False
                    builder.headings.append(raw)
                prev = None
                continue
            if mode == "front":
                continue
            if mode == "abstract":
                if line.kind in ("caption", "table", "formula"):
                    continue
            elif mode == "references":
                # entries are in a small font and their justified lines can look like table rows
                if line.kind == "caption" or line.kind == "note" and line.size < 0.7 * geo.size:
                    continue
            elif line.kind != "body":
                continue
            builder.add(line, prev)
            prev = line
    builder.flush()
    return Paper(doc_id=doc_id, title=title, paragraphs=builder.paragraphs, headings=builder.headings)
