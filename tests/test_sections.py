"""Section-aware function labels: spacy_rhetoric.SectionAwareSentenceClassifier.v3
(ml/sections.py: section one-hot as input, back matter -> other by rule) and the
multi-source corpus (readers/section_labels.py), on tiny inline data."""
import numpy
import pytest
import spacy
from helpers import (
    CLASSIFIER,
    FULL,
    FULL_PAPER,
    PAPERS_BLOCK,
    SAME,
    TOK2VEC,
    TRAIN,
    model_config,
    sectioned_doc,
    train_nlp,
)
from spacy.tokens import DocBin

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.extensions import HEADING, SECTION, get_span_value, set_span_values
from spacy_rhetoric.ml.context import build_context_cnn
from spacy_rhetoric.ml.sections import BACK_MATTER, UNKNOWN, is_back_matter_heading, sentence_sections
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.readers.section_labels import (
    PMC_LABELS,
    SectionLabelCorpus,
    abstract_sections,
    pmc_coarse,
    weak_label_papers,
    weak_labels,
)


def test_sentence_sections_back_matter_and_unknown():
    nlp = spacy.blank("en")
    doc = sectioned_doc(nlp, ["A.", "B.", "C.", "D.", "E."],
                        ["introduction", "raw heading text", "other", "other", "other"],
                        ["1 Introduction", "Whatever", "Some junk", "Acknowledgments", "A Proofs"])
    starts = [s.start for s in doc.sents]
    # "other" before any back-matter heading stays other; from "Acknowledgments" on: back matter
    assert sentence_sections(doc, starts) == ["introduction", UNKNOWN, "other", BACK_MATTER, BACK_MATTER]
    assert is_back_matter_heading("5 References") and is_back_matter_heading("Acknowledgements")
    assert not is_back_matter_heading("4 Results") and not is_back_matter_heading("")
    plain = doc_from_sentences(nlp, ["A.", "B."])
    assert sentence_sections(plain, [s.start for s in plain.sents]) == [UNKNOWN, UNKNOWN]


def test_weak_and_pmc_label_mapping():
    assert weak_labels(["introduction", "related work", "method", "results", "conclusion", "other", "abstract",
                        "title", None]) == ["background", "background", "method", "result", "other", "other",
                                            None, None, None]
    assert weak_labels(["method"], [True]) == ["other"]
    assert PMC_LABELS["methods"] == "method" and PMC_LABELS["results"] == "result"
    nlp = spacy.blank("en")
    doc = pmc_coarse(doc_from_sentences(nlp, ["a b.", "c d."], labels=["methods", "results"]))
    assert [get_span_value(s, "label") for s in doc.sents] == ["method", "result"]
    doc = abstract_sections(doc_from_sentences(nlp, ["a b.", "c d."], labels=["method", "result"]))
    assert [get_span_value(s, SECTION) for s in doc.sents] == ["abstract", "abstract"]
    assert [get_span_value(s, HEADING) for s in doc.sents] == ["Abstract", "Abstract"]


def test_weak_label_papers_tags_sections_and_cuts_pieces():
    nlp = spacy.blank("en")
    paper = doc_from_sentences(nlp, ["We parse.", "We built it.", "It works.", "Thanks."], doc_id="P1")
    set_span_values(paper, HEADING, list(paper.sents), ["1 Introduction", "2 Method", "3 Results", "Acknowledgments"])
    tagger = spacy.blank("en").add_pipe("rhetoric_section_tagger")
    pieces = list(weak_label_papers([paper], nlp, tagger, max_sents=3))
    assert [len(list(p.sents)) for p in pieces] == [3, 1]
    labels = [get_span_value(s, "label") for p in pieces for s in p.sents]
    assert labels == ["background", "method", "result", "other"]
    assert get_span_value(list(pieces[1].sents)[0], HEADING) == "Acknowledgments"


