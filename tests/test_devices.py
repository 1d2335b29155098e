"""Every architecture and shipped config under a device other than the CPU
(issue 22: ``spacy train --gpu-id 0``).

CI has no GPU, so most of this runs under ``device_sim.DeviceOps``: a thinc
``Ops`` whose arrays are not ``numpy.ndarray`` and which refuses what cupy
refuses (``numpy.asarray`` on a device array in our code, host arrays given to
device operations) and records every host<->device copy. The ``gpu`` tests
train each shipped config one step with ``--gpu-id 0`` where cupy and a GPU
exist (``SPACY_RHETORIC_TEST_GPU_ID=-1`` runs them on the CPU, to check the
tests themselves).
"""
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import spacy
from device_sim import DeviceArray, device_ops, host, is_device_array, record, summary
from helpers import BENCHMARK_CONFIGS, cnn_encoder, lstm_encoder
from numpy.testing import assert_allclose
from spacy.tokens import DocBin
from spacy.training import Example
from spacy.util import fix_random_seed, registry
from thinc.api import NumpyOps, set_current_ops
from thinc.layers.with_cpu import forward as thinc_with_cpu_forward

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.extensions import HEADING, set_span_values
from spacy_rhetoric.ml.pooling import doc_sentence_offsets, make_indices
from spacy_rhetoric.pipeline.fitting import fit_pipeline_members
from spacy_rhetoric.readers.common import doc_from_sentences
from spacy_rhetoric.resources import config_names, config_path

# the shipped configs and the benchmarks' ablation configs (benchmarks/common/configs/)
CONFIG_PATHS = {**{name: config_path(name) for name in config_names()},
                **{f"benchmarks/{p.stem}": p for p in sorted(BENCHMARK_CONFIGS.glob("*.cfg"))}}
CONFIGS = sorted(CONFIG_PATHS)
# Layers that run only on numpy arrays: thinc's SparseLinear (Cython forward on
# numpy parameters), spaCy's extract_ngrams and ours (numpy n-gram hashing).
NUMPY_ONLY = {"sparse_linear", "extract_ngrams", "sentence_ngrams"}
LABELS = ["background", "objective", "method", "result", "other"]

TOK2VEC = {"@architectures": "spacy.HashEmbedCNN.v2", "pretrained_vectors": None, "width": 16, "depth": 1,
           "embed_size": 300, "window_size": 1, "maxout_pieces": 2, "subword_features": True}
SMALL = {"pooling": "mean+max", "width": 16, "encoder": cnn_encoder(16), "dropout": 0.0, "tok2vec": TOK2VEC}
NGRAMS = {"ngram_size": 2, "ngram_length": 512}
ARCHITECTURES = {
    "SentenceClassifier.v1": {"pooling": "mean", "hidden_size": 8, "dropout": 0.0, "tok2vec": TOK2VEC},
    "ContextSentenceClassifier.v1": SMALL,
    "ContextSentenceClassifier.v1-lstm": dict(SMALL, encoder=lstm_encoder(16)),
    "SequenceSentenceClassifier.v1": dict(SMALL, **NGRAMS),
    "SequenceSentenceClassifier.v1-viterbi": dict(SMALL, decode="viterbi", **NGRAMS),
    "SectionAwareSentenceClassifier.v3": dict(SMALL, acknowledgements=True, **NGRAMS),
    "SectionAwareSentenceClassifier.v3-hidden-docs": dict(SMALL, hidden_size=8, positions="docs", segments="docs",
                                                          **NGRAMS),
    "SentenceEncoder.v1": {"pooling": "mean+first", "projection_width": 8, "tok2vec": TOK2VEC},
    "ContextSentenceEncoder.v1": dict(SMALL, projection_width=8),
}
CLASSIFIERS = [name for name in ARCHITECTURES if "Classifier" in name]
SENTENCES = [
    ("Neural parsers are widely used.", "abstract", "Abstract"),
    ("We propose a graph model.", "abstract", "Abstract"),
    ("Accuracy improves by two points.", "abstract", "Abstract"),
    ("Parsing is an old task.", "introduction", "1 Introduction"),
    ("We build a parser on graphs.", "method", "3 Method"),
    ("The parser is trained on news.", "method", "3 Method"),
    ("These numbers are given in the table.", "results", "4 Results"),
    ("We thank the reviewers.", None, "Acknowledgments"),
    ("Smith et al. Parsing. 2010.", None, "References"),
]


