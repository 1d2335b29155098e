"""Positioned glyphs (``glyphs``) -> text lines in reading order.

* :func:`page_lines` groups the glyphs of one page into :class:`Line` s:
  glyphs follow each other in content-stream order while they stay on the
  same baseline and move right; a gap wider than :data:`SEGMENT_GAP` ems
  splits a line into segments (two columns, table cells), and segments on
  the same baseline in the same column are rejoined afterwards (keeping the
  cells between wide gaps: table rows). Words are spaced from glyph
  positions: a gap wider than :data:`WORD_GAP` ems is a space, whether or not
  the file has a space character there. Raised small digits and symbols
  (footnote marks) are dropped; spacing accents drawn over a letter are put
  on it ("Erd˝os" -> "Erdős").
* :func:`order_lines` finds the two columns of a page (the gutter between
  the left column's right edge and the right column's left edge) and sorts
  lines in reading order: full-width lines (title block, wide floats, page
  number) cut the page into bands, and inside a band the left column is read
  before the right one.

Everything about what a line *is* (heading, caption, footnote...) is in
``structure``.
"""
import unicodedata
from bisect import bisect_left
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterable, List, Optional, Tuple

from .glyphs import Glyph, Page

WORD_GAP = 0.13  # ems: a wider gap between two glyphs is a space
SEGMENT_GAP = 0.9  # ems: a wider gap splits a line into segments (columns, table cells)
_MARKS = set("0123456789*†‡§¶∗,#")


@dataclass
class Line:
    page: int
    glyphs: List[Glyph]
    text: str = ""
    gaps: int = 0  # gaps wider than SEGMENT_GAP inside the line (table rows)
    cells: List[str] = field(default_factory=list)  # the text between those gaps
    column: int = 0  # 0 full width, 1 left, 2 right (order_lines)
    kind: str = ""  # set by structure
    tags: dict = field(default_factory=dict)

    @cached_property
    def x0(self) -> float:
        return min(g.x0 for g in self.glyphs if g.text.strip())

    @cached_property
    def x1(self) -> float:
        return max(g.x1 for g in self.glyphs if g.text.strip())

    @cached_property
    def base(self) -> float:
        """The baseline most of the line's letters sit on."""
        size = self.size
        values = sorted(g.base for g in self.glyphs if abs(g.size - size) < 0.5)
        if not values:
            return 0.0
        mid = len(values) // 2
        return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2  # the median

    def reset(self) -> None:
        """Forget the cached measures (after glyphs were added)."""
        for name in ("x0", "x1", "base", "size", "bold", "math"):
            self.__dict__.pop(name, None)

    @property
    def top(self) -> float:
        return self.base - 0.75 * self.size

    @property
    def bottom(self) -> float:
        return self.base + 0.25 * self.size

    @cached_property
    def size(self) -> float:
        """The size most of the line's letters have."""
        sizes = [g.size for g in self.glyphs if g.text.strip()] or [self.glyphs[0].size]
        return max(set(sizes), key=sizes.count)

    @cached_property
    def bold(self) -> float:
        """Share of the line's letters in a bold font."""
        letters = [g for g in self.glyphs if g.text.isalnum()] or self.glyphs
        return sum(g.bold for g in letters) / len(letters)

    @cached_property
    def math(self) -> float:
        letters = [g for g in self.glyphs if g.text.strip()] or self.glyphs
        return sum(g.math for g in letters) / len(letters)


# --------------------------------------------------------------------------
# Glyphs -> lines


def _same_line(line: List[Glyph], g: Glyph) -> bool:
    last = line[-1]
    size = max(g.size, last.size)
    if g.x0 < last.x1 - 0.3 * size or g.x0 - last.x1 > SEGMENT_GAP * size:
        return False
    return abs(g.base - line[0].base) < 0.45 * size


def _is_mark(g: Glyph, main: Glyph) -> bool:
    """A raised small digit or symbol (footnote mark, affiliation mark)."""
    return (g.size < 0.85 * main.size and g.base < main.base - 0.2 * main.size
            and all(c in _MARKS for c in g.text))


# Accents that TeX draws over a letter as a glyph of their own ("Erd˝os"; PDFium
# gives the combining mark, out of order).
_ACCENTS = {**{chr(c): chr(c) for c in range(0x300, 0x370)},  # combining marks as such
            "\u02dd": "\u030b", "\u00a8": "\u0308", "\u00b4": "\u0301", "`": "\u0300", "\u02c6": "\u0302",
            "\u02dc": "\u0303", "\u00b8": "\u0327", "\u02da": "\u030a", "\u02c7": "\u030c",
            "\u02d8": "\u0306", "\u00af": "\u0304", "\u02d9": "\u0307"}


def _compose_accents(glyphs: List[Glyph]) -> List[Glyph]:
    """Put a spacing accent drawn over its letter onto the letter (NFC)."""
    out: List[Glyph] = []
    pending: Optional[Glyph] = None
    for g in glyphs:
        if g.text in _ACCENTS:
            if out and out[-1].text.isalpha() and g.x0 < out[-1].x1 - 0.1 * g.size:
                out[-1].text = unicodedata.normalize("NFC", out[-1].text + _ACCENTS[g.text])
            else:
                pending = g
            continue
        if pending is not None:
            if g.text.isalpha() and g.x0 < pending.x1:
                g.text = unicodedata.normalize("NFC", g.text + _ACCENTS[pending.text])
            else:
                out.append(pending)
            pending = None
        out.append(g)
    if pending is not None:
        out.append(pending)
    return out


