"""Full-text paper readers (readers.papers / tei / jats / s2orc / text) on the
real samples of shared/data/paper-formats: counts from its README, malformed
files, the cross-format pairs, DocBin round trips, convert and PaperCorpus."""
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.util import registry

from spacy_rhetoric import extensions
from spacy_rhetoric.readers.common import ReaderError, ReadStats
from spacy_rhetoric.readers.fulltext import ABSTRACT, CITATIONS_KEY
from spacy_rhetoric.readers.jats import SKIP
from spacy_rhetoric.readers.papers import PARSERS, detect_format, read_paper, read_papers

extensions.install_extensions()

TEI = "paper-formats/grobid-tei"
JATS = "paper-formats/jats"
S2ORC = "paper-formats/s2orc"
TEI_NS = "{http://www.tei-c.org/ns/1.0}"

# From paper-formats/README.md: sections, paragraphs, <s> sentences (None: no
# <s>), bibr in <body>.
TEI_COUNTS = {
    "WagnerLukyanenkoParEtAl2022.tei.xml": (7, 62, None, 211),
    "2312.07559.sentences.tei.xml": (22, 65, 276, 93),
    "2312.07559.paragraphs.tei.xml": (22, 65, None, 94),
    "0046d83a-edd6-4631-b57c-755cdcce8b7f.grobid.tei.xml": (18, 39, None, 57),
    "N18-3011.tei.xml": (12, 66, None, 28),
    "24e6b80e338a4e543de6b49cada07156c9149d22.tei.xml": (4, 26, None, 101),
}
# sections (top level, all), running-text paragraphs, bibr in <body>
JATS_COUNTS = {
    "1471-2180-11-174.nxml": (10, 23, 40, 111),
    "pone.0000217.nxml": (4, 21, 51, 46),
    "ehp-116-1694.nxml": (3, 18, 33, 82),
    "PMC6398430.nxml": (7, 16, 43, 107),
    "PMC7417471.nxml": (7, 15, 31, 247),
    "elife-02833-v2.xml": (4, 15, 37, 69),
}
# paragraphs (body_text items), sections in reading order (runs of equal
# section; N18-3011: 12 named + the footnotes' ""; 10045593: one null),
# cite_spans in body_text
S2ORC_COUNTS = {
    "doc2json/N18-3011.json": (71, 13, 28),
    "20210101/24e6b80e338a4e543de6b49cada07156c9149d22.json": (26, 4, 101),
    "20200705/18980463.json": (35, 19, 88),
    "20190928/10045593.json": (14, 1, 51),
}


@pytest.fixture(scope="module")
def nlp():
    return spacy.blank("en")


@pytest.fixture(scope="module")
def docs(shared_data, nlp):
    """Every sample read once: {relative path: Doc}."""
    root = shared_data / "paper-formats"
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.name != "README.md":
            out[str(path.relative_to(root))] = read_paper(path, nlp)
    return out


def _body_sents(doc):
    return [s for s in doc.sents if s._.rhetoric_heading != ABSTRACT]


def _heading_sequence(doc):
    """Headings in sentence order, runs collapsed, no heading dropped,
    case and spaces normalised."""
    out = []
    for sent in doc.sents:
        heading = sent._.rhetoric_heading
        if heading is None:
            continue
        heading = re.sub(r"\s+", " ", heading).strip().lower()
        if not out or out[-1] != heading:
            out.append(heading)
    return out


def _check_doc(doc):
    """What every paper Doc carries: sentences, a heading or paragraph per
    sentence, no sentence starting inside a citation span."""
    assert doc.has_annotation("SENT_START")
    sents = list(doc.sents)
    assert sents
    paragraphs = [s._.rhetoric_paragraph for s in sents]
    assert paragraphs == sorted(paragraphs) and paragraphs[0] == 0
    for span in doc.spans[CITATIONS_KEY]:
        assert span.label_ == "bibr"
        assert not any(token.is_sent_start for token in span[1:])
    assert all(s._.rhetoric_section is None for s in sents)  # left to the section tagger