def make_docs(nlp, n_docs: int, n_sents: int):
    docs = []
    for d in range(n_docs):
        rows = [SENTENCES[(d + i) % len(SENTENCES)] for i in range(n_sents)]
        doc = doc_from_sentences(nlp, [r[0] for r in rows], sections=[r[1] for r in rows])
        set_span_values(doc, HEADING, list(doc.sents), [r[2] for r in rows])
        docs.append(doc)
    return docs


def build(name: str, ops_nO: int = len(LABELS)):
    arch, _, variant = name.partition("-")
    config = dict(ARCHITECTURES[name], **{"@architectures": f"spacy_rhetoric.{arch}"})
    if "Classifier" in name:
        config["nO"] = ops_nO
    model = registry.resolve({"model": config})["model"]
    if "labels" in model.attrs:
        model.attrs["labels"] = list(LABELS)
    return model


def model_input(model, docs):
    return docs, make_indices(model.ops, [doc_sentence_offsets(doc) for doc in docs])


@pytest.fixture(scope="module")
def nlp():
    return spacy.blank("en")


def walk_with_parents(model, parents=()):
    yield model, parents
    for layer in model.layers:
        yield from walk_with_parents(layer, parents + (model,))


def runs_on_cpu(node) -> bool:
    try:
        from spacy_rhetoric.ml.devices import with_cpu_forward
    except ImportError:  # before issue 22
        with_cpu_forward = thinc_with_cpu_forward
    return node._func in (thinc_with_cpu_forward, with_cpu_forward)


def numpy_layers_outside_cpu(model):
    return [node.name for node, parents in walk_with_parents(model)
            if node.name in NUMPY_ONLY and not any(runs_on_cpu(p) for p in parents)]


@pytest.mark.parametrize("config_name", CONFIGS)
def test_shipped_config_keeps_numpy_layers_on_cpu(config_name):
    config = spacy.util.load_config(CONFIG_PATHS[config_name])
    nlp = spacy.util.load_model_from_config(config, auto_fill=True, validate=False)
    found = {}
    for name, pipe in nlp.components:
        model = getattr(pipe, "model", None)
        if hasattr(model, "walk"):
            found[name] = numpy_layers_outside_cpu(model)
    assert found, "no component model found"
    assert all(not bad for bad in found.values()), f"numpy-only layers outside with_cpu: {found}"


def test_numpy_layer_check_sees_a_bare_sparse_linear():
    from thinc.api import SparseLinear_v2, chain, with_cpu

    from spacy_rhetoric.ml.sequence import sentence_ngrams

    bare = chain(sentence_ngrams(2), SparseLinear_v2(length=16))
    assert numpy_layers_outside_cpu(bare) == ["sentence_ngrams", "sparse_linear"]
    assert numpy_layers_outside_cpu(with_cpu(bare, NumpyOps())) == []


def _grads(model):
    out = {}
    for i, node in enumerate(model.walk()):
        for param in node.param_names:
            if node.has_grad(param):
                out[(i, node.name, param)] = host(node.get_grad(param))
    return out


@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_forward_backward_on_simulated_device(name, nlp):
    """Same parameters, same docs: the device model gives the CPU model's
    output and gradients, as device arrays, without numpy.asarray on device
    data (which raises here as on cupy)."""
    docs = make_docs(nlp, 3, 4)
    set_current_ops(NumpyOps())
    fix_random_seed(0)
    cpu_model = build(name)
    cpu_X = model_input(cpu_model, docs)
    cpu_model.initialize(X=cpu_X)
    with device_ops():
        fix_random_seed(0)
        model = build(name)
        X = model_input(model, docs)
        model.initialize(X=X)
        model.from_bytes(cpu_model.to_bytes())
        for train in (False, True):
            Y, backprop = model(X, is_train=train)
            cpu_Y, cpu_backprop = cpu_model(cpu_X, is_train=train)
            assert is_device_array(Y), f"{name}: output is {type(Y).__name__}, not a device array"
            assert_allclose(host(Y), cpu_Y, rtol=1e-5, atol=1e-6)
        dY = numpy.random.RandomState(0).uniform(-1, 1, cpu_Y.shape).astype("f")
        backprop(model.ops.asarray2f(dY))
        cpu_backprop(dY)
    grads, cpu_grads = _grads(model), _grads(cpu_model)
    assert grads.keys() == cpu_grads.keys() and grads
    for key in cpu_grads:
        assert_allclose(grads[key], cpu_grads[key], rtol=1e-4, atol=1e-6, err_msg=str(key))


