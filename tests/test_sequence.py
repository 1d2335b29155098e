"""spacy_rhetoric.SequenceSentenceClassifier.v1: linear-chain CRF over a doc's sentences."""
import itertools

import numpy
import pytest
import spacy
import torch
from helpers import SMALL_TOK2VEC, cnn_encoder, make_reference
from numpy.testing import assert_allclose, assert_almost_equal
from spacy.training import Example
from spacy.util import fix_random_seed, make_tempdir, registry
from thinc.api import Adam

from spacy_rhetoric import get_sent_labels
from spacy_rhetoric.ml.sequence import crf_log_marginals, viterbi_path

SEQUENCE = {
    "@architectures": "spacy_rhetoric.SequenceSentenceClassifier.v1",
    "pooling": "mean+max",
    "width": 32,
    "encoder": cnn_encoder(32),
    "dropout": 0.0,
    "ngram_size": 2,
    "ngram_length": 4096,
    "tok2vec": SMALL_TOK2VEC,
}
TRAIN_DATA = [
    (
        ["Neural parsers are widely used.", "We propose a graph model.", "Accuracy improves by two points."],
        ["background", "method", "result"],
    ),
    (
        ["Citation graphs are large.", "We train a ranking network.", "Recall improves on both sets."],
        ["background", "method", "result"],
    ),
    (["We train a tagger on news.", "Accuracy improves on tweets."], ["method", "result"]),
]


def score(y, E, W, s, e):
    return s[y[0]] + sum(E[t, k] for t, k in enumerate(y)) + sum(W[a, b] for a, b in zip(y, y[1:])) + e[y[-1]]


def brute_marginals(E, W, s, e):
    n, K = E.shape
    paths = list(itertools.product(range(K), repeat=n))
    scores = numpy.array([score(y, E, W, s, e) for y in paths])
    p = numpy.exp(scores - scores.max())
    p /= p.sum()
    marg = numpy.zeros((n, K))
    for y, py in zip(paths, p):
        for t, k in enumerate(y):
            marg[t, k] += py
    return marg, list(paths[int(scores.argmax())])


def test_hand_case_3x2():
    # 3 sentences, 2 labels, numbers checked by hand: all 8 paths enumerated
    E = numpy.array([[1.0, 0.0], [0.0, 0.5], [0.2, 0.0]])
    W = numpy.array([[0.0, 2.0], [-1.0, 0.0]])
    s, e = numpy.array([0.3, 0.0]), numpy.array([0.0, 0.4])
    # best path: 0 -> 1 -> 1: 0.3 + 1 + 0.5 + 0 + 2 + 0 + 0.4 = 4.2
    assert score([0, 1, 1], E, W, s, e) == pytest.approx(4.2)
    marg, best = brute_marginals(E, W, s, e)
    assert best == [0, 1, 1]
    assert viterbi_path(E, W, s, e) == [0, 1, 1]
    t = [torch.tensor(a) for a in (E, W, s, e)]
    got = torch.exp(crf_log_marginals(*t, [3])).numpy()
    assert_allclose(got, marg, atol=1e-10)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_marginals_viterbi_and_gradient_against_enumeration(seed):
    rng = numpy.random.default_rng(seed)
    K, lengths = 2, [3, 1, 0, 4]
    E = rng.normal(size=(sum(lengths), K))
    W, s, e = rng.normal(size=(K, K)), rng.normal(size=K), rng.normal(size=K)
    gold = rng.integers(0, K, size=sum(lengths))
    tensors = [torch.tensor(a, requires_grad=True) for a in (E, W, s, e)]
    log_marg = crf_log_marginals(*tensors, lengths)
    row = 0
    for n in lengths:
        if n:
            marg, best = brute_marginals(E[row : row + n], W, s, e)
            assert_allclose(numpy.exp(log_marg.detach().numpy()[row : row + n]), marg, atol=1e-10)
            assert viterbi_path(E[row : row + n], W, s, e) == best
        row += n

    def loss_of(E_, W_, s_, e_):  # marginal cross-entropy by enumeration
        total, r = 0.0, 0
        for n in lengths:
            if n:
                m, _ = brute_marginals(E_[r : r + n], W_, s_, e_)
                total -= numpy.log(m[numpy.arange(n), gold[r : r + n]]).sum()
            r += n
        return total

    # the pipe hands (p - onehot) as d(log-marginals): same gradient as -onehot
    p = numpy.exp(log_marg.detach().numpy())
    onehot = numpy.eye(K)[gold]
    log_marg.backward(torch.tensor(p - onehot))
    grads = [t.grad.numpy().copy() for t in tensors]
    params = [E, W, s, e]
    eps = 1e-6
    for i, param in enumerate(params):
        numeric = numpy.zeros_like(param)
        for idx in numpy.ndindex(param.shape):
            plus = [a.copy() for a in params]
            minus = [a.copy() for a in params]
            plus[i][idx] += eps
            minus[i][idx] -= eps
            numeric[idx] = (loss_of(*plus) - loss_of(*minus)) / (2 * eps)
        assert_allclose(grads[i], numeric, atol=1e-6)


