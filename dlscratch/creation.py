"""Making tensors: ``tensor``, ``zeros``, ``ones``, ``randn``... on the current backend, and
``manual_seed`` for the random ones. Floating-point results are float32 unless asked otherwise.

Copy or share, as in PyTorch: ``tensor(data)`` always copies, so the tensor and the caller's array
never change each other; ``from_numpy(array)`` and ``as_tensor(data)`` share the array's memory
(``as_tensor`` where the dtype and device allow), so a write through either shows in both."""

import numpy

from . import backend
from .tensor import DEFAULT_FLOAT, Tensor, _to_array

_generators = {}  # one random generator per array module, all seeded by manual_seed
_seed = [None]


def manual_seed(seed):
    """Seed dlscratch's random generators (NumPy's and, when used, CuPy's) and NumPy's global one.

    ``seed``: an integer in [-2**63, 2**64 - 1], as in PyTorch; a negative seed is taken modulo
    2**64 (as PyTorch does), so ``manual_seed(-1)`` is ``manual_seed(2**64 - 1)``. Anything else
    raises before any generator changes."""
    if isinstance(seed, bool) or not isinstance(seed, (int, numpy.integer)):
        raise TypeError(f"manual_seed: the seed must be an integer, got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    if not -(2**63) <= seed <= 2**64 - 1:
        raise ValueError(f"manual_seed: the seed must be in [-2**63, 2**64 - 1], got {seed}; "
                         "reduce it, e.g. seed % 2**64")
    seed %= 2**64
    # NumPy's global generator takes 32-bit seeds; larger ones go in as two 32-bit words
    numpy.random.seed(seed if seed < 2**32 else [seed % 2**32, seed // 2**32])
    _seed[0] = seed
    _generators.clear()


def generator(xp=None):
    """The random ``Generator`` for array module ``xp`` (default: the current backend)."""
    xp = xp or backend.xp
    if xp not in _generators:
        _generators[xp] = xp.random.default_rng(_seed[0])
    return _generators[xp]


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


def randn(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """Standard normal samples of ``shape``."""
    xp = _xp(device)
    data = generator(xp).standard_normal(_shape(shape), dtype=numpy.dtype(dtype))
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def rand(*shape, dtype=DEFAULT_FLOAT, requires_grad=False, device=None):
    """Uniform samples in [0, 1) of ``shape``."""
    xp = _xp(device)
    data = generator(xp).random(_shape(shape), dtype=numpy.dtype(dtype))
    return Tensor(data, requires_grad=requires_grad, dtype=dtype)


def randint(low, high, shape, device=None):
    """Integers in [low, high) of ``shape`` (int64)."""
    xp = _xp(device)
    return Tensor(generator(xp).integers(low, high, size=shape, dtype=numpy.int64))


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


def rand_like(t, dtype=None, requires_grad=False):
    """Uniform samples in [0, 1) of ``t``'s shape, dtype and device."""
    return rand(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=t.device)


def randn_like(t, dtype=None, requires_grad=False):
    """Standard normal samples of ``t``'s shape, dtype and device."""
    return randn(*t.shape, dtype=dtype or t.dtype, requires_grad=requires_grad, device=t.device)
