"""MuLMS-AZ reader and the classifier's loss over several acceptable labels."""
import json

import numpy
import pytest
import spacy
from helpers import MULMS_RECORD as RECORD
from spacy.tokens import DocBin

from spacy_rhetoric.extensions import get_doc_value, get_span_value
from spacy_rhetoric.pipeline.function_classifier import FunctionClassifier
from spacy_rhetoric.readers.common import ReaderError, ReadStats
from spacy_rhetoric.readers.mulms import acceptable_labels, primary_label, read_mulms


def test_labels_of_zones():
    assert acceptable_labels(["background", "conclusion"]) == ["background", "result", "other"]
    assert acceptable_labels([]) == []
    assert primary_label(["conclusion", "method"]) == "result"
    assert primary_label([]) is None


def test_read_mulms_record(tmp_path):
    path = tmp_path / "mulms.jsonl"
    path.write_text(json.dumps(RECORD) + "\n" + json.dumps({"doc_id": "x", "sentences": "no"}) + "\n")
    stats = ReadStats()
    nlp = spacy.blank("en")
    docs = list(read_mulms(path, nlp, stats=stats))
    assert (stats.read, stats.used, stats.skipped, stats.docs) == (2, 1, 1, 1)
    doc = docs[0]
    sents = list(doc.sents)
    # metadata, headings and the caption are left out; the stray "10-13" is kept without a label
    assert [s.text for s in sents] == [
        "Steel is hard to make.", "We show how to make it harder.", "Hardness matters in gears.", "10-13",
        "Thus hardness is what gears need.", "We thank the funder."]
    assert [get_span_value(s, "heading") for s in sents] == [
        "Abstract", "Abstract", "1. Introduction", "1. Introduction", "1. Introduction", "Acknowledgments"]
    assert [get_span_value(s, "label") for s in sents] == [
        "background", "objective", "background", None, "result", None]
    assert [get_span_value(s, "gold_labels") for s in sents] == [
        ["background"], ["objective", "method"], ["background"], None, ["result", "other"], None]
    assert get_doc_value(doc, "title") == "Hard steel" and get_doc_value(doc, "fold") == "train2"
    # the values survive a DocBin, and the section tagger files the sections
    db = DocBin(store_user_data=True)
    db.add(doc)
    back = next(DocBin(store_user_data=True).from_bytes(db.to_bytes()).get_docs(nlp.vocab))
    assert [get_span_value(s, "gold_labels") for s in back.sents][1] == ["objective", "method"]
    nlp.add_pipe("rhetoric_section_tagger")(back)
    assert [s._.rhetoric_section for s in back.sents] == [
        "abstract", "abstract", "introduction", "introduction", "introduction", "other"]
    with pytest.raises(ReaderError, match="mulms.jsonl:2"):
        list(read_mulms(path, nlp, errors="raise"))
    assert [get_doc_value(d, "doc_id") for d in read_mulms(path, nlp, folds=["train1"])] == []


def test_loss_accepts_any_acceptable_label():
    nlp = spacy.blank("en")
    clf = nlp.add_pipe("rhetoric_function_classifier")
    assert isinstance(clf, FunctionClassifier)
    for label in ("a", "b", "c"):
        clf.add_label(label)
    scores = clf.model.ops.asarray2f(numpy.array([[0.2, 0.5, 0.3], [0.2, 0.5, 0.3], [0.6, 0.3, 0.1]], dtype="f"))
    loss, d = clf._loss(scores, [(0, 1), 1, -1])
    d = clf.model.ops.to_numpy(d)
    # row 0: -log(0.7), gradient p - p*1_G/p(G); row 1: -log(0.5), p - onehot; row 2: unlabelled
    assert loss == pytest.approx((-numpy.log(0.7) - numpy.log(0.5)) / 2, rel=1e-5)
    numpy.testing.assert_allclose(d[0], (numpy.array([0.2, 0.5, 0.3]) - [0.2 / 0.7, 0.5 / 0.7, 0]) / 2, rtol=1e-5)
    numpy.testing.assert_allclose(d[1], (numpy.array([0.2, 0.5, 0.3]) - [0, 1, 0]) / 2, rtol=1e-6)
    assert not d[2].any()
    # single labels only: exactly the cross-entropy gradient
    loss1, d1 = clf._loss(scores, [1, 0, -1])
    numpy.testing.assert_allclose(clf.model.ops.to_numpy(d1)[:2], (numpy.array(
        [[0.2, 0.5, 0.3], [0.2, 0.5, 0.3]]) - [[0, 1, 0], [1, 0, 0]]) / 2, rtol=1e-6)
    assert loss1 == pytest.approx((-numpy.log(0.5) - numpy.log(0.2)) / 2, rel=1e-5)