def make_nlp(model):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_function_classifier", config={"model": model})
    return nlp


def make_examples(nlp, data):
    examples = []
    for sentences, labels in data:
        ref = make_reference(nlp, sentences, labels)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    return examples


def outputs(doc):
    return [(s.start, s.end, s._.rhetoric_label, s._.rhetoric_scores) for s in doc.sents]


def test_unknown_decode():
    with pytest.raises(ValueError, match="decode"):
        registry.resolve({"m": dict(SEQUENCE, decode="beam")})


@pytest.mark.parametrize("decode,head_scale", [("marginal", 1.0), ("viterbi", 1.0), ("marginal", 10.0)])
def test_overfitting_IO(decode, head_scale):
    fix_random_seed(0)
    nlp = make_nlp(dict(SEQUENCE, decode=decode, head_scale=head_scale))
    examples = make_examples(nlp, TRAIN_DATA)
    nlp.initialize(lambda: examples)
    optimizer = Adam(0.01)
    losses = []
    for _ in range(30):
        got = {}
        nlp.update(examples, sgd=optimizer, losses=got)
        losses.append(got["rhetoric_function_classifier"])
    assert losses[-1] < losses[0] / 10
    model = nlp.get_pipe("rhetoric_function_classifier").model
    W = model.get_param("W")
    assert numpy.abs(W).sum() > 0  # transitions learned by backprop
    texts = [" ".join(sents) for sents, _ in TRAIN_DATA]
    docs = list(nlp.pipe(texts))
    for doc, (_, gold) in zip(docs, TRAIN_DATA):
        assert get_sent_labels(doc) == gold
        for sent in doc.sents:
            assert sum(sent._.rhetoric_scores.values()) == pytest.approx(1.0, abs=1e-4)
    assert nlp.evaluate(make_examples(nlp, TRAIN_DATA))["rhetoric_f_micro"] == 1.0
    with make_tempdir() as tmp:
        nlp.to_disk(tmp)
        nlp2 = spacy.load(tmp)
        assert nlp2.get_pipe("rhetoric_function_classifier").model.attrs["decode"] == decode
        docs2 = list(nlp2.pipe(texts))
    for doc, doc2 in zip(docs, docs2):
        for (s, e, lab, sc), (s2, e2, lab2, sc2) in zip(outputs(doc), outputs(doc2)):
            assert (s, e, lab) == (s2, e2, lab2)
            assert_almost_equal([sc[k] for k in sorted(sc)], [sc2[k] for k in sorted(sc2)], decimal=5)
    # batch predictions equal single-doc predictions
    assert [[o[:3] for o in outputs(nlp(t))] for t in texts] == [[o[:3] for o in outputs(d)] for d in docs]


def test_viterbi_scores_are_the_path():
    fix_random_seed(0)
    nlp = make_nlp(dict(SEQUENCE, decode="viterbi", ngram_size=0))
    nlp.initialize(lambda: make_examples(nlp, TRAIN_DATA))
    doc = nlp("One sentence here. And another one! A third.")
    for sent in doc.sents:
        assert sorted(sent._.rhetoric_scores.values()) == [0.0, 0.0, 1.0]
    assert list(nlp("").sents) == []


@pytest.mark.parametrize("name", ["classifier_seq_cpu", "classifier_seq_trf"])
def test_benchmark_configs(name):
    from helpers import benchmark_config

    config = spacy.util.load_config(benchmark_config(name))
    model = config["components"]["rhetoric_function_classifier"]["model"]
    assert model["@architectures"] == "spacy_rhetoric.SequenceSentenceClassifier.v1"
    assert model["decode"] == "marginal"
    if name == "classifier_seq_cpu":  # the trf one loads MiniLM: built by `spacy train` only
        nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
        crf = nlp.get_pipe("rhetoric_function_classifier").model
        assert crf.get_ref("output_layer") is crf and crf.attrs["decode"] == "marginal"