@pytest.mark.parametrize("name", sorted(TEI_COUNTS))
def test_tei_counts(shared_data, docs, name):
    n_sections, n_paragraphs, n_sentences, n_bibr = TEI_COUNTS[name]
    path = shared_data / TEI / name
    paper = PARSERS["tei"](path)
    assert len(paper.headings) == n_sections
    assert len(paper.body) == n_paragraphs
    doc = docs[f"grobid-tei/{name}"]
    _check_doc(doc)
    assert doc._.rhetoric_title == paper.title and paper.title
    assert doc._.rhetoric_doc_id == name.split(".tei")[0].replace(".grobid", "")
    body = _body_sents(doc)
    assert len({s._.rhetoric_paragraph for s in body}) == n_paragraphs
    assert {s._.rhetoric_heading for s in body} <= set(paper.headings)
    if n_sentences is not None:
        assert len(body) == n_sentences
    # Every bibr of <body> is a citation span, except those GROBID puts in
    # body-level figures and notes (left out with them).
    body_elem = ET.parse(path).getroot().find(f"{TEI_NS}text/{TEI_NS}body")
    outside = sum(1 for child in body_elem if child.tag != f"{TEI_NS}div"
                  for ref in child.iter(f"{TEI_NS}ref") if ref.get("type") == "bibr")
    cites = doc.spans[CITATIONS_KEY]
    body_cites = [c for c in cites if c.sent._.rhetoric_heading != ABSTRACT]
    assert len(body_cites) == n_bibr - outside


def test_tei_headings_and_targets(docs):
    doc = docs["grobid-tei/N18-3011.tei.xml"]
    headings = [h for h in _heading_sequence(doc)]
    assert headings[:3] == ["abstract", "1 introduction", "2 structure of the literature graph"]
    cite = next(c for c in doc.spans[CITATIONS_KEY] if c.text.startswith("Wu et al"))
    assert cite.kb_id_ == "b25"
    assert any(c.kb_id_ == "" for c in doc.spans[CITATIONS_KEY])  # 8 refs without @target
    # the unheaded first div of the GROBID 0.5.5 file: sentences without a heading
    doc = docs["grobid-tei/24e6b80e338a4e543de6b49cada07156c9149d22.tei.xml"]
    assert any(s._.rhetoric_heading is None for s in doc.sents)


def test_tei_gold_sentences(shared_data, docs):
    """<s> elements are the sentences, whatever a splitter would say."""
    path = shared_data / TEI / "2312.07559.sentences.tei.xml"
    root = ET.parse(path).getroot()
    body = root.find(f"{TEI_NS}text/{TEI_NS}body")
    gold = ["".join(s.itertext()) for div in body.findall(f"{TEI_NS}div")
            for p in div.findall(f"{TEI_NS}p") for s in p.findall(f"{TEI_NS}s")]
    got = [s.text for s in _body_sents(docs["grobid-tei/2312.07559.sentences.tei.xml"])]

    def squash(text):
        return re.sub(r"\s+", "", text)

    assert [squash(s) for s in got] == [squash(s) for s in gold]


def _jats_outside(path):
    """bibr xrefs of <body> that are not in running text (tables, captions,
    formulas, footnotes, list items...)."""
    root = ET.parse(path).getroot()
    body = root.find("body")
    parents = {child: parent for parent in body.iter() for child in parent}
    n = 0
    for xref in body.iter("xref"):
        if xref.get("ref-type") != "bibr":
            continue
        node, kept = xref, False
        while node in parents:
            parent = parents[node]
            if node.tag in SKIP:
                break
            if node.tag == "p" and parent.tag in ("sec", "body"):
                kept = True
                break
            node = parent
        n += not kept
    return n


@pytest.mark.parametrize("name", sorted(JATS_COUNTS))
def test_jats_counts(shared_data, docs, name):
    n_top, n_all, n_paragraphs, n_bibr = JATS_COUNTS[name]
    path = shared_data / JATS / name
    paper = PARSERS["jats"](path)
    assert len(paper.headings) == n_all
    assert len(ET.parse(path).getroot().findall("body/sec")) == n_top
    assert len(paper.body) == n_paragraphs
    doc = docs[f"jats/{name}"]
    _check_doc(doc)
    assert doc._.rhetoric_title and doc._.rhetoric_title == paper.title
    body = _body_sents(doc)
    assert len({s._.rhetoric_paragraph for s in body}) == n_paragraphs
    body_cites = [c for c in doc.spans[CITATIONS_KEY] if c.sent._.rhetoric_heading != ABSTRACT]
    assert len(body_cites) == n_bibr - _jats_outside(path)
    assert all(c.kb_id_ for c in body_cites)