def _our_transfers(model, X):
    with record() as transfers:
        Y, backprop = model(X, is_train=True)
        backprop(model.ops.alloc2f(*Y.shape) + 0.1)
    return summary(transfers.ours())


@pytest.mark.parametrize("name", list(ARCHITECTURES))
def test_host_copies_per_batch_not_per_sentence(name, nlp):
    """The copies between host and device that our layers make in a training
    step do not grow with the number of sentences (a per-sentence
    ``int(device_array[i])`` or element write would)."""
    with device_ops():
        fix_random_seed(0)
        model = build(name)
        few = model_input(model, make_docs(nlp, 2, len(SENTENCES)))  # every section kind in both
        many = model_input(model, make_docs(nlp, 2, 3 * len(SENTENCES)))
        model.initialize(X=few)
        assert _our_transfers(model, many) == _our_transfers(model, few)


@pytest.mark.parametrize("decode", ["marginal", "viterbi"])
def test_crf_copies_once_each_way(decode, nlp):
    """The CRF runs on the CPU (float64 torch): per batch, one device->host copy
    of its inputs and one host->device copy of its output, and the same in
    backprop."""
    with device_ops():
        fix_random_seed(0)
        model = build("SequenceSentenceClassifier.v1" + ("-viterbi" if decode == "viterbi" else ""))
        X = model_input(model, make_docs(nlp, 3, 5))
        model.initialize(X=X)
        for train in (False, True):
            with record() as transfers:
                Y, backprop = model(X, is_train=train)
            crf = summary(transfers.asked_by("sequence.py:_crf_forward"))
            assert crf == {"d2h ml/sequence.py:_crf_forward": 1, "h2d ml/sequence.py:_crf_forward": 1}, crf
        with record() as transfers:
            backprop(model.ops.alloc2f(*Y.shape) + 0.1)
        crf = summary(transfers.asked_by("sequence.py:backprop"))
        assert crf == {"d2h ml/sequence.py:backprop": 1, "h2d ml/sequence.py:backprop": 1}, crf


def test_simulated_device_refuses_what_cupy_refuses():
    """numpy.asarray on a device array in package code, host arrays in device
    arithmetic and ops: TypeError, as with cupy."""
    ours = compile("numpy.asarray(x)", str(Path(spacy_rhetoric.__file__).parent / "ml" / "any.py"), "exec")
    x = DeviceArray(numpy.zeros(2, dtype="f"))
    with pytest.raises(TypeError, match="Implicit conversion"):
        exec(ours, {"numpy": numpy, "x": x})
    with device_ops() as ops:
        with pytest.raises(TypeError, match="host numpy array"):
            x + numpy.ones(2, dtype="f")
        with pytest.raises(TypeError, match="host numpy array"):
            ops.xp.concatenate([x, numpy.ones(2, dtype="f")])
        with pytest.raises(TypeError, match="Implicit conversion"):
            exec(ours, {"numpy": numpy, "x": ops.ngrams(2, numpy.arange(4, dtype="uint64"))})
        assert is_device_array(ops.asarray1f(numpy.ones(2, dtype="f")) + x)


# -- one training step on a GPU ------------------------------------------------

GPU_ID = int(os.environ.get("SPACY_RHETORIC_TEST_GPU_ID", "0"))


