"""A simulated accelerator for CPU-only tests of device handling (import as
``from device_sim import ...``).

``DeviceOps`` is a thinc ``Ops`` whose arrays are ``DeviceArray`` objects: not
``numpy.ndarray``, as cupy's are not. Every ops method runs thinc's
``NumpyOps`` on the unwrapped data and wraps what it returns, and ``ops.xp``
is a numpy look-alike that does the same, so thinc and spaCy layers run
unchanged. What a real device would refuse is refused here too:

- ``numpy.asarray(device_array)`` (implicit conversion) raises ``TypeError``
  when spacy_rhetoric code calls it (as cupy does; thinc's and spaCy's own
  ``to_numpy`` calls are let through and counted);
- a host ``numpy.ndarray`` mixed with a device array in arithmetic or given to
  an ``ops.xp`` function raises ``TypeError`` (ops methods take host arrays, as
  thinc's do for lengths; what they return is on the device).

Every copy between host and device ("d2h", "h2d"; "fill": a write of a host
scalar into a device array, one kernel launch each) is recorded in
``TRANSFERS`` with the function that caused it (``record()``), so a test can
check that a layer copies once per batch, not once per sentence.
"""
import contextlib
import os
import sys
from typing import Any, Dict, Iterator, List, Tuple

import numpy
from thinc.api import NumpyOps, Ops, get_current_ops, set_current_ops
from thinc.types import Padded, Ragged

PACKAGE_DIR = os.sep + "spacy_rhetoric" + os.sep
_THIS = os.path.abspath(__file__)
_NUMPY = NumpyOps()


class Transfers:
    """The host<->device copies made while recording: (direction, caller,
    package caller): caller = "file:function" of the code that asked for the
    copy, package caller = the nearest spacy_rhetoric frame on the stack,
    "module:function" ("" when no spacy_rhetoric code is on the stack)."""

    def __init__(self):
        self.events: List[Tuple[str, str, str]] = []
        self.active = False

    def add(self, direction: str) -> None:
        if self.active:
            direct, ours = _callers()
            self.events.append((direction, direct, ours))

    def ours(self) -> List[Tuple[str, str]]:
        """(direction, package caller) of the copies made under spacy_rhetoric code."""
        return [(d, ours) for d, _, ours in self.events if ours]

    def asked_by(self, function: str) -> List[Tuple[str, str]]:
        """(direction, caller) of the copies ``function`` ("module:function")
        asked for itself (not those of the layers it calls)."""
        return [(d, direct) for d, direct, _ in self.events if direct.endswith(function)]


TRANSFERS = Transfers()


@contextlib.contextmanager
def record() -> Iterator[Transfers]:
    TRANSFERS.events = []
    TRANSFERS.active = True
    try:
        yield TRANSFERS
    finally:
        TRANSFERS.active = False


def _frame_name(frame) -> str:
    filename = frame.f_code.co_filename
    module = filename.rsplit(PACKAGE_DIR, 1)[1] if PACKAGE_DIR in filename else os.path.basename(filename)
    return f"{module}:{frame.f_code.co_name}"


def _callers() -> Tuple[str, str]:
    frame = sys._getframe(2)
    while frame is not None and os.path.abspath(frame.f_code.co_filename) == _THIS:
        frame = frame.f_back
    direct = _frame_name(frame) if frame is not None else ""
    while frame is not None and PACKAGE_DIR not in frame.f_code.co_filename:
        frame = frame.f_back
    return direct, (_frame_name(frame) if frame is not None else "")


def _direct_caller_is_package() -> bool:
    # frame 0: this function, 1: DeviceArray.__array__, 2: whoever called numpy.asarray & co.
    return PACKAGE_DIR in sys._getframe(2).f_code.co_filename


def _is_host_array(x: Any) -> bool:
    return isinstance(x, numpy.ndarray) and x.ndim > 0


def unwrap(x: Any, *, strict: bool, what: str = "") -> Any:
    """Device data -> numpy (recursively through lists, tuples, Ragged, Padded);
    with ``strict`` a host array is a TypeError, as for a cupy function."""
    if isinstance(x, DeviceArray):
        return x._data
    if strict and _is_host_array(x):
        raise TypeError(f"simulated device: host numpy array passed to {what or 'a device operation'}")
    if isinstance(x, list):
        return [unwrap(v, strict=strict, what=what) for v in x]
    if isinstance(x, tuple):
        return tuple(unwrap(v, strict=strict, what=what) for v in x)
    if isinstance(x, Ragged):
        return Ragged(unwrap(x.data, strict=strict, what=what), unwrap(x.lengths, strict=strict, what=what))
    if isinstance(x, Padded):
        return Padded(*(unwrap(getattr(x, f), strict=strict, what=what)
                        for f in ("data", "size_at_t", "lengths", "indices")))
    return x