def test_section_label_corpus_copies_sections_to_predicted(tmp_path):
    nlp = spacy.blank("en")
    doc = sectioned_doc(nlp, *TRAIN[0][:3], labels=TRAIN[0][3])
    db = DocBin(store_user_data=True)
    db.add(doc)
    db.to_disk(tmp_path / "train.spacy")
    (eg,) = list(SectionLabelCorpus(tmp_path)(nlp))
    pred_sents = list(eg.predicted.sents) if eg.predicted.has_annotation("SENT_START") else None
    assert pred_sents is None  # the predicted doc has no boundaries, but the section values
    assert sentence_sections(eg.predicted, [0]) == ["results"]
    assert eg.reference.user_data is not eg.predicted.user_data


def test_section_label_corpus_reads_its_files_once_per_version(tmp_path):
    """Every call gives fresh predicted docs over the same references (read
    once); a file written again is read again."""
    import os

    nlp = spacy.blank("en")
    db = DocBin(store_user_data=True)
    db.add(sectioned_doc(nlp, *TRAIN[0][:3], labels=TRAIN[0][3]))
    db.to_disk(tmp_path / "train.spacy")
    corpus = SectionLabelCorpus(tmp_path, section_dropout=1.0)
    (first,) = list(corpus(nlp))
    (second,) = list(corpus(nlp))
    assert first.reference is second.reference and first.predicted is not second.predicted
    assert sentence_sections(first.predicted, [0]) == ["unknown"]  # dropout changed the predicted doc only
    assert sentence_sections(second.reference, [0]) == ["results"]
    db = DocBin(store_user_data=True)
    db.add(sectioned_doc(nlp, *TRAIN[1][:3], labels=TRAIN[1][3]))
    db.to_disk(tmp_path / "train.spacy")
    stat = (tmp_path / "train.spacy").stat()
    os.utime(tmp_path / "train.spacy", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    (third,) = list(corpus(nlp))
    assert third.reference.text != first.reference.text


def predict(nlp, sents, sections, headings):
    doc = nlp(sectioned_doc(nlp, sents, sections, headings))
    return [(s._.rhetoric_label, s._.rhetoric_scores) for s in doc.sents]


V3 = {"@architectures": "spacy_rhetoric.SectionAwareSentenceClassifier.v3", "ngram_size": 2, "ngram_length": 4096}
# + the fine-tuned MiniLM member (two top layers, a few passes over the tiny papers)
FULL_TUNED = dict(FULL, members=dict(FULL["members"], finetuned={
    "@architectures": "spacy_rhetoric.FinetunedMember.v1", "frozen_layers": 4, "epochs": 10.0, "batch_size": 4,
    "learn_rate": 0.0005, "max_length": 48, "learn_from": PAPERS_BLOCK}), weights={
        "paper_body": {"network": 0.4, "tfidf": 0.3, "finetuned": 0.3},
        "paper_abstract": {"network": 0.4, "tfidf": 0.2, "finetuned": 0.2, "abstracts": 0.2},
        "other_docs": {"network": 0.5, "abstracts": 0.5}})


@pytest.mark.slow  # trains 60 steps
@pytest.mark.parametrize("arch", [{"ngram_size": 0, "positions": "docs", "segments": "docs"}, V3,
                                  dict(V3, decode="viterbi"), dict(V3, segments="docs"), dict(V3, ngram_size=0),
                                  FULL, FULL_TUNED],
                         ids=["v3-plain", "v3", "v3-viterbi", "v3-docs", "v3-no-ngrams", "full-paper",
                              "full-paper-tuned"])
def test_section_aware_classifier_overfits_and_round_trips(tmp_path, arch):
    """overfitting_IO: the same sentence is learned as result in a results
    section and as background in the introduction; back matter is other by
    rule; the saved pipeline predicts the same."""
    from spacy_rhetoric.ml.members import fitted_members, is_fitted

    nlp = train_nlp(**arch)
    assert nlp.get_pipe(CLASSIFIER).model.attrs["labels"] == ["background", "method", "other", "result"]
    # the papers' TF-IDF member (+ MiniLM) is fitted; every TRAIN doc is a paper, so the abstracts' is not;
    # + the fine-tuned member, last
    mixture = arch.get("@architectures") == FULL_PAPER
    fitted = [is_fitted(m) for m in fitted_members(nlp.get_pipe(CLASSIFIER).model)]
    assert fitted == ([True, False] if mixture else []) + ([True] if "finetuned" in arch.get("members", {}) else [])
    in_results = predict(nlp, [SAME, "We build a parser."], ["results", "method"], ["4 Results", "3 Method"])
    in_intro = predict(nlp, ["Parsing is old.", SAME], ["introduction"] * 2, ["1 Introduction"] * 2)
    assert in_results[0][0] == "result" and in_intro[1][0] == "background"
    back = predict(nlp, ["We build a parser.", "We build a parser."], ["method", "other"],
                   ["3 Method", "Acknowledgments"])
    assert back[0][0] == "method"
    assert back[1][0] == "other" and back[1][1]["other"] == 1.0
    nlp.to_disk(tmp_path / "nlp")
    loaded = spacy.load(tmp_path / "nlp")
    assert loaded.get_pipe(CLASSIFIER).model.attrs["labels"] == ["background", "method", "other", "result"]
    assert [is_fitted(m) for m in fitted_members(loaded.get_pipe(CLASSIFIER).model)] == fitted
    again = predict(loaded, [SAME, "We build a parser."], ["results", "method"], ["4 Results", "3 Method"])
    for (label, scores), (label2, scores2) in zip(in_results, again):
        assert label == label2
        assert numpy.allclose([scores[k] for k in sorted(scores)], [scores2[k] for k in sorted(scores2)], atol=1e-5)
    back2 = predict(loaded, ["We build a parser.", "We build a parser."], ["method", "other"],
                    ["3 Method", "Acknowledgments"])
    assert back2[1][1]["other"] == 1.0


@pytest.mark.slow  # trains 60 steps
def test_without_sections_the_section_changes_nothing():
    # no section-tagged n-gram positions, no per-section CRF: nothing else reads the section
    nlp = train_nlp(use_sections=False, ngram_size=0, segments="docs", positions="docs")
    a = predict(nlp, [SAME], ["results"], ["4 Results"])
    b = predict(nlp, [SAME], ["introduction"], ["1 Introduction"])
    c = predict(nlp, [SAME], ["other"], ["Acknowledgments"])  # no rule either
    assert a[0][1] == pytest.approx(b[0][1]) and a[0][1] == pytest.approx(c[0][1])
    assert c[0][1]["other"] < 1.0


@pytest.mark.slow  # trains 60 steps
def test_forced_label_not_among_labels_forces_nothing():
    nlp = train_nlp(forced_label="nonexistent")
    back = predict(nlp, ["We build a parser."], ["other"], ["Acknowledgments"])
    assert max(back[0][1].values()) < 1.0


def test_sequence_head_parts():
    """The CRF is the output layer; its emitters are the section-aware
    dense part and (ngram_size > 0) the sparse n-gram part; untrained, each
    row of the marginals sums to 1 and back matter is forced."""
    from spacy_rhetoric.ml.sections import build_section_aware_sentence_classifier_v3

    t2v = spacy.registry.resolve({"t": TOK2VEC})["t"]
    model = build_section_aware_sentence_classifier_v3(t2v, build_context_cnn(16, depth=1), width=16, ngram_size=2,
                                                       ngram_length=512)
    assert model.get_ref("output_layer").name == "crf" and len(model.get_ref("output_layer").layers) == 2
    bare = build_section_aware_sentence_classifier_v3(spacy.registry.resolve({"t": TOK2VEC})["t"],
                                                      build_context_cnn(128), ngram_size=0)
    assert len(bare.get_ref("output_layer").layers) == 1
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    pipe = nlp.add_pipe(CLASSIFIER, config={"model": model_config(**V3)})
    for label in ("background", "other", "result"):
        pipe.add_label(label)
    nlp.initialize()
    out = predict(nlp, ["Parsing is old.", "We thank all."], ["introduction", "other"],
                  ["1 Introduction", "Acknowledgments"])
    assert sum(out[0][1].values()) == pytest.approx(1.0, abs=1e-5)
    assert out[1][0] == "other" and out[1][1]["other"] == 1.0


def test_segments_of_docs_and_section_runs():
    """segments "docs": one chain per doc; "sections": one per run of
    consecutive same-section sentences, tagged with the section."""
    from spacy.strings import hash_string
    from thinc.api import NumpyOps

    from spacy_rhetoric.ml.pooling import doc_sentence_offsets, make_indices
    from spacy_rhetoric.ml.segments import segments_of
    from spacy_rhetoric.ml.sequence import position_keys

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    a = sectioned_doc(nlp, ["A b.", "C d.", "E f.", "G h.", "I j.", "K l."],
                      ["abstract", "abstract", "introduction", "introduction", "introduction", "method"],
                      ["Abstract", "Abstract", "1 Intro", "1 Intro", "1 Intro", "2 Method"])
    b = sectioned_doc(nlp, ["M n.", "O p."], ["results", "results"], ["3 Results"] * 2)
    docs = [a, b]
    X = (docs, make_indices(NumpyOps(), [doc_sentence_offsets(d) for d in docs]))
    assert segments_of(X, "docs") == ([6, 2], ["", ""])
    assert segments_of(X, "sections") == ([2, 3, 1, 2], ["abstract", "introduction", "method", "results"])
    with pytest.raises(ValueError, match="segments"):
        segments_of(X, "paragraphs")
    # untagged keys are the v1 keys; a tag makes them differ per section
    assert position_keys(2)[0][0] == hash_string("__pos_rel=0")
    assert position_keys(2, "introduction")[0][0] == hash_string("__pos_rel=0|introduction")


def test_v3_positions_count_within_sections():
    """v3's trunk appends (relative position, is-first, is-last) counted within
    each run of same-section sentences; with positions "docs" over the doc.
    The last abstract sentence of a paper is then "last", as in an abstract."""
    from thinc.api import NumpyOps

    from spacy_rhetoric.ml.pooling import doc_sentence_offsets, make_indices
    from spacy_rhetoric.ml.sections import build_section_aware_sentence_classifier_v3, with_segment_positions

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    doc = sectioned_doc(nlp, ["A b.", "C d.", "E f.", "G h.", "I j."],
                        ["abstract"] * 3 + ["introduction"] * 2, ["Abstract"] * 3 + ["1 Intro"] * 2)
    X = ([doc], make_indices(NumpyOps(), [doc_sentence_offsets(doc)]))
    expected = {"sections": [[0, 1, 0], [0.5, 0, 0], [1, 0, 1], [0, 1, 0], [1, 0, 1]],
                "docs": [[0, 1, 0], [0.25, 0, 0], [0.5, 0, 0], [0.75, 0, 0], [1, 0, 1]]}
    for positions, rows in expected.items():
        model = build_section_aware_sentence_classifier_v3(spacy.registry.resolve({"t": TOK2VEC})["t"], width=16,
                                                           encoder=build_context_cnn(16, depth=1), ngram_size=0,
                                                           positions=positions, nO=4)
        model.initialize(X=X)
        trunk = next(n for n in model.walk() if n.name in ("with_segment_positions", "with_positions"))
        assert (trunk.name == "with_segment_positions") == (positions == "sections")
        if positions == "sections":
            out = trunk.predict(X)
        else:  # with_positions reads the pooled Ragged
            out = trunk.predict(model.get_ref("pooler").predict(X))
        assert out.shape == (5, 16 + 3)
        numpy.testing.assert_allclose(out[:, -3:], rows)
    # gradient flows through the trunk into the tok2vec
    model = build_section_aware_sentence_classifier_v3(spacy.registry.resolve({"t": TOK2VEC})["t"], width=16,
                                                       encoder=build_context_cnn(16, depth=1), ngram_size=0, nO=4)
    model.initialize(X=X)
    trunk = next(n for n in model.walk() if n.name == "with_segment_positions")
    out, backprop = trunk(X, is_train=True)
    assert backprop(numpy.ones_like(out)) is not None
    with pytest.raises(ValueError, match="positions"):
        build_section_aware_sentence_classifier_v3(spacy.registry.resolve({"t": TOK2VEC})["t"],
                                                   build_context_cnn(128), positions="pages")
    assert with_segment_positions(model.get_ref("pooler"), trunk.layers[1]).attrs["segments"] == "sections"


def test_a_sentence_batch_reads_its_sections_once_per_flag():
    """One forward pass asks several layers for the sections of one batch: a
    SentenceBatch reads them once per acknowledgements flag and keeps them
    (callers cannot change the kept answer), copies made with ``with_parts``
    share them, and a plain (docs, indices) tuple is read each time; no
    state outside the batch."""
    from thinc.api import NumpyOps

    from spacy_rhetoric.ml import segments
    from spacy_rhetoric.ml.pooling import doc_sentence_offsets, make_indices

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    a = sectioned_doc(nlp, ["A b.", "We thank all."], ["abstract", "method"], ["Abstract", "2 Method"])
    b = sectioned_doc(nlp, ["C d."], ["results"], ["3 Results"])
    Xa = ([a], make_indices(NumpyOps(), [doc_sentence_offsets(a)]))
    calls = []
    original = segments.read_sections

    def counting(*args):
        calls.append(args[2])
        return original(*args)

    segments.read_sections = counting
    try:
        batch = segments.as_batch(Xa)
        assert segments.as_batch(batch) is batch
        docs, indices = batch
        assert docs is Xa[0] and indices is Xa[1]
        first = segments.sections_of(batch)
        first.append("changed by a caller")
        assert segments.sections_of(batch) == ["abstract", "method"]
        assert segments.sections_of(batch, acknowledgements=True) == ["abstract", BACK_MATTER]
        assert segments.segments_of(batch.with_parts(tuple(batch)), "sections") == ([1, 1], ["abstract", "method"])
        assert calls == [False, True]
        assert segments.sections_of(Xa) == ["abstract", "method"]
        assert segments.sections_of(Xa) == ["abstract", "method"]
        assert calls == [False, True, False, False]
        Xb = segments.as_batch(([b], make_indices(NumpyOps(), [doc_sentence_offsets(b)])))
        assert segments.sections_of(Xb) == ["results"]
        assert calls == [False, True, False, False, False]
    finally:
        segments.read_sections = original


def test_bad_forced_section_is_an_error():
    from spacy_rhetoric.ml.sections import build_section_aware_sentence_classifier_v3

    with pytest.raises(ValueError, match="not section names"):
        build_section_aware_sentence_classifier_v3(spacy.registry.resolve({"t": TOK2VEC})["t"],
                                                   build_context_cnn(128), forced_sections=["acknowledgements"])


def test_section_features_one_hot_scaled():
    from thinc.api import NumpyOps

    from spacy_rhetoric.ml.pooling import make_indices
    from spacy_rhetoric.ml.sections import SECTION_FEATURES, section_features

    nlp = spacy.blank("en")
    doc = sectioned_doc(nlp, ["A b.", "C d."], ["results", None], ["4 Results", None])
    X = ([doc], make_indices(NumpyOps(), [[(0, 3), (3, 6)]]))
    feats = section_features(scale=5.0).predict(X)
    assert feats.shape == (2, len(SECTION_FEATURES))
    assert feats[0, SECTION_FEATURES.index("results")] == 5.0 and feats[0].sum() == 5.0
    assert feats[1, SECTION_FEATURES.index(UNKNOWN)] == 5.0
    assert not section_features(use_sections=False).predict(X).any()


def test_acknowledgement_sentences_are_back_matter():
    from spacy_rhetoric.ml.sections import is_acknowledgement

    assert is_acknowledgement("We would like to thank the anonymous reviewers for their helpful comments.")
    assert is_acknowledgement("This work was partially supported by NSF grant 123.")
    assert is_acknowledgement("The authors are grateful to A. Smith.")
    assert not is_acknowledgement("We would like to extend this approach to other languages.")
    assert not is_acknowledgement("We use a large corpus.")
    nlp = spacy.blank("en")
    doc = sectioned_doc(nlp, ["We have presented a method.", "We would like to thank the reviewers."],
                        ["conclusion", "conclusion"], ["5 Conclusion"] * 2)
    sents = list(doc.sents)
    assert sentence_sections(doc, [s.start for s in sents]) == ["conclusion", "conclusion"]
    assert sentence_sections(doc, [s.start for s in sents], [s.end for s in sents]) == ["conclusion", BACK_MATTER]


def test_build_small_corpus_with_scisumm_papers(tmp_path, shared_data):
    import json

    from spacy_rhetoric.readers.section_labels import build_small_corpus

    for split in ("train", "dev"):
        (tmp_path / f"{split}.jsonl").write_text(json.dumps(
            {"abstract_id": 0, "sentences": ["We parse.", "It works."], "labels": ["method", "result"],
             "confs": [1, 1]}) + "\n", encoding="utf8")
    counts = build_small_corpus(tmp_path / "train.jsonl", tmp_path / "dev.jsonl", tmp_path / "out",
                                scisumm=shared_data / "cl-scisumm" / "training-40-manual", scisumm_papers=1)
    assert counts["sources"] == {"csabstruct": 1, "scisumm_papers": 1}
    assert counts["train"]["sentences"] > 2 and counts["dev"]["sentences"] == 2
    (eg, *rest) = list(SectionLabelCorpus(tmp_path / "out" / "train.spacy")(spacy.blank("en")))
    assert sentence_sections(eg.predicted, [0]) == ["abstract"] and rest


@pytest.mark.slow  # trains 60 steps
def test_the_mixtures_priors_move_a_papers_labels_set_by_the_config_of_a_saved_pipeline(tmp_path):
    """[model.priors]: a factor on the mixed probabilities of a paper's rows
    at prediction; set in the config of a pipeline saved without it, the
    loaded pipe names the labels it needs; back matter stays other by rule."""
    nlp = train_nlp(**FULL)
    rows = (["Parsing is old.", "Thanks to all."], ["introduction", "other"], ["1 Introduction", "Acknowledgments"])
    assert [label for label, _ in predict(nlp, *rows)] == ["background", "other"]
    nlp.to_disk(tmp_path / "nlp")
    config = spacy.util.load_config(tmp_path / "nlp" / "config.cfg")
    config["components"][CLASSIFIER]["model"]["priors"] = {"paper_body": {"method": 1000.0}}
    config.to_disk(tmp_path / "nlp" / "config.cfg")
    loaded = spacy.load(tmp_path / "nlp")
    (label, scores), (back, back_scores) = predict(loaded, *rows)
    assert label == "method" and sum(scores.values()) == pytest.approx(1.0, abs=1e-4)
    assert back == "other" and back_scores["other"] == 1.0
    # an abstract on its own (not a paper) is mixed as before
    plain = nlp(doc_from_sentences(nlp, ["Parsing is old."]))
    assert [s._.rhetoric_label for s in loaded(doc_from_sentences(loaded, ["Parsing is old."])).sents] == \
        [s._.rhetoric_label for s in plain.sents]
