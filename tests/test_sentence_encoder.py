"""rhetoric_sentence_encoder: standalone training, overfitting, normalised
vectors, span hooks, serialization round trips, every registered loss."""
import numpy
import pytest
import spacy
from helpers import cnn_encoder, lstm_encoder
from spacy.tokens import Doc, DocBin
from spacy.training import Example

import spacy_rhetoric  # noqa: F401  (extensions)
from spacy_rhetoric.ml.encoder import build_sentence_encoder
from spacy_rhetoric.pipeline.sentence_encoder import (
    SentenceEncoder,
    install_vector_hooks,
    sentence_encoder_score,
)
from spacy_rhetoric.readers.common import doc_from_sentences

LOSSES = [
    {"@misc": "spacy_rhetoric.SoftmaxLoss.v1"},
    {"@misc": "spacy_rhetoric.BatchAllTripletLoss.v1"},
    {"@misc": "spacy_rhetoric.ArcFaceLoss.v1"},
    {"@misc": "spacy_rhetoric.MultiSimilarityLoss.v1"},
    {"@misc": "spacy_rhetoric.NTXentLoss.v1"},
]

ABSTRACTS = [
    (
        [
            "Machine translation is an important problem.",
            "We aim to improve translation of rare words.",
            "We propose a copy mechanism for the decoder.",
            "Our results show a gain of two BLEU points.",
        ],
        ["background", "objective", "method", "result"],
    ),
    (
        [
            "Graph data is an important resource.",
            "We aim to classify nodes in large graphs.",
            "We propose a sampling method for the encoder.",
            "Our results show a gain of five accuracy points.",
        ],
        ["background", "objective", "method", "result"],
    ),
    (
        [
            "Speech recognition is an important task.",
            "We aim to reduce errors on noisy audio.",
            "We propose an attention mechanism for the acoustic model.",
            "Our results show a gain of three points in error rate.",
        ],
        ["background", "objective", "method", "result"],
    ),
]


def make_nlp(config=None):
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("rhetoric_sentence_encoder", config=config or {})
    return nlp


def make_examples(nlp, data=ABSTRACTS):
    examples = []
    for sents, labels in data:
        ref = doc_from_sentences(nlp, sents, labels=labels)
        examples.append(Example(nlp.make_doc(ref.text), ref))
    return examples


def train(nlp, examples, n_iter):
    optimizer = nlp.initialize(lambda: examples)
    history = []
    for _ in range(n_iter):
        losses = {}
        nlp.update(examples, sgd=optimizer, losses=losses)
        history.append(losses["rhetoric_sentence_encoder"])
    return history


def texts(data=ABSTRACTS):
    return [" ".join(sents) for sents, _ in data]


def all_vectors(docs):
    return numpy.vstack([s._.rhetoric_vector for doc in docs for s in doc.sents])


@pytest.fixture(scope="module")
def trained():
    nlp = make_nlp()
    examples = make_examples(nlp)
    history = train(nlp, examples, 40)
    return nlp, history


def test_default_config_standalone():
    nlp = make_nlp()
    encoder = nlp.get_pipe("rhetoric_sentence_encoder")
    assert isinstance(encoder, SentenceEncoder)
    history = train(nlp, make_examples(nlp), 2)
    assert set(encoder.labels) == {"background", "objective", "method", "result"}
    assert all(numpy.isfinite(history))
    doc = nlp(texts()[0])
    assert all(s._.rhetoric_vector is not None for s in doc.sents)


def test_overfit_loss_falls_and_neighbours_share_labels(trained):
    nlp, history = trained
    assert history[-1] < history[0] * 0.2, history
    docs = list(nlp.pipe(texts()))
    vectors = all_vectors(docs)
    labels = [label for _, labels in ABSTRACTS for label in labels]
    sims = vectors @ vectors.T
    numpy.fill_diagonal(sims, -numpy.inf)
    nearest = sims.argmax(axis=1)
    assert [labels[j] for j in nearest] == labels
    same = numpy.array([[a == b for b in labels] for a in labels])
    off = ~numpy.eye(len(labels), dtype=bool)
    assert sims[same & off].mean() > sims[~same].mean()


def test_vectors_l2_normalised_float32(trained):
    nlp, _ = trained
    doc = nlp(texts()[1])
    for sent in doc.sents:
        vec = sent._.rhetoric_vector
        assert vec.dtype == numpy.float32
        assert vec.shape == (nlp.get_pipe("rhetoric_sentence_encoder").cfg["width"],)
        assert abs(float(numpy.linalg.norm(vec)) - 1.0) < 1e-5


