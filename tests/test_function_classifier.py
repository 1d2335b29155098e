import numpy
import pytest
import spacy
from helpers import SMALL_TOK2VEC, cnn_encoder, lstm_encoder, make_reference
from numpy.testing import assert_almost_equal
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import fix_random_seed, make_tempdir, registry
from thinc.api import Adam

from spacy_rhetoric import get_sent_labels, set_sent_labels
from spacy_rhetoric.pipeline.function_classifier import (
    FunctionClassifier,
    score_function_classifier,
)

TRAIN_DATA = [
    (
        ["Neural parsers are widely used.", "We propose a graph model.", "Accuracy improves by two points."],
        ["background", "method", "result"],
    ),
    (
        ["Citation graphs are large.", "We train a ranking network.", "Recall improves on both sets."],
        ["background", "method", "result"],
    ),
    (
        ["We train a tagger on news.", "Accuracy improves on tweets."],
        ["method", "result"],
    ),
]

# Same sentence text, different labels: only position/neighbours can tell them apart.
CONTEXT_DATA = [
    (["Here it is.", "We train a model.", "Here it is."], ["background", "method", "result"]),
    (["Here it is.", "We test a model.", "Here it is."], ["background", "method", "result"]),
]


ISOLATED = {
    "@architectures": "spacy_rhetoric.SentenceClassifier.v1",
    "pooling": "mean",
    "hidden_size": 32,
    "dropout": 0.0,
    "tok2vec": SMALL_TOK2VEC,
}
CONTEXT_CNN = {
    "@architectures": "spacy_rhetoric.ContextSentenceClassifier.v1",
    "pooling": "mean+max",
    "width": 32,
    "encoder": cnn_encoder(32),
    "dropout": 0.0,
    "tok2vec": SMALL_TOK2VEC,
}
CONTEXT_LSTM = dict(CONTEXT_CNN, encoder=lstm_encoder(32))


def make_examples(nlp, data):
    examples = []
    for sentences, labels in data:
        ref = make_reference(nlp, sentences, labels)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    return examples


def make_nlp(model=None):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    config = {"model": model} if model is not None else {}
    nlp.add_pipe("rhetoric_function_classifier", config=config)
    return nlp


def doc_outputs(doc):
    return [(s.start, s.end, s._.rhetoric_label, s._.rhetoric_scores) for s in doc.sents]


def test_default_config_initializes_and_predicts():
    nlp = make_nlp()
    clf = nlp.get_pipe("rhetoric_function_classifier")
    assert isinstance(clf, FunctionClassifier)
    examples = make_examples(nlp, TRAIN_DATA)
    nlp.initialize(lambda: examples)
    assert clf.labels == ("background", "method", "result")
    assert clf.label_data == ["background", "method", "result"]
    doc = nlp("One sentence here. And another one!")
    sents = list(doc.sents)
    assert len(sents) == 2
    for sent in sents:
        assert sent._.rhetoric_label in clf.labels
        scores = sent._.rhetoric_scores
        assert set(scores) == set(clf.labels)
        assert abs(sum(scores.values()) - 1.0) < 1e-4
        assert sent._.rhetoric_label == max(scores, key=scores.get)
    # empty docs are fine
    assert list(nlp("").sents) == []


def test_initialize_with_label_list_and_add_label_after_init():
    nlp = make_nlp()
    clf = nlp.get_pipe("rhetoric_function_classifier")
    examples = make_examples(nlp, TRAIN_DATA)
    nlp.initialize(lambda: examples)
    # A label list wins over the labels in the data (its order is kept).
    nlp2 = make_nlp()
    clf2 = nlp2.get_pipe("rhetoric_function_classifier")
    clf2.initialize(lambda: examples, nlp=nlp2, labels=["result", "method", "background", "other"])
    assert clf2.labels == ("result", "method", "background", "other")
    assert nlp2("A sentence.").has_annotation("SENT_START")
    scores = list(nlp2("A sentence.").sents)[0]._.rhetoric_scores
    assert set(scores) == {"result", "method", "background", "other"}
    with pytest.raises(ValueError, match="already initialized"):
        clf.add_label("new_label")


def test_initialize_needs_labels():
    nlp = make_nlp()
    ref = make_reference(nlp, ["No label here.", "Nor here."], [None, None])
    examples = [Example(nlp.make_doc(ref.text), ref)]
    with pytest.raises(ValueError, match="at least 2 labels"):
        nlp.initialize(lambda: examples)


