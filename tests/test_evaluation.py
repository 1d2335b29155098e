"""Embedding / classifier evaluation against hand-computed values."""
import math

import numpy
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin

from spacy_rhetoric import extensions
from spacy_rhetoric.evaluation.metrics import (
    classifier_scores,
    clustering_scores,
    downstream_classifiers,
    downstream_scores,
    evaluate_classifier,
    l2_normalize,
    raw_transformer_vectors,
    retrieval_scores,
    sentence_vectors,
    tsne_plot,
)


def unit(deg):
    rad = math.radians(deg)
    return [math.cos(rad), math.sin(rad)]


# ---------------------------------------------------------------- retrieval


def test_retrieval_hand_computed_circle():
    # Six points on the unit circle (angles in degrees), labels A A A B B B.
    # Neighbour order by angular distance, R = 2 for every query:
    #   p0 (0,A):   p1 A, p3 B        -> P@1 1, AP@R = 1/2 * (1/1)      = 0.5
    #   p1 (10,A):  p0 A, p3 B        -> P@1 1, AP@R = 0.5
    #   p2 (100,A): p4 B, p3 B        -> P@1 0, AP@R = 0
    #   p3 (25,B):  p1 A, p0 A        -> P@1 0, AP@R = 0
    #   p4 (90,B):  p2 A, p3 B        -> P@1 0, AP@R = 1/2 * (1/2)      = 0.25
    #   p5 (200,B): p2 A, p4 B        -> P@1 0, AP@R = 0.25
    # P@1 = 2/6, MAP@R = 1.5/6 = 0.25
    angles = [0, 10, 100, 25, 90, 200]
    X = numpy.array([unit(a) for a in angles])
    labels = ["A", "A", "A", "B", "B", "B"]
    scores = retrieval_scores(X, labels)
    assert scores["p_at_1"] == pytest.approx(2 / 6)
    assert scores["map_at_r"] == pytest.approx(0.25)
    assert scores["n_queries"] == 6 and scores["n_lone_queries"] == 0
    # Cosine: rescaling the vectors changes nothing.
    scaled = retrieval_scores(X * numpy.array([[1], [5], [0.1], [3], [7], [2]]), labels)
    assert scaled["p_at_1"] == pytest.approx(scores["p_at_1"])
    assert scaled["map_at_r"] == pytest.approx(scores["map_at_r"])


def test_retrieval_hand_computed_r3():
    # Labels A A B B B; angles 0, 30, 5, 60, 95. R(A) = 1, R(B) = 2.
    #   q0 (0,A):  5 B, 30 A          -> P@1 0, AP@R(R=1) = 0
    #   q1 (30,A): 5 B (25 away)      -> P@1 0, AP@R = 0
    #   q2 (5,B):  0 A, 30 A          -> P@1 0, AP@R = 0
    #   q3 (60,B): 30 A (30), 95 B (35) -> P@1 0, AP@R = 1/2 * (1/2) = 0.25
    #   q4 (95,B): 60 B, 30 A         -> P@1 1, AP@R = 1/2 * 1 = 0.5
    X = numpy.array([unit(a) for a in [0, 30, 5, 60, 95]])
    scores = retrieval_scores(X, ["A", "A", "B", "B", "B"])
    assert scores["p_at_1"] == pytest.approx(1 / 5)
    assert scores["map_at_r"] == pytest.approx(0.75 / 5)


def test_retrieval_duplicates_exclude_self_and_break_ties_by_index():
    # x0..x2 identical, x3 == x4; labels A B A B B.
    #   x0: ties x1 B, x2 A (R=1)        -> P@1 0, AP 0
    #   x1: x0 A, x2 A (R=2)             -> P@1 0, AP 0
    #   x2: x0 A (R=1)                   -> P@1 1, AP 1
    #   x3: x4 B, then x0 A (tie at 0)   -> P@1 1, AP = 1/2 * 1 = 0.5
    #   x4: x3 B, then x0 A              -> P@1 1, AP 0.5
    X = numpy.array([[1, 0], [1, 0], [1, 0], [0, 1], [0, 1]], dtype=float)
    scores = retrieval_scores(X, list("ABABB"))
    assert scores["p_at_1"] == pytest.approx(3 / 5)
    assert scores["map_at_r"] == pytest.approx(2 / 5)