def test_user_span_hooks(trained):
    nlp, _ = trained
    doc = nlp(texts()[0])
    a, b = list(doc.sents)[:2]
    numpy.testing.assert_array_equal(a.vector, a._.rhetoric_vector)
    expected = float(a._.rhetoric_vector @ b._.rhetoric_vector)
    assert a.similarity(b) == pytest.approx(expected, abs=1e-6)
    assert a._.rhetoric_similarity(b) == pytest.approx(expected, abs=1e-6)
    # A span that is not an encoded sentence falls back to spaCy's default.
    part = doc[a.start : a.end - 1]
    assert part.vector.shape != a.vector.shape or not numpy.allclose(part.vector, a.vector)


def test_to_disk_and_spacy_load_identical(trained, tmp_path):
    nlp, _ = trained
    nlp.to_disk(tmp_path / "model")
    nlp2 = spacy.load(tmp_path / "model")
    for text in texts():
        v1 = all_vectors([nlp(text)])
        v2 = all_vectors([nlp2(text)])
        numpy.testing.assert_array_equal(v1, v2)
    doc = nlp2(texts()[0])
    sents = list(doc.sents)
    numpy.testing.assert_array_equal(sents[0].vector, sents[0]._.rhetoric_vector)
    enc1 = nlp.get_pipe("rhetoric_sentence_encoder")
    enc2 = nlp2.get_pipe("rhetoric_sentence_encoder")
    assert enc2.labels == enc1.labels
    state1, state2 = enc1.loss_fn.state_dict(), enc2.loss_fn.state_dict()
    assert state1.keys() == state2.keys()
    for key in state1:
        assert bool((state1[key] == state2[key]).all())


def test_to_bytes_round_trip(trained):
    nlp, _ = trained
    nlp2 = make_nlp()
    nlp2.get_pipe("rhetoric_sentence_encoder").from_bytes(
        nlp.get_pipe("rhetoric_sentence_encoder").to_bytes()
    )
    numpy.testing.assert_array_equal(
        all_vectors([nlp(texts()[2])]), all_vectors([nlp2(texts()[2])])
    )


def test_docbin_round_trip_and_hooks(trained):
    nlp, _ = trained
    docs = list(nlp.pipe(texts()))
    db = DocBin(store_user_data=True, docs=docs)
    loaded = list(DocBin().from_bytes(db.to_bytes()).get_docs(nlp.vocab))
    numpy.testing.assert_array_equal(all_vectors(docs), all_vectors(loaded))
    doc = loaded[0]
    a, b = list(doc.sents)[:2]
    # spaCy does not serialise hooks; DocBin.get_docs (wrapped on import) gives them back ...
    assert "vector" in doc.user_span_hooks
    expected = float(a._.rhetoric_vector @ b._.rhetoric_vector)
    numpy.testing.assert_array_equal(a.vector, a._.rhetoric_vector)
    assert a.similarity(b) == pytest.approx(expected, abs=1e-6)
    # ... and the extension method works without them; install_vector_hooks is idempotent
    doc.user_span_hooks.clear()
    assert a._.rhetoric_similarity(b) == pytest.approx(expected, abs=1e-6)
    install_vector_hooks(doc)
    assert a.similarity(b) == pytest.approx(expected, abs=1e-6)


def test_scorer_reports_retrieval(trained):
    nlp, _ = trained
    scores = nlp.evaluate(make_examples(nlp))
    assert scores["encoder_p_at_1"] == 1.0
    assert 0.0 < scores["encoder_map_at_r"] <= 1.0
    assert scores["encoder_missing"] == 0
    assert sentence_encoder_score([])["encoder_p_at_1"] is None


def test_unlabelled_sentences_are_skipped():
    nlp = make_nlp()
    data = [(sents, [lab if i % 2 == 0 else None for i, lab in enumerate(labels)])
            for sents, labels in ABSTRACTS]
    examples = make_examples(nlp, data)
    train(nlp, examples, 1)
    encoder = nlp.get_pipe("rhetoric_sentence_encoder")
    assert set(encoder.labels) == {"background", "method"}
    offsets, ids = encoder._gold(examples)
    assert [len(o) for o in offsets] == [2, 2, 2]
    assert len(ids) == 6