def test_jats_quirks(docs):
    # eLife: sub-articles (decision letter, author response) are not read
    text = docs["jats/elife-02833-v2.xml"].text
    assert "Decision letter" not in text and "Author response" not in text
    # EHP: untitled introduction paragraphs directly in <body>
    doc = docs["jats/ehp-116-1694.nxml"]
    body = _body_sents(doc)
    assert body[0]._.rhetoric_heading is None
    # PMC7417471: the 36 table-cell paragraphs are left out; headings are nested titles
    doc = docs["jats/PMC7417471.nxml"]
    assert len({s._.rhetoric_paragraph for s in _body_sents(doc)}) == 31


@pytest.mark.parametrize("name", sorted(S2ORC_COUNTS))
def test_s2orc_counts(shared_data, docs, name):
    n_paragraphs, n_sections, n_cites = S2ORC_COUNTS[name]
    path = shared_data / S2ORC / name
    paper = PARSERS["s2orc"](path)
    assert len(paper.body) == n_paragraphs
    assert len(paper.headings) == n_sections
    doc = docs[f"s2orc/{name}"]
    _check_doc(doc)
    body_cites = [c for c in doc.spans[CITATIONS_KEY] if c.sent._.rhetoric_heading != ABSTRACT]
    assert len(body_cites) == n_cites
    record = json.loads(path.read_text())
    body = (record.get("pdf_parse") or record.get("grobid_parse") or record)["body_text"]
    empty = sum(1 for item in body if not item["text"].strip())  # 18980463: 2, left out of the Doc
    assert len({s._.rhetoric_paragraph for s in _body_sents(doc)}) == n_paragraphs - empty
    # span text is the callout's text (offsets are into the paragraph text)
    callouts = [c["text"] for item in body for c in item["cite_spans"]]
    assert [re.sub(r"\s+", "", c.text) for c in body_cites] == [re.sub(r"\s+", "", c) for c in callouts]


def test_s2orc_layouts(docs):
    assert docs["s2orc/20200705/18980463.json"]._.rhetoric_title is None  # no title in that release
    assert docs["s2orc/20190928/10045593.json"]._.rhetoric_title.startswith("Postmortem muscle")
    doc = docs["s2orc/doc2json/N18-3011.json"]
    assert doc._.rhetoric_doc_id == "N18-3011"
    assert {c.kb_id_ for c in doc.spans[CITATIONS_KEY]} >= {"BIBREF25", ""}


@pytest.mark.parametrize("tei,s2orc", [
    ("grobid-tei/N18-3011.tei.xml", "s2orc/doc2json/N18-3011.json"),
    ("grobid-tei/24e6b80e338a4e543de6b49cada07156c9149d22.tei.xml",
     "s2orc/20210101/24e6b80e338a4e543de6b49cada07156c9149d22.json"),
])
def test_cross_format_headings(docs, tei, s2orc):
    a, b = docs[tei], docs[s2orc]
    assert _heading_sequence(a) == _heading_sequence(b)
    assert len(_heading_sequence(a)) > 3
    assert a._.rhetoric_title == b._.rhetoric_title


def test_docbin_round_trip(docs, nlp):
    originals = [docs["grobid-tei/2312.07559.sentences.tei.xml"], docs["jats/PMC6398430.nxml"],
                 docs["s2orc/doc2json/N18-3011.json"]]
    data = DocBin(docs=originals, store_user_data=True).to_bytes()
    for doc, back in zip(originals, DocBin().from_bytes(data).get_docs(nlp.vocab)):
        assert back.text == doc.text
        assert [s.text for s in back.sents] == [s.text for s in doc.sents]
        assert back._.rhetoric_title == doc._.rhetoric_title
        assert back._.rhetoric_doc_id == doc._.rhetoric_doc_id
        assert [s._.rhetoric_heading for s in back.sents] == [s._.rhetoric_heading for s in doc.sents]
        assert [s._.rhetoric_paragraph for s in back.sents] == [s._.rhetoric_paragraph for s in doc.sents]
        assert ([(c.start, c.end, c.label_, c.kb_id_) for c in back.spans[CITATIONS_KEY]]
                == [(c.start, c.end, c.label_, c.kb_id_) for c in doc.spans[CITATIONS_KEY]])