def test_retrieval_all_identical_vectors():
    # Every vector the same: neighbours in index order.
    # q0 -> q1 (A) correct; q1 -> q0 correct; q2 -> q0 wrong; q3 -> q0 wrong.
    scores = retrieval_scores(numpy.ones((4, 3)), ["A", "A", "B", "B"])
    assert scores["p_at_1"] == pytest.approx(0.5)
    assert scores["map_at_r"] == pytest.approx(0.5)


def test_retrieval_lone_queries_are_left_out():
    X = numpy.array([unit(a) for a in [0, 10, 50]])
    scores = retrieval_scores(X, ["A", "A", "C"])
    assert scores["n_lone_queries"] == 1 and scores["n_queries"] == 2
    assert scores["p_at_1"] == 1.0 and scores["map_at_r"] == 1.0
    with pytest.warns(UserWarning, match="only once"):
        lone = retrieval_scores(X, ["A", "B", "C"])
    assert lone == {"p_at_1": 0.0, "map_at_r": 0.0, "n_queries": 0, "n_lone_queries": 3}
    with pytest.raises(ValueError):
        retrieval_scores(X, ["A", "A"])
    with pytest.raises(ValueError):
        retrieval_scores(numpy.array([[numpy.nan, 0], [1, 0]]), ["A", "A"])


def _brute_force(X, labels):
    Xn = l2_normalize(X)
    sims = Xn @ Xn.T
    y = numpy.asarray(labels)
    p1, aps = [], []
    for q in range(len(y)):
        others = [i for i in range(len(y)) if i != q]
        others.sort(key=lambda i: (-sims[q, i], i))
        R = int((y == y[q]).sum()) - 1
        if R == 0:
            continue
        rel = [y[i] == y[q] for i in others[:R]]
        p1.append(float(y[others[0]] == y[q]))
        aps.append(sum(sum(rel[: i + 1]) / (i + 1) for i in range(R) if rel[i]) / R)
    return numpy.mean(p1), numpy.mean(aps)


def test_retrieval_matches_brute_force_with_duplicates_and_small_chunks():
    rng = numpy.random.default_rng(3)
    X = rng.normal(size=(60, 5)).astype("float32")
    X[10] = X[11] = X[12]  # duplicates with different labels below
    X[20] = X[30]
    labels = [str(v) for v in rng.integers(0, 4, size=60)]
    labels[10], labels[11], labels[12] = "0", "1", "0"
    p1, mapr = _brute_force(X, labels)
    scores = retrieval_scores(X, labels)
    assert scores["p_at_1"] == pytest.approx(p1)
    assert scores["map_at_r"] == pytest.approx(mapr)


def test_retrieval_matches_pytorch_metric_learning():
    # The reference implementation of the same metrics (Musgrave et al. 2020):
    # query set = reference set (PML's ``reference=None``: the query itself is
    # left out, lone-label queries are dropped). Random vectors: no ties.
    import torch
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator

    rng = numpy.random.default_rng(7)
    X = rng.normal(size=(300, 16)).astype("float32")
    y = rng.integers(0, 6, size=300)
    y[17] = 99  # a lone query
    ours = retrieval_scores(X, [str(v) for v in y])
    calc = AccuracyCalculator(include=("precision_at_1", "mean_average_precision_at_r"),
                              device=torch.device("cpu"))
    pml = calc.get_accuracy(torch.from_numpy(l2_normalize(X)), torch.from_numpy(y))
    assert ours["n_lone_queries"] == 1
    assert ours["p_at_1"] == pytest.approx(pml["precision_at_1"], abs=1e-6)
    assert ours["map_at_r"] == pytest.approx(pml["mean_average_precision_at_r"], abs=1e-5)


def test_perfectly_separated_retrieval_is_one():
    X = numpy.array([unit(a) for a in [0, 2, 4, 120, 122, 124, 240, 242]])
    scores = retrieval_scores(X, list("AAABBBCC"))
    assert scores["p_at_1"] == 1.0 and scores["map_at_r"] == 1.0