def test_needs_two_labels():
    nlp = make_nlp()
    data = [(ABSTRACTS[0][0], ["method"] * 4)]
    with pytest.raises(ValueError, match="at least 2"):
        nlp.initialize(lambda: make_examples(nlp, data))


def test_unsegmented_doc_has_clear_error(trained):
    nlp, _ = trained
    encoder = nlp.get_pipe("rhetoric_sentence_encoder")
    with pytest.raises(ValueError, match="sentence boundaries"):
        encoder(nlp.make_doc("No sentence boundaries here. None at all."))


@pytest.mark.parametrize("pooling,projection", [("first", None), ("mean+first", "maxout"), ("max", "linear")])
def test_pooling_and_projection(pooling, projection):
    config = {"model": {"pooling": pooling}}
    if projection:
        config["model"].update({"projection_width": 32, "projection": projection})
    nlp = make_nlp(config)
    train(nlp, make_examples(nlp), 2)
    width = nlp.get_pipe("rhetoric_sentence_encoder").cfg["width"]
    expected = 32 if projection else 96 * len(pooling.split("+"))
    assert width == expected
    assert nlp(texts()[0]).sents.__next__()._.rhetoric_vector.shape == (expected,)


def test_unknown_pooling_or_projection():
    from thinc.api import chain, list2array  # noqa: F401

    tok2vec = spacy.registry.resolve(
        {"t": {"@architectures": "spacy.HashEmbedCNN.v2", "pretrained_vectors": None, "width": 8,
               "depth": 1, "embed_size": 100, "window_size": 1, "maxout_pieces": 2,
               "subword_features": False}}
    )["t"]
    with pytest.raises(ValueError, match="pooling"):
        build_sentence_encoder(tok2vec, pooling="median")
    with pytest.raises(ValueError, match="projection"):
        build_sentence_encoder(tok2vec, projection_width=8, projection="mlp")


@pytest.mark.parametrize("loss", LOSSES, ids=lambda c: c["@misc"].split(".")[1])
def test_each_registered_loss_plugs_in(loss):
    nlp = make_nlp({"loss": loss})
    encoder = nlp.get_pipe("rhetoric_sentence_encoder")
    examples = make_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    before = {k: v.detach().clone() for k, v in encoder.loss_fn.state_dict().items()}
    history = []
    for _ in range(4):
        losses = {}
        nlp.update(examples, sgd=optimizer, losses=losses)
        history.append(losses["rhetoric_sentence_encoder"])
    assert all(numpy.isfinite(history))
    after = encoder.loss_fn.state_dict()
    if getattr(encoder.loss_fn, "needs_classes", False):
        # The loss's own class weights are trained by the pipeline's optimizer.
        assert before and any(not bool((before[k] == after[k]).all()) for k in before)
    doc = nlp(texts()[0])
    assert all(s._.rhetoric_vector is not None for s in doc.sents)


@pytest.mark.parametrize("loss", [LOSSES[0], LOSSES[2]], ids=["softmax", "arcface"])
def test_loss_parameters_follow_the_pipeline_optimizer(loss):
    """The loss's class weights are stepped by the sgd given to nlp.update
    (thinc's Optimizer: its learning rate, L2, clipping), and there is no
    private torch optimizer: with learn_rate 0 they stay put, with a rate
    they move, and the optimizer holds state for them."""
    import torch
    from thinc.api import Adam

    nlp = make_nlp({"loss": loss})
    encoder = nlp.get_pipe("rhetoric_sentence_encoder")
    examples = make_examples(nlp)
    nlp.initialize(lambda: examples)
    assert not any(isinstance(v, torch.optim.Optimizer) for v in vars(encoder).values())

    def state():
        return {k: v.detach().clone() for k, v in encoder.loss_fn.state_dict().items()}

    frozen = Adam(0.0)
    before = state()
    for _ in range(2):
        nlp.update(examples, sgd=frozen)
    assert before and all(bool((before[k] == v).all()) for k, v in state().items())

    moving = Adam(0.01)
    for _ in range(2):
        nlp.update(examples, sgd=moving)
    after = state()
    assert all(not bool((before[k] == after[k]).all()) for k in before)
    # thinc's Adam keeps its moments per (wrapper id, parameter name).
    loss_keys = {key for key in moving.mom1 if key[1] in dict(encoder.loss_fn.named_parameters())}
    assert loss_keys and {name for _, name in loss_keys} == set(before)
    # No gradient is left over for a next step.
    assert all(p.grad is None or not bool(p.grad.any()) for p in encoder.loss_fn.parameters())


