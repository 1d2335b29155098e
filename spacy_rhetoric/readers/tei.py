"""GROBID TEI XML (``processFulltextDocument`` output, GROBID 0.5.5–0.8.x).

* title: ``teiHeader//titleStmt/title[@type="main"]`` (else the first title);
* abstract: ``profileDesc/abstract`` paragraphs (``<p>`` directly or in
  ``<div>``), heading ``"Abstract"``;
* sections: the ``<div>`` children of ``<body>`` (GROBID does not nest them),
  heading ``head/@n`` + ``<head>`` text ("2.1 Node Types"), no heading for a
  div without ``<head>``; paragraphs: their ``<p>`` children (``<formula>``,
  and the body-level ``<figure>`` and ``<note>`` are left out, as is
  ``<back>``: acknowledgements, annexes, references);
* sentences: GROBID's ``<s>`` when the file has them, else the splitter;
* citations: ``<ref type="bibr">``, target ``#b12`` -> ``kb_id_ "b12"``.
"""
from pathlib import Path
from typing import List, Optional

from .common import ReaderError
from .fulltext import ABSTRACT, Paper, Paragraph, ParagraphWalk, doc_id_from_path, heading_text, local_name, parse_xml

NS = "{http://www.tei-c.org/ns/1.0}"


# Text of a <p> with citation (<ref type="bibr" target="#b12">) and sentence (<s>) marks.
_paragraph = ParagraphWalk(
    citation=lambda child, name: (child.get("target") or "").lstrip("#") if name == "ref" and child.get("type") == "bibr"
    else None,
    skip=lambda name: name in ("figure", "note"),
    sentence_tag="s",
).paragraph


def parse_tei(path: Path) -> Paper:
    path = Path(path)
    root = parse_xml(path)
    if local_name(root.tag) != "TEI":
        raise ReaderError(path, None, f"not GROBID TEI: the root element is <{local_name(root.tag)}>")
    title = None
    titles = root.findall(f"{NS}teiHeader/{NS}fileDesc/{NS}titleStmt/{NS}title")
    main = [t for t in titles if t.get("type") == "main"] or titles
    if main:
        title = heading_text(None, "".join(main[0].itertext()))
    paragraphs: List[Paragraph] = []
    abstract = root.find(f"{NS}teiHeader/{NS}profileDesc/{NS}abstract")
    if abstract is not None:
        for p in abstract.iter(f"{NS}p"):
            paragraphs.append(_paragraph(p, ABSTRACT))
    body = root.find(f"{NS}text/{NS}body")
    if body is None:
        raise ReaderError(path, None, "no <text><body> element", field="body")
    headings: List[Optional[str]] = []
    for div in body.findall(f"{NS}div"):
        head = div.find(f"{NS}head")
        heading = None if head is None else heading_text(head.get("n"), "".join(head.itertext()))
        headings.append(heading)
        for p in div.findall(f"{NS}p"):
            paragraphs.append(_paragraph(p, heading))
    return Paper(doc_id=doc_id_from_path(path), title=title, paragraphs=paragraphs, headings=headings)
