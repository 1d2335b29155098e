"""spacy_rhetoric.evaluation.open_set (the pieces of benchmarks/encoder/open_set.py): label sampling, epoch scaling, loss names,
per-subset retrieval scores, the summary over seeds (training itself is run by
the benchmark, not here)."""
import numpy
import pytest

from spacy_rhetoric.evaluation import open_set


def test_sample_labels_is_seeded_and_shared_across_losses():
    labels = [f"L{i:02d}" for i in range(31)]
    a = open_set.sample_labels(labels, 10, seed=0)
    assert a == open_set.sample_labels(list(reversed(labels)), 10, seed=0)  # order-independent
    assert len(a) == 10 and len(set(a)) == 10 and set(a) <= set(labels)
    assert a != open_set.sample_labels(labels, 10, seed=1)
    assert open_set.sample_labels(labels, 40, seed=0) == sorted(labels)  # more than exist: all


def test_epochs_scale_inversely_with_labels():
    assert open_set.epochs_for(10, 40, 2.0) == 8
    assert open_set.epochs_for(20, 40, 2.0) == 4
    assert open_set.epochs_for(40, 40, 2.0) == 2
    assert open_set.epochs_for(40, 40, 0.1) == 1


def test_loss_names():
    assert open_set.loss_name("SoftmaxLoss") == "spacy_rhetoric.SoftmaxLoss.v1"
    assert open_set.loss_name("spacy_rhetoric.NTXentLoss.v1") == "spacy_rhetoric.NTXentLoss.v1"
    assert open_set.short_loss("spacy_rhetoric.ArcFaceLoss.v1") == "ArcFaceLoss"


def test_subset_scores_use_only_the_subset():
    # Labels a/b are perfectly separated, c is mixed into b's region.
    vectors = numpy.array([[1, 0], [0.9, 0.1], [0, 1], [0.1, 0.9], [0.05, 0.95], [0.12, 0.88]], dtype="float32")
    labels = ["a", "a", "b", "b", "c", "c"]
    ab = open_set.subset_scores(vectors, labels, {"a", "b"})
    assert ab["p_at_1"] == pytest.approx(1.0) and ab["n_sentences"] == 4 and ab["n_labels"] == 2
    everything = open_set.subset_scores(vectors, labels, {"a", "b", "c"})
    assert everything["p_at_1"] < 1.0
    assert open_set.subset_scores(vectors, labels, {"zzz"}) is None


def test_summary_means_over_seeds():
    rows = [
        {"loss": "SoftmaxLoss", "n_train_labels": 10, "seen": {"p_at_1": 0.5, "map_at_r": 0.2},
         "unseen": {"p_at_1": 0.3, "map_at_r": 0.1}, "all": {"p_at_1": 0.4, "map_at_r": 0.15}},
        {"loss": "SoftmaxLoss", "n_train_labels": 10, "seen": {"p_at_1": 0.7, "map_at_r": 0.4},
         "unseen": None, "all": {"p_at_1": 0.6, "map_at_r": 0.25}},
    ]
    entry = open_set.summarise(rows)["SoftmaxLoss|10"]
    assert entry["n_seeds"] == 2
    assert entry["seen_p_at_1"] == pytest.approx(0.6) and entry["seen_p_at_1_std"] == pytest.approx(0.1)
    assert entry["unseen_p_at_1"] == pytest.approx(0.3) and entry["unseen_p_at_1_std"] == 0.0
    assert entry["all_map_at_r"] == pytest.approx(0.2)