def test_loss_learn_rate_is_ignored_with_a_warning():
    nlp = make_nlp({"loss_learn_rate": 0.01})
    with pytest.warns(UserWarning, match="loss_learn_rate"):
        nlp.initialize(lambda: make_examples(nlp))


def test_loss_must_be_a_metric_loss():
    with pytest.raises(ValueError, match="metric loss"):
        SentenceEncoder(spacy.blank("en").vocab, build_sentence_encoder(
            spacy.registry.resolve({"t": {"@architectures": "spacy.HashEmbedCNN.v2",
                                          "pretrained_vectors": None, "width": 8, "depth": 1,
                                          "embed_size": 100, "window_size": 1, "maxout_pieces": 2,
                                          "subword_features": False}})["t"]), loss=lambda x: x)


def test_transformer_config_trains_and_round_trips(tmp_path):
    """benchmarks/common/configs/encoder_trf.cfg: MiniLM (local weights) + listener; gradients reach the
    transformer and the pipeline reloads with identical vectors."""
    from pathlib import Path

    import torch

    torch.set_num_threads(1)
    cfg_path = Path(__file__).resolve().parent.parent / "benchmarks" / "common" / "configs" / "encoder_trf.cfg"
    corpus = tmp_path / "tiny.spacy"
    blank = spacy.blank("en")
    DocBin(store_user_data=True, docs=[e.reference for e in make_examples(blank, ABSTRACTS[:2])]).to_disk(corpus)
    overrides = {"paths.train": str(corpus), "paths.dev": str(corpus)}
    config = spacy.util.load_config(cfg_path, overrides=overrides, interpolate=True)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    examples = make_examples(nlp, ABSTRACTS[:2])
    optimizer = nlp.initialize(lambda: examples)
    optimizer.learn_rate = 1e-4
    trf = nlp.get_pipe("transformer").model
    torch_model = [shim for node in trf.walk() for shim in node.shims][0]._model
    param = next(torch_model.parameters()).detach().clone()
    for _ in range(2):
        losses = {}
        nlp.update(examples, sgd=optimizer, losses=losses)
        assert numpy.isfinite(losses["rhetoric_sentence_encoder"])
    changed = next(torch_model.parameters()).detach()
    assert not torch.equal(param, changed)
    doc = nlp(texts()[0])
    assert doc.sents.__next__()._.rhetoric_vector.shape == (384,)
    nlp.to_disk(tmp_path / "trf")
    nlp2 = spacy.load(tmp_path / "trf")
    numpy.testing.assert_allclose(all_vectors([doc]), all_vectors([nlp2(texts()[0])]), atol=1e-6)


def test_shared_transformer_config_runs_transformer_once(tmp_path):
    """rhetoric_trf.cfg: classifier and encoder listen to ONE transformer, train
    together and annotate in one pass."""
    from pathlib import Path

    import torch

    torch.set_num_threads(1)
    cfg_path = Path(__file__).resolve().parent.parent / "configs" / "rhetoric_trf.cfg"
    corpus = tmp_path / "tiny.spacy"
    blank = spacy.blank("en")
    DocBin(store_user_data=True, docs=[e.reference for e in make_examples(blank)]).to_disk(corpus)
    overrides = {"paths.train": str(corpus), "paths.dev": str(corpus)}
    config = spacy.util.load_config(cfg_path, overrides=overrides, interpolate=True)
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=True)
    assert [n for n in nlp.pipe_names if nlp.get_pipe_meta(n).factory == "transformer"] == ["transformer"]
    transformer = nlp.get_pipe("transformer")
    assert set(transformer.listening_components) == {
        "rhetoric_function_classifier",
        "rhetoric_sentence_encoder",
    }
    examples = make_examples(nlp)
    optimizer = nlp.initialize(lambda: examples)
    losses = {}
    nlp.update(examples, sgd=optimizer, losses=losses)
    assert {"rhetoric_function_classifier", "rhetoric_sentence_encoder"} <= set(losses)
    calls = []
    model = transformer.model
    original = model._func

    def counting_forward(m, docs, is_train):
        calls.append(len(docs))
        return original(m, docs, is_train)

    model._func = counting_forward
    doc = nlp(texts()[0])
    assert calls == [1]
    for sent in doc.sents:
        assert sent._.rhetoric_label in {"background", "objective", "method", "result"}
        assert sent._.rhetoric_vector.shape == (256,)  # the context encoder's projection


