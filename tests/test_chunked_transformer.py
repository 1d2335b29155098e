"""spacy_rhetoric.ChunkedTransformerModel.v1: inference in slices of windows
gives the same transformer output as one pass, and the pipe config uses it."""
from pathlib import Path

import numpy
import pytest
import spacy

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.ml import transformer as chunked
from spacy_rhetoric.util import resolve_hf_model

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
BENCHMARK_CONFIGS = CONFIGS.parent / "benchmarks" / "common" / "configs"
TEXT = " ".join(
    f"Sentence number {i} describes the {w} of our method on the benchmark data." for i, w in
    enumerate(["aim", "result", "sample", "gap", "design", "limits"] * 6)
)


def make_nlp(max_windows):
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("transformer", config={"model": {
        "@architectures": "spacy_rhetoric.ChunkedTransformerModel.v1",
        "name": resolve_hf_model("sentence-transformers/all-MiniLM-L6-v2"),
        "max_windows_per_pass": max_windows,
        "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": 32, "stride": 24},
        "tokenizer_config": {"use_fast": True},
    }})
    nlp.initialize()
    return nlp


@pytest.fixture(scope="module")
def pipes():
    return make_nlp(0), make_nlp(3)


def test_sliced_inference_matches_one_pass(pipes, monkeypatch):
    whole, sliced = pipes
    # both load the same local weights; only max_windows_per_pass differs
    calls = []
    wrapper = sliced.get_pipe("transformer").model.layers[0]
    real_forward = wrapper._func

    def counting_forward(model, X, is_train):
        calls.append(len(X))
        return real_forward(model, X, is_train)

    monkeypatch.setattr(wrapper, "_func", counting_forward)
    a = whole(TEXT)._.trf_data
    b = sliced(TEXT)._.trf_data
    n_windows = len(a.wordpieces)
    assert n_windows > 6
    assert calls and max(calls) <= 3 and sum(calls) == n_windows
    numpy.testing.assert_allclose(
        numpy.asarray(b.model_output.last_hidden_state),
        numpy.asarray(a.model_output.last_hidden_state), atol=1e-4,
    )
    assert b.align.lengths.tolist() == a.align.lengths.tolist()


def test_attrs_survive_copy_and_reload(pipes, tmp_path):
    _, sliced = pipes
    model = sliced.get_pipe("transformer").model
    assert model.copy().attrs["max_windows_per_pass"] == 3
    sliced.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p")
    assert loaded.get_pipe("transformer").model.attrs["max_windows_per_pass"] == 3
    assert loaded.get_pipe("transformer").model._func is chunked.chunked_forward


def test_negative_slice_size_is_an_error():
    with pytest.raises(ValueError, match="max_windows_per_pass"):
        chunked.ChunkedTransformerModel("x", lambda docs: [], max_windows_per_pass=-1)


@pytest.mark.parametrize("path", [BENCHMARK_CONFIGS / "classifier_trf.cfg", BENCHMARK_CONFIGS / "encoder_trf.cfg",
                                  CONFIGS / "rhetoric_trf.cfg"])
def test_transformer_configs_slice_windows(path):
    config = spacy.util.load_config(path)
    model = config["components"]["transformer"]["model"]
    assert model["@architectures"] == "spacy_rhetoric.ChunkedTransformerModel.v1"
    assert model["max_windows_per_pass"] > 0