def wrap(x: Any) -> Any:
    if isinstance(x, numpy.ndarray):
        return DeviceArray(x)
    if isinstance(x, list):
        return [wrap(v) for v in x]
    if isinstance(x, tuple):
        return tuple(wrap(v) for v in x)
    if isinstance(x, Ragged):
        return Ragged(wrap(x.data), wrap(x.lengths))
    if isinstance(x, Padded):
        return Padded(*(wrap(getattr(x, f)) for f in ("data", "size_at_t", "lengths", "indices")))
    return x


class DeviceArray:
    """An array on the simulated device (holds a numpy array, is not one)."""

    __slots__ = ("_data",)
    __array_priority__ = 1000

    def __init__(self, data: numpy.ndarray):
        self._data = data

    # -- leaving the device -------------------------------------------------
    def get(self) -> numpy.ndarray:
        TRANSFERS.add("d2h")
        return self._data.copy()

    def __array__(self, dtype=None, copy=None):
        if _direct_caller_is_package():
            raise TypeError("Implicit conversion to a NumPy array is not allowed (simulated device array): "
                            "use ops.to_numpy / ops.asarray")
        TRANSFERS.add("d2h")
        return self._data if dtype is None else self._data.astype(dtype)

    def _scalar(self, kind):
        TRANSFERS.add("d2h")
        return kind(self._data)

    def __int__(self):
        return self._scalar(int)

    def __float__(self):
        return self._scalar(float)

    def __index__(self):
        return self._scalar(int)

    def __bool__(self):
        return self._scalar(bool)

    def item(self, *args):
        TRANSFERS.add("d2h")
        return self._data.item(*args)

    def tolist(self):
        TRANSFERS.add("d2h")
        return self._data.tolist()

    # -- numpy protocols ---------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        args = unwrap(inputs, strict=True, what=f"numpy.{ufunc.__name__}")
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = unwrap(out, strict=True, what=f"numpy.{ufunc.__name__}(out=)")
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is None:
            return wrap(result)
        return out[0] if isinstance(out, tuple) and len(out) == 1 else out

    def __array_function__(self, func, types, args, kwargs):
        result = func(*unwrap(args, strict=True, what=f"numpy.{func.__name__}"),
                      **unwrap(kwargs, strict=True, what=f"numpy.{func.__name__}"))
        return wrap(result)

    # -- array attributes and methods --------------------------------------
    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    size = property(lambda self: self._data.size)
    nbytes = property(lambda self: self._data.nbytes)
    itemsize = property(lambda self: self._data.itemsize)
    strides = property(lambda self: self._data.strides)
    flags = property(lambda self: self._data.flags)
    T = property(lambda self: DeviceArray(self._data.T))

    def __getattr__(self, name: str):
        if name.startswith("__array") or name in ("__cuda_array_interface__",):
            raise AttributeError(name)
        attr = getattr(self._data, name)
        if not callable(attr):
            return wrap(attr)

        def method(*args, **kwargs):
            return wrap(attr(*unwrap(args, strict=True, what=f".{name}()"),
                             **unwrap(kwargs, strict=True, what=f".{name}()")))

        return method

    def __len__(self):
        return len(self._data)

    def __iter__(self):
        return (wrap(row) if isinstance(row, numpy.ndarray) else DeviceArray(numpy.asarray(row))
                for row in self._data)

    def __getitem__(self, key):
        value = self._data[_index(key)]
        return DeviceArray(value) if isinstance(value, numpy.ndarray) else DeviceArray(numpy.asarray(value))

    def __setitem__(self, key, value):
        if isinstance(value, DeviceArray):
            value = value._data
        elif isinstance(value, (numpy.ndarray, list, tuple)):
            TRANSFERS.add("h2d")
        else:
            TRANSFERS.add("fill")  # one kernel launch from the host (a per-element write is one per element)
        self._data[_index(key)] = value

    def __repr__(self):
        return f"DeviceArray({self._data!r})"

    def __reduce__(self):
        return (DeviceArray, (self._data,))


def _index(key):
    if isinstance(key, DeviceArray):
        return key._data
    if isinstance(key, tuple):
        return tuple(k._data if isinstance(k, DeviceArray) else k for k in key)
    if isinstance(key, list) or _is_host_array(key):
        TRANSFERS.add("h2d")
    return key


def _binary(ufunc, reflected=False):
    if reflected:
        return lambda self, other: ufunc(other, self)
    return lambda self, other: ufunc(self, other)