def test_margin_graded_loss_configured_by_label_names():
    """The encoder hands its label names to the loss, so graded margins can be
    configured by name."""
    import spacy
    from spacy.training import Example


    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    encoder = nlp.add_pipe(
        "rhetoric_sentence_encoder",
        config={
            "loss": {
                "@misc": "spacy_rhetoric.MarginGradedTripletLoss.v1",
                "groups": {"intro": ["background", "objective"]},
            }
        },
    )
    texts = [
        ("Prior work studied parsing. We aim to fix it. Accuracy rose.", ["background", "objective", "result"]),
        ("Parsers were built before. Our goal is speed. Speed doubled.", ["background", "objective", "result"]),
    ]
    examples = []
    for text, labels in texts:
        ref = nlp.get_pipe("sentencizer")(nlp.make_doc(text))
        spacy_rhetoric.set_sent_labels(ref, labels)
        examples.append(Example(nlp.make_doc(text), ref))
    nlp.initialize(lambda: examples)
    assert encoder.loss_fn.label_names == list(encoder.labels)
    losses = {}
    nlp.update(examples, losses=losses)
    assert "rhetoric_sentence_encoder" in losses


CONTEXT_MODEL = {
    "@architectures": "spacy_rhetoric.ContextSentenceEncoder.v1",
    "width": 32,
    "projection_width": 16,
    "dropout": 0.0,
    "tok2vec": {
        "@architectures": "spacy.HashEmbedCNN.v2", "pretrained_vectors": None, "width": 32,
        "depth": 1, "embed_size": 500, "window_size": 1, "maxout_pieces": 2,
        "subword_features": True,
    },
}
# The same sentence in every position: only its place in the doc tells the label.
SAME_TEXT = [(["This is one sentence."] * 3, ["background", "method", "result"])] * 3


@pytest.mark.parametrize("encoder", [cnn_encoder(32), lstm_encoder(32)], ids=["cnn", "lstm"])
def test_context_encoder_separates_identical_sentences_by_position(encoder, tmp_path):
    nlp = make_nlp({"model": {**CONTEXT_MODEL, "encoder": encoder}})
    history = train(nlp, make_examples(nlp, SAME_TEXT), 40)
    assert history[-1] < history[0] * 0.5, history
    docs = list(nlp.pipe(texts(SAME_TEXT)))
    vectors = all_vectors(docs)
    assert vectors.shape == (9, 16)
    labels = [label for _, labels in SAME_TEXT for label in labels]
    sims = vectors @ vectors.T
    numpy.fill_diagonal(sims, -numpy.inf)
    assert [labels[j] for j in sims.argmax(axis=1)] == labels
    nlp.to_disk(tmp_path / "ctx")
    loaded = spacy.load(tmp_path / "ctx")
    again = all_vectors(list(loaded.pipe(texts(SAME_TEXT))))
    numpy.testing.assert_allclose(again, vectors, rtol=1e-5, atol=1e-6)


def check_encoder_numbers(doc):
    """sent.vector / sent.similarity are the encoder's, not spaCy's fallback
    (0.0, or the mean of doc.tensor rows)."""
    sents = [s for s in doc.sents if s.text.strip()]
    assert all(s._.rhetoric_vector is not None for s in sents)
    for sent in sents:
        numpy.testing.assert_array_equal(sent.vector, sent._.rhetoric_vector)
    a, b = sents[0], sents[2]
    assert a.similarity(b) == pytest.approx(float(a._.rhetoric_vector @ b._.rhetoric_vector), abs=1e-6)


def test_vector_hooks_after_to_bytes_and_docbin(trained):
    nlp, _ = trained
    doc = nlp(texts()[0])
    check_encoder_numbers(doc)
    with pytest.warns(UserWarning, match="W109"):  # spaCy: hooks are not saved
        from_bytes = Doc(nlp.vocab).from_bytes(doc.to_bytes())
    (from_docbin,) = DocBin(store_user_data=True, docs=[doc]).get_docs(nlp.vocab)
    # spaCy does not serialise hooks: Doc.from_bytes needs restore_vector_hooks, DocBin.get_docs has them
    assert "vector" not in from_bytes.user_span_hooks and "vector" in from_docbin.user_span_hooks
    for again in (from_bytes, from_docbin):
        assert spacy_rhetoric.restore_vector_hooks(again) is again
        check_encoder_numbers(again)
        numpy.testing.assert_array_equal(all_vectors([again]), all_vectors([doc]))
    # a doc without encoder vectors gets no hooks
    (plain,) = spacy_rhetoric.restore_vector_hooks([spacy.blank("en")("No vectors here.")])
    assert "vector" not in plain.user_span_hooks


