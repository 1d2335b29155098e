"""What benchmarks/fullpaper/bench_fullpaper.py --vectors runs (evaluation.cv,
.encoders) on tiny inline papers (no model): the held-out fold's sentences and zones in the order the
pipeline pass keeps them, vectors matched to zones (sentences without a
zone or a vector left out), and per-fold retrieval scores that tell an
encoder grouping by zone from one grouping by paper."""
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import spacy

from spacy_rhetoric.evaluation import cv, encoders, st_baseline
from spacy_rhetoric.extensions import FINE_LABEL, set_doc_value, set_sent_labels
from spacy_rhetoric.readers.common import doc_from_sentences

ROOT = Path(__file__).resolve().parent.parent
FOLDS = ("train1", "train2")

ZONES = ("motivation", "experiment", "results")


def make_docs():
    """Four papers, two per fold (train1, train2); each zone twice per paper
    and one sentence without a zone."""
    nlp = spacy.blank("en")
    docs = []
    for d in range(4):
        sents = [f"Paper {d} says {z} number {i}." for i in range(2) for z in ZONES] + ["No zone here at all."]
        doc = doc_from_sentences(nlp, sents)
        set_sent_labels(doc, [z for _ in range(2) for z in ZONES] + [None], field=FINE_LABEL)
        set_doc_value(doc, "fold", f"train{d % 2 + 1}")
        docs.append(doc)
    return docs


def one_hot(index, width=8):
    v = numpy.zeros(width, dtype="float32")
    v[index] = 1.0
    return v


def test_fold_sentences_keep_the_pipeline_order_and_zones():
    docs = make_docs()
    texts, zones = cv.fold_sentences(docs, "train2")
    assert texts[0] == "Paper 1 says motivation number 0." and texts[6] == "No zone here at all."
    assert len(texts) == 14 and zones[:6] == list(ZONES) * 2 and zones[6] is None


def test_zone_vectors_score_zones_not_papers():
    docs = make_docs()

    def vectors_for(key):
        out = {}
        for fold in ("train1", "train2"):
            rows = []
            for d, doc in enumerate(docs):
                if cv.fold_sentences([doc], fold)[0]:
                    _, zones = cv.fold_sentences([doc], fold)
                    rows += [None if z is None else one_hot(key(d, z)) for z in zones]
            out[fold] = rows
        return out

    by_zone = cv.zone_vector_rows(docs, vectors_for(lambda d, z: ZONES.index(z)))
    by_paper = cv.zone_vector_rows(docs, vectors_for(lambda d, z: 3 + d))
    assert by_zone["mean"]["p_at_1"] == pytest.approx(1.0) and by_zone["mean"]["map_at_r"] == pytest.approx(1.0)
    assert by_paper["mean"]["p_at_1"] < 0.6 and by_paper["mean"]["map_at_r"] < 0.6
    assert by_zone["folds"]["train1"]["sentences"] == 12  # the unzoned sentences are left out


def test_st_rows_train_on_the_other_folds_only(monkeypatch):
    """The sentence-transformers row: each fold's model is fine-tuned on the
    zoned sentences of the other folds' papers and encodes the fold's own."""
    seen = []

    def fake_finetune(model, texts, classes, *, steps, batch_size, seed):
        seen.append((list(texts), list(classes), steps, batch_size))
        return [2.0, 1.0]

    def fake_encode(model, texts, batch_size):  # one-hot by zone word: perfect retrieval
        return numpy.vstack([one_hot(next(i for i, z in enumerate(ZONES) if z in t)) for t in texts])

    monkeypatch.setattr(st_baseline, "finetune_triplets", fake_finetune)
    monkeypatch.setattr(st_baseline, "load_minilm", lambda device=None: object())
    monkeypatch.setattr(st_baseline, "encode_normalized", fake_encode)
    texts, zones = cv.zoned_sentences(make_docs(), FOLDS)
    result = encoders.st_vector_rows(texts, zones, steps=3, batch_size=8)
    assert sorted(result["folds"]) == ["train1", "train2"]
    assert result["mean"]["p_at_1"] == pytest.approx(1.0)
    assert result["folds"]["train1"]["sentences"] == 12 and result["losses"]["train2"]["steps"] == 2
    first, second = seen
    assert all(t.startswith(("Paper 1", "Paper 3")) for t in first[0])  # train1 held out: papers 1 and 3 train
    assert all(t.startswith(("Paper 0", "Paper 2")) for t in second[0])
    assert len(first[0]) == 12 and "No zone here at all." not in first[0] and first[2:] == (3, 8)