def test_no_sentence_boundaries_error():
    nlp = spacy.blank("en")
    nlp.add_pipe("rhetoric_function_classifier")
    nlp.initialize(lambda: make_examples(nlp, TRAIN_DATA))
    with pytest.raises(ValueError, match="no sentence boundaries"):
        nlp("This doc was never split. Nothing set the boundaries.")
    # training never needs predicted boundaries: gold sentences are used
    losses = nlp.update(make_examples(nlp, TRAIN_DATA))
    assert losses["rhetoric_function_classifier"] > 0


def test_unlabelled_gold_sentences_are_ignored_in_loss():
    fix_random_seed(0)
    nlp = make_nlp({**ISOLATED})
    clf = nlp.get_pipe("rhetoric_function_classifier")
    nlp.initialize(lambda: make_examples(nlp, TRAIN_DATA))
    partial = make_examples(
        nlp, [(TRAIN_DATA[0][0], ["background", None, "result"])]
    )
    offsets, truths = clf._gold(partial)
    assert truths == [0, -1, 2]
    from spacy_rhetoric.ml.pooling import make_indices

    scores = clf.model.predict(([partial[0].predicted], make_indices(clf.model.ops, offsets)))
    loss, d_scores = clf.get_loss(partial, scores)
    d_scores = clf.model.ops.to_numpy(d_scores)
    assert numpy.all(d_scores[1] == 0)
    assert numpy.any(d_scores[0] != 0) and numpy.any(d_scores[2] != 0)
    expected = -(numpy.log(scores[0, 0]) + numpy.log(scores[2, 2])) / 2
    assert loss == pytest.approx(float(expected), rel=1e-5)
    # gradient = (p - onehot) / n_labelled on labelled rows
    onehot = numpy.zeros_like(scores[0])
    onehot[0] = 1
    assert_almost_equal(d_scores[0], (scores[0] - onehot) / 2, decimal=6)
    # an example with no labelled sentence changes nothing and reports no loss
    nothing = make_examples(nlp, [(["Unlabelled one.", "Unlabelled two."], [None, None])])
    assert nlp.update(nothing)["rhetoric_function_classifier"] == 0.0


def _train(nlp, examples, n_iter):
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    losses_seen = []
    for _ in range(n_iter):
        losses = {}
        nlp.update(examples, sgd=optimizer, losses=losses)
        losses_seen.append(losses["rhetoric_function_classifier"])
    return losses_seen


@pytest.mark.parametrize("model", [ISOLATED, CONTEXT_CNN, CONTEXT_LSTM], ids=["isolated", "cnn", "lstm"])
def test_overfitting_IO(model):
    fix_random_seed(0)
    nlp = make_nlp(model)
    examples = make_examples(nlp, TRAIN_DATA)
    losses = _train(nlp, examples, 30)
    assert losses[-1] < losses[0] / 10
    assert losses[-1] < 0.05

    texts = [" ".join(sents) for sents, _ in TRAIN_DATA]
    docs = list(nlp.pipe(texts))
    for doc, (_, gold) in zip(docs, TRAIN_DATA):
        assert [s._.rhetoric_label for s in doc.sents] == gold
        assert get_sent_labels(doc) == gold
    # the scorer agrees
    scores = nlp.evaluate(make_examples(nlp, TRAIN_DATA))
    assert scores["rhetoric_f_micro"] == 1.0
    assert scores["rhetoric_f_macro"] == 1.0

    expected = [doc_outputs(doc) for doc in docs]
    with make_tempdir() as tmp:
        nlp.to_disk(tmp)
        nlp2 = spacy.load(tmp)
        clf2 = nlp2.get_pipe("rhetoric_function_classifier")
        assert clf2.labels == ("background", "method", "result")
        docs2 = list(nlp2.pipe(texts))
        for doc, doc2 in zip(docs, docs2):
            for (s, e, lab, sc), (s2, e2, lab2, sc2) in zip(doc_outputs(doc), doc_outputs(doc2)):
                assert (s, e, lab) == (s2, e2, lab2)
                assert_almost_equal([sc[k] for k in sorted(sc)], [sc2[k] for k in sorted(sc2)], decimal=5)

    # predictions survive a DocBin round trip with user data
    doc_bin = DocBin(store_user_data=True, docs=docs)
    docs3 = list(DocBin().from_bytes(doc_bin.to_bytes()).get_docs(nlp.vocab))
    assert [doc_outputs(d) for d in docs3] == expected

    # batch predictions equal single-doc predictions
    single = [doc_outputs(nlp(t)) for t in texts]
    for one, batch in zip(single, expected):
        assert [x[:3] for x in one] == [x[:3] for x in batch]


