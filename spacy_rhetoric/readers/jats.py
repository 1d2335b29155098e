"""JATS / NLM XML (PMC ``.nxml``, publisher JATS such as eLife).

* title: ``front/article-meta/title-group/article-title``;
* abstract: the first ``<abstract>`` without ``@abstract-type`` (else the
  first one; teasers and digests are left out), all its paragraphs
  (structured abstracts too) under the heading ``"Abstract"``;
* sections: ``<sec>`` of the root ``<body>`` at any depth, heading
  ``<label>`` + ``<title>`` of the innermost section ("2.1 Data"); ``<p>``
  directly in ``<body>`` (before the first section) get no heading;
* paragraphs: ``<p>`` whose parent is ``<sec>`` or ``<body>``; tables,
  figures, captions, formulas, footnotes and ``<sub-article>`` are left out;
* citations: ``<xref ref-type="bibr">``, ``@rid`` as ``kb_id_``.

The DOCTYPE's external DTD is never loaded (numeric character references
only; a named entity from the DTD is a parse error naming the line).
"""
from pathlib import Path
from typing import List, Optional

from .common import ReaderError
from .fulltext import ABSTRACT, Paper, Paragraph, ParagraphWalk, doc_id_from_path, heading_text, local_name, parse_xml

SKIP = {"table-wrap", "table-wrap-group", "table", "fig", "fig-group", "caption", "disp-formula",
        "inline-formula", "disp-formula-group", "fn", "fn-group", "graphic", "media",
        "supplementary-material", "sub-article", "alternatives"}


# A paragraph's text: citations are <xref ref-type="bibr" rid="...">; tables, figures, formulas... left out.
_paragraph = ParagraphWalk(
    citation=lambda child, name: (child.get("rid") or "") if name == "xref" and child.get("ref-type") == "bibr"
    else None,
    skip=lambda name: name in SKIP or not name,
).paragraph


def _sec_heading(sec) -> Optional[str]:
    label = sec.find("label")
    title = sec.find("title")
    return heading_text(None if label is None else "".join(label.itertext()),
                        None if title is None else "".join(title.itertext()))


def _read_sec(sec, heading: Optional[str], paragraphs: List[Paragraph],
              headings: List[Optional[str]]) -> None:
    for child in sec:
        name = local_name(child.tag)
        if name == "p":
            paragraphs.append(_paragraph(child, heading))
        elif name == "sec":
            sub = _sec_heading(child)
            headings.append(sub)
            _read_sec(child, sub, paragraphs, headings)


def parse_jats(path: Path) -> Paper:
    path = Path(path)
    root = parse_xml(path)
    if local_name(root.tag) != "article":
        raise ReaderError(path, None, f"not JATS: the root element is <{local_name(root.tag)}>")
    meta = root.find("front/article-meta")
    title = None
    paragraphs: List[Paragraph] = []
    if meta is not None:
        node = meta.find("title-group/article-title")
        if node is not None:
            title = heading_text(None, "".join(node.itertext()))
        abstracts = meta.findall("abstract")
        main = [a for a in abstracts if not a.get("abstract-type")] or abstracts
        if main:
            for p in main[0].iter("p"):
                paragraphs.append(_paragraph(p, ABSTRACT))
    body = root.find("body")
    if body is None:
        raise ReaderError(path, None, "no <body> element", field="body")
    headings: List[Optional[str]] = []
    _read_sec(body, None, paragraphs, headings)
    return Paper(doc_id=doc_id_from_path(path), title=title, paragraphs=paragraphs, headings=headings)
