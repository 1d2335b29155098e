"""PDF papers (born-digital, with a text layer): one :class:`Paper` per file,
the same shape the GROBID TEI reader gives.

* ``glyphs``: the characters of each page with their boxes, baselines,
  sizes and fonts, from PDFium (pypdfium2, the default) or pdfminer.six
  (``backend="pdfminer"``), ligatures normalised;
* ``layout``: glyphs -> spaced lines in reading order (two columns, across
  pages);
* ``structure``: lines -> title, abstract, numbered headings, body
  paragraphs (headers, footers, page and line numbers, footnotes, captions,
  tables and formulas left out), references and acknowledgements as back
  matter;
* ``grobid``: the same file through a GROBID server instead
  (``--grobid URL``), read with the TEI reader.

A file that is not a usable PDF is a :class:`ReaderError` with a one-line
reason: not a PDF, broken or truncated, encrypted, 0 pages, no text layer
(a scan: run OCR first).
"""
from pathlib import Path

from ..common import ReaderError
from ..fulltext import Paper, doc_id_from_path
from .glyphs import PDFReadError, load_pages
from .structure import build_paper

PDF_MAGIC = b"%PDF-"


def is_pdf(head: bytes) -> bool:
    """True when the first bytes of a file are a PDF header (allowing the
    junk before ``%PDF-`` that readers accept in the first 1024 bytes)."""
    return PDF_MAGIC in head[:1024]


def parse_pdf(path: Path, *, backend: str = "pdfium") -> Paper:
    path = Path(path)
    with open(path, "rb") as fileh:
        head = fileh.read(1024)
    if not is_pdf(head):
        raise ReaderError(path, None, "not a PDF: no %PDF- header")
    try:
        pages = load_pages(path, backend=backend)
    except PDFReadError as exc:
        raise ReaderError(path, None, str(exc)) from None
    if not pages:
        raise ReaderError(path, None, "PDF has 0 pages")
    if not any(g.text.strip() for page in pages for g in page.glyphs):
        raise ReaderError(path, None, f"no text layer in {len(pages)} page(s) (a scanned PDF? run OCR first)")
    return build_paper(pages, doc_id_from_path(path))
