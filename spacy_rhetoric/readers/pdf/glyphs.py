"""PDF pages -> positioned glyphs, with one of two libraries (chosen by
measurement, benchmarks/pdf/bench_pdf.py):

* ``pdfium`` (default): pypdfium2, Google's PDFium (BSD-3 / Apache-2.0),
  a compiled engine: per character its box (``GetLooseCharBox``), baseline
  origin, font size and font name; the spaces PDFium generates between
  words are kept as a word-gap mark on the next glyph (a loose box can
  overhang the gap: italic "f"), its line breaks left out; a ligature it
  spells out in characters with one box is one glyph again;
* ``pdfminer``: pdfminer.six (MIT) without its layout analysis
  (``laparams=None``), form XObjects walked into.

Each character becomes a :class:`Glyph` (y measured from the top of the
page). Text drawn turned by its text matrix is read in the direction most of
a page's characters run (a landscape table or a page of text set at 90°:
its glyph boxes are turned upright, :class:`_Turn`); the glyphs turned
otherwise are left out (arXiv side stamps on an upright page). Ligatures are
normalised (NFKC of the ``U+FB00``–``U+FB06`` forms: "ﬁ" -> "fi"), unmapped
glyphs of TeX fonts without a Unicode map get their ASCII code when it is a
letter or digit, else are dropped. A file that cannot be read is a
:class:`PDFReadError` whose message is the one-line reason. A file whose
owner password forbids copying its text is read all the same, with one
warning per file on this module's logger (a policy of the file, not a lock:
PDFium and pdfminer.six open it without a password).
"""
import ctypes
import logging
import math
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Tuple

from ...errors import RhetoricError
from ..budget import check_budget

_CID = re.compile(r"^\(cid:(\d+)\)$")
_BOLD = re.compile(r"bold|black|heavy|semibold|demi|medi|-b$|\+cmbx|cmbx|\.b$|,bold", re.IGNORECASE)
_MATH = re.compile(r"cmmi|cmsy|cmex|msbm|math|symbol|mt2m|mt2s", re.IGNORECASE)
logger = logging.getLogger(__name__)
NO_COPY_NOTE = "the PDF's owner password forbids copying its text; read all the same (for analysis)"


@dataclass
class Glyph:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float
    base: float  # the baseline (y of the glyph origin, from the top of the page)
    size: float  # points, to 0.1
    bold: bool
    math: bool
    space: bool = False  # the engine saw a word gap before this glyph (PDFium's generated space)


@dataclass
class Rule:
    """A thin horizontal line drawn on the page."""
    x0: float
    x1: float
    y: float


@dataclass
class Page:
    number: int  # from 1
    width: float
    height: float
    glyphs: List[Glyph]
    rules: List[Rule]


class PDFReadError(Exception):
    """A PDF that cannot be read (the message is the one-line reason)."""


class _Turn:
    """Page coordinates (PDF space, y up) -> the coordinates of a page turned
    so that text drawn at ``degrees`` (counter-clockwise) runs left to right,
    y measured from the top: ``width`` and ``height`` are the turned page's."""

    def __init__(self, degrees: int, width: float, height: float):
        angle = math.radians(degrees)
        self.degrees = degrees
        self.cos, self.sin = math.cos(angle), math.sin(angle)
        xs, ys = zip(*(self._turn(x, y) for x in (0.0, width) for y in (0.0, height)))
        self.left, self.top = min(xs), max(ys)
        self.width, self.height = max(xs) - self.left, self.top - min(ys)

    def _turn(self, x: float, y: float) -> Tuple[float, float]:
        return x * self.cos + y * self.sin, y * self.cos - x * self.sin

    def point(self, x: float, y: float) -> Tuple[float, float]:
        """(x, y from the top) of a point."""
        tx, ty = self._turn(x, y)
        return tx - self.left, self.top - ty

    def box(self, left: float, bottom: float, right: float, top: float) -> Tuple[float, float, float, float]:
        """(x0, x1, top, bottom) of a box, y from the top."""
        xs, ys = zip(*(self.point(x, y) for x in (left, right) for y in (bottom, top)))
        return min(xs), max(xs), min(ys), max(ys)


