"""Arrays between the device of a model's ops (a GPU under ``spacy train
--gpu-id 0``) and the host.

- ``to_host``: a device array (cupy, or anything with cupy's ``.get()``) or a
  numpy array -> numpy, one copy; use it once per batch, never per element
  (``int(device_array[i])`` is a device->host sync each time).
- ``with_cpu_chain(*layers)``: ``chain(*layers)`` run on the CPU, as spaCy
  wraps its n-gram branch in ``with_cpu(extract_ngrams >> sparse_linear,
  ops)`` (``spacy/ml/models/textcat.py``): the layers get ``NumpyOps``, the
  input arrays (also in tuples and lists) are copied to the host, the output
  back to the chain's ops, the gradient to the host. A Ragged (the sentence
  indices) is passed as it is, as thinc's ``with_cpu`` does: the layer inside
  reads it with ``to_host``; a ``ml.segments.SentenceBatch`` stays one, so
  the layers inside share the sections read above them. It
  is thinc's ``with_cpu(chain(...))`` in one node: the layer tree (names,
  dims, parameters) is that of ``chain(*layers)``, so models saved before the
  wrapper existed still load. On the CPU nothing is copied.
"""
from typing import Any, Callable, Tuple

import numpy
from thinc.api import Model, chain
from thinc.layers.chain import forward as chain_forward
from thinc.layers.chain import init as chain_init
from thinc.types import Ragged


def to_host(array: Any) -> numpy.ndarray:
    """``array`` as a numpy array: itself when it is one, else one copy from
    its device (cupy's ``.get()``)."""
    if isinstance(array, numpy.ndarray):
        return array
    get = getattr(array, "get", None)
    if callable(get):
        return get()
    return numpy.asarray(array)


def _to_cpu(X: Any) -> Any:
    if isinstance(X, numpy.ndarray):
        return X
    if isinstance(X, tuple):
        parts = tuple(_to_cpu(x) for x in X)
        with_parts = getattr(X, "with_parts", None)  # a SentenceBatch keeps what it has read
        return with_parts(parts) if callable(with_parts) else parts
    if isinstance(X, list):
        return [_to_cpu(x) for x in X]
    if callable(getattr(X, "get", None)) and hasattr(X, "shape"):
        return to_host(X)
    return X


def _to_device(ops, X: Any) -> Any:
    if isinstance(X, tuple):
        return tuple(_to_device(ops, x) for x in X)
    if isinstance(X, list):
        return [_to_device(ops, x) for x in X]
    if isinstance(X, Ragged):
        return Ragged(ops.asarray(X.data), ops.asarray(X.lengths))
    if isinstance(X, numpy.ndarray):
        return ops.asarray(X)
    return X


def with_cpu_chain(*layers: Model) -> Model:
    """``chain(*layers)`` whose layers run on the CPU whatever the current ops
    (see the module docstring)."""
    model = chain(*layers)
    for layer in layers:
        layer.to_cpu()
    model.name = f"with_cpu({model.name})"
    model._func = with_cpu_forward
    model.init = _with_cpu_init
    return model


def with_cpu_forward(model: Model, X: Any, is_train: bool) -> Tuple[Any, Callable]:
    Y, backprop = chain_forward(model, _to_cpu(X), is_train)

    def with_cpu_backprop(dY: Any) -> Any:
        return backprop(_to_cpu(dY))

    return _to_device(model.ops, Y), with_cpu_backprop


def _with_cpu_init(model: Model, X: Any = None, Y: Any = None) -> None:
    chain_init(model, None if X is None else _to_cpu(X), None if Y is None else _to_cpu(Y))