def test_shared_mulms_train(shared_data):
    path = shared_data / "mulms-az" / "train.jsonl"
    if not path.exists():
        pytest.skip("MuLMS-AZ not in the data mirror")
    stats = ReadStats()
    docs = list(read_mulms(path, spacy.blank("en"), stats=stats))
    assert stats.docs == 36 and stats.skipped == 0
    folds = {get_doc_value(d, "fold") for d in docs}
    assert folds == {f"train{i}" for i in range(1, 6)}
    labelled = [s for d in docs for s in d.sents if get_span_value(s, "label")]
    assert len(labelled) > 6000
    assert sum(1 for s in labelled if len(get_span_value(s, "gold_labels")) > 1) > 500


def test_class_weights_balance_rare_labels():
    from spacy_rhetoric.pipeline.function_classifier import class_weights

    w = class_weights([90, 10, 0], 1.0)
    assert w[2] == 1.0 and w[1] == pytest.approx(9 * w[0])
    assert (90 * w[0] + 10 * w[1]) / 100 == pytest.approx(1.0)
    assert class_weights([90, 10], 0.0) == [1.0, 1.0]
    clf = spacy.blank("en").add_pipe("rhetoric_function_classifier", config={"class_weight_power": 1.0})
    for label in ("a", "b"):
        clf.add_label(label)
    clf.cfg["class_weights"] = [0.5, 2.0]
    scores = clf.model.ops.asarray2f(numpy.array([[0.5, 0.5], [0.5, 0.5]], dtype="f"))
    loss, d = clf._loss(scores, [0, 1])
    d = clf.model.ops.to_numpy(d)
    numpy.testing.assert_allclose(d, [[-0.125, 0.125], [0.5, -0.5]], rtol=1e-6)
    assert loss == pytest.approx((0.5 + 2.0) * -numpy.log(0.5) / 2, rel=1e-5)
    with pytest.raises(ValueError, match="class_weight_power"):
        spacy.blank("en").add_pipe("rhetoric_function_classifier", config={"class_weight_power": 2.0})


def test_section_dropout_hides_runs_and_docs_but_keeps_headings():
    import random

    from spacy_rhetoric.extensions import HEADING, SECTION, get_sent_labels, set_span_values
    from spacy_rhetoric.readers.common import doc_from_sentences
    from spacy_rhetoric.readers.section_labels import drop_sections, section_label_corpus_v2

    nlp = spacy.blank("en")
    sections = ["abstract", "abstract", "introduction", "introduction", "unknown", "results"]
    doc = doc_from_sentences(nlp, [f"Sentence number {i}." for i in range(6)], sections=sections)
    set_span_values(doc, HEADING, list(doc.sents), ["Abstract"] * 2 + ["1 Intro"] * 2 + ["2 X", "3 Results"])
    kept = drop_sections(doc.copy(), 0.0, 0.0)
    assert get_sent_labels(kept, field=SECTION) == sections
    assert get_sent_labels(drop_sections(doc.copy(), 0.0, 1.0), field=SECTION) == [None] * 6
    seen = set()
    for seed in range(20):
        out = get_sent_labels(drop_sections(doc.copy(), 0.5, 0.0, rng=random.Random(seed)), field=SECTION)
        # whole runs go together, and what is kept is what was there
        assert out[0] == out[1] and out[2] == out[3]
        assert all(o in (None, s) for o, s in zip(out, sections))
        seen.add(tuple(o is None for o in out))
        assert get_sent_labels(doc, field=HEADING)[5] == "3 Results"
    assert len(seen) > 3
    with pytest.raises(ValueError, match="section_dropout"):
        section_label_corpus_v2("x.spacy", section_dropout=1.5)