def _segments(glyphs: Iterable[Glyph]) -> List[List[Glyph]]:
    segments: List[List[Glyph]] = []
    for g in glyphs:
        if not g.text.strip():
            if segments and _same_line(segments[-1], g):
                segments[-1].append(g)  # an explicit space: a word break
            continue
        if segments and _same_line(segments[-1], g):
            segments[-1].append(g)
        else:
            segments.append([g])
    out = []
    for seg in segments:
        while seg and not seg[-1].text.strip():
            seg.pop()
        if seg:
            out.append(seg)
    return out


def line_text(glyphs: List[Glyph]) -> Tuple[str, List[str]]:
    """Text of glyphs on one line, spaced from their positions, and its
    cells (the pieces between gaps wider than SEGMENT_GAP ems)."""
    main = max(glyphs, key=lambda g: g.size)
    parts: List[str] = []
    cuts: List[int] = []
    prev: Optional[Glyph] = None
    for g in glyphs:
        if not g.text.strip():
            if parts and parts[-1] != " ":
                parts.append(" ")
            continue
        if g is not main and _is_mark(g, main):
            continue
        if prev is not None:
            gap = g.x0 - prev.x1
            size = max(g.size, prev.size)
            if gap > SEGMENT_GAP * size:
                cuts.append(len(parts))
            if (gap > WORD_GAP * size or g.space) and parts and parts[-1] != " ":
                parts.append(" ")
        parts.append(g.text)
        prev = g
    bounds = [0] + cuts + [len(parts)]
    cells = ["".join(parts[a:b]).strip() for a, b in zip(bounds, bounds[1:])]
    return "".join(parts).strip(), [c for c in cells if c]


LINE_NUMBERS = 10  # digit-only segments at one x, at least this many on a page: line numbers


def page_lines(page: Page) -> List[Line]:
    """Lines of one page (unordered segments rejoined per column by
    :func:`order_lines`), without the line numbers of review copies (a
    column of digit-only segments at one x, :data:`LINE_NUMBERS` or more)."""
    segments = _segments(page.glyphs)
    numbers: dict = {}
    for i, seg in enumerate(segments):
        if len(seg) <= 4 and all(g.text.isdigit() for g in seg):
            numbers.setdefault(round(seg[0].x0 / 4), []).append(i)
    drop = {i for column in numbers.values() if len(column) >= LINE_NUMBERS for i in column}
    return [Line(page.number, seg) for i, seg in enumerate(segments) if i not in drop]


# --------------------------------------------------------------------------
# Columns and reading order


def column_split(lines: List[Line], width: float) -> Optional[float]:
    """x of the gutter of a two-column page, None for one column."""
    wide = [ln for ln in lines if ln.x1 - ln.x0 > 0.2 * width and not all(g.text.isdigit() for g in ln.glyphs)]
    if len(wide) < 4:
        return None
    mid = width / 2
    left = sorted(ln.x1 for ln in wide if ln.x1 < mid + 0.04 * width)
    right = sorted(ln.x0 for ln in wide if ln.x0 > mid - 0.04 * width)
    if len(left) < 2 or len(right) < 2:
        return None
    left_edge = left[int(0.9 * (len(left) - 1))]
    right_edge = right[int(0.1 * (len(right) - 1))]
    if right_edge <= left_edge:
        return None
    return (left_edge + right_edge) / 2


def _merge_rows(lines: List[Line]) -> List[Line]:
    """Rejoin segments on the same baseline in the same column (a heading's
    number and text, table cells, text around an inline formula)."""
    lines = sorted(lines, key=lambda ln: (ln.column, ln.base))
    out: List[Line] = []
    for ln in lines:
        if out:
            prev = out[-1]
            size = min(prev.size, ln.size)
            if prev.column == ln.column and abs(prev.base - ln.base) < 0.35 * size:
                prev.glyphs.extend(ln.glyphs)
                prev.reset()
                continue
        out.append(ln)
    return out


def order_lines(page: Page) -> List[Line]:
    """The page's lines in reading order, each with its text, gaps and
    column (see the module docstring)."""
    lines = page_lines(page)
    split = column_split(lines, page.width)
    if split is not None:
        for ln in lines:
            size = ln.size
            ln.column = 1 if ln.x1 <= split + 0.2 * size else 2 if ln.x0 >= split - 0.2 * size else 0
    lines = _merge_rows(lines)
    for ln in lines:
        ln.glyphs = _compose_accents(sorted(ln.glyphs, key=lambda g: g.x0))
        ln.reset()
        ln.text, ln.cells = line_text(ln.glyphs)
        ln.gaps = len(ln.cells) - 1
    lines = [ln for ln in lines if ln.text]
    full = sorted((ln for ln in lines if ln.column == 0), key=lambda ln: ln.top)
    tops = [ln.top for ln in full]

    def key(ln: Line):
        band = bisect_left(tops, ln.top)  # the full-width lines above (tops is sorted)
        if ln.column == 0:
            return (band, 2, 0, ln.top, ln.x0)
        return (band, 1, ln.column, ln.top, ln.x0)

    return sorted(lines, key=key)