def _has_gpu() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def _write_corpus(config_name: str, directory: Path) -> Path:
    """A tiny labelled corpus in the format the config's train reader reads
    (CSAbstruct .jsonl or a .spacy DocBin with coarse and fine labels)."""
    import json

    from spacy_rhetoric.extensions import set_sent_labels

    texts = [["Parsing is an old task.", "We propose a graph parser.", "It improves accuracy by two points."],
             ["Citation graphs are large.", "We train a ranking network.", "Recall improves on both sets."],
             ["Tagging matters for search.", "We train a tagger on news.", "Accuracy improves on tweets."]] * 4
    labels = [["background", "method", "result"]] * len(texts)
    reader = spacy.util.load_config(CONFIG_PATHS[config_name])["corpora"]["train"]["@readers"]
    if reader == "spacy_rhetoric.CSAbstructCorpus.v1":
        path = directory / "train.jsonl"
        path.write_text("".join(json.dumps({"sentences": t, "labels": labs}) + "\n" for t, labs in zip(texts, labels)),
                        encoding="utf8")
        return path
    nlp = spacy.blank("en")
    docs = []
    for sents, labs in zip(texts, labels):
        doc = doc_from_sentences(nlp, sents, labels=labs, sections=["abstract"] * len(sents))
        set_sent_labels(doc, [f"{label}_fine" for label in labs], field="fine_label")
        docs.append(doc)
    path = directory / "train.spacy"
    DocBin(docs=docs, store_user_data=True).to_disk(path)
    return path


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.skipif(GPU_ID >= 0 and not _has_gpu(), reason="needs cupy and a CUDA GPU")
@pytest.mark.parametrize("config_name", CONFIGS)
def test_one_training_step_on_gpu(config_name, tmp_path):
    corpus = _write_corpus(config_name, tmp_path)
    cmd = [sys.executable, "-m", "spacy", "train", str(CONFIG_PATHS[config_name]),
           "--output", str(tmp_path / "out"), "--gpu-id", str(GPU_ID),
           "--paths.train", str(corpus), "--paths.dev", str(corpus),
           "--training.max_steps", "1", "--training.eval_frequency", "1"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(Path(spacy_rhetoric.__file__).parent.parent)]
                                                        + sys.path))
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert (tmp_path / "out" / "model-last").is_dir()
    if GPU_ID >= 0:
        assert "Using GPU" in result.stdout + result.stderr


@pytest.mark.parametrize("name", ["SequenceSentenceClassifier.v1", "SectionAwareSentenceClassifier.v3"])
def test_models_saved_before_with_cpu_still_load(name, nlp, monkeypatch):
    """The n-gram branch was a plain chain before issue 22: a model saved then
    loads into today's (same layer tree) and gives the same output."""
    from thinc.api import chain

    from spacy_rhetoric.ml import sequence

    docs = make_docs(nlp, 2, 5)
    set_current_ops(NumpyOps())
    with monkeypatch.context() as m:
        m.setattr(sequence, "with_cpu_chain", chain)
        fix_random_seed(0)
        old = build(name)
        X = model_input(old, docs)
        old.initialize(X=X)
        assert not any(runs_on_cpu(node) for node in old.walk())
        saved = old.to_bytes()
    fix_random_seed(1)
    new = build(name)
    new.initialize(X=X)
    assert any(runs_on_cpu(node) for node in new.walk())
    new.from_bytes(saved)
    assert_allclose(new.predict(X), old.predict(X), rtol=0, atol=0)


# -- the torch-side device setting ---------------------------------------------


def test_torch_device_setting():
    import torch

    from spacy_rhetoric.util import torch_device

    set_current_ops(NumpyOps())
    assert torch_device(-1) == torch.device("cpu")
    assert torch_device() == torch.device("cpu")  # follows spaCy's ops: CPU here
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="--gpu-id 0: torch sees 0 CUDA device"):
            torch_device(0)


def test_sentence_transformer_follows_the_device_setting(monkeypatch):
    """st_models used to pin device="cpu"; the device now comes from the
    setting (explicit, else util.torch_device())."""
    import sentence_transformers
    from sentence_transformers.sentence_transformer import modules

    from spacy_rhetoric.ml import st_models

    class Fake:
        def __init__(self, *args, **kwargs):
            self.kwargs = kwargs

        def get_embedding_dimension(self):
            return 4

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", Fake)
    monkeypatch.setattr(modules, "Transformer", Fake)
    monkeypatch.setattr(modules, "Pooling", Fake)
    monkeypatch.setattr(st_models, "torch_device", lambda: "cuda:3")
    assert st_models.load_sentence_transformer("x", device="cuda:1").kwargs["device"] == "cuda:1"
    assert st_models.load_sentence_transformer("x").kwargs["device"] == "cuda:3"


@pytest.mark.parametrize("command", ["pretrain-sentmask", "train-cosaemb", "link-train",
                                     "annotate", "index", "label", "render", "demo"])