def test_context_model_uses_position():
    """Identical sentences with different labels: the context model learns them
    from position, the isolated one cannot (same input, same output). The
    tok2vec has window 0 here, so token vectors do not see across sentences."""
    texts = [" ".join(sents) for sents, _ in CONTEXT_DATA]
    no_cnn = dict(SMALL_TOK2VEC, window_size=0)
    fix_random_seed(0)
    nlp = make_nlp(dict(CONTEXT_CNN, tok2vec=no_cnn))
    _train(nlp, make_examples(nlp, CONTEXT_DATA), 30)
    for doc, (_, gold) in zip(nlp.pipe(texts), CONTEXT_DATA):
        assert [s._.rhetoric_label for s in doc.sents] == gold

    fix_random_seed(0)
    nlp_iso = make_nlp(dict(ISOLATED, tok2vec=no_cnn))
    _train(nlp_iso, make_examples(nlp_iso, CONTEXT_DATA), 10)
    doc = nlp_iso(texts[0])
    first, _, last = list(doc.sents)
    assert first._.rhetoric_label == last._.rhetoric_label
    assert_almost_equal(
        [first._.rhetoric_scores[k] for k in sorted(first._.rhetoric_scores)],
        [last._.rhetoric_scores[k] for k in sorted(last._.rhetoric_scores)],
        decimal=5,
    )


def _example_with_predictions(nlp, sentences, gold, predicted, pred_starts=None):
    ref = make_reference(nlp, sentences, gold)
    pred = make_reference(nlp, sentences, [None] * len(sentences))
    if pred_starts is not None:
        pred = Doc(nlp.vocab, words=[t.text for t in pred], spaces=[bool(t.whitespace_) for t in pred],
                   sent_starts=pred_starts)
    set_sent_labels(pred, predicted)
    return Example(pred, ref)


def test_scorer_hand_made_case():
    nlp = spacy.blank("en")
    s4 = ["A one.", "B two.", "C three.", "D four."]
    examples = [
        _example_with_predictions(nlp, s4, ["x", "x", "y", "z"], ["x", "y", "y", "y"]),
        # unlabelled gold sentence: not scored
        _example_with_predictions(nlp, s4[:2], ["z", None], ["z", "x"]),
    ]
    scores = score_function_classifier(examples)
    # items: (x,x) (x,y) (y,y) (z,y) (z,z) -> 3 of 5 correct
    assert scores["rhetoric_f_micro"] == pytest.approx(3 / 5)
    # x: p=1/1 r=1/2 f=2/3; y: p=1/3 r=1/1 f=1/2; z: p=1/1 r=1/2 f=2/3
    per = scores["rhetoric_f_per_type"]
    assert per["x"] == pytest.approx({"p": 1.0, "r": 0.5, "f": 2 / 3})
    assert per["y"] == pytest.approx({"p": 1 / 3, "r": 1.0, "f": 0.5})
    assert per["z"] == pytest.approx({"p": 1.0, "r": 0.5, "f": 2 / 3})
    assert scores["rhetoric_f_macro"] == pytest.approx((2 / 3 + 0.5 + 2 / 3) / 3)
    assert scores["rhetoric_p_macro"] == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert scores["rhetoric_r_macro"] == pytest.approx((0.5 + 1 + 0.5) / 3)
    # registered scorer and default score weights match its keys
    scorer = registry.scorers.get("spacy_rhetoric.function_classifier_scorer.v1")()
    assert scorer(examples) == scores
    weights = nlp.get_factory_meta("rhetoric_function_classifier").default_score_weights
    assert set(weights) == set(scores)