def _degrees(angle: float) -> int:
    """A glyph's angle (radians) as whole degrees in [0, 360)."""
    return round(math.degrees(angle)) % 360


def _main_turn(by_turn: Dict[int, list]) -> int:
    """The direction most of a page's glyphs run in (upright on a tie)."""
    return max(by_turn, key=lambda d: (len(by_turn[d]), d == 0)) if by_turn else 0


def _normalise(text: str) -> str:
    if len(text) == 1 and " " < text < "\u02b0":
        return text  # Latin letters, digits, punctuation: as they are
    cid = _CID.match(text)
    if cid:
        # an unmapped glyph: TeX fonts without a ToUnicode map (math italic
        # letters) use ASCII codes for letters and digits; anything else is dropped
        code = int(cid.group(1))
        return chr(code) if 48 <= code <= 57 or 65 <= code <= 90 or 97 <= code <= 122 else ""
    if any("\ufb00" <= c <= "\ufb06" for c in text):
        text = unicodedata.normalize("NFKC", text)
    return text


def load_pages_pdfminer(path: Path, *, password: str = "") -> List[Page]:
    """Glyphs and rules of every page read with pdfminer.six (pure Python,
    slower than PDFium; kept as the alternative ``benchmarks/pdf/bench_pdf.py`` measures)."""
    from pdfminer.converter import PDFPageAggregator
    from pdfminer.layout import LTChar, LTCurve, LTFigure
    from pdfminer.pdfdocument import PDFDocument, PDFEncryptionError, PDFPasswordIncorrect
    from pdfminer.pdfinterp import PDFPageInterpreter, PDFResourceManager
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser, PDFSyntaxError
    from pdfminer.psexceptions import PSException

    def walk(objs, by_turn, out_rules, turns):
        for obj in objs:
            if isinstance(obj, LTChar):
                degrees = _degrees(math.atan2(obj.matrix[1], obj.matrix[0]))
                if degrees == 0 and not obj.upright:
                    continue  # mirrored or slanted
                text = _normalise(obj.get_text())
                if not text:
                    continue
                font = obj.fontname or ""
                turn = turns.setdefault(degrees, _Turn(degrees, *turns["size"]))
                x0, x1, top, bottom = turn.box(obj.x0, obj.y0, obj.x1, obj.y1)
                by_turn.setdefault(degrees, []).append(Glyph(
                    text, x0, x1, top, bottom, turn.point(obj.matrix[4], obj.matrix[5])[1], round(obj.size, 1),
                    bool(_BOLD.search(font)), bool(_MATH.search(font))))
            elif isinstance(obj, LTFigure):
                walk(obj, by_turn, out_rules, turns)
            elif isinstance(obj, LTCurve) and obj.height < 2 and obj.width > 10:
                height = turns["size"][1]
                out_rules.append(Rule(obj.x0, obj.x1, height - (obj.y0 + obj.y1) / 2))

    pages: List[Page] = []
    try:
        with open(path, "rb") as fileh:
            parser = PDFParser(fileh)
            document = PDFDocument(parser, password=password)
            if not document.is_extractable:
                logger.warning("%s: %s", path, NO_COPY_NOTE)
            manager = PDFResourceManager(caching=True)
            device = PDFPageAggregator(manager, laparams=None)
            interpreter = PDFPageInterpreter(manager, device)
            for number, pdf_page in enumerate(PDFPage.create_pages(document), 1):
                check_budget()
                interpreter.process_page(pdf_page)
                layout = device.get_result()
                by_turn: Dict[int, List[Glyph]] = {}
                rules: List[Rule] = []
                turns: dict = {"size": (layout.width, layout.height)}
                walk(layout, by_turn, rules, turns)
                main = _main_turn(by_turn)
                turn = turns.get(main) or _Turn(0, layout.width, layout.height)
                pages.append(Page(number, turn.width, turn.height, by_turn.get(main, []), rules if main == 0 else []))
    except (PDFReadError, RhetoricError):  # RhetoricError: the read budget (a ValueError)
        raise
    except (PDFPasswordIncorrect, PDFEncryptionError) as exc:
        raise PDFReadError(f"encrypted PDF (a password is needed): {type(exc).__name__}") from None
    except (PDFSyntaxError, PSException) as exc:
        raise PDFReadError(f"broken or truncated PDF: {exc or type(exc).__name__}") from None
    except (KeyError, ValueError, TypeError, AttributeError, IndexError, AssertionError) as exc:
        # pdfminer's answer to some damaged files (missing objects, bad streams)
        raise PDFReadError(f"broken or truncated PDF: {type(exc).__name__}: {exc}") from None
    return pages