def test_gpu_id_without_gpu_is_one_line_error(command, tmp_path):
    """The torch training commands and the commands that run a pipeline
    (util.use_device) check --gpu-id before any work."""
    import torch
    from typer.testing import CliRunner

    from spacy_rhetoric.cli import app, load_commands

    load_commands()
    if torch.cuda.is_available():
        pytest.skip("a CUDA device exists")
    inputs = tmp_path / "in"
    inputs.mkdir()
    out = str(tmp_path / "out")
    args = {"link-train": [str(inputs), "--output", out],
            "annotate": [str(tmp_path / "pipeline"), str(inputs), "--output", out],
            "index": [str(tmp_path / "pipeline"), str(inputs), "--output", out],
            "label": [str(inputs), "--output", out],
            "render": [str(inputs / "paper.spacy"), "--output", out + ".html"],
            "demo": ["--output", out]}.get(command, [str(inputs), out])
    args = [command, *args, "--gpu-id", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    assert "--gpu-id 0: torch sees 0 CUDA device" in " ".join(result.output.split())


PIPES = [
    ("rhetoric_function_classifier", dict(ARCHITECTURES["SequenceSentenceClassifier.v1"],
                                          **{"@architectures": "spacy_rhetoric.SequenceSentenceClassifier.v1"})),
    ("rhetoric_function_classifier", dict(ARCHITECTURES["SectionAwareSentenceClassifier.v3"],
                                          **{"@architectures": "spacy_rhetoric.SectionAwareSentenceClassifier.v3"})),
    ("rhetoric_sentence_encoder", dict(ARCHITECTURES["ContextSentenceEncoder.v1"],
                                       **{"@architectures": "spacy_rhetoric.ContextSentenceEncoder.v1"})),
    # the full-paper mixture: these plain docs are no papers, so the abstracts' closed-form member is fitted
    # (scikit-learn, by the member-fitting step) and averaged with the network on the device
    ("rhetoric_function_classifier", {
        "@architectures": "spacy_rhetoric.FullPaperSentenceClassifier.v4",
        "network": dict(ARCHITECTURES["SectionAwareSentenceClassifier.v3"],
                        **{"@architectures": "spacy_rhetoric.SectionAwareNetwork.v1"}),
        "members": {"abstracts": {"@architectures": "spacy_rhetoric.TfidfMember.v1",
                                  "learn_from": {"@misc": "spacy_rhetoric.other_docs.v1"},
                                  "min_df": 1, "use_sections": False}},
        "weights": {"other_docs": {"network": 0.5, "abstracts": 0.5}}}),
]


def _train_and_predict(factory, model):
    from helpers import make_reference

    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe(factory, config={"model": model})
    data = [(["Parsing is old.", "We build a parser.", "It works well."], ["background", "method", "result"]),
            (["Graphs are big.", "We train a network.", "Recall improves."], ["background", "method", "result"])]
    examples = [Example(nlp.make_doc(" ".join(s)), make_reference(nlp, s, labs)) for s, labs in data]
    optimizer = nlp.initialize(lambda: examples)
    fit_pipeline_members(nlp, examples)  # the mixture's members (none elsewhere)
    losses = {}
    for _ in range(2):
        nlp.update(examples, sgd=optimizer, losses=losses)
    docs = list(nlp.pipe([" ".join(s) for s, _ in data]))
    return losses[factory], host(nlp.get_pipe(factory).predict(docs))


@pytest.mark.parametrize("factory,model", PIPES, ids=["sequence", "sections_v3", "context_encoder", "full_paper"])
def test_pipe_trains_and_predicts_on_simulated_device(factory, model):
    """initialize, two updates (loss, optimizer) and predict of the whole
    component on the simulated device give the CPU run's loss and outputs."""
    set_current_ops(NumpyOps())
    cpu_loss, cpu_out = _train_and_predict(factory, model)
    with device_ops():
        loss, out = _train_and_predict(factory, model)
    assert loss == pytest.approx(cpu_loss, rel=1e-4)
    assert_allclose(out, cpu_out, rtol=1e-4, atol=1e-5)


def test_sections_read_once_per_batch_on_device(nlp, monkeypatch):
    """Five layers of SectionAware v3 ask for the sections of the same batch;
    the n-gram branch runs on the CPU and must still share the batch's answer."""
    from spacy_rhetoric.ml import segments

    calls = []
    original = segments.read_sections
    monkeypatch.setattr(segments, "read_sections", lambda *args: calls.append(1) or original(*args))
    with device_ops():
        fix_random_seed(0)
        model = build("SectionAwareSentenceClassifier.v3")
        docs = make_docs(nlp, 2, 6)
        model.initialize(X=model_input(model, docs))
        calls.clear()
        model(model_input(model, docs), is_train=True)  # a new batch (indices object)
    # one answer per acknowledgements flag (the one-hot and the rule use True, the segments False),
    # as on the CPU; 4 when the n-gram branch got its own copy of the indices
    assert len(calls) == 2