@pytest.mark.slow
def test_st_row_fine_tunes_minilm_for_real():
    """One real step of BatchAllTripletLoss on the local all-MiniLM-L6-v2."""
    texts, zones = cv.zoned_sentences(make_docs(), FOLDS)
    result = encoders.st_vector_rows(texts, zones, steps=1, batch_size=8)
    assert result["losses"]["train1"]["steps"] == 1
    assert 0.0 <= result["mean"]["p_at_1"] <= 1.0 and result["folds"]["train2"]["sentences"] == 12


@pytest.mark.parametrize("argv, message", [(["--folds", "fold1"], "--folds"),
                                           (["--folds", "train1", "--vectors", "--st-steps", "5"], "--st-steps")])
def test_folds_option_checks_names_before_reading_data(tmp_path, argv, message):
    """--folds (a partial CV run) takes only fold names, and is refused with
    --st-steps, which fine-tunes on the other folds; both before any data is read."""
    script = ROOT / "benchmarks" / "fullpaper" / "bench_fullpaper.py"
    done = subprocess.run([sys.executable, str(script), "--data", str(tmp_path / "no-data"), *argv],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 2 and message in done.stderr


def labelled_papers():
    """Four papers in two folds; each sentence's gold coarse label (and acceptable labels) set."""
    from spacy_rhetoric.extensions import GOLD_LABELS, set_span_values

    nlp = spacy.blank("en")
    labels = ["background", "method", "result"]
    docs = []
    for d in range(4):
        doc = doc_from_sentences(nlp, [f"Paper {d} writes a long {label} sentence here." for label in labels],
                                 labels=labels)
        set_span_values(doc, GOLD_LABELS, list(doc.sents), [[label] for label in labels])
        set_doc_value(doc, "fold", f"train{d % 2 + 1}")
        docs.append(doc)
    return docs


def test_cv_scores_train_on_the_other_folds_and_score_each_fold():
    from spacy_rhetoric.evaluation.fullpaper import sentence_rows

    docs = labelled_papers()
    rows = sentence_rows(docs)
    seen = {}

    def predict(fold, train, test, test_docs):
        seen[fold] = ({r["doc"] for r in train}, {r["doc"] for r in test}, test_docs)
        return [r["label"] if fold == "train1" else "background" for r in test]

    result = cv.cv_scores(docs, rows, FOLDS, predict)
    assert seen["train1"] == ({1, 3}, {0, 2}, [0, 2]) and seen["train2"] == ({0, 2}, {1, 3}, [1, 3])
    assert result["folds"]["train1"]["single_acc"] == 1.0
    assert result["folds"]["train2"]["single_acc"] == pytest.approx(1 / 3)
    assert result["mean"]["single_acc"] == pytest.approx(2 / 3)


def test_a_report_holds_date_command_and_seconds_and_is_written_whole(tmp_path):
    import json
    import time

    from spacy_rhetoric.evaluation.report import new_report, write_report

    report = new_report(time.time() - 2.4, ["bench.py", "--out", "x.json"], rows={"a": 1})
    assert report["command"] == "bench.py --out x.json" and report["seconds"] == 2 and report["rows"] == {"a": 1}
    assert len(report["date"]) == 10
    write_report(None, report)  # no --out: nothing written
    out = tmp_path / "results" / "run.json"
    write_report(out, report)
    assert json.loads(out.read_text(encoding="utf8")) == report and list(out.parent.iterdir()) == [out]
