"""Corpus readers on real files of ../shared/data, plus malformed input."""
import json
import re
from collections import Counter
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin
from spacy.training import Example
from spacy.util import registry

from spacy_rhetoric import extensions
from spacy_rhetoric.extensions import get_sent_labels
from spacy_rhetoric.readers.citation_intent import read_citation_intent
from spacy_rhetoric.readers.clscisumm import (
    citing_paper_path,
    iter_topics,
    normalise_facets,
    read_annotations,
    read_citing_sentences,
    read_reference_xml,
    reference_doc,
    split_fields,
)
from spacy_rhetoric.readers.common import ReaderError, ReadStats, doc_from_sentences
from spacy_rhetoric.readers.csabstruct import read_csabstruct
from spacy_rhetoric.readers.pmc import read_pmc_sents


@pytest.fixture(scope="module")
def nlp():
    return spacy.blank("en")


def sent_values(doc, field):
    return [extensions.get_span_value(s, field) for s in doc.sents]


# --------------------------------------------------------------------------
# doc_from_sentences


def test_doc_from_sentences_boundaries_and_values(nlp):
    sents = ["We propose a model.", "  It works well (see Fig. 2).  ", "Done"]
    doc = doc_from_sentences(nlp, sents, labels=["method", "result", None],
                             sections=["abstract", "abstract", "Intro"], sids=[1, "2", "3"],
                             doc_id="p1")
    assert doc.text == "We propose a model. It works well (see Fig. 2). Done"
    assert [s.text for s in doc.sents] == [s.strip() for s in sents]
    assert get_sent_labels(doc) == ["method", "result", None]
    assert [s._.rhetoric_section for s in doc.sents] == ["abstract", "abstract", "Intro"]
    assert [s._.rhetoric_sid for s in doc.sents] == ["1", "2", "3"]
    assert doc._.rhetoric_doc_id == "p1"
    # The same tokens as the tokenizer gives each sentence.
    assert [t.text for t in list(doc.sents)[1]] == [t.text for t in nlp.make_doc(sents[1].strip())]


def test_doc_from_sentences_with_vocab_and_errors(nlp):
    doc = doc_from_sentences(nlp.vocab, ["A b.", "C d."], labels=["x", "y"])
    assert [s.text for s in doc.sents] == ["A b.", "C d."]
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        doc_from_sentences(nlp, ["A b.", "   "])
    with pytest.raises(ValueError, match="2 sentences but 1 labels"):
        doc_from_sentences(nlp, ["A b.", "C d."], labels=["x"])


# --------------------------------------------------------------------------
# CSAbstruct, PMC-Sents-FULL, SciCite, ACL-ARC on the real files


def test_csabstruct_dev(shared_data, nlp):
    stats = ReadStats()
    docs = list(read_csabstruct(shared_data / "csabstruct" / "dev.jsonl", nlp, stats=stats))
    stats.check()
    assert (len(docs), stats.skipped) == (295, 0)
    assert sum(len(list(d.sents)) for d in docs) == 2026 == stats.sentences
    counts = Counter(label for d in docs for label in get_sent_labels(d))
    assert counts == {"background": 681, "method": 624, "result": 410, "objective": 244, "other": 67}
    first = json.loads((shared_data / "csabstruct" / "dev.jsonl").open().readline())
    assert [s.text for s in docs[0].sents] == [s.strip() for s in first["sentences"]]
    assert get_sent_labels(docs[0]) == first["labels"]
    assert docs[0]._.rhetoric_doc_id == "dev:1"
    assert len(list(read_csabstruct(shared_data / "csabstruct" / "dev.jsonl", nlp, limit=4))) == 4