# ------------------------------------------------------ downstream, clustering


def _blobs(n_per_class, seed, centres=((1, 0, 0), (0, 1, 0), (0, 0, 1)), spread=0.05):
    rng = numpy.random.default_rng(seed)
    X, y = [], []
    for label, centre in zip("abc", centres):
        X.append(numpy.asarray(centre) + spread * rng.normal(size=(n_per_class, len(centre))))
        y += [label] * n_per_class
    return numpy.vstack(X), y


def test_knn_protocol():
    models = downstream_classifiers(100)
    assert models["knn"].n_neighbors == 10 and models["knn"].weights == "distance"
    assert downstream_classifiers(30)["knn"].n_neighbors == 5  # round(sqrt(30)) = round(5.48)
    assert set(models) == {"knn", "svm", "rf", "mlp", "dt"}


def test_downstream_separable_and_one_mislabelled():
    train_X, train_y = _blobs(15, seed=0)
    test_X, test_y = _blobs(5, seed=1)
    scores = downstream_scores(train_X, train_y, test_X, test_y, seed=0)
    assert scores == {"knn": 1.0, "svm": 1.0, "rf": 1.0, "mlp": 1.0, "dt": 1.0}
    # One test point labelled "b" that lies in cluster "a": every classifier
    # predicts "a" for it, so F1-micro (= accuracy) is exactly 14/15.
    test_y = list(test_y)
    test_y[0] = "b"
    scores = downstream_scores(train_X, train_y, test_X, test_y, seed=0)
    for name, value in scores.items():
        assert value == pytest.approx(14 / 15), name
    assert downstream_scores(train_X, train_y, test_X, test_y, seed=0, classifiers=["dt"]) == {
        "dt": pytest.approx(14 / 15)
    }


def test_clustering_separable():
    X, y = _blobs(10, seed=2)
    scores = clustering_scores(X, y, seed=0)
    assert scores["ari"] == pytest.approx(1.0)
    assert scores["ami"] == pytest.approx(1.0)
    assert 0.8 < scores["silhouette"] <= 1.0
    assert scores["silhouette_labels"] == pytest.approx(scores["silhouette"])
    assert clustering_scores(X, y, seed=0) == scores  # seeded


def test_clustering_silhouette_hand_computed():
    # Two clusters on the unit circle: {0, 10} degrees and {90, 100} degrees.
    # Chord distance d(t) = 2 sin(t / 2). For each point s = 1 - a / b with
    # a = distance to its cluster mate, b = mean distance to the other cluster.
    X = numpy.array([unit(a) for a in [0, 10, 90, 100]])
    d = lambda t: 2 * math.sin(math.radians(t) / 2)  # noqa: E731
    s0 = 1 - d(10) / ((d(90) + d(100)) / 2)
    s1 = 1 - d(10) / ((d(80) + d(90)) / 2)
    s2 = 1 - d(10) / ((d(90) + d(80)) / 2)
    s3 = 1 - d(10) / ((d(100) + d(90)) / 2)
    scores = clustering_scores(X, ["x", "x", "y", "y"], seed=0)
    assert scores["ari"] == pytest.approx(1.0)
    assert scores["silhouette"] == pytest.approx((s0 + s1 + s2 + s3) / 4, abs=1e-6)
    # The gold partition crossing the clusters: ARI is negative here.
    crossed = clustering_scores(X, ["x", "y", "x", "y"], seed=0)
    assert crossed["ari"] == pytest.approx(-0.5)
    assert crossed["silhouette"] == pytest.approx(scores["silhouette"], abs=1e-6)


def test_clustering_silhouette_sample_is_seeded():
    X, y = _blobs(20, seed=4, spread=0.5)
    a = clustering_scores(X, y, seed=1, silhouette_sample=25)
    b = clustering_scores(X, y, seed=1, silhouette_sample=25)
    assert a == b
    assert -1.0 <= a["silhouette"] <= 1.0


def test_tsne_writes_png(tmp_path):
    X, y = _blobs(10, seed=5)
    path = tsne_plot(X, y, tmp_path / "plots" / "tsne.png", seed=0)
    assert path.exists()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------- classifier


