"""CL-SciSumm reference papers as training papers: cited sentences labelled by
the discourse facets of the citances that cite them (readers.clscisumm)."""
import spacy
from spacy.tokens import DocBin

from spacy_rhetoric import extensions as ext
from spacy_rhetoric.readers.clscisumm import cites_others, facet_labels, read_facet_docs
from spacy_rhetoric.readers.section_labels import write_fullpaper_corpus
from spacy_rhetoric.section_headings import RELATED_WORK, rule_category

XML = """<PAPER>
<S sid="0" ssid="0">A Tiny Parser</S>
<ABSTRACT>
<S sid="1" ssid="1">We present a tiny parser.</S>
</ABSTRACT>
<SECTION title="Introduction" number="1">
<S sid="2" ssid="1">Parsing is an old task.</S>
<S sid="7" ssid="2">Charts were used before (Kay, 1980).</S>
<S sid="8" ssid="3">We extend the chart of Kay (1980).</S>
</SECTION>
<SECTION title="Related Work" number="2">
<S sid="3" ssid="1">Earlier parsers used charts.</S>
</SECTION>
<SECTION title="The Literature Graph" number="3">
<S sid="4" ssid="1">The graph has typed edges.</S>
<S sid="5" ssid="2">Nodes are papers and authors.</S>
</SECTION>
<SECTION title="Evaluation" number="4">
<S sid="6" ssid="1">Accuracy rises by two points.</S>
</SECTION>
</PAPER>
"""


def _record(n, offsets, facet):
    sids = ",".join(f"'{s}'" for s in offsets)
    return (f"Citance Number: {n} | Reference Article:  X00-0001.xml | Citing Article:  Y00-000{n}.xml | "
            f"Citation Marker Offset:  ['1'] | Citation Marker:  2000 | Citation Offset:  ['1'] | "
            f"Citation Text: <S sid =\"1\" ssid = \"1\">They build a graph.</S> | Reference Offset:  [{sids}] | "
            f"Reference Text: <S sid =\"4\" ssid = \"1\">x</S> | Discourse Facet:  {facet} | Annotator: A\n")


def _topic(root):
    topic = root / "X00-0001"
    (topic / "Reference_XML").mkdir(parents=True)
    (topic / "annotation").mkdir()
    (topic / "Reference_XML" / "X00-0001.xml").write_text(XML, encoding="utf8")
    records = [_record(1, ["4", "5"], "Method_Citation"), _record(2, ["1"], "Method_Citation"),
               _record(3, ["6"], "Results_Citation"), _record(4, ["5"], "Results_Citation"),
               _record(5, ["5"], "Method_Citation"), _record(6, ["3"], "Method_Citation")]
    (topic / "annotation" / "X00-0001.ann.txt").write_text("".join(records), encoding="utf8")
    return root


def test_facet_labels():
    assert facet_labels(["method"], "The Literature Graph") == ["method"]
    # the aim is accepted beside the method in the abstract and the introduction
    assert facet_labels(["method"], "abstract") == ["method", "objective"]
    assert facet_labels(["method"], "1 Introduction.") == ["method", "objective"]
    # the most frequent facet first; implication reads as a result (or other)
    assert facet_labels(["results", "method", "results"], None) == ["result", "method"]
    assert facet_labels(["implication"], None) == ["result", "other"]
    assert facet_labels(["aim"], None) == ["objective"]
    assert facet_labels([], None) == []
    # related-work sections, by the section tagger's keyword rules
    assert rule_category("Prior and Related Work.") == RELATED_WORK and rule_category("Background") == RELATED_WORK
    assert cites_others("Much was done (Melamed, 1997; Moore, 2003).") and cites_others("Brown et al. (1993) did.")
    assert not cites_others("We follow Brown et al. (1993).") and not cites_others("In 1993 it rained.")
    assert rule_category("Discussion and Related works.") != RELATED_WORK
    assert rule_category("1 Introduction.") == "introduction" and rule_category("The Literature Graph") is None


def test_facet_docs_label_only_cited_sentences(tmp_path):
    docs = list(read_facet_docs(_topic(tmp_path / "topics"), spacy.blank("en")))
    assert len(docs) == 1
    doc = docs[0]
    sents = list(doc.sents)
    assert [s.text for s in sents][0] == "We present a tiny parser."  # the title is not a sentence
    assert ext.get_doc_value(doc, ext.TITLE) == "A Tiny Parser"
    assert ext.get_doc_value(doc, ext.SOURCE) == "cl-scisumm"
    gold = [ext.get_span_value(s, ext.GOLD_LABELS) for s in sents]
    # the related-work section's sentence is background (though cited for its method)
    # and so is the introduction's sentence that cites without speaking of the paper
    assert gold == [["method", "objective"], None, ["background"], None, ["background"], ["method"],
                    ["method", "result"], ["result"]]
    assert [ext.get_span_value(s, ext.LABEL) for s in sents] == ["method", None, "background", None, "background",
                                                                 "method", "method", "result"]
    assert [ext.get_span_value(s, ext.HEADING) for s in sents][5] == "The Literature Graph"


def test_fullpaper_corpus_takes_the_facet_papers(tmp_path):
    import json

    cs = tmp_path / "cs.jsonl"
    cs.write_text(json.dumps({"sentences": ["We parse.", "It works."], "labels": ["method", "result"]}) + "\n",
                  encoding="utf8")
    counts = write_fullpaper_corpus(cs, cs, None, tmp_path / "out", clscisumm=_topic(tmp_path / "topics"),
                                    clscisumm_copies=2)
    assert counts["train"]["clscisumm_papers"] == 1
    docs = list(DocBin().from_disk(tmp_path / "out" / "train.spacy").get_docs(spacy.blank("en").vocab))
    sources = [ext.get_doc_value(d, ext.SOURCE) for d in docs]
    assert sources.count("cl-scisumm") == 2
    paper = docs[sources.index("cl-scisumm")]
    assert [ext.get_span_value(s, ext.LABEL) for s in paper.sents][-1] == "result"
