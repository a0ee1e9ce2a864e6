"""Layer: which dtype an operation computes in; one rule, PyTorch's, applied by ``Function.prepare``.

NumPy widens ``float32 + int64`` to float64 (an int64 does not fit a float32's 24-bit mantissa).
A network fed integer data (uint8 pixels, int64 positions) would then run in float64, twice as
slow, with nothing to say so. PyTorch's rule, which dlscratch follows:

1. Floating-point operands decide. When an operation mixes floating-point operands with integer
   or bool ones (tensors, arrays, lists), the integers are converted to the floating dtype (the
   widest present): ``float32 + int64 -> float32``, a Linear layer fed uint8 runs in float32.
2. Python and NumPy scalars never widen a tensor: ``x * 2.0`` and ``x * numpy.float64(2)`` stay
   float32; an integer tensor times ``0.5`` is float32 (NumPy 2 would say float64).
3. Where floats come out of integers alone (``ints / 2``, ``ints.exp()``, ``ints.mean()``), they
   are float32. So float64 appears only when asked for (a float64 tensor, ``.double()``).
4. A tensor with dimensions decides over a 0-d tensor of the same category (bool, integer, floating,
   complex): ``float32 vector * float64 0-d`` is float32 (NumPy would say float64), ``int32 vector * int64 0-d``
   int32; a 0-d tensor of a higher category decides (``int64 vector * float64 0-d`` is float64).

Integer inputs that an operation needs as integers (class labels, indices) are exempt: a
function lists their positions in ``integer_inputs``.
"""

import functools

import numpy

DEFAULT_FLOAT = numpy.dtype(numpy.float32)  # what Python floats and integer-only inputs become


def is_float(dtype):
    return dtype.kind in "fc"


def promote(fn, arrays):
    """``arrays``, the inputs of ``fn``, converted as the rule says. ``Function.__call__`` calls it
    only when the dtypes differ, or when ``fn`` makes floats and gets integers alone."""
    keep = fn.integer_inputs
    ruled = [a for i, a in enumerate(arrays) if i not in keep]
    target = _winner([a.dtype for a in ruled if a.ndim]) if any(a.ndim for a in ruled) else None
    zero_dim = _winner([a.dtype for a in ruled if not a.ndim])
    if target is None or (zero_dim is not None and _category(zero_dim) > _category(target)):
        target = zero_dim  # rule 4
    if target is None:
        return arrays
    if not is_float(target) and fn.float_result:
        target = DEFAULT_FLOAT  # rule 3
    return [a if i in keep or a.dtype == target or (a.ndim and is_float(a.dtype) and is_float(target))
            else a.astype(target) for i, a in enumerate(arrays)]


_CATEGORIES = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}  # bool, integers, floating, complex


def _category(dtype):
    """A higher category decides the dtype over a lower one."""
    return _CATEGORIES[dtype.kind]


def _winner(dtypes):
    """The dtype of a group of operands: that of those of the highest category (rule 1), or None for none."""
    if not dtypes:
        return None
    top = max(map(_category, dtypes))
    return numpy.result_type(*[d for d in dtypes if _category(d) == top])


def scalar_dtype(tensor_dtype, value):
    """The dtype of a Python scalar constant beside a tensor of ``tensor_dtype`` (rule 2): the tensor's,
    unless the scalar's kind does not fit (a float beside integers: float32; a complex...). Under NumPy 2's
    rules it depends on the scalar's type, not its value, so it is worked out once per pair of types."""
    return _scalar_dtype(tensor_dtype, type(value))


@functools.cache
def _scalar_dtype(tensor_dtype, scalar_type):
    if not is_float(tensor_dtype) and issubclass(scalar_type, (float, numpy.floating)):
        return DEFAULT_FLOAT
    return numpy.result_type(tensor_dtype, scalar_type(0))