def test_pmc_dev_groups_by_article(shared_data, nlp):
    path = shared_data / "pmc-sents-full" / "dev.jsonl"
    stats = ReadStats()
    docs = list(read_pmc_sents(path, nlp, stats=stats))
    stats.check()
    assert (len(docs), stats.sentences, stats.read) == (1558, 17309, 17309)
    assert len({d._.rhetoric_doc_id for d in docs}) == 1558
    counts = Counter(label for d in docs for label in get_sent_labels(d))
    assert counts == {"other": 9288, "methods": 4095, "results": 2039, "background": 1283, "objective": 604}
    # Sentences of an article keep their file order.
    lines = [json.loads(line) for line in path.open()]
    first_id = lines[0]["id"]
    expected = [r["sentence"].strip() for r in lines if r["id"] == first_id]
    assert [s.text for s in docs[0].sents] == expected
    assert docs[0]._.rhetoric_doc_id == first_id
    runs = list(read_pmc_sents(path, nlp, group_by="consecutive", limit=5))
    assert len(runs) == 5


@pytest.mark.parametrize(
    "rel,n,counts",
    [
        ("scicite/dev.txt", 916, {"background": 538, "method": 255, "result": 123}),
        ("acl-arc-citation-intent/dev.txt", 114,
         {"Background": 59, "CompareOrContrast": 21, "Uses": 21, "Motivation": 5, "Future": 4, "Extends": 4}),
    ],
)
def test_citation_intent_dev(shared_data, nlp, rel, n, counts):
    stats = ReadStats()
    docs = list(read_citation_intent(shared_data / rel, nlp, stats=stats))
    stats.check()
    assert len(docs) == n and stats.skipped == 0
    assert all(len(list(d.sents)) == 1 for d in docs)
    assert Counter(get_sent_labels(d)[0] for d in docs) == counts
    assert all("\n" not in d.text for d in docs)


# --------------------------------------------------------------------------
# CL-SciSumm


def test_clscisumm_topics(shared_data):
    root = shared_data / "cl-scisumm"
    manual = list(iter_topics(root / "training-40-manual"))
    assert len(manual) == 40 and not any(t.auto for t in manual)
    suffixes = Counter(p.name.split(".", 1)[1] for t in manual for p in t.annotation_files)
    assert suffixes == {"ann.txt": 30, "annv3.txt": 10}
    auto = list(iter_topics(root / "scisummnet-2019-auto"))
    assert len(auto) == 978 and all(t.auto and t.citing_sentences_json for t in auto)
    assert len(list(iter_topics(root))) == 1018
    one = list(iter_topics(root / "training-40-manual" / "C00-2123"))
    assert [t.topic_id for t in one] == ["C00-2123"]


def test_reference_xml_sids_and_sections(shared_data):
    path = shared_data / "cl-scisumm/training-40-manual/C00-2123/Reference_XML/C00-2123.xml"
    paper = read_reference_xml(path)
    raw = path.read_text(encoding="utf8", errors="replace")
    n_sents = len(re.findall(r"<S\s+sid", raw))
    assert len(paper.sentences) + paper.n_empty == n_sents
    by_sid = paper.sentence_by_sid()
    assert paper.paper_id == "C00-2123"
    assert paper.title == "Word Re-ordering and DP-based Search in Statistical Machine Translation"
    assert by_sid["0"].section == "title"
    assert [by_sid[str(i)].section for i in range(1, 5)] == ["abstract"] * 4
    assert by_sid["5"].section == "Introduction" and by_sid["5"].ssid == "5"
    assert by_sid["1"].text.startswith("In this paper, we describe a search procedure")
    assert by_sid["179"].text.startswith("For our demonstration system")
    sections = [s.section for s in paper.sentences]
    assert len(set(sections)) > 4
    # The Doc keeps sentence boundaries, sids, sections and the paper id.
    doc = reference_doc(spacy.blank("en"), paper)
    sents = list(doc.sents)
    assert len(sents) == len(paper.sentences)
    assert [s._.rhetoric_sid for s in sents] == [s.sid for s in paper.sentences]
    assert [s._.rhetoric_section for s in sents] == sections
    assert doc._.rhetoric_doc_id == "C00-2123"