def _truncated(path: Path) -> bool:
    with open(path, "rb") as fileh:
        fileh.seek(0, 2)
        fileh.seek(max(0, fileh.tell() - 1024))
        return b"%%EOF" not in fileh.read()


def _prototype(function, restype, *argtypes):
    """``function`` (a pypdfium2.raw function) called with plain C types."""
    return ctypes.CFUNCTYPE(restype, *argtypes)(ctypes.cast(function, ctypes.c_void_p).value)


def _open_pdfium(path: Path, password: str):
    """The pypdfium2 document (a PDFReadError saying why it cannot be
    opened), with a warning when its owner forbids copying its text."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    try:
        document = pdfium.PdfDocument(str(path), password=password or None)
    except pdfium.PdfiumError as exc:
        text = str(exc)
        if "password" in text.lower():
            raise PDFReadError("encrypted PDF (a password is needed)") from None
        if re.search(rb"/Count\s+0\b", Path(path).read_bytes()) and not re.search(rb"/Count\s+[1-9]",
                                                                                  Path(path).read_bytes()):
            raise PDFReadError("PDF has 0 pages") from None  # PDFium refuses a page tree without pages
        what = "truncated PDF (no %%EOF at its end)" if _truncated(path) else "broken PDF"
        raise PDFReadError(f"{what}: {text}") from None
    if raw.FPDF_GetSecurityHandlerRevision(document.raw) != -1 and not raw.FPDF_GetDocPermissions(document.raw) & 0x10:
        logger.warning("%s: %s", path, NO_COPY_NOTE)  # bit 5: copy or otherwise extract text
    return document


def load_pages_pdfium(path: Path, *, password: str = "") -> List[Page]:
    """Glyphs of every page read with PDFium (pypdfium2)."""
    import pypdfium2 as pdfium
    import pypdfium2.raw as raw

    document = _open_pdfium(path, password)
    pages: List[Page] = []
    # The per-character calls with plain C types (a text object as an address: faster than casting)
    text_object = _prototype(raw.FPDFText_GetTextObject, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
    unicode = _prototype(raw.FPDFText_GetUnicode, ctypes.c_uint, ctypes.c_void_p, ctypes.c_int)
    loose_box = _prototype(raw.FPDFText_GetLooseCharBox, ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p)
    rect = raw.FS_RECTF()
    rect_ref = ctypes.byref(rect)
    styles: Dict[str, tuple] = {}  # font name -> bold, math
    ox, oy = ctypes.c_double(), ctypes.c_double()
    name = ctypes.create_string_buffer(256)
    flags = ctypes.c_int()
    try:
        for number in range(1, len(document) + 1):
            check_budget()
            page = document[number - 1]
            width, height = page.get_size()
            if page.get_rotation() in (90, 270):  # the size as shown; glyph boxes are in the page's own space
                width, height = height, width
            textpage = page.get_textpage()
            handle = textpage.raw
            fonts: Dict[int, tuple] = {}  # per text object: bold, math, degrees turned, baseline offset, size
            by_turn: Dict[int, List[Glyph]] = {}  # degrees turned -> glyphs
            turns: Dict[int, _Turn] = {}
            gap = False
            count = raw.FPDFText_CountChars(handle)
            chars = textpage.get_text_range(0, count)  # one call; it gives U+FFFE for PDFium's code 2
            if len(chars) != count:  # characters beyond the BMP: one call a character
                chars = "".join(chr(unicode(handle, i)) for i in range(count))
            for i, char in enumerate(chars):
                if not i & 4095:
                    check_budget()
                code = ord(char)
                # PDFium marks a hyphen at a line end as U+0002 (U+FFFE in the text); other control codes
                # (its line breaks, unmapped glyphs) are nothing
                char = "-" if code in (2, 0xFFFE) else char if 32 <= code else ""
                if char.isspace() and raw.FPDFText_IsGenerated(handle, i):
                    gap = True
                    continue
                if not " " < char < "\u02b0":  # Latin letters, digits, punctuation are as they are
                    char = _normalise(char) if char and not (0xE000 <= code <= 0xF8FF) else ""
                    if not char:
                        continue
                text = char
                loose_box(handle, i, rect_ref)
                obj = text_object(handle, i) or 0
                font = fonts.get(obj)
                if font is None:
                    raw.FPDFText_GetFontInfo(handle, i, name, 256, ctypes.byref(flags))
                    fontname = name.value.decode("latin-1", "replace")
                    degrees = _degrees(-raw.FPDFText_GetCharAngle(handle, i))  # PDFium measures clockwise
                    raw.FPDFText_GetCharOrigin(handle, i, ctypes.byref(ox), ctypes.byref(oy))
                    style = styles.get(fontname)
                    if style is None:
                        style = styles[fontname] = (bool(_BOLD.search(fontname)), bool(_MATH.search(fontname)))
                    if degrees:
                        turn = turns.get(degrees) or turns.setdefault(degrees, _Turn(degrees, width, height))
                        offset = turn.box(rect.left, rect.bottom, rect.right, rect.top)[3] - turn.point(ox.value,
                                                                                                         oy.value)[1]
                    else:
                        offset = oy.value - rect.bottom
                    font = fonts[obj] = (style[0], style[1], degrees,
                                         offset,  # baseline above the box's bottom
                                         round(raw.FPDFText_GetFontSize(handle, i), 1))
                if font[2]:
                    x0, x1, top, bottom = turns[font[2]].box(rect.left, rect.bottom, rect.right, rect.top)
                else:
                    x0, x1, top, bottom = rect.left, rect.right, height - rect.top, height - rect.bottom
                glyphs = by_turn.get(font[2]) or by_turn.setdefault(font[2], [])
                last = glyphs[-1] if glyphs else None
                if last is not None and abs(last.x0 - x0) < 0.01 and abs(last.x1 - x1) < 0.01:
                    last.text += text  # PDFium spells a ligature out in characters with one box ("f", "i")
                    continue
                glyphs.append(Glyph(text, x0, x1, top, bottom, bottom - font[3], font[4], font[0], font[1], gap))
                gap = False
            textpage.close()
            page.close()
            main = _main_turn(by_turn)
            size = (turns[main].width, turns[main].height) if main else (width, height)
            pages.append(Page(number, *size, by_turn.get(main, []), []))
    except RhetoricError:  # the read budget (a ValueError)
        raise
    except (pdfium.PdfiumError, ValueError, OSError, ctypes.ArgumentError) as exc:
        raise PDFReadError(f"broken PDF: {type(exc).__name__}: {exc}") from None
    finally:
        document.close()
    return pages


BACKENDS: Dict[str, Callable[..., List[Page]]] = {"pdfium": load_pages_pdfium, "pdfminer": load_pages_pdfminer}


def load_pages(path: Path, *, backend: str = "pdfium", password: str = "") -> List[Page]:
    """Glyphs (and, with pdfminer, rules) of every page; :class:`PDFReadError`
    for a file that is not a readable PDF (its message says why)."""
    if backend not in BACKENDS:
        raise RhetoricError(f"PDF backend must be one of {sorted(BACKENDS)}, got {backend!r}")
    return BACKENDS[backend](path, password=password)