def test_classifier_scores_hand_computed():
    gold = ["a", "a", "b", "b", "c"]
    pred = ["a", "b", "b", "b", None]
    s = classifier_scores(gold, pred)
    # a: P 1/1, R 1/2, F 2/3; b: P 2/3, R 1, F 0.8; c: 0. micro = 3/5.
    assert s["f1_micro"] == pytest.approx(0.6)
    assert s["f1_macro"] == pytest.approx((2 / 3 + 0.8 + 0) / 3)
    assert s["per_label"]["a"] == {"p": 1.0, "r": 0.5, "f": pytest.approx(2 / 3), "support": 2}
    assert s["per_label"]["b"]["p"] == pytest.approx(2 / 3)
    assert s["n_unpredicted"] == 1


# ------------------------------------------- pipelines over gold sentences


@Language.component("test_eval_fake_encoder")
def fake_encoder(doc):
    """Vector = [first-token-is-'We', sentence length]; label by first token."""
    sents = list(doc.sents)
    vectors = [[float(s[0].text == "We"), float(len(s))] for s in sents]
    labels = ["objective" if s[0].text == "We" else "background" for s in sents]
    extensions.set_span_values(doc, extensions.VECTOR, sents, vectors)
    extensions.set_span_values(doc, extensions.LABEL, sents, labels)
    return doc


def gold_doc(vocab, sentences, labels):
    words, starts = [], []
    for sent in sentences:
        toks = sent.split()
        words += toks
        starts += [True] + [False] * (len(toks) - 1)
    doc = Doc(vocab, words=words, sent_starts=starts)
    extensions.set_sent_labels(doc, labels)
    return doc


@pytest.fixture
def gold_docs():
    nlp = spacy.blank("en")
    # No sentence-final punctuation: a sentencizer would merge these.
    return [
        gold_doc(nlp.vocab, ["Parsing is hard", "We propose a parser", "It works well"],
                 ["background", "objective", "result"]),
        gold_doc(nlp.vocab, ["We study tagging", "Taggers are old"], ["objective", "background"]),
    ]


def test_sentence_vectors_keep_gold_boundaries(gold_docs):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")  # must be skipped
    nlp.add_pipe("test_eval_fake_encoder")
    X, labels = sentence_vectors(nlp, gold_docs, progress=False)
    assert labels == ["background", "objective", "result", "objective", "background"]
    assert X.tolist() == [[0, 3], [1, 4], [0, 3], [1, 3], [0, 3]]
    # The gold docs were not written to.
    assert extensions.get_sent_labels(gold_docs[0]) == ["background", "objective", "result"]
    assert extensions.labelled_spans(gold_docs[0], field=extensions.VECTOR) == []


def test_evaluate_classifier(gold_docs):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("test_eval_fake_encoder")
    scores = evaluate_classifier(nlp, gold_docs, progress=False)
    # gold: bg obj res obj bg; pred: bg obj bg obj bg -> 4/5 correct
    assert scores["f1_micro"] == pytest.approx(0.8)
    assert scores["per_label"]["background"]["p"] == pytest.approx(2 / 3)
    assert scores["per_label"]["result"]["r"] == 0.0
    assert scores["f1_macro"] == pytest.approx((0.8 + 1.0 + 0.0) / 3)


def test_sentence_vectors_without_encoder_fails(gold_docs):
    nlp = spacy.blank("en")
    with pytest.warns(UserWarning, match="5 of 5"):
        with pytest.raises(ValueError, match="no sentence vectors"):
            sentence_vectors(nlp, gold_docs, progress=False)


@Language.component("test_eval_context_probe")
def context_probe(doc):
    """Vector = [sentences in the doc, sentence length]: shows what a sentence saw."""
    sents = list(doc.sents)
    extensions.set_span_values(doc, extensions.VECTOR, sents, [[float(len(sents)), float(len(s))] for s in sents])
    return doc


