"""What benchmarks/encoder/bench_vectors.py runs (evaluation.cv, .encoders,
.pipelines) on tiny inline papers with injected encoders (no model): document-disjoint folds, held-out classes kept out of
training, the seeded test sample, the trunk encoder's training papers, a pipeline's
vectors read with the readers' sentence boundaries, and the scores (a perfect
encoder above one that groups sentences by paper)."""
from types import SimpleNamespace

import numpy
import pytest
import spacy
from spacy.language import Language

from spacy_rhetoric.errors import RhetoricError
from spacy_rhetoric.evaluation import cv, encoders
from spacy_rhetoric.evaluation.pipelines import pipeline_vectors
from spacy_rhetoric.extensions import FINE_LABEL, VECTOR, get_span_value, set_doc_value, set_span_values
from spacy_rhetoric.readers.common import doc_from_sentences

CLASSES = ("aim", "claim", "method", "result")
FOLDS = ["f1", "f2", "f3"]


def make_docs(n_docs=6, per_class=3):
    """Papers with every class ``per_class`` times and one unlabelled
    sentence; paper d in fold ``f{d % 3 + 1}``."""
    nlp = spacy.blank("en")
    docs, folds = [], []
    for d in range(n_docs):
        sents, labels = [], []
        for i in range(per_class):
            for c in CLASSES:
                sents.append(f"Paper {d} sentence {i} is about {c} here.")
                labels.append(c)
        sents.append("An unlabelled sentence.")
        labels.append(None)
        docs.append(doc_from_sentences(nlp, sents, labels=labels, doc_id=f"p{d}"))
        folds.append(f"f{d % 3 + 1}")
    return docs, folds


def settings(**kw):
    return SimpleNamespace(**{"open_set": 0, "max_test": 0, "seed": 0, "steps": 1, "batch_size": 16, **kw})


def perfect(split, ctx):
    return numpy.eye(len(CLASSES), dtype="float32")[[CLASSES.index(r["class"]) for r in split["test"]]]


def by_paper(split, ctx):
    """Wrong by design: one vector per paper, whatever the sentence says."""
    return numpy.eye(len(ctx["docs"]), dtype="float32")[[r["doc"] for r in split["test"]]]


def recording(log):
    def encode(split, ctx):
        log.append(split)
        return perfect(split, ctx)
    return encode


def test_rows_take_the_fine_label_first_and_skip_unlabelled_sentences():
    docs, folds = make_docs(n_docs=2)
    sents = list(docs[0].sents)
    set_span_values(docs[0], FINE_LABEL, sents[:1], ["Aim_Fine"])
    rows = cv.class_rows(docs, folds)
    assert len(rows) == 2 * 3 * len(CLASSES)
    assert rows[0]["class"] == "Aim_Fine" and rows[1]["class"] == "claim"
    assert {r["fold"] for r in rows if r["doc"] == 1} == {"f2"}
    assert docs[0].text[rows[0]["start"]:rows[0]["end"]] == rows[0]["text"]


def test_folds_are_document_disjoint_and_held_out_classes_stay_out_of_training():
    docs, folds = make_docs()
    log = []
    out = cv.run_corpus("toy", docs, folds, FOLDS, [("rec", recording(log))], settings(open_set=1))
    held = set(out["corpus"]["held_out"])
    assert len(held) == 1 and held < set(CLASSES)
    assert [s["fold"] for s in log] == FOLDS
    for split in log:
        train_docs, test_docs = {r["doc"] for r in split["train"]}, {r["doc"] for r in split["test"]}
        assert train_docs and test_docs and not train_docs & test_docs
        assert all(folds[d] == split["fold"] for d in test_docs)
        assert all(folds[d] != split["fold"] for d in train_docs)
        assert held.isdisjoint(r["class"] for r in split["train"])
        assert {r["class"] for r in split["test"]} == set(CLASSES)  # the unseen classes are scored
        assert len(split["test"]) == 2 * 3 * len(CLASSES)
    fold = out["rows"]["rec"]["folds"]["f1"]
    assert fold["unseen"]["n_classes"] == 1 and fold["seen"]["n_classes"] == 3
    assert set(out["rows"]["rec"]["mean"]) == {"all", "seen", "unseen"}


def test_held_out_classes_are_seeded_and_leave_two_seen():
    a = cv.held_out_classes(list(CLASSES) * 2, 2, seed=0)
    assert a == cv.held_out_classes(list(reversed(CLASSES)), 2, seed=0) and len(a) == 2
    assert cv.held_out_classes(CLASSES, 0, seed=0) == set()
    with pytest.raises(RhetoricError):
        cv.held_out_classes(CLASSES, 3, seed=0)


def test_the_test_sample_is_seeded_and_from_the_fold():
    docs, folds = make_docs()
    rows = cv.class_rows(docs, folds)
    a = cv.fold_splits(rows, FOLDS, held_out=set(), max_test=5, seed=0)
    b = cv.fold_splits(rows, FOLDS, held_out=set(), max_test=5, seed=0)
    assert [len(s["test"]) for s in a] == [5, 5, 5]
    assert a[0]["test"] == b[0]["test"]
    assert all(r["fold"] == "f1" for r in a[0]["test"])
    starts = [(r["doc"], r["start"]) for r in a[0]["test"]]
    assert starts == sorted(starts)  # document order
    assert len(a[0]["train"]) == 4 * 3 * len(CLASSES)  # training is never sampled


def test_a_perfect_encoder_beats_one_that_groups_by_paper():
    docs, folds = make_docs()
    out = cv.run_corpus("toy", docs, folds, FOLDS, [("perfect", perfect), ("by paper", by_paper)], settings())
    good, bad = out["rows"]["perfect"]["mean"]["all"], out["rows"]["by paper"]["mean"]["all"]
    assert good["p_at_1"] == 1.0 and good["map_at_r"] == 1.0 and good["n_folds"] == 3
    assert bad["p_at_1"] < 0.5 and bad["map_at_r"] < 0.5


