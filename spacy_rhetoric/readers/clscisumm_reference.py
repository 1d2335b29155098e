"""CL-SciSumm reference papers: ``Reference_XML/<TOPIC>.xml`` (one
``<S sid=.. ssid=..>`` per sentence) read into a :class:`ReferencePaper`
and one Doc (:func:`reference_doc`). Part of the CL-SciSumm reader
(``readers.clscisumm``: the layout and the quirks handled).

Quirks handled here: files mixing UTF-8 with stray cp1252 bytes (decoded
byte by byte, :func:`decode_mixed`), ``<SUBSECTION>`` headings inside
sections, sentences directly under ``<PAPER>`` (no abstract), empty ``<S>``
elements (dropped and counted in ``ReferencePaper.n_empty``). XML that is
still not well-formed raises a :class:`~spacy_rhetoric.readers.common.ReaderError`
naming file and line.
"""
import codecs
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.vocab import Vocab

from .common import ReaderError, doc_from_sentences
from .fulltext import parse_xml_data

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


def _cp1252_fallback(err: UnicodeDecodeError) -> Tuple[str, int]:
    bad = err.object[err.start:err.end]
    return bad.decode("cp1252", errors="replace"), err.end


codecs.register_error("spacy_rhetoric_cp1252", _cp1252_fallback)


def decode_mixed(data: bytes) -> str:
    """UTF-8, with undecodable bytes read as cp1252 (the corpus mixes both)."""
    text = data.decode("utf8", errors="spacy_rhetoric_cp1252")
    return text.lstrip("\ufeff")


_WS = re.compile(r"\s+")


def normalise_space(text: str) -> str:
    """Runs of whitespace as one space, stripped."""
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
        sent_text = normalise_space("".join(elem.itertext()))
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
                walk(list(child), normalise_space(child.attrib.get("title", "")) or None)
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