def test_labelled_sentence_docs_one_doc_per_labelled_sentence(gold_docs):
    from spacy_rhetoric.readers.common import labelled_sentence_docs

    singles = list(labelled_sentence_docs(gold_docs))
    assert [d.text for d in singles] == ["Parsing is hard", "We propose a parser", "It works well",
                                         "We study tagging", "Taggers are old"]
    assert [extensions.get_sent_labels(d) for d in singles] == [
        ["background"], ["objective"], ["result"], ["objective"], ["background"]]
    nlp = spacy.blank("en")
    nlp.add_pipe("test_eval_context_probe")
    whole, _ = sentence_vectors(nlp, gold_docs, progress=False)
    alone, labels = sentence_vectors(nlp, singles, progress=False)
    assert whole[:, 0].tolist() == [3, 3, 3, 2, 2]
    assert alone.tolist() == [[1, 3], [1, 4], [1, 3], [1, 3], [1, 3]]
    assert labels == ["background", "objective", "result", "objective", "background"]


# ------------------------------------------------------------- transformer


@pytest.fixture(scope="module")
def raw_vectors():
    sentences = [
        "We propose a new method for dependency parsing.",
        "In this paper we present a novel approach to dependency parsing.",
        "The weather in Paris was sunny and warm yesterday.",
    ]
    return raw_transformer_vectors(sentences, batch_size=2, progress=False)


def test_raw_transformer_vectors(raw_vectors):
    assert raw_vectors.shape == (3, 384) and raw_vectors.dtype == numpy.float32
    X = l2_normalize(raw_vectors)
    assert X[0] @ X[1] > X[0] @ X[2] + 0.2
    # Batch composition (padding) does not change a sentence's vector.
    single = raw_transformer_vectors(["We propose a new method for dependency parsing."], progress=False)
    assert numpy.allclose(single[0], raw_vectors[0], atol=1e-4)


# ---------------------------------------------------------------- command


def test_evaluate_command(tmp_path, gold_docs):
    import srsly
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app
    from spacy_rhetoric.cli import evaluate as _  # noqa: F401 - registers the command

    nlp = spacy.blank("en")
    nlp.add_pipe("test_eval_fake_encoder")
    nlp.to_disk(tmp_path / "model")
    DocBin(docs=gold_docs * 3, store_user_data=True).to_disk(tmp_path / "dev.spacy")
    DocBin(docs=gold_docs * 4, store_user_data=True).to_disk(tmp_path / "train.spacy")
    result = CliRunner().invoke(app, [
        "evaluate", str(tmp_path / "model"), str(tmp_path / "dev.spacy"),
        "--train", str(tmp_path / "train.spacy"), "--output", str(tmp_path / "report.json"),
        "--tsne", str(tmp_path / "tsne.png"), "--baseline", "raw-minilm",
    ])
    assert result.exit_code == 0, result.output
    report = srsly.read_json(tmp_path / "report.json")
    ours = report["models"][str(tmp_path / "model")]
    assert ours["n_sentences"] == 15 and ours["n_train_sentences"] == 20
    assert ours["classifier"]["f1_micro"] == pytest.approx(0.8)
    assert set(ours["downstream"]) == {"knn", "svm", "rf", "mlp", "dt"}
    assert 0.0 <= ours["retrieval"]["p_at_1"] <= 1.0
    raw = report["models"]["raw:sentence-transformers/all-MiniLM-L6-v2"]
    assert raw["n_sentences"] == 15 and "classifier" not in raw
    assert (tmp_path / "tsne.png").exists()
    assert (tmp_path / "tsne.raw-sentence-transformers_all-MiniLM-L6-v2.png").exists()
    assert "MAP@R" in result.output
    assert report["unit"] == "doc"
    result = CliRunner().invoke(app, [
        "evaluate", str(tmp_path / "model"), str(tmp_path / "dev.spacy"), "--unit", "sentence",
        "--output", str(tmp_path / "report_s.json"),
    ])
    assert result.exit_code == 0, result.output
    report = srsly.read_json(tmp_path / "report_s.json")
    assert report["unit"] == "sentence" and report["models"][str(tmp_path / "model")]["n_sentences"] == 15
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "model"), str(tmp_path / "dev.spacy"),
                                      "--unit", "page"])
    assert result.exit_code == 2 and "must be 'doc' or 'sentence'" in result.output


