"""rhetoric_section_tagger: headings -> section categories (rules first, the
FeRoSA-trained classifier otherwise), numbered sub-headings inheriting,
back matter, sent._.rhetoric_section and doc.spans["sections"], JSON
persistence, the FeRoSA reader and the split by heading string."""
import json

import numpy
import pytest
import spacy
from helpers import entry_point_names
from spacy.tokens import DocBin
from spacy.training import Example

from spacy_rhetoric.extensions import HEADING, TITLE, set_doc_value, set_span_values
from spacy_rhetoric.pipeline.section_tagger import SectionTagger, score_section_tagger
from spacy_rhetoric.readers.common import ReaderError, doc_from_sentences
from spacy_rhetoric.readers.ferosa import read_ferosa_headings
from spacy_rhetoric.section_headings import (
    CATEGORIES,
    HeadingClassifier,
    HeadingRules,
    parse_heading,
    split_headings,
    train_heading_classifier,
)

TSV = """heading\tlabel
Introduction.\tI
Introduction and motivation.\tI
Related work.\tRW
Previous work.\tRW
Our approach.\tM
Hierarchical phrase-based translation.\tM
Parsing model.\tM
Experiments.\tRE
Experimental results.\tRE
Conclusion.\tC
Conclusions and future work.\tC
Acknowledgements.\t
Query language.\tMM
Discussions & Conclusions.\tE
"""

PAPER = [  # (heading, sentences)
    ("Abstract", ["We tag sections.", "It works."]),
    ("1 Introduction", ["Papers have sections."]),
    ("2 Related Work", ["Others did this."]),
    ("2.1 Rule-based methods", ["Rules were used."]),
    ("3 Hierarchical phrase-based translation", ["Our model translates."]),
    ("3.1 Decoding", ["We decode."]),
    ("4 Experiments", ["We ran experiments."]),
    ("4.1 Experimental Setup", ["The data is small."]),
    ("4.2 Results on WMT", ["Scores went up."]),
    ("Neural baseline", ["A baseline was run."]),
    ("5 Conclusion", ["We conclude."]),
    ("Acknowledgements", ["Thanks."]),
    ("References", ["Smith 2020."]),
    ("A Proofs of the lemmas", ["Proof."]),
]
EXPECTED = ["abstract", "introduction", "related work", "related work", "method", "method", "results",
            "method", "results", "results", "conclusion", "other", "other", "other"]


