"""S2ORC / doc2json JSON, one paper per file, in the four layouts of the
samples (see ``../shared/data/paper-formats/README.md``):

=================  ==============================  ==========================
layout             paragraphs                      title
=================  ==============================  ==========================
doc2json           ``pdf_parse.body_text``         ``title``
2019-09-28         ``grobid_parse.body_text``      ``metadata.title``
                   (else ``latex_parse``)
2020-07-05         ``body_text``                   none
2021-01-01         ``body_text``                   ``metadata.title``
=================  ==============================  ==========================

The abstract is the layout's ``abstract`` paragraph list (or, when there is
none, an ``abstract`` string), heading ``"Abstract"``; ``back_matter`` is
left out. A paragraph's heading is ``sec_num`` + ``section`` ("2.1 Node
Types"); an empty or null ``section`` gives no heading. Every paragraph with
text is kept (S2ORC does not mark formulas or footnotes). ``cite_spans``
(character offsets into the paragraph's text) are the citations, ``ref_id``
(``BIBREF12``, or null) their ``kb_id_``. No sentence segmentation.
"""
from pathlib import Path
from typing import Any, Dict, List, Optional

import srsly

from .common import ReaderError
from .fulltext import ABSTRACT, Paper, Paragraph, doc_id_from_path, heading_text
from .text import read_text_file

S2ORC_KEYS = ("pdf_parse", "grobid_parse", "latex_parse", "body_text")


def load_json(path: Path) -> Any:
    text = read_text_file(path)
    try:
        return srsly.json_loads(text)
    except ValueError as exc:
        raise ReaderError(path, None, f"invalid JSON: {exc}") from None


def _parse_part(record: Dict[str, Any], path: Path) -> tuple:
    """``(container, name)`` holding ``body_text`` in this layout."""
    for key in ("pdf_parse", "grobid_parse", "latex_parse"):
        part = record.get(key)
        if isinstance(part, dict) and "body_text" in part:
            return part, f"{key}."
    if "body_text" in record:
        return record, ""
    raise ReaderError(path, None, "not S2ORC JSON: no body_text (top level, pdf_parse or grobid_parse)",
                      field="body_text")


def _paragraph(item: Any, where: str, path: Path, heading: Optional[str] = None) -> Paragraph:
    if not isinstance(item, dict):
        raise ReaderError(path, None, f"expected an object, got {type(item).__name__}", field=where)
    text = item.get("text")
    if not isinstance(text, str):
        raise ReaderError(path, None, "missing or non-string field", field=f"{where}.text")
    if heading is None:
        section = item.get("section")
        heading = heading_text(str(item.get("sec_num") or ""), section if isinstance(section, str) else None)
    cites = []
    for j, cite in enumerate(item.get("cite_spans") or []):
        try:
            start, end = int(cite["start"]), int(cite["end"])
        except (KeyError, TypeError, ValueError):
            raise ReaderError(path, None, "cite span without integer start/end",
                              field=f"{where}.cite_spans[{j}]") from None
        if not 0 <= start < end <= len(text):
            raise ReaderError(path, None, f"cite span {start}:{end} outside the text ({len(text)} chars)",
                              field=f"{where}.cite_spans[{j}]")
        cites.append((start, end, cite.get("ref_id") or ""))
    # Offsets are into the raw text: keep it, strip only by moving the marks.
    lead = len(text) - len(text.lstrip())
    stripped = text.strip()
    cites = [(max(0, s - lead), min(len(stripped), e - lead), t) for s, e, t in cites]
    return Paragraph(text=stripped, heading=heading, citations=[c for c in cites if c[1] > c[0]])


def parse_s2orc(path: Path) -> Paper:
    path = Path(path)
    record = load_json(path)
    if not isinstance(record, dict):
        raise ReaderError(path, None, f"expected a JSON object, got {type(record).__name__}")
    part, prefix = _parse_part(record, path)
    body = part["body_text"]
    if not isinstance(body, list):
        raise ReaderError(path, None, f"expected a list, got {type(body).__name__}", field=f"{prefix}body_text")
    metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    title = record.get("title") or metadata.get("title")
    paragraphs: List[Paragraph] = []
    abstract = part.get("abstract")
    if not abstract:
        abstract = record.get("abstract") or metadata.get("abstract")
    if isinstance(abstract, str):
        abstract = [{"text": abstract}]
    for j, item in enumerate(abstract or []):
        paragraphs.append(_paragraph(item, f"{prefix}abstract[{j}]", path, heading=ABSTRACT))
    headings: List[Optional[str]] = []
    previous: Any = object()
    for j, item in enumerate(body):
        para = _paragraph(item, f"{prefix}body_text[{j}]", path)
        key = (item.get("sec_num"), item.get("section"))
        if key != previous:
            headings.append(para.heading)
            previous = key
        paragraphs.append(para)
    return Paper(doc_id=doc_id_from_path(path), title=heading_text(None, title) if isinstance(title, str) else None,
                 paragraphs=paragraphs, headings=headings)