def test_reference_xml_mixed_encoding_and_broken(shared_data, tmp_path):
    # This file mixes UTF-8 with cp1252 bytes ("di\xc6cult").
    paper = read_reference_xml(shared_data / "cl-scisumm/training-40-manual/N01-1011/Reference_XML/N01-1011.xml")
    assert len(paper.sentences) > 100
    broken = tmp_path / "X00-0000.xml"
    broken.write_text('<PAPER>\n<S sid="0">Title</S>\n<ABSTRACT>\n<S sid="1">a < b & c</S>\n</ABSTRACT>\n</PAPER>\n')
    with pytest.raises(ReaderError, match=r"X00-0000\.xml:4: broken XML"):
        read_reference_xml(broken)


def test_manual_annotations(shared_data):
    records = []
    skipped = 0
    for topic in iter_topics(shared_data / "cl-scisumm" / "training-40-manual"):
        for path in topic.annotation_files:
            recs, n_skipped = read_annotations(path)
            records += recs
            skipped += n_skipped
    assert (len(records), skipped) == (753, 0)
    spans = Counter(min(len(r.reference_offsets), 5) for r in records)
    assert spans == {1: 482, 2: 178, 3: 64, 4: 20, 5: 9}
    assert all(set(r.facets) <= {"method", "results", "implication", "aim", "hypothesis"} for r in records)
    # 56 records carry a list of two facets, e.g. ['Method_Citation','Results_Citation'].
    assert sum(len(r.facets) > 1 for r in records) == 56
    assert Counter(r.facets[0] for r in records if len(r.facets) == 1)["method"] >= 493


def test_annotation_records(shared_data):
    base = shared_data / "cl-scisumm" / "training-40-manual"
    recs, skipped = read_annotations(base / "C00-2123/annotation/C00-2123.ann.txt")
    assert (len(recs), skipped) == (18, 0)
    first = recs[0]
    assert (first.topic, first.citance_number, first.reference_article, first.citing_article) == (
        "C00-2123", "1", "C00-2123", "C02-1050")
    assert first.citation_offsets == ["39", "40", "41"]
    assert first.reference_offsets == ["179"]
    assert first.citation_text.startswith("Under this constraint, many researchers")
    assert "<S" not in first.citation_text and "</S>" not in first.reference_text
    assert first.facets == ["method"] and first.annotator == "Swastika Bhattacharya"
    assert first.line == 1
    # A multi-facet record (line 79).
    recs, _ = read_annotations(base / "C08-1098/annotation/C08-1098.ann.txt")
    multi = next(r for r in recs if r.line == 79)
    assert multi.citance_number == "28" and multi.reference_offsets == ["1", "167"]
    assert multi.facets == ["method", "results"] and multi.annotator == "Kokil Jaidka"
    # An .annv3 file: no Annotator field at all.
    recs, skipped = read_annotations(base / "C98-1097/annotation/C98-1097.annv3.txt")
    assert (len(recs), skipped) == (12, 0)
    assert all(r.annotator is None for r in recs)
    assert recs[0].reference_article == "C98-1097" and recs[0].reference_offsets == ["45"]


def test_auto_topic_annotations_and_citing_sentences(shared_data):
    topic = next(iter_topics(shared_data / "cl-scisumm/scisummnet-2019-auto/A00-1031"))
    recs, skipped = read_annotations(topic.annotation_files[0])
    assert skipped == 0 and recs
    assert recs[0].reference_offsets == ["0", "36"] and recs[0].citation_offsets == []
    assert recs[0].facets == [] and recs[0].annotator == "Automatic"
    assert recs[0].citation_text.startswith("The sentences in the DSO collection")
    assert recs[0].reference_text.startswith("TnT - A Statistical Part-Of-Speech Tagger")
    citing = read_citing_sentences(topic.citing_sentences_json)
    assert citing[0]["citing_paper_id"] == recs[0].citing_article == "W00-1326"
    sids = {s.sid for s in read_reference_xml(topic.reference_xml).sentences}
    assert {"0", "36"} <= sids


def test_citing_paper_word_docx(shared_data):
    topic = next(iter_topics(shared_data / "cl-scisumm/training-40-manual/C10-1045"))
    assert citing_paper_path(topic, "J13-1007").name == "J13-1007.xml"
    assert citing_paper_path(topic, "J13-1008").name in ("J13-1008.xml", "J13-1008word.docx.txt")
    assert citing_paper_path(topic, "X99-9999") is None