def test_scorer_segmentation_mismatch_and_missing_predictions():
    nlp = spacy.blank("en")
    sents = ["A one.", "B two.", "C three."]
    # the prediction merged sentences 2 and 3: both gold sentences get its label
    merged = _example_with_predictions(
        nlp, sents, ["x", "y", "y"], ["x", "y"],
        pred_starts=[True, False, False, True, False, False, False, False, False],
    )
    scores = score_function_classifier([merged])
    assert scores["rhetoric_f_micro"] == 1.0
    # no predictions at all: every gold sentence is a miss, not an error
    ref = make_reference(nlp, sents, ["x", "y", "y"])
    empty = Example(make_reference(nlp, sents, [None, None, None]), ref)
    scores = score_function_classifier([empty])
    assert scores["rhetoric_f_micro"] == 0.0
    assert scores["rhetoric_f_per_type"]["y"]["r"] == 0.0
    # nothing labelled: None scores
    assert score_function_classifier([])["rhetoric_f_micro"] is None


# Fine communicative functions beside the coarse labels, both gold fields on one reference doc.
FINE = ["Showing the importance of the topic", "Restatement of the aim or method", "Description of the results"]


def test_coarse_and_fine_classifiers_in_one_pipeline():
    from spacy_rhetoric.extensions import FINE_LABEL, FINE_SCORES

    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier", config={"model": ISOLATED})
    fine = nlp.add_pipe("rhetoric_function_classifier", name="rhetoric_fine_classifier", config={
        "model": ISOLATED, "label_field": FINE_LABEL, "scores_field": FINE_SCORES, "gold_field": FINE_LABEL,
    })
    examples = make_examples(nlp, TRAIN_DATA)
    for eg, (_, coarse) in zip(examples, TRAIN_DATA):
        set_sent_labels(eg.reference, [FINE[["background", "method", "result"].index(c)] for c in coarse],
                        field=FINE_LABEL)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    assert fine.labels == tuple(sorted(FINE))
    for _ in range(30):
        nlp.update(examples, sgd=optimizer, losses={})
    texts = [" ".join(sents) for sents, _ in TRAIN_DATA]
    docs = list(nlp.pipe(texts))
    for doc, (_, coarse) in zip(docs, TRAIN_DATA):
        sents = list(doc.sents)
        assert [s._.rhetoric_label for s in sents] == coarse
        assert [s._.rhetoric_fine_label for s in sents] == [FINE[["background", "method", "result"].index(c)]
                                                            for c in coarse]
        assert all(set(s._.rhetoric_fine_scores) == set(FINE) for s in sents)
        assert all(set(s._.rhetoric_scores) == {"background", "method", "result"} for s in sents)
    scores = nlp.evaluate([Example(nlp.make_doc(eg.reference.text), eg.reference) for eg in examples])
    assert scores["rhetoric_f_micro"] == 1.0 and scores["rhetoric_fine_label_f_micro"] == 1.0
    # both fields survive DocBin and to_disk/spacy.load
    docs2 = list(DocBin(store_user_data=True, docs=docs).get_docs(nlp.vocab))
    assert [[s._.rhetoric_fine_label for s in d.sents] for d in docs2] == \
        [[s._.rhetoric_fine_label for s in d.sents] for d in docs]
    with make_tempdir() as tmp:
        nlp.to_disk(tmp)
        nlp2 = spacy.load(tmp)
        assert nlp2.get_pipe("rhetoric_fine_classifier").label_field == FINE_LABEL
        for doc, doc2 in zip(docs, nlp2.pipe(texts)):
            assert [(s._.rhetoric_label, s._.rhetoric_fine_label) for s in doc.sents] == \
                [(s._.rhetoric_label, s._.rhetoric_fine_label) for s in doc2.sents]


def test_bad_field_settings():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="must differ"):
        nlp.add_pipe("rhetoric_function_classifier", config={"label_field": "x", "scores_field": "x"})
    with pytest.raises(ValueError, match="non-empty"):
        nlp.add_pipe("rhetoric_function_classifier", name="c2", config={"gold_field": ""})


@Language.component("test_fixed_sentence_labels")
def fixed_sentence_labels(doc):
    """Label by first word: 'A' -> x, 'B' -> w (a label no gold has), 'C' -> none, else z."""
    sents = list(doc.sents)
    by_word = {"A": "x", "B": "w", "C": None}
    set_sent_labels(doc, [by_word.get(s[0].text, "z") for s in sents])
    return doc


