"""Making tensors: ``tensor``, ``zeros``, ``ones``, ``randn``... on the current backend. The random ones draw
from the global generators that ``manual_seed`` seeds, or from the ``Generator`` given as ``generator=``
(``random.py``). Floating-point results are float32 unless asked otherwise.

Copy or share, as in PyTorch: ``tensor(data)`` always copies, so the tensor and the caller's array
never change each other; ``from_numpy(array)`` and ``as_tensor(data)`` share the array's memory
(``as_tensor`` where the dtype and device allow), so a write through either shows in both."""

import numpy

from .. import backend
from .. import random as _random
from ..random import array_generator, manual_seed  # noqa: F401  (manual_seed: also here, as dlscratch imports it)
from .tensor import DEFAULT_FLOAT, Tensor, _to_array

generator = _random.generator  # the global generator of an array module, also here (a parameter's name below)


def _xp(device):
    return backend.xp if device is None else backend.module_for(device)


def _shape(shape):
    return tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape


def tensor(data, requires_grad=False, dtype=None, device=None):
    """A tensor from a number, a (nested) list, an array or a tensor, with memory of its own:
    ``data`` is always copied, as by ``torch.tensor``. To share an array's memory, use
    ``from_numpy`` or ``as_tensor``. A float64 array becomes float32 unless ``dtype`` says otherwise."""
    t = Tensor._make(_to_array(data, dtype, device, copy=True), False)
    t.requires_grad = requires_grad  # refuses integer and complex tensors
    return t


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor without a copy where none is needed (PyTorch's ``torch.as_tensor``): an
    array already of the resulting dtype and on ``device`` is shared, so a write through either
    shows in both; anything else is converted (a copy). Dtypes as for ``tensor``: a float64 array
    becomes float32 (a copy) unless ``dtype=float64``. A tensor is returned as it is, or moved and
    cast in the graph."""
    if isinstance(data, Tensor):
        data = data if device is None else data.to(device)
        return data if dtype is None else data.astype(dtype)
    return Tensor(data, dtype=dtype, device=device)


def from_numpy(array):
    """A CPU tensor sharing the memory and the dtype (float64 included) of the NumPy ``array``
    (PyTorch's ``torch.from_numpy``): a write through either shows in both."""
    if not isinstance(array, numpy.ndarray):
        raise TypeError(f"from_numpy: expected a numpy.ndarray, got {type(array).__name__}")
    return Tensor(array, dtype=array.dtype, device="cpu")


def zeros(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    return Tensor(_xp(device).zeros(_shape(shape), dtype=dtype), requires_grad=requires_grad, dtype=dtype)


def ones(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    return Tensor(_xp(device).ones(_shape(shape), dtype=dtype), requires_grad=requires_grad, dtype=dtype)


def zeros_like(t, requires_grad=False):
    return Tensor(backend.get_array_module(t.data).zeros_like(t.data), requires_grad=requires_grad, dtype=t.dtype)


def ones_like(t, requires_grad=False):
    return Tensor(backend.get_array_module(t.data).ones_like(t.data), requires_grad=requires_grad, dtype=t.dtype)


def arange(*args, dtype=None, device=None):
    return Tensor(_xp(device).arange(*args, dtype=dtype))


def randn(*shape, generator=None, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """Standard normal samples of ``shape``."""
    rng = array_generator(generator, _xp(device), "randn")
    dtype = numpy.dtype(dtype)
    if dtype == numpy.float16:  # NumPy's and CuPy's generators draw float32 and float64 only
        data = rng.standard_normal(_shape(shape), dtype=numpy.float32).astype(dtype)
    else:
        data = rng.standard_normal(_shape(shape), dtype=dtype)
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def rand(*shape, generator=None, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """Uniform samples in [0, 1) of ``shape``."""
    rng = array_generator(generator, _xp(device), "rand")
    dtype = numpy.dtype(dtype)
    if dtype == numpy.float16:  # drawn in float32, cut to float16's 11 bits: rounding up could give 1.0
        data = rng.random(_shape(shape), dtype=numpy.float32)
        data = (backend.get_array_module(data).floor(data * 2048) / 2048).astype(dtype)
    else:
        data = rng.random(_shape(shape), dtype=dtype)
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def randint(low=0, high=None, size=None, *, generator=None, dtype=numpy.int64, requires_grad=False, device=None):
    """Integers drawn uniformly from [low, high), of shape ``size`` (a tuple), int64 unless ``dtype`` says
    otherwise. PyTorch's two forms: ``randint(high, size)`` and ``randint(low, high, size)``."""
    if size is None and isinstance(high, (tuple, list)):  # randint(high, size)
        low, high, size = 0, low, high
    elif high is None:  # randint(high, size=size)
        low, high = 0, low
    _check_randint(low, high, size, numpy.dtype(dtype))
    rng = array_generator(generator, _xp(device), "randint")
    data = rng.integers(int(low), int(high), size=tuple(size), dtype=numpy.int64)
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def _check_randint(low, high, size, dtype):
    """Refuse what ``randint`` cannot draw: non-integer bounds or size, an empty range, a range beyond ``dtype``."""
    for name, bound in (("low", low), ("high", high)):
        if not _is_integer(bound):
            raise TypeError(f"randint: {name} must be an integer, got {type(bound).__name__} {bound!r}")
    if size is None:
        raise TypeError(f"randint: no size: call randint(high, size) or randint(low, high, size), with size a tuple "
                        f"such as (3,) or (2, 4); got low={low}, high={high}")
    if not isinstance(size, (tuple, list)) or not all(_is_integer(n) for n in size):
        raise TypeError(f"randint: size must be a tuple of integers, such as (3,) or (2, 4), got {size!r}")
    if low >= high:
        raise ValueError(f"randint: low must be less than high, got low={low}, high={high}")
    if dtype.kind in "iub":
        lowest, highest = (0, 1) if dtype.kind == "b" else (numpy.iinfo(dtype).min, numpy.iinfo(dtype).max)
        if low < lowest or high - 1 > highest:
            raise ValueError(f"randint: [{low}, {high}) does not fit in {dtype} ([{lowest}, {highest}]); "
                             "pick a wider dtype or a narrower range")


def _is_integer(n):
    return not isinstance(n, bool) and isinstance(n, (int, numpy.integer))


def randperm(n, *, generator=None, dtype=numpy.int64, requires_grad=False, device=None):
    """The integers 0, ..., n - 1 in random order (int64 unless ``dtype`` says otherwise): the order that
    sorts n uniform random keys, so every order is equally likely."""
    if not _is_integer(n):
        raise TypeError(f"randperm: n must be an integer, got {type(n).__name__} {n!r}")
    if n < 0:
        raise ValueError(f"randperm: n must be non-negative, got {n}")
    dtype = numpy.dtype(dtype)
    if dtype.kind in "iu" and n - 1 > numpy.iinfo(dtype).max:
        raise ValueError(f"randperm: {n - 1} does not fit in {dtype}; pick a wider dtype, such as int64")
    xp = _xp(device)
    keys = array_generator(generator, xp, "randperm").random((int(n),))
    return Tensor(xp.argsort(keys).astype(dtype), requires_grad=requires_grad, dtype=dtype)


def linspace(start, end, steps, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """``steps`` evenly spaced values from ``start`` to ``end``, both included."""
    if isinstance(steps, bool) or not isinstance(steps, (int, numpy.integer)) or steps < 0:
        raise ValueError(f"linspace: steps must be a non-negative integer, got {steps!r}")
    data = _xp(device).linspace(start, end, int(steps), dtype=numpy.dtype(dtype))
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def full(size, fill_value, dtype=None, requires_grad=False, device=None):
    """A tensor of shape ``size`` filled with ``fill_value``; without ``dtype``, float32 for a float, int64 for
    an integer and bool for a bool, as PyTorch infers it."""
    if dtype is None:
        dtype = (numpy.bool_ if isinstance(fill_value, (bool, numpy.bool_)) else numpy.int64
                 if isinstance(fill_value, (int, numpy.integer)) else DEFAULT_FLOAT)
    data = _xp(device).full(_shape((size,) if isinstance(size, int) else tuple(size)), fill_value, dtype=dtype)
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def eye(n, m=None, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """The (n, m) identity matrix (m = n by default)."""
    return Tensor(_xp(device).eye(n, m, dtype=dtype), requires_grad=requires_grad, dtype=dtype)


def rand_like(t, dtype=None, requires_grad=False, *, generator=None):
    """Uniform samples in [0, 1) of ``t``'s shape, dtype and device."""
    return rand(*t.shape, generator=generator, dtype=dtype or t.dtype, requires_grad=requires_grad, device=t.device)


def randn_like(t, dtype=None, requires_grad=False, *, generator=None):
    """Standard normal samples of ``t``'s shape, dtype and device."""
    return randn(*t.shape, generator=generator, dtype=dtype or t.dtype, requires_grad=requires_grad, device=t.device)
