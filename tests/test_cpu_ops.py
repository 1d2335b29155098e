"""util.use_numpy_blas and the spacy_rhetoric.numpy_blas.v1 callback: on the
CPU, thinc's layers multiply matrices with numpy's BLAS instead of blis, from
a config's [nlp.before_creation] under spacy train and spacy.load, and from a
pipeline save_pipeline wrote; GPU ops, other ops and $SPACY_RHETORIC_BLIS are
left alone, and so is --gpu-id -1 (use_device)."""
import numpy
import pytest
import spacy
from spacy.util import load_config
from thinc.api import NumpyOps, Ops, get_current_ops, set_current_ops

import spacy_rhetoric  # noqa: F401
from spacy_rhetoric.apps.assemble import CPU_OPS_CALLBACK, save_pipeline
from spacy_rhetoric.resources import config_path
from spacy_rhetoric.util import BLIS_ENV, use_device, use_numpy_blas

CALLBACK = "spacy_rhetoric.numpy_blas.v1"
CONFIGS = ("classifier", "classifier_fast", "classifier_sections", "coresc_classifier", "encoder",
           "fine_classifier", "rhetoric_trf")


@pytest.fixture
def blis_ops(monkeypatch):
    """thinc's default CPU ops (blis) for the test, the ops before it restored after."""
    monkeypatch.delenv(BLIS_ENV, raising=False)
    before = get_current_ops()
    set_current_ops(NumpyOps())
    assert get_current_ops().use_blis
    yield
    set_current_ops(before)


def test_use_numpy_blas_replaces_default_ops(blis_ops):
    assert use_numpy_blas() is True
    ops = get_current_ops()
    assert type(ops) is NumpyOps and not ops.use_blis
    assert use_numpy_blas() is False  # already numpy's BLAS: nothing to do
    # the same products as blis
    rng = numpy.random.default_rng(0)
    a, b = rng.random((7, 5), dtype="float32"), rng.random((4, 5), dtype="float32")
    assert numpy.allclose(ops.gemm(a, b, trans2=True), NumpyOps(use_blis=True).gemm(a, b, trans2=True), atol=1e-5)


@pytest.mark.parametrize("value", ["1", "yes"])
def test_blis_env_keeps_blis(blis_ops, monkeypatch, value):
    monkeypatch.setenv(BLIS_ENV, value)
    assert use_numpy_blas() is False
    assert get_current_ops().use_blis


def test_env_zero_is_unset(blis_ops, monkeypatch):
    monkeypatch.setenv(BLIS_ENV, "0")
    assert use_numpy_blas() is True


def test_other_ops_are_kept(blis_ops):
    class MyOps(NumpyOps):
        name = "my_numpy"

    mine = MyOps()
    set_current_ops(mine)
    assert use_numpy_blas() is False
    assert get_current_ops() is mine
    base = Ops()
    set_current_ops(base)
    assert use_numpy_blas() is False
    assert get_current_ops() is base


def test_use_device_cpu_leaves_the_ops_to_the_pipeline(blis_ops):
    """--gpu-id -1: the pipeline's config decides (a command and its workers then compute alike)."""
    use_device(-1)
    assert get_current_ops().use_blis


def test_callback_builds_models_with_numpy_blas(blis_ops):
    nlp = spacy.blank("en", config={"nlp": {"before_creation": {"@callbacks": CALLBACK}}})
    tok2vec = nlp.add_pipe("tok2vec")
    assert not get_current_ops().use_blis
    assert not tok2vec.model.ops.use_blis
    assert all(not node.ops.use_blis for node in tok2vec.model.walk())


@pytest.mark.parametrize("name", CONFIGS)
def test_packaged_configs_name_the_callback(name):
    config = load_config(config_path(name), interpolate=False)
    assert config["nlp"]["before_creation"] == {"@callbacks": CALLBACK}


def test_saved_pipeline_loads_with_numpy_blas(blis_ops, tmp_path):
    assert CPU_OPS_CALLBACK == {"@callbacks": CALLBACK}
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    tok2vec = nlp.add_pipe("tok2vec")
    nlp.initialize()
    assert tok2vec.model.ops.use_blis
    before = nlp("One sentence. Two sentences.").tensor
    save_pipeline(nlp, tmp_path / "pipeline")
    config = load_config(tmp_path / "pipeline" / "config.cfg", interpolate=False)
    assert config["nlp"]["before_creation"] == {"@callbacks": CALLBACK}
    set_current_ops(NumpyOps())
    loaded = spacy.load(tmp_path / "pipeline")
    assert not loaded.get_pipe("tok2vec").model.ops.use_blis
    assert numpy.allclose(loaded("One sentence. Two sentences.").tensor, before, atol=1e-4)


def test_save_pipeline_keeps_a_callback_it_names(blis_ops, tmp_path):
    nlp = spacy.blank("en", config={"nlp": {"after_creation": None}})
    nlp.add_pipe("sentencizer")
    save_pipeline(nlp, tmp_path / "a")
    first = load_config(tmp_path / "a" / "config.cfg", interpolate=False)
    loaded = spacy.load(tmp_path / "a")
    save_pipeline(loaded, tmp_path / "b")  # the loaded pipeline already names it: written once, unchanged
    assert load_config(tmp_path / "b" / "config.cfg", interpolate=False)["nlp"] == first["nlp"]