def test_registered_scorer_and_evaluate_give_the_same_numbers():
    """`spacy train` (the registered scorer) and `spacy-rhetoric evaluate`
    (evaluation.classifier_scores) score the same predictions alike: one
    definition (scorers.sentence_label_scores), missing prediction = wrong."""
    from spacy_rhetoric.evaluation.metrics import evaluate_classifier

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("test_fixed_sentence_labels")
    golds = [
        make_reference(nlp, ["A one.", "B two.", "C three.", "D four."], ["x", "x", "y", "z"]),
        make_reference(nlp, ["A five.", "D six."], ["x", "y"]),
    ]
    examples = [Example(nlp(gold.text), gold) for gold in golds]
    train_scores = score_function_classifier(examples)
    eval_scores = evaluate_classifier(nlp, golds, progress=False)
    # items (gold, pred): (x,x) (x,w) (y,-) (z,z) (x,x) (y,z): 3 of 6 right
    assert train_scores["rhetoric_f_micro"] == pytest.approx(0.5)
    assert eval_scores["f1_micro"] == pytest.approx(train_scores["rhetoric_f_micro"])
    # macro over w, x, y, z: x p=1 r=2/3 f=.8; z p=1/2 r=1 f=2/3; w, y: 0
    assert train_scores["rhetoric_f_macro"] == pytest.approx((0.8 + 2 / 3) / 4)
    assert eval_scores["f1_macro"] == pytest.approx(train_scores["rhetoric_f_macro"])
    assert eval_scores["n_unpredicted"] == 1
    for label, prf in train_scores["rhetoric_f_per_type"].items():
        assert {k: eval_scores["per_label"][label][k] for k in prf} == pytest.approx(prf)


def _trained_without_token_context():
    # no neighbour window in the tok2vec: a token's vector depends on the token only
    model = dict(ISOLATED, tok2vec=dict(SMALL_TOK2VEC, window_size=0))
    fix_random_seed(0)
    nlp = make_nlp(model)
    _train(nlp, make_examples(nlp, TRAIN_DATA), 5)
    return nlp


def test_whitespace_only_sentences_get_no_label():
    nlp = make_nlp()
    nlp.initialize(lambda: make_examples(nlp, TRAIN_DATA))
    doc = nlp("   \n\n ")
    assert [s._.rhetoric_label for s in doc.sents] == [None]
    assert [s._.rhetoric_scores for s in doc.sents] == [None]
    assert len(doc.spans["rhetoric"]) == 0
    # a trailing blank line the sentencizer makes a sentence of: not labelled either
    doc = nlp("We propose a graph model.\n\n")
    assert [s._.rhetoric_label is None for s in doc.sents] == [False, True]
    assert [s.text for s in doc.spans["rhetoric"]] == ["We propose a graph model."]


def test_trailing_whitespace_does_not_change_the_prediction():
    nlp = _trained_without_token_context()
    clf = nlp.get_pipe("rhetoric_function_classifier")
    words = ["We", "propose", "a", "graph", "model", "."]
    plain = Doc(nlp.vocab, words=words, sent_starts=[True] + [False] * 5)
    # the same sentence with a paragraph break inside its span (as a parser may segment)
    padded = Doc(nlp.vocab, words=words + ["\n\n"], spaces=[True] * 4 + [False] * 3,
                 sent_starts=[True] + [False] * 6)
    a = list(clf(plain).sents)[0]._.rhetoric_scores
    b = list(clf(padded).sents)[0]._.rhetoric_scores
    assert a == pytest.approx(b, abs=1e-7)
    leading = Doc(nlp.vocab, words=["\n\n"] + words, spaces=[False] + [True] * 4 + [False] * 2,
                  sent_starts=[True] + [False] * 6)
    assert list(clf(leading).sents)[0]._.rhetoric_scores == pytest.approx(a, abs=1e-7)


@pytest.mark.parametrize("factory", ["rhetoric_function_classifier", "rhetoric_sentence_encoder"])
def test_bare_initialize_after_add_label(factory):
    """spacy.blank + sentencizer + add_pipe + add_label + nlp.initialize() with
    no examples (spaCy passes a dummy example without sentence boundaries)."""
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    pipe = nlp.add_pipe(factory)
    for label in ("background", "method", "result"):
        pipe.add_label(label)
    nlp.initialize()
    doc = nlp("We study parsing. We propose a method.")
    assert len(list(doc.sents)) == 2
