"""Layer: numbers and arrays as operands. ``x * 2.0``, ``x + numpy_array`` and ``F.mul(2, x)`` work: each
plain operand becomes a constant tensor (it requires no grad) before the operation runs; anything else (None,
a string, an object) is refused with a TypeError naming the operation.

Python and NumPy scalars are weak, as Python scalars are in NumPy 2: ``x * 2.0`` stays float32 for a
float32 ``x``, and so does ``x * numpy.float64(2.0)``. Attached at the core's ``Function.prepare``
(``dlscratch/engine/function.py``).
"""

import struct

import numpy

from ... import backend
from ...fast.kept_arrays import keep
from . import dtypes

PYTHON_SCALARS = frozenset({bool, int, float, complex})
NUMERIC_KINDS = "biufc"  # bool, signed and unsigned integers, floating, complex: what a tensor may hold


def wrap_constants(fn, inputs, tensor_type):
    """``inputs`` with every operand that is no tensor made a constant ``tensor_type`` beside the first tensor."""
    like = None
    for x in inputs:
        if isinstance(x, tensor_type):
            like = x
            break
    try:
        return tuple([x if isinstance(x, tensor_type) else as_constant(x, like, tensor_type) for x in inputs])
    except TypeError as exc:
        raise TypeError(f"{fn.name}: {exc}") from None


def as_constant(value, like, tensor_type):
    """``value`` as a constant tensor. Scalars (Python or NumPy) take ``like``'s dtype and device when that keeps
    their value's kind, as Python scalars do under NumPy 2's promotion rules; float64 arrays and lists of floats
    take a floating ``like``'s dtype."""
    if like is not None and (type(value) in PYTHON_SCALARS or is_number(value)):
        if type(value) not in PYTHON_SCALARS:  # a NumPy scalar or 0-d array: its Python value, weak as Python's are
            value = value.item()
        return tensor_type._make(scalar_array(value, like._data), False)
    if like is None:
        return tensor_type(value)
    value_dtype = value.dtype if hasattr(value, "dtype") else numpy.asarray(value).dtype
    # float64 data takes the graph's float dtype, rather than the default float32: no rounding in a float64 graph.
    dtype = like.dtype if value_dtype == numpy.float64 and like.dtype.kind == "f" else None
    return tensor_type(value, dtype=dtype, device=like.device)


def scalar_array(value, data):
    """Python scalar ``value`` as a 0-d array beside array ``data``, in the dtype rule 2 gives it. The arrays
    are kept (``KEPT_SCALARS`` of them) and read-only where the array module allows: a training loop's
    ``x * 0.5`` then makes no array, and on a GPU no copy to the device, in every step (``kept.py``)."""
    on_gpu = type(data) is not numpy.ndarray
    key = (value_key(value), type(value), data.dtype, type(data), getattr(data.device, "id", None) if on_gpu else None)
    array = _kept_scalars.get(key)
    if array is None:
        host = numpy.asarray(value, dtype=dtypes.scalar_dtype(data.dtype, value))
        if on_gpu:  # copied as 1-d: CuPy writes a 0-d zero with a memset, and -0.0 would lose its sign
            host = backend.get_array_module(data).asarray(host.reshape(1)).reshape(())
        array = keep(_kept_scalars, key, host, KEPT_SCALARS)
    return array


KEPT_SCALARS = 1024
_kept_scalars = {}  # (value_key(value), its type, the tensor's dtype, array type, device id) -> the 0-d array
# (the value's type is in the key: 1 == 1.0 == True, but each keeps its own kind)

_float_bits = struct.Struct("<d").pack
_complex_bits = struct.Struct("<dd").pack


def value_key(value):
    """What tells Python scalar ``value`` apart from every other in the kept table: a float's or a complex's bits
    (``0.0 == -0.0``, and a NaN equals no NaN, whatever its payload: equality would share or never find an
    entry), an integer's or a bool's value."""
    kind = type(value)
    if kind is float:
        return _float_bits(value)
    if kind is complex:
        return _complex_bits(value.real, value.imag)
    return value


def is_scalar(value):
    """A Python or NumPy number (bool, integer, floating or complex)."""
    return isinstance(value, (bool, int, float, complex, numpy.number, numpy.bool_))


def is_number(value):
    """A Python or NumPy number, or a 0-d array of one."""
    return is_scalar(value) or (getattr(value, "ndim", None) == 0 and value.dtype.kind in NUMERIC_KINDS)