def test_the_new_encoder_hook_gets_training_papers_without_held_out_labels(monkeypatch):
    docs, folds = make_docs()
    seen = {}

    def fake(train_docs, test_docs, args, *, test_rows, held_out):
        seen.update(train=train_docs, held_out=held_out)
        for r in test_rows:
            assert test_docs[r["doc"]].text[r["start"]:r["end"]] == r["text"]
        return perfect({"test": test_rows}, None)

    monkeypatch.setattr(encoders, "trunk_vectors", fake)
    out = cv.run_corpus("toy", docs, folds, FOLDS[:1], [(encoders.TRUNK, encoders.trunk_encoder)], settings(open_set=1))
    classes = {cv.sentence_class(s) for d in seen["train"] for s in d.sents}
    assert seen["held_out"] and seen["held_out"].isdisjoint(classes) and len(seen["train"]) == 4
    assert out["rows"][encoders.TRUNK]["mean"]["all"]["p_at_1"] == 1.0


@Language.component("test_bench_vectors_encoder")
def _length_vectors(doc):
    sents = list(doc.sents)
    set_span_values(doc, VECTOR, sents, [numpy.array([len(s.text), 1.0], dtype="float32") for s in sents])
    return doc


def test_pipeline_vectors_keep_the_readers_sentences():
    nlp = spacy.blank("en")
    doc = doc_from_sentences(nlp, ["Results improved! Then they fell.", "A second sentence."], labels=["a", "b"])
    set_doc_value(doc, "fold", "f1")
    pipeline = spacy.blank("en")
    pipeline.add_pipe("sentencizer", config={"overwrite": True})  # would split the first sentence at "!"
    pipeline.add_pipe("test_bench_vectors_encoder")
    rows = cv.class_rows([doc], ["f1"])
    vectors = pipeline_vectors(pipeline, [doc], rows)
    assert vectors[:, 0].tolist() == [len(r["text"]) for r in rows] == [33, 18]
    assert get_span_value(list(doc.sents)[0], VECTOR) is None  # the input papers are left as they were
    with pytest.raises(RhetoricError):  # a component left out: no vectors, one line
        pipeline_vectors(pipeline, [doc], rows, disable_factories=("test_bench_vectors_encoder",))


@Language.factory("test_bench_vectors_writer", assigns=["span._.rhetoric_vector"])
def _declared_writer(nlp, name):
    return _length_vectors


def test_pipeline_vectors_keep_a_disabled_factory_that_writes_the_vectors():
    """The default pipeline's vectors come from its function classifier's
    vector head: a factory named to be left out stays when it declares that
    it writes sent._.rhetoric_vector (as spacy_rhetoric.capabilities reads it)."""
    nlp = spacy.blank("en")
    doc = doc_from_sentences(nlp, ["Results improved.", "A second sentence."], labels=["a", "b"])
    set_doc_value(doc, "fold", "f1")
    pipeline = spacy.blank("en")
    pipeline.add_pipe("test_bench_vectors_writer")
    rows = cv.class_rows([doc], ["f1"])
    vectors = pipeline_vectors(pipeline, [doc], rows, disable_factories=("test_bench_vectors_writer",))
    assert vectors[:, 0].tolist() == [17, 18]


def test_the_test_papers_can_be_sampled_first():
    docs, folds = make_docs()
    rows = cv.class_rows(docs, folds)
    (split,) = cv.fold_splits(rows, FOLDS[:1], held_out=set(), max_test=0, seed=0, max_test_docs=2)
    assert len({r["doc"] for r in split["test"]}) == 2 and all(r["fold"] == "f1" for r in split["test"])
    (again,) = cv.fold_splits(rows, FOLDS[:1], held_out=set(), max_test=0, seed=0, max_test_docs=2)
    assert again["test"] == split["test"]


def test_a_fold_gets_the_same_sample_whichever_folds_are_run():
    docs, folds = make_docs()
    rows = cv.class_rows(docs, folds)
    every = cv.fold_splits(rows, FOLDS, held_out=set(), max_test=5, seed=0, max_test_docs=2)
    (last,) = cv.fold_splits(rows, FOLDS[-1:], held_out=set(), max_test=5, seed=0, max_test_docs=2)
    assert last["test"] == every[-1]["test"]


@pytest.mark.parametrize("trunk,pooling", [(encoders.TrunkSettings(), "sentence"),
                                           (encoders.TrunkSettings(pooling="pair"), "pair")])
def test_the_trunk_row_pools_as_the_shipped_config_unless_told(monkeypatch, trunk, pooling):
    """TrunkSettings.pooling (default: the sentence's own word pieces, as configs/classifier.cfg;
    bench_vectors.py --trunk-pooling) reaches the vector head."""
    import spacy_rhetoric.ml.finetuned as finetuned
    from spacy_rhetoric.resources import config_path

    assert f'pooling = "{encoders.TrunkSettings().pooling}"' in config_path("classifier").read_text(encoding="utf8")
    seen = []

    class Stop(Exception):
        pass

    def fake_expert(*args, vectors=None, **kwargs):
        seen.append(vectors.pooling)
        raise Stop

    monkeypatch.setattr(finetuned, "finetuned_expert", fake_expert)
    args = SimpleNamespace(trunk=trunk, steps=1, batch_size=16, seed=0)
    docs, _ = make_docs(2)
    with pytest.raises(Stop):
        encoders.trunk_vectors(docs, docs, args, test_rows=[], held_out=set())
    assert seen == [pooling]