def test_parser_keeps_gold_boundaries():
    from spacy_rhetoric.util import load_parser

    nlp = load_parser("en_core_web_sm", exclude=["ner", "lemmatizer"])
    nlp.add_pipe("test_eval_fake_encoder")
    words = "We propose a parser . It is fast and it works well".split()
    # One gold sentence spans a full stop; another boundary has no punctuation.
    doc = Doc(nlp.vocab, words=words, sent_starts=[True] + [False] * 7 + [True] + [False] * 3)
    extensions.set_sent_labels(doc, ["objective", "result"])
    X, labels = sentence_vectors(nlp, [doc], progress=False)
    assert labels == ["objective", "result"]
    assert X.tolist() == [[1, 8], [0, 4]]


def test_label_mismatch_and_label_field_check():
    from spacy.training import Example

    from spacy_rhetoric.evaluation.metrics import check_label_field, classifier_label_sets, label_mismatch
    from spacy_rhetoric.readers.common import doc_from_sentences

    gold = ["method", "methods", "results", "methods"]
    assert label_mismatch(gold, ["method", "result", "background"]) == {
        "gold_not_in_classifier": ["methods", "results"], "n_gold_not_in_classifier": 3,
        "classifier_not_in_gold": ["background", "result"]}
    # Unknown label set: judged on the predictions.
    assert label_mismatch(["a", "b"], None, ["a", None])["gold_not_in_classifier"] == ["b"]
    assert label_mismatch(["a", "b"], ["b", "a"])["gold_not_in_classifier"] == []
    nlp = spacy.blank("en")
    assert check_label_field(nlp, "label") is None  # another component may write it
    with pytest.raises(ValueError, match="'fine_label'.*none"):
        check_label_field(nlp, "fine_label")
    nlp.add_pipe("rhetoric_function_classifier")
    ref = doc_from_sentences(nlp, ["We parse.", "It works."], labels=["method", "result"])
    nlp.initialize(lambda: [Example(nlp.make_doc(ref.text), ref)])
    assert classifier_label_sets(nlp) == {"label": ["method", "result"]}
    assert check_label_field(nlp, "label") == ["method", "result"]
    with pytest.raises(ValueError, match="label field 'nope'.*'label'"):
        check_label_field(nlp, "nope")


def test_gold_docs_reach_the_pipeline_with_headings_and_sections_but_no_labels():
    """evaluate scores a section-aware classifier as it runs on papers: the
    fresh copies carry the reader's headings, sections and title, never labels."""
    from spacy_rhetoric import extensions as ext
    from spacy_rhetoric.evaluation.metrics import annotate_gold_docs
    from spacy_rhetoric.readers.common import doc_from_sentences

    nlp = spacy.blank("en")
    gold = doc_from_sentences(nlp, ["We aim high.", "It works."], labels=["objective", "result"],
                              sections=["abstract", "abstract"])
    ext.set_span_values(gold, ext.HEADING, list(gold.sents), ["Abstract", "Abstract"])
    ext.set_doc_value(gold, ext.TITLE, "A title")
    (doc, spans), = list(annotate_gold_docs(nlp, [gold], progress=False))
    assert [s._.rhetoric_section for s in doc.sents] == ["abstract", "abstract"]
    assert [s._.rhetoric_heading for s in doc.sents] == ["Abstract", "Abstract"]
    assert doc._.rhetoric_title == "A title"
    assert [s._.rhetoric_label for s in doc.sents] == [None, None]
    assert [label for _, _, label in spans] == ["objective", "result"]


def test_full_sentences_are_those_the_full_paper_scores_count():
    from spacy_rhetoric.evaluation.fullpaper import is_full_sentence

    assert is_full_sentence("We train the parser on projected trees.")
    assert not is_full_sentence("Model.") and not is_full_sentence("That is,")
    assert not is_full_sentence("Supercalifragilistic expialidocious words.")  # 3 words, long enough
    assert not is_full_sentence("We do it so.")  # 4 words, 12 characters
    assert is_full_sentence("  We parse a lot of big trees.  ")  # stripped: 27 characters, 7 words