def test_detect_format(shared_data, tmp_path):
    root = shared_data / "paper-formats"
    for path in (root / "grobid-tei").iterdir():
        assert detect_format(path) == "tei"
    for path in (root / "jats").iterdir():
        assert detect_format(path) == "jats"
    for path in (root / "s2orc").rglob("*.json"):
        assert detect_format(path) == "s2orc"
    topic = shared_data / "cl-scisumm" / "training-40-manual" / "C00-2123"
    assert detect_format(topic / "Reference_XML" / "C00-2123.xml") == "clscisumm"
    assert detect_format(topic.parent) == "clscisumm"
    (tmp_path / "p.md").write_text("# Title\n\nSome text.\n")
    assert detect_format(tmp_path / "p.md") == "text"
    (tmp_path / "x.json").write_text('{"foo": 1}')
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n\x00\x01\x02\xff")
    assert detect_format(tmp_path / "doc.pdf") == "pdf"  # by the %PDF- header (read by readers.pdf)
    (tmp_path / "bin.dat").write_bytes(b"GIF89a\n\x00\x01\x02\xff")
    (tmp_path / "other.xml").write_text("<html><body/></html>")
    for name, reason in (("x.json", "not S2ORC"), ("bin.dat", "binary"), ("other.xml", "<html>")):
        with pytest.raises(ReaderError, match=re.escape(name) + ".*" + re.escape(reason)):
            detect_format(tmp_path / name)


def test_clscisumm_file(shared_data, nlp):
    path = shared_data / "cl-scisumm" / "training-40-manual" / "C00-2123" / "Reference_XML" / "C00-2123.xml"
    doc = read_paper(path, nlp)
    assert doc._.rhetoric_title and doc._.rhetoric_doc_id == "C00-2123"
    assert next(doc.sents)._.rhetoric_heading == "Abstract"
    assert CITATIONS_KEY in doc.spans and not len(doc.spans[CITATIONS_KEY])
    assert all(s._.rhetoric_section is None and s._.rhetoric_sid for s in doc.sents)
    # a topic folder: its reference paper only (no citing papers, no annotation files)
    stats = ReadStats()
    out = list(read_papers(path.parent.parent, nlp, stats=stats))
    assert [d._.rhetoric_doc_id for d in out] == ["C00-2123"] and stats.read == 1


MARKDOWN = """# A Study of Things

## Abstract

We study things. Things are
interesting.

## 1 Introduction

Little is known about things.

2.1 Data Collection
We collected things from (Smith et al., 2020). Fig. 2 shows them.

MATERIALS AND METHODS

Here is how. As shown in Fig. 3, things grow (cf. Table 1). Jones et al. found more.

Conclusions

Things are good.

References

Smith, J. 2020. Things. Journal of Things.
"""


def test_text_reader(tmp_path, nlp):
    path = tmp_path / "paper.md"
    path.write_text(MARKDOWN, encoding="utf8")
    paper = PARSERS["text"](path)
    assert paper.title == "A Study of Things"
    assert paper.headings == ["1 Introduction", "2.1 Data Collection", "MATERIALS AND METHODS", "Conclusions"]
    doc = read_paper(path, nlp)
    _check_doc(doc)
    assert doc._.rhetoric_title == "A Study of Things" and doc._.rhetoric_doc_id == "paper"
    sents = [(s.text, s._.rhetoric_heading, s._.rhetoric_paragraph) for s in doc.sents]
    assert sents[:3] == [("We study things.", ABSTRACT, 0), ("Things are interesting.", ABSTRACT, 0),
                         ("Little is known about things.", "1 Introduction", 1)]
    assert sents[3][1:] == ("2.1 Data Collection", 2)
    assert "Smith, J." not in doc.text  # the reference list is left out
    # no sentence ends at an abbreviation ("Fig.", "cf.", "et al.")
    method = [text for text, heading, _ in sents if heading == "MATERIALS AND METHODS"]
    assert method == ["Here is how.", "As shown in Fig. 3, things grow (cf. Table 1).", "Jones et al. found more."]
    assert len(doc.spans[CITATIONS_KEY]) == 0


def test_text_sample_paper(nlp):
    path = Path(__file__).resolve().parent.parent / "assets" / "sample_paper.txt"
    doc = read_paper(path, nlp)
    assert _heading_sequence(doc) == ["abstract", "1 introduction", "3 method", "4 results", "5 conclusion"]