def test_annotation_quirks(tmp_path):
    good = ("Citance Number: 3 |Reference Article:   P01-1001.xml| Citing Article: W02-2002.txt | "
            "Citation Marker Offset: NA | Citation Marker: NA | Citation Offset: ['7', '8'] | "
            "Citation Text: <S sid =\"7\" ssid = \"1\">x | y &amp; z</S><S sid =\"8\">more</S> | "
            "Reference Offset:  ['12','13'] | Reference Text: <S sid = 12 ssid = >A | B</S> | "
            "Discourse Facet: ['Aim_Citation', 'Result citation'] | Annotator:  Someone | "
            "| Discourse Facet: Method_Citation | Annotator: Other |")
    missing = "Citance Number: 4 | Reference Article: P01-1001.xml | Citing Article: W02-2002.txt | Citation Text: t"
    path = tmp_path / "P01-1001.ann.txt"
    path.write_text(f"{good}\n\n{missing}\nnot a record at all\n", encoding="utf8")
    stats = ReadStats()
    recs, skipped = read_annotations(path, stats=stats)
    assert (len(recs), skipped) == (1, 2)
    stats.check()
    assert stats.read == 3
    rec = recs[0]
    assert rec.citation_text == "x | y & z more"
    assert rec.reference_text == "A | B"
    assert rec.citation_offsets == ["7", "8"] and rec.reference_offsets == ["12", "13"]
    assert rec.facets == ["aim", "results"] and rec.annotator == "Someone"
    assert (rec.reference_article, rec.citing_article, rec.topic) == ("P01-1001", "W02-2002", "P01-1001")
    assert any("P01-1001.ann.txt:4" in e for e in stats.examples)
    assert normalise_facets("Method_CItation") == ["method"]
    assert normalise_facets("NA") == []
    assert split_fields("Citance Number: 1 | Annotator: |")["annotator"] == ""


def test_annotation_csv(tmp_path):
    import csv

    path = tmp_path / "Q01-0001_someone.csv"
    with path.open("w", newline="", encoding="utf8") as fileh:
        writer = csv.writer(fileh)
        writer.writerow(["Citance Number", "Reference Article", "Citing Article", "Citation Marker Offset",
                         "Citation Marker", "Citation Offset", "Citation Text", "Citation Text Clean",
                         "Reference Offset", "Reference Text", "Discourse Facet"])
        writer.writerow(["1", "Q01-0001", "R02-0002", "0", "Doe, 2001", "0", "We follow Doe, 2001, as\nbefore",
                         "We follow Doe (2001)", " '11'", ' <S sid="11" ssid="1">A "quoted", text.</S>',
                         "Method_Citation"])
        writer.writerow(["2", "Q01-0001", "R02-0002", "0", "Doe", "0", "t", "t", "NA", "NA", "NA"])
        writer.writerow(["3", "", "R02-0002", "0", "Doe", "0", "t", "t", "'5'", "x", "Aim_Citation"])
    stats = ReadStats()
    recs, skipped = read_annotations(path, stats=stats)
    stats.check()
    assert (len(recs), skipped) == (2, 1)
    assert recs[0].topic == "Q01-0001" and recs[0].line == 2
    assert recs[0].reference_offsets == ["11"] and recs[0].reference_text == 'A "quoted", text.'
    assert recs[0].citation_text == "We follow Doe, 2001, as before" and recs[0].facets == ["method"]
    assert recs[1].reference_offsets == [] and recs[1].facets == [] and recs[1].line == 4
    assert "Q01-0001_someone.csv:5" in stats.examples[0]


# --------------------------------------------------------------------------
# Malformed JSON lines