for _name, _ufunc in [("add", numpy.add), ("sub", numpy.subtract), ("mul", numpy.multiply),
                      ("truediv", numpy.true_divide), ("floordiv", numpy.floor_divide), ("mod", numpy.remainder),
                      ("pow", numpy.power), ("matmul", numpy.matmul), ("and", numpy.bitwise_and),
                      ("or", numpy.bitwise_or), ("xor", numpy.bitwise_xor)]:
    setattr(DeviceArray, f"__{_name}__", _binary(_ufunc))
    setattr(DeviceArray, f"__r{_name}__", _binary(_ufunc, reflected=True))
    setattr(DeviceArray, f"__i{_name}__",
            (lambda uf: lambda self, other: uf(self, other, out=self))(_ufunc))
for _name, _ufunc in [("lt", numpy.less), ("le", numpy.less_equal), ("gt", numpy.greater),
                      ("ge", numpy.greater_equal), ("eq", numpy.equal), ("ne", numpy.not_equal)]:
    setattr(DeviceArray, f"__{_name}__", _binary(_ufunc))
DeviceArray.__neg__ = lambda self: numpy.negative(self)
DeviceArray.__pos__ = lambda self: self
DeviceArray.__abs__ = lambda self: numpy.absolute(self)
DeviceArray.__invert__ = lambda self: numpy.invert(self)
DeviceArray.__hash__ = None


class _DeviceNumpy:
    """``ops.xp`` of ``DeviceOps``: numpy's functions on device arrays. Making an
    array from host data (``asarray``, ``array``...) is a host->device copy;
    every other function refuses host arrays."""

    FROM_HOST = {"asarray", "array", "ascontiguousarray", "asfortranarray"}

    def __getattr__(self, name: str):
        attr = getattr(numpy, name)
        if not callable(attr) or isinstance(attr, type):
            return attr
        from_host = name in self.FROM_HOST

        def function(*args, **kwargs):
            if from_host and args and not isinstance(args[0], DeviceArray):
                TRANSFERS.add("h2d")
            strict = not from_host
            return wrap(attr(*unwrap(args, strict=strict, what=f"xp.{name}"),
                             **unwrap(kwargs, strict=strict, what=f"xp.{name}")))

        return function


DEVICE_NUMPY = _DeviceNumpy()

# Ops methods that take host data (lists, numpy arrays) and put it on the device.
_FROM_HOST = {"asarray", "asarray1f", "asarray2f", "asarray3f", "asarray4f", "asarray_f", "asarray1i",
              "asarray2i", "asarray3i", "asarray4i", "asarray_i", "to_numpy"}
# Ops methods that take no arrays at all or never return new arrays: not delegated.
_SKIP = {"xp", "name", "device_type", "device_id", "to_numpy", "get_dropout_mask", "minibatch",
         "multibatch", "_get_batch", "_get_batch_sizes", "cblas", "__init__"}


class DeviceOps(Ops):
    """thinc ``Ops`` of the simulated device (see the module docstring)."""

    name = "device_sim"
    xp = DEVICE_NUMPY

    def to_numpy(self, data, *, byte_order=None):
        if isinstance(data, DeviceArray):
            return data.get()
        if isinstance(data, numpy.ndarray):
            return data
        raise TypeError(f"to_numpy of {type(data).__name__}")

    def get_dropout_mask(self, shape, drop):
        mask = _NUMPY.get_dropout_mask(shape, drop)
        return None if mask is None else DeviceArray(mask)


def _delegate(name: str):
    from_host = name in _FROM_HOST

    def method(self, *args, **kwargs):
        if from_host and not (args and isinstance(args[0], DeviceArray)):
            TRANSFERS.add("h2d")
        # thinc's own Ops take host arrays for lengths (e.g. unflatten), so these are not strict
        result = getattr(_NUMPY, name)(*unwrap(args, strict=False), **unwrap(kwargs, strict=False))
        return wrap(result)

    method.__name__ = name
    return method


for _name in dir(NumpyOps):
    if _name.startswith("_") or _name in _SKIP or _name in DeviceOps.__dict__:
        continue
    if callable(getattr(NumpyOps, _name)):
        setattr(DeviceOps, _name, _delegate(_name))


@contextlib.contextmanager
def device_ops() -> Iterator[DeviceOps]:
    """Models built inside get ``DeviceOps`` (as ``spacy train --gpu-id 0``
    builds them after ``require_gpu``)."""
    previous = get_current_ops()
    ops = DeviceOps()
    set_current_ops(ops)
    try:
        yield ops
    finally:
        set_current_ops(previous)


def is_device_array(x: Any) -> bool:
    return isinstance(x, DeviceArray)


def host(x: Any) -> Any:
    """Device arrays (recursively) -> numpy, without recording a transfer."""
    return unwrap(x, strict=False)


def summary(events: List[Tuple[str, str]]) -> Dict[str, int]:
    """{"<direction> <caller>": count}"""
    out: Dict[str, int] = {}
    for direction, caller in events:
        key = f"{direction} {caller}"
        out[key] = out.get(key, 0) + 1
    return out