@pytest.mark.slow
def test_senter_splitter(shared_data, nlp):
    path = shared_data / TEI / "N18-3011.tei.xml"
    doc = read_paper(path, nlp, splitter="senter")
    _check_doc(doc)
    assert len(_body_sents(doc)) > 66


def _truncated(src: Path, dst: Path) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 2])
    return dst


def test_malformed_files(shared_data, tmp_path, nlp):
    tei = _truncated(shared_data / TEI / "N18-3011.tei.xml", tmp_path / "cut.tei.xml")
    jats = _truncated(shared_data / JATS / "pone.0000217.nxml", tmp_path / "cut.nxml")
    record = json.loads((shared_data / S2ORC / "20210101/24e6b80e338a4e543de6b49cada07156c9149d22.json").read_text())
    del record["body_text"][3]["text"]
    (tmp_path / "notext.json").write_text(json.dumps(record))
    del record["body_text"]
    (tmp_path / "nobody.json").write_text(json.dumps(record))
    (tmp_path / "binary.txt").write_bytes(b"abc\x00\xff\xfe")
    (tmp_path / "bomb.xml").write_text('<?xml version="1.0"?>\n<!DOCTYPE TEI [\n<!ENTITY a "aaaa">\n'
                                      '<!ENTITY b "&a;&a;&a;&a;">]>\n<TEI><text><body/></text></TEI>')
    cases = [
        (tei, "tei", r"cut\.tei\.xml:\d+: broken XML"),
        (jats, "jats", r"cut\.nxml:\d+: broken XML"),
        (tmp_path / "notext.json", "s2orc", r"notext\.json.*'body_text\[3\]\.text'"),
        (tmp_path / "nobody.json", "s2orc", r"nobody\.json.*'body_text'"),
        (tmp_path / "binary.txt", "text", r"binary\.txt.*binary"),
        (tmp_path / "bomb.xml", "tei", r"bomb\.xml:3: refused XML"),
    ]
    for path, fmt, pattern in cases:
        for given in (fmt, "auto"):
            with pytest.raises(ReaderError, match=pattern):
                list(read_papers(path, nlp, fmt=given, errors="raise"))
    # a folder: the bad files are skipped and counted, the good one is read
    (tmp_path / "good.txt").write_text("Introduction\n\nA good paper. It has text.\n")
    stats = ReadStats()
    out = list(read_papers(tmp_path, nlp, stats=stats))
    assert [d._.rhetoric_doc_id for d in out] == ["good"]
    stats.check()
    assert (stats.read, stats.used, stats.skipped) == (7, 1, 6)
    assert any("cut.nxml" in e for e in stats.examples)


def test_convert_and_corpus(shared_data, tmp_path):
    from spacy_rhetoric.readers.convert import NothingConverted, convert_corpus

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("N18-3011.tei.xml", "24e6b80e338a4e543de6b49cada07156c9149d22.tei.xml"):
        (folder / name).write_bytes((shared_data / TEI / name).read_bytes())
    (folder / "notes.txt").write_text("not a TEI file")  # not a .xml: not read as tei
    out = tmp_path / "papers.spacy"
    stats = convert_corpus("tei", folder, out)
    assert (stats.read, stats.docs) == (2, 2)
    assert convert_corpus("tei", folder, tmp_path / "first.spacy", limit=1).docs == 1
    back = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert sorted(d._.rhetoric_doc_id for d in back) == ["24e6b80e338a4e543de6b49cada07156c9149d22", "N18-3011"]
    single = tmp_path / "one.spacy"
    assert convert_corpus("auto", shared_data / JATS / "pone.0000217.nxml", single).docs == 1
    with pytest.raises(NothingConverted):
        convert_corpus("jats", folder, tmp_path / "none.spacy")
    assert not (tmp_path / "none.spacy").exists()

    corpus = registry.resolve({"c": {"@readers": "spacy_rhetoric.PaperCorpus.v1", "path": str(folder),
                                     "format": "auto"}})["c"]
    nlp = spacy.blank("en")
    examples = list(corpus(nlp))
    assert len(examples) == 3  # notes.txt is a text paper in auto mode
    ref = next(eg.reference for eg in examples if eg.reference._.rhetoric_doc_id == "N18-3011")
    assert ref._.rhetoric_title.startswith("Construction of the Literature Graph")
    assert len(ref.spans[CITATIONS_KEY]) == 28