def write_lines(path: Path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return path


def test_malformed_csabstruct_skip_and_raise(tmp_path, nlp):
    path = write_lines(tmp_path / "bad.jsonl", [
        json.dumps({"sentences": ["A b.", "C d."], "labels": ["method", "result"]}),
        '{"sentences": ["broken", ',
        json.dumps({"sentences": ["A b."]}),
        "",
        json.dumps({"sentences": ["A b.", "C d."], "labels": ["method"]}),
        json.dumps({"sentences": ["A b.", " "], "labels": ["method", "other"]}),
        json.dumps([1, 2]),
        json.dumps({"sentences": ["E f."], "labels": ["other"]}),
    ])
    stats = ReadStats()
    docs = list(read_csabstruct(path, nlp, stats=stats))
    assert len(docs) == 2 and stats.skipped == 5 and stats.read == 7
    assert stats.read == stats.used + stats.skipped
    stats.check()
    assert [d._.rhetoric_doc_id for d in docs] == ["bad:1", "bad:8"]
    assert "bad.jsonl:2: invalid JSON" in stats.examples[0]
    assert "missing field" in stats.summary() and "7 records read" in stats.summary()
    with pytest.raises(ReaderError, match=r"bad\.jsonl:2: invalid JSON"):
        list(read_csabstruct(path, nlp, errors="raise"))
    good_first = write_lines(tmp_path / "bad2.jsonl", [
        json.dumps({"sentences": ["A b."], "labels": ["method"]}),
        json.dumps({"sentences": ["A b."]}),
    ])
    with pytest.raises(ReaderError, match=r"bad2\.jsonl:2: missing field \(field 'labels'\)"):
        list(read_csabstruct(good_first, nlp, errors="raise"))


def test_malformed_pmc_and_citation_intent(tmp_path, nlp):
    pmc = write_lines(tmp_path / "pmc.jsonl", [
        json.dumps({"id": "PMC1", "sentence": "one.", "label": "methods"}),
        json.dumps({"id": "PMC2", "sentence": "two.", "label_id": 3}),
        json.dumps({"id": "PMC1", "sentence": "three.", "label": "other"}),
        json.dumps({"id": "PMC3", "label": "other"}),
        json.dumps({"id": "PMC3", "sentence": "x", "label_id": "bad"}),
        "{oops",
    ])
    stats = ReadStats()
    docs = list(read_pmc_sents(pmc, nlp, stats=stats))
    stats.check()
    assert (stats.read, stats.used, stats.skipped) == (6, 3, 3)
    assert [(d._.rhetoric_doc_id, get_sent_labels(d)) for d in docs] == [
        ("PMC1", ["methods", "other"]), ("PMC2", ["results"])]
    with pytest.raises(ReaderError, match=r"pmc\.jsonl:4: missing field \(field 'sentence'\)"):
        list(read_pmc_sents(pmc, nlp, errors="raise"))
    cit = write_lines(tmp_path / "cit.txt", [
        json.dumps({"text": "We use X\n(Y, 2000) .", "label": "Uses", "metadata": {}}),
        json.dumps({"text": "", "label": "Uses"}),
        json.dumps({"text": "Z", "label": 3}),
    ])
    stats = ReadStats()
    docs = list(read_citation_intent(cit, nlp, stats=stats))
    stats.check()
    assert len(docs) == 1 and stats.skipped == 2 and docs[0].text == "We use X (Y, 2000) ."
    with pytest.raises(ReaderError, match=r"cit\.txt:2: empty text \(field 'text'\)"):
        list(read_citation_intent(cit, nlp, errors="raise"))
    wrong = write_lines(tmp_path / "wrong.txt", [json.dumps({"text": "Z", "label": 3})])
    with pytest.raises(ReaderError, match=r"wrong\.txt:1: wrong type: expected str, got int \(field 'label'\)"):
        list(read_citation_intent(wrong, nlp, errors="raise"))
    encoded = tmp_path / "enc.txt"
    encoded.write_bytes(b'\xef\xbb\xbf{"text": "A", "label": "x"}\n{"text": "caf\xe9", "label": "y"}\n')
    stats = ReadStats()
    assert [d.text for d in read_citation_intent(encoded, nlp, stats=stats)] == ["A"]
    assert stats.skipped == 1 and "enc.txt:2: invalid UTF-8" in stats.examples[0]


# --------------------------------------------------------------------------
# Conversion, DocBin round trip, registered readers


def test_convert_docbin_round_trip(shared_data, tmp_path):
    from spacy_rhetoric.cli.convert import convert_corpus

    out = tmp_path / "cs.spacy"
    stats = convert_corpus("csabstruct", shared_data / "csabstruct" / "dev.jsonl", out, limit=5)
    assert stats.docs == 5
    originals = list(read_csabstruct(shared_data / "csabstruct" / "dev.jsonl", spacy.blank("en"), limit=5))
    nlp2 = spacy.blank("en")  # fresh vocab
    docs = list(DocBin().from_disk(out).get_docs(nlp2.vocab))
    assert [get_sent_labels(d) for d in docs] == [get_sent_labels(d) for d in originals]
    assert [[s.text for s in d.sents] for d in docs] == [[s.text for s in d.sents] for d in originals]
    assert docs[2]._.rhetoric_doc_id == "dev:3"

    out = tmp_path / "rp.spacy"
    stats = convert_corpus("clscisumm", shared_data / "cl-scisumm" / "training-40-manual", out, limit=2)
    assert stats.docs == 2
    docs = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    assert [d._.rhetoric_doc_id for d in docs] == ["C00-2123", "C02-1025"]
    sents = list(docs[0].sents)
    assert sents[0]._.rhetoric_sid == "0" and sents[1]._.rhetoric_section == "abstract"
    paper = read_reference_xml(shared_data / "cl-scisumm/training-40-manual/C00-2123/Reference_XML/C00-2123.xml")
    assert [s._.rhetoric_sid for s in sents] == [s.sid for s in paper.sentences]


def test_convert_cli_reports_counts(tmp_path):
    from typer.testing import CliRunner

    import spacy_rhetoric.cli.convert  # noqa: F401  registers the command
    from spacy_rhetoric.cli import app

    src = write_lines(tmp_path / "t.txt", [
        json.dumps({"text": "A b.", "label": "x"}), "{bad", json.dumps({"text": "C d.", "label": "y"})])
    out = tmp_path / "t.spacy"
    result = CliRunner().invoke(app, ["convert", "scicite", str(src), str(out)])
    assert result.exit_code == 0, result.output
    assert "Records read: 3" in result.output and "Docs written: 2" in result.output
    assert "Records skipped: 1" in result.output and "t.txt:2" in result.output
    assert len(DocBin().from_disk(out)) == 2
    result = CliRunner().invoke(app, ["convert", "scicite", str(src), str(out), "--errors", "raise"])
    # wasabi wraps long messages (the tmp path's length varies), so compare on joined words
    assert result.exit_code == 1 and "t.txt:2: invalid" in " ".join(result.output.split())
    result = CliRunner().invoke(app, ["convert", "nope", str(src), str(out)])
    assert result.exit_code == 2 and "unknown format 'nope'" in result.output


def test_registered_doc_corpora(shared_data, nlp):
    make = registry.readers.get("spacy_rhetoric.CSAbstructCorpus.v1")
    examples = list(make(shared_data / "csabstruct" / "dev.jsonl", limit=3)(nlp))
    assert len(examples) == 3 and all(isinstance(eg, Example) for eg in examples)
    assert examples[0].predicted.text == examples[0].reference.text
    first = json.loads((shared_data / "csabstruct" / "dev.jsonl").open().readline())
    assert get_sent_labels(examples[0].reference) == first["labels"]
    shuffled = list(make(shared_data / "csabstruct" / "dev.jsonl", limit=3, shuffle=True)(nlp))
    assert len(shuffled) == 3
    make = registry.readers.get("spacy_rhetoric.SciSummCorpus.v1")
    eg = next(iter(make(shared_data / "cl-scisumm/training-40-manual/C00-2123")(nlp)))
    assert eg.reference._.rhetoric_doc_id == "C00-2123"
    make = registry.readers.get("spacy_rhetoric.CitationIntentCorpus.v1")
    assert len(list(make(shared_data / "acl-arc-citation-intent" / "dev.txt")(nlp))) == 114
    make = registry.readers.get("spacy_rhetoric.PMCSentsCorpus.v1")
    assert len(list(make(shared_data / "pmc-sents-full" / "dev.jsonl", limit=2)(nlp))) == 2


def test_sentence_corpus_from_config(shared_data, tmp_path):
    from spacy_rhetoric.cli.convert import convert_corpus

    out = tmp_path / "cs.spacy"
    convert_corpus("csabstruct", shared_data / "csabstruct" / "dev.jsonl", out, limit=10)
    originals = list(DocBin().from_disk(out).get_docs(spacy.blank("en").vocab))
    expected = [(s.text, get_sent_labels(d)[i], d._.rhetoric_doc_id)
                for d in originals for i, s in enumerate(d.sents)]
    config = spacy.util.load_config_from_str(f"""
[corpora]
[corpora.train]
@readers = "spacy_rhetoric.SentenceCorpus.v1"
path = "{out}"
label_field = "label"
limit = 0
shuffle = false
""")
    corpora = registry.resolve(config)["corpora"]
    nlp = spacy.blank("en")
    examples = list(corpora["train"](nlp))
    got = []
    for eg in examples:
        sents = list(eg.reference.sents)
        assert len(sents) == 1 and eg.predicted.text == eg.reference.text
        got.append((sents[0].text, sents[0]._.rhetoric_label, eg.reference._.rhetoric_doc_id))
    assert got == expected
    limited = registry.readers.get("spacy_rhetoric.SentenceCorpus.v1")(out, limit=7, shuffle=True)
    assert len(list(limited(nlp))) == 7
    # Unlabelled sentences are not examples; another field can be used as the label.
    doc = doc_from_sentences(nlp, ["A b.", "C d.", "E f."], labels=["x", None, "y"],
                             sections=["s1", "s2", None])
    path = tmp_path / "mixed.spacy"
    DocBin(docs=[doc], store_user_data=True).to_disk(path)
    reader = registry.readers.get("spacy_rhetoric.SentenceCorpus.v1")
    assert [eg.reference.text for eg in reader(path)(nlp)] == ["A b.", "E f."]
    by_section = list(reader(path, label_field="section")(nlp))
    assert [(eg.reference.text, sent_values(eg.reference, "section")) for eg in by_section] == [
        ("A b.", ["s1"]), ("C d.", ["s2"])]


def test_readers_found_through_entry_points():
    """spaCy finds the readers without importing spacy_rhetoric first."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from spacy.util import registry\n"
        "names = ['CSAbstructCorpus', 'PMCSentsCorpus', 'CitationIntentCorpus', 'SciSummCorpus', 'SentenceCorpus']\n"
        "for name in names:\n"
        "    registry.readers.get(f'spacy_rhetoric.{name}.v1')\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_fetch_assets_from_mirror(tmp_path):
    """scripts/fetch_assets.py links project assets from a local mirror and checks MD5s."""
    import hashlib
    import subprocess
    import sys

    import srsly

    script = Path(__file__).resolve().parent.parent / "scripts" / "fetch_assets.py"
    mirror = tmp_path / "mirror"
    (mirror / "corpus").mkdir(parents=True)
    (mirror / "corpus" / "a.txt").write_text("hello\n")
    good = hashlib.md5(b"hello\n").hexdigest()
    project = tmp_path / "proj"
    project.mkdir()
    assets = [{"dest": "assets/data/corpus/a.txt", "url": "https://example.org/a.txt", "checksum": good}]
    srsly.write_yaml(project / "project.yml", {"title": "t", "assets": assets})

    def run(*args):
        return subprocess.run([sys.executable, str(script), str(mirror), "--project-dir", str(project), *args],
                              capture_output=True, text=True, timeout=120)

    result = run()
    assert result.returncode == 0, result.stdout + result.stderr
    target = project / "assets/data/corpus/a.txt"
    assert target.is_symlink() and target.read_text() == "hello\n"
    assets.append({"dest": "assets/data/corpus/missing.txt", "checksum": good})
    assets[0]["checksum"] = "0" * 32
    srsly.write_yaml(project / "project.yml", {"title": "t", "assets": assets})
    result = run()
    assert result.returncode == 1
    assert "checksum mismatch" in result.stdout and "missing.txt" in result.stdout