@pytest.fixture(scope="module")
def nlp():
    """The tagger with the learned heading classifier as the last resort
    (``unmatched = "model"``): the tests of its decisions; the default
    (``unknown``) is tested apart."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_section_tagger", config={"unmatched": "model"})
    return nlp


@pytest.fixture(scope="module")
def tagger(nlp) -> SectionTagger:
    return nlp.get_pipe("rhetoric_section_tagger")


def paper_doc(nlp, field=HEADING, paper=PAPER):
    sents = [s for _, ss in paper for s in ss]
    headings = [h for h, ss in paper for _ in ss]
    doc = doc_from_sentences(nlp, sents)
    set_span_values(doc, field, list(doc.sents), headings)
    return doc


@pytest.mark.parametrize("raw,number,text", [
    ("4.2 Results on WMT", ("4", "2"), "results on wmt"),
    ("4.2. Results", ("4", "2"), "results"),
    ("4 Experiments", ("4",), "experiments"),
    ("IV. RESULTS", ("IV",), "results"),
    ("A.1 Proofs", ("A", "1"), "proofs"),
    ("A. Proofs", ("A",), "proofs"),
    ("A Neural Model", (), "a neural model"),
    ("3D reconstruction", (), "3d reconstruction"),
    ("Conclusions & Future Work.", (), "conclusions and future work"),
])
def test_parse_heading(raw, number, text):
    heading = parse_heading(raw)
    assert heading.number == number
    assert heading.text == text


def test_rules_first_match_wins_and_back_matter():
    rules = HeadingRules.packaged()
    assert rules.match("introduction and related work").category == "introduction"
    assert rules.match("comparison with related work").category == "results"
    assert rules.match("experimental setup").category == "method"  # longer match beats "experiment"
    assert rules.match("references").back_matter
    assert rules.match("reference resolution") is None
    with pytest.raises(ValueError, match="regular expression"):
        HeadingRules([{"category": "method", "pattern": "("}])
    with pytest.raises(ValueError, match="'category' and 'pattern'"):
        HeadingRules([{"category": "method"}])


def test_tag_heading_public_api():
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    assert tagger.tag_heading("4.1 Experimental Results") == "results"
    assert tagger.tag_heading("Introduction") == "introduction"
    assert tagger.tag_heading("Related Work.") == "related work"
    # a topical heading no rule decides: the explicit outcome, not the FeRoSA model's "method"
    assert tagger.tag_heading("Hierarchical phrase-based translation") == "unknown"
    assert tagger.tag_heading("Electrochemical Performance") == "unknown"
    assert tagger.tag_heading("Conclusions and Further Work") == "conclusion"
    assert tagger.tag_heading("Acknowledgments") == "other"
    assert tagger.tag_heading("2. Materials and Methods") == "method"
    assert tagger.tag_heading("Experimental") == "method"
    assert set(tagger.labels) == set(CATEGORIES) | {"unknown", "body"}


def test_topical_headings_between_introduction_and_conclusion_are_body():
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    headings = ["Abstract", "1 Introduction", "2 Structure of The Literature Graph", "2.1 Node Types",
                "Entity linking", "3 Theory", "4 Conclusion", "5 Where next", "References"]
    assert tagger.tag_headings(headings) == [
        "abstract", "introduction", "body", "body", "body", "body", "conclusion", "unknown", "other"]
    # no introduction: nothing says where the body is
    assert tagger.tag_headings(["Electrochemical Performance", "2 Theory"]) == ["unknown", "unknown"]
    # the body starts at any body section, ends at back matter without a conclusion
    assert tagger.tag_headings(["Methods", "Synthesis of 3", "Acknowledgements", "Extra"]) == [
        "method", "body", "other", "other"]
    assert tagger.tag_headings([None, "Introduction", None, "Theory"]) == [None, "introduction", None, "body"]


def test_body_is_what_users_read_and_unknown_what_the_classifier_reads():
    from spacy_rhetoric.evaluation.fullpaper import sentence_rows
    from spacy_rhetoric.section_headings import SENTENCE_SECTIONS, sentence_sections

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_section_tagger")
    paper = [("1 Introduction", ["Graphs matter."]), ("2 Structure of the Graph", ["The graph has edges."]),
             ("3 Conclusion", ["We built it."])]
    doc = nlp(paper_doc(nlp, paper=paper))
    assert [s._.rhetoric_section for s in doc.sents] == ["introduction", "body", "conclusion"]
    assert sentence_sections(doc, [s.start for s in doc.sents]) == ["introduction", "unknown", "conclusion"]
    assert [r["section"] for r in sentence_rows([doc])] == ["introduction", "unknown", "conclusion"]
    assert "body" not in SENTENCE_SECTIONS  # the classifier's section features keep their width


def test_unmatched_model_keeps_the_learned_classifier():
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger", config={"unmatched": "model"})
    assert tagger.tag_heading("Hierarchical phrase-based translation") == "method"  # classifier
    assert set(tagger.labels) == set(CATEGORIES)
    with pytest.raises(ValueError, match="unmatched"):
        spacy.blank("en").add_pipe("rhetoric_section_tagger", config={"unmatched": "guess"})


def test_tag_headings_inherit_and_back_matter(tagger):
    assert tagger.tag_headings([h for h, _ in PAPER]) == EXPECTED
    # without its parent a sub-heading is decided on its own
    assert tagger.tag_headings(["2.1 Rule-based methods"]) == ["method"]
    # 4.2.1 inherits from 4.2 before 4
    assert tagger.tag_headings(["4 Experiments", "4.2 Experimental setup", "4.2.1 Corpora"]) == [
        "results", "method", "method"]
    assert tagger.tag_headings([None, "Introduction"]) == [None, "introduction"]


def test_threshold_gives_other(tagger):
    strict = SectionTagger(tagger.vocab, threshold=1.0, unmatched="model")
    assert strict.tag_heading("Hierarchical phrase-based translation") == "other"
    assert strict.tag_heading("Introduction") == "introduction"  # a rule, no threshold
    with pytest.raises(ValueError, match="threshold"):
        SectionTagger(tagger.vocab, threshold=1.5)


def test_doc_sections_and_span_group(nlp):
    doc = nlp(paper_doc(nlp))
    got = [s._.rhetoric_section for s in doc.sents]
    want = [c for c, (_, ss) in zip(EXPECTED, PAPER) for _ in ss]
    assert got == want
    assert [s._.rhetoric_heading for s in doc.sents][0] == "Abstract"  # heading left alone
    group = doc.spans["sections"]
    labels = [s.label_ for s in group]
    assert labels == ["abstract", "introduction", "related work", "method", "results", "method", "results",
                      "conclusion", "other"]
    assert group.attrs["headings"][2] == ["2 Related Work", "2.1 Rule-based methods"]
    assert group[0].text == "We tag sections. It works."
    # spans and values survive DocBin
    doc2 = list(DocBin(docs=[doc], store_user_data=True).get_docs(nlp.vocab))[0]
    assert [s.label_ for s in doc2.spans["sections"]] == labels
    assert [s._.rhetoric_section for s in doc2.sents] == want


def test_section_field_as_heading_and_title(nlp):
    """CL-SciSumm docs: raw <SECTION title> (and "abstract"/"title") in SECTION,
    no HEADING; running twice gives the same result."""
    sents = ["A tagger of sections.", "We tag sections.", "Papers have sections.", "We decode.", "Thanks."]
    sections = ["title", "abstract", "Introduction", "Decoding with cube pruning", "Acknowledgments"]
    doc = doc_from_sentences(nlp, sents, sections=sections)
    doc = nlp(doc)
    first = [s._.rhetoric_section for s in doc.sents]
    assert first == ["title", "abstract", "introduction", "method", "other"]
    assert [s._.rhetoric_section for s in nlp(doc).sents] == first
    # no heading anywhere: the sentence that is the paper title is the title
    doc = doc_from_sentences(nlp, sents[:2])
    set_doc_value(doc, TITLE, "A tagger  of sections.")
    assert [s._.rhetoric_section for s in nlp(doc).sents] == ["title", None]
    assert [s.label_ for s in doc.spans["sections"]] == ["title"]


def test_sentencizer_on_raw_text(nlp):
    doc = nlp("No headings here. None at all.")
    assert [s._.rhetoric_section for s in doc.sents] == [None, None]
    assert len(doc.spans["sections"]) == 0
    assert len(nlp("").spans["sections"]) == 0
    bare = spacy.blank("en")
    bare.add_pipe("rhetoric_section_tagger")
    with pytest.raises(ValueError, match="needs sentence boundaries"):
        bare("No sentencizer here. None.")


def test_user_rules_extend(tmp_path, nlp):
    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [{"category": "method", "pattern": "^experiments$"},
                                          {"category": "other", "pattern": "^colophon$", "back_matter": True}]}))
    local = spacy.blank("en")
    tagger = local.add_pipe("rhetoric_section_tagger", config={"rules_path": str(path)})
    assert tagger.tag_heading("Experiments") == "method"  # the user's rule wins the tie
    assert tagger.tag_headings(["Colophon", "Results"]) == ["other", "other"]
    assert tagger.tag_heading("Introduction") == "introduction"  # packaged rules still apply


def test_initialize_to_disk_and_load(tmp_path):
    tsv = tmp_path / "headings.tsv"
    tsv.write_text(TSV, encoding="utf8")
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"category": "results", "pattern": "^ablations?$"}]))
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    tagger = nlp.add_pipe("rhetoric_section_tagger", config={"rules_path": str(rules), "threshold": 0.3})
    packaged = tagger.model.to_dict()
    nlp.initialize(lambda: [])  # no headings_path: the packaged classifier stays
    assert tagger.model.to_dict() == packaged
    nlp.config["initialize"]["components"]["rhetoric_section_tagger"] = {"headings_path": str(tsv)}
    nlp.initialize()  # as spacy train does, from [initialize.components.rhetoric_section_tagger]
    assert tagger.model.info["n_train"] == 13  # facet E dropped
    headings = ["Parsing model", "Ablations", "Query language", "Zebra crossing"]
    before = tagger.tag_headings(headings)
    nlp.to_disk(tmp_path / "pipe")
    files = sorted(p.name for p in (tmp_path / "pipe" / "rhetoric_section_tagger").iterdir())
    assert files == ["cfg", "model.json", "rules.json"]
    loaded = spacy.load(tmp_path / "pipe")
    tagger2 = loaded.get_pipe("rhetoric_section_tagger")
    assert tagger2.tag_headings(headings) == before
    assert tagger2.threshold == pytest.approx(0.3)
    assert tagger2.tag_heading("Ablations") == "results"
    text = ["Our model parses.", "It ablates."]
    doc = doc_from_sentences(nlp, text)
    set_span_values(doc, HEADING, list(doc.sents), ["Parsing model", "Ablations"])
    doc2 = doc_from_sentences(loaded, text)
    set_span_values(doc2, HEADING, list(doc2.sents), ["Parsing model", "Ablations"])
    assert [s._.rhetoric_section for s in nlp(doc).sents] == [s._.rhetoric_section for s in loaded(doc2).sents]
    tagger3 = SectionTagger(nlp.vocab).from_bytes(tagger.to_bytes())
    assert tagger3.tag_headings(headings) == before


def test_classifier_json_round_trip():
    texts = ["introduction", "related work", "our approach", "experimental results", "conclusion", "parsing"]
    labels = ["introduction", "related work", "method", "results", "conclusion", "method"]
    model = HeadingClassifier.fit(texts, labels, vectorizer={"min_df": 1})
    again = HeadingClassifier.from_dict(json.loads(json.dumps(model.to_dict())))
    probe = ["introductions", "parse model", "zzz"]
    assert numpy.array_equal(model.predict_proba(probe), again.predict_proba(probe))
    assert model.classes == again.classes


def test_read_ferosa_headings(tmp_path):
    tsv = tmp_path / "h.tsv"
    tsv.write_text(TSV, encoding="utf8")
    pairs, dropped = read_ferosa_headings(tsv)
    assert dropped == {"facet E": 1}
    assert dict(pairs)["Acknowledgements."] == "other"
    assert dict(pairs)["Query language."] == "method"
    assert dict(pairs)["Related work."] == "related work"
    tsv.write_text("heading\tlabel\nFoo.\tXYZ\n", encoding="utf8")
    with pytest.raises(ReaderError, match=":2: unknown facet"):
        read_ferosa_headings(tsv)


def test_split_by_heading_string():
    pairs = [(f"Heading {i % 40}.", "method") for i in range(200)] + [("heading 3", "method")]
    train, test = split_headings(pairs, test_fraction=0.2, seed=0)
    norm = lambda ps: {h.lower().strip(" .") for h, _ in ps}
    assert not norm(train) & norm(test)
    assert len(norm(test)) == 8
    assert split_headings(pairs, test_fraction=0.2, seed=0) == (train, test)
    assert len(train) + len(test) == len(pairs)


def test_scorer_skips_raw_headings(nlp):
    doc = paper_doc(nlp, paper=PAPER[:3])
    pred = nlp(doc.copy())
    ref = doc_from_sentences(nlp, [s.text for s in doc.sents],
                             sections=["abstract", "abstract", "Introduction", "method"])
    scores = score_section_tagger([Example(pred, ref)])
    assert scores["rhetoric_section_f_micro"] == pytest.approx(2 / 3)  # raw "Introduction" skipped
    assert nlp.get_pipe("rhetoric_section_tagger").score([Example(pred, ref)]) == scores


def test_entry_points():
    assert "rhetoric_section_tagger" in entry_point_names("spacy_factories")
    assert "spacy_rhetoric.section_tagger_scorer.v1" in entry_point_names("spacy_scorers")


def test_real_ferosa_file(shared_data):
    pairs, dropped = read_ferosa_headings(shared_data / "ferosa-section-headings" / "section_mapping.tsv")
    assert len(pairs) + sum(dropped.values()) == 25482
    assert {c for _, c in pairs} == {"introduction", "related work", "method", "results", "conclusion", "other"}


def test_train_from_pairs():
    pairs = [("1 Introduction", "introduction"), ("Related work", "related work"), ("Our model", "method"),
             ("Results", "results"), ("Conclusion", "conclusion"), ("References", "other")]
    model = train_heading_classifier(pairs, vectorizer={"min_df": 1}, source="inline")
    assert model.info["source"] == "inline"
    assert model.info["categories"]["method"] == 1
