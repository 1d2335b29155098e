"""benchmarks/fullpaper/bench_fullpaper.py --vectors on tiny inline papers
(no model): the held-out fold's sentences and zones in the order the
pipeline pass keeps them, vectors matched to zones (sentences without a
zone or a vector left out), and per-fold retrieval scores that tell an
encoder grouping by zone from one grouping by paper."""
import importlib.util
from pathlib import Path

import numpy
import pytest
import spacy

from spacy_rhetoric.extensions import FINE_LABEL, set_doc_value, set_sent_labels
from spacy_rhetoric.readers.common import doc_from_sentences

SPEC = importlib.util.spec_from_file_location(
    "bench_fullpaper", Path(__file__).resolve().parent.parent / "benchmarks" / "fullpaper" / "bench_fullpaper.py")
bench = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(bench)

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
    texts, zones = bench.fold_sentences(docs, "train2")
    assert texts[0] == "Paper 1 says motivation number 0." and texts[6] == "No zone here at all."
    assert len(texts) == 14 and zones[:6] == list(ZONES) * 2 and zones[6] is None


def test_zone_vectors_score_zones_not_papers():
    docs = make_docs()

    def vectors_for(key):
        out = {}
        for fold in ("train1", "train2"):
            rows = []
            for d, doc in enumerate(docs):
                if bench.fold_sentences([doc], fold)[0]:
                    _, zones = bench.fold_sentences([doc], fold)
                    rows += [None if z is None else one_hot(key(d, z)) for z in zones]
            out[fold] = rows
        return out

    by_zone = bench.zone_vector_rows(docs, vectors_for(lambda d, z: ZONES.index(z)))
    by_paper = bench.zone_vector_rows(docs, vectors_for(lambda d, z: 3 + d))
    assert by_zone["mean"]["p_at_1"] == pytest.approx(1.0) and by_zone["mean"]["map_at_r"] == pytest.approx(1.0)
    assert by_paper["mean"]["p_at_1"] < 0.6 and by_paper["mean"]["map_at_r"] < 0.6
    assert by_zone["folds"]["train1"]["sentences"] == 12  # the unzoned sentences are left out