def test_vector_hooks_after_process_long_text(trained):
    nlp, _ = trained
    text = "\n\n".join(texts())
    doc = spacy_rhetoric.process_long_text(nlp, text, max_chars=len(texts()[0]) + 10)
    check_encoder_numbers(doc)


def test_vector_hooks_with_n_process(trained):
    """Docs from worker processes come back as bytes: sent._.rhetoric_vector
    and sent._.rhetoric_similarity need nothing, sent.vector /
    sent.similarity come back with an explicit restore_vector_hooks (nlp.pipe
    is spaCy's own, not patched)."""
    nlp, _ = trained
    assert "pipe" not in nlp.__dict__
    one = list(nlp.pipe([texts()[0]] * 4))
    two = list(nlp.pipe([texts()[0]] * 4, n_process=2))
    for a, b in zip(one, two):
        sa, sb = list(a.sents), list(b.sents)
        assert "vector" not in b.user_span_hooks
        numpy.testing.assert_array_equal(sb[0]._.rhetoric_vector, sa[0]._.rhetoric_vector)
        assert sb[0]._.rhetoric_similarity(sb[2]) == pytest.approx(sa[0].similarity(sa[2]), abs=1e-6)
        assert spacy_rhetoric.restore_vector_hooks(b) is b
        check_encoder_numbers(b)
        assert sb[0].similarity(sb[2]) == pytest.approx(sa[0].similarity(sa[2]), abs=1e-6)
    (doc, ctx), = list(nlp.pipe([(texts()[0], 7)], as_tuples=True, n_process=2))
    assert ctx == 7
    check_encoder_numbers(spacy_rhetoric.restore_vector_hooks(doc))


def test_sourced_encoder(trained):
    """add_pipe(source=...) does not call the factory; nothing else is needed
    (in the same process the component sets the hooks itself)."""
    nlp, _ = trained
    nlp2 = spacy.blank("en")
    nlp2.add_pipe("sentencizer")
    nlp2.add_pipe("rhetoric_sentence_encoder", source=nlp)
    assert "pipe" not in nlp2.__dict__
    for doc in nlp2.pipe([texts()[0]] * 2):
        check_encoder_numbers(doc)


def test_similarity_needs_encoder_vectors_on_both_sides(trained):
    nlp, _ = trained
    doc = nlp(texts()[0])
    first = list(doc.sents)[0]
    with pytest.raises(ValueError, match="no encoder vector"):
        first.similarity(doc[first.start : first.end - 1])
    with pytest.raises(ValueError, match="no encoder vector"):
        first._.rhetoric_similarity(doc)


def test_whitespace_only_sentences_get_no_vector(trained):
    nlp, _ = trained
    doc = nlp("   \n\n ")
    assert [s._.rhetoric_vector for s in doc.sents] == [None]
    doc = nlp(texts()[0] + "\n\n")
    assert [s._.rhetoric_vector is None for s in doc.sents] == [False] * 4 + [True]


N_PROCESS_SCRIPT = """
import spacy, spacy_rhetoric
from spacy.training import Example
from spacy_rhetoric.readers.common import doc_from_sentences
nlp = spacy.blank("en")
nlp.add_pipe("sentencizer")
nlp.add_pipe("rhetoric_sentence_encoder")
ref = doc_from_sentences(nlp, ["Alpha beta gamma.", "Delta epsilon zeta."], labels=["x", "y"])
nlp.initialize(lambda: [Example(nlp.make_doc(ref.text), ref)])
docs = spacy_rhetoric.restore_vector_hooks(list(nlp.pipe(["Alpha beta gamma. Delta epsilon zeta."] * 4, n_process=2)))
a, b = docs[0].sents
print(abs(a.similarity(b) - float(a._.rhetoric_vector @ b._.rhetoric_vector)) < 1e-6)
"""


@pytest.mark.slow
def test_n_process_in_a_fresh_process():
    """A script that makes, initialises and runs the encoder with worker
    processes and restores the hooks explicitly."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", N_PROCESS_SCRIPT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "True"
