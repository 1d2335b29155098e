"""Sentence-transformers models: the one place that loads a Hugging Face
encoder as a ``SentenceTransformer`` and encodes sentences with it.

A model is always built from its two modules, a ``Transformer`` and a
``Pooling`` layer (mean over the attention mask, or the first token), with no
``Normalize`` module: the vectors are the plain pooled hidden states, whatever
the model directory's own ``modules.json`` says (all-MiniLM-L6-v2's would
normalise them). Model names go through ``util.resolve_hf_model`` (the
offline mirror); nothing is downloaded. Used by the CitRet encoder
(``citret.encoder``) and by ``evaluation.metrics.raw_transformer_vectors``.
"""
import os
from pathlib import Path
from typing import Sequence, Union

import numpy

from ..errors import RhetoricError
from ..util import resolve_hf_model, torch_device
from .hf_safe import NO_REMOTE_CODE, no_remote_code

POOLING_MODES = {"mean": "mean", "first": "cls", "cls": "cls"}


def load_sentence_transformer(name_or_path: Union[str, Path], *, max_length: int = 128,
                              pooling: str = "mean", device=None):
    """A ``SentenceTransformer`` of ``name_or_path`` (a Hub name or a
    directory, e.g. one written by ``model.save``) with ``pooling`` ("mean",
    or "first"/"cls") and inputs truncated to ``max_length`` tokens, on
    ``device`` (a torch device or name; None: ``util.torch_device()``, the
    device of spaCy's current ops, the CPU unless a GPU was asked for)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer

    if pooling not in POOLING_MODES:
        raise RhetoricError(f"unknown pooling {pooling!r}: use 'mean' or 'first'")
    name = str(name_or_path)
    path = resolve_hf_model(name)
    if path != name or Path(path).is_dir():
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with no_remote_code(name):  # never code from the model's folder
        transformer = Transformer(path, max_seq_length=int(max_length), model_kwargs=dict(NO_REMOTE_CODE),
                                  processor_kwargs=dict(NO_REMOTE_CODE), config_kwargs=dict(NO_REMOTE_CODE))
    pool = Pooling(transformer.get_embedding_dimension(), pooling_mode=POOLING_MODES[pooling])
    return SentenceTransformer(modules=[transformer, pool], device=str(torch_device() if device is None else device))


def encode(model, sentences: Sequence[str], *, batch_size: int = 32, progress: bool = False) -> numpy.ndarray:
    """``[n, dim]`` float32 vectors of ``sentences`` in input order
    (inference mode, length-sorted batches, not normalised)."""
    sentences = [str(s) for s in sentences]
    if not sentences:
        return numpy.zeros((0, model.get_embedding_dimension()), dtype="float32")
    vectors = model.encode(sentences, batch_size=batch_size, convert_to_numpy=True,
                           show_progress_bar=progress, normalize_embeddings=False)
    return numpy.asarray(vectors, dtype="float32")
