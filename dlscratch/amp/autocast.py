"""``autocast``: run the matrix products in float16 and the sensitive reductions in float32 (PyTorch's
``torch.autocast`` is the anchor; P. Micikevicius et al., "Mixed Precision Training", ICLR 2018).

Inside the block the parameters stay float32 (the master weights); each operation casts its inputs:

- **float16 list** (``matmul``, ``linear``, ``conv2d``): float32 inputs are cast down, the product runs in
  float16 (tensor cores on a GPU), and the output is float16;
- **float32 list** (``softmax``, ``log_softmax``, ``cross_entropy``, ``mse_loss``, ``sum``, ``mean``): float16
  inputs are cast up, since exponentials and long sums overflow or lose their small terms in float16;
- everything else (``relu``, ``+``, pooling...) follows its inputs, by the promotion rule of ``dtypes.py``.

The lists are in ``casting_lists.py``, which wraps those operations (``engine/wrappable.py``) with
``casts_to_low_precision`` and ``casts_to_float32`` below: the operations themselves never import autocast.

The casts are ordinary graph nodes (``functions.conversion.Cast``), so backward casts each gradient back:
a float32 parameter gets a float32 ``.grad``. A training step::

    with dlscratch.autocast("cuda"):            # or dlscratch.amp.autocast, PyTorch's two names
        loss = F.cross_entropy(model(x), y)      # model(x) is float16, loss float32
    scaler.scale(loss).backward()                # see grad_scaler.py

**One state per device type**, as in PyTorch: ``autocast("cuda")`` casts the operations whose inputs are on the
GPU, ``autocast("cpu", dtype=dlscratch.float16)`` those on the CPU, and blocks of the two nest independently.
PyTorch's CPU default is bfloat16, which NumPy has no dtype for, so on the CPU the dtype is given. Without a
usable GPU, ``autocast("cuda")`` warns and is disabled, as PyTorch's is.

The state is per thread, and a block restores the state it found. Outside every block the wrapped
operations cost one attribute test and nothing else: no cast, no extra array or kernel launch.

**The weights are cast once per block.** A model that runs twice in one block (two batches, or a weight
shared by two layers) would otherwise cast each parameter again at every use: one more float16 copy and,
on a GPU, one more launch each time. As PyTorch does, a cast of a leaf tensor that requires a gradient (a
parameter) is kept until the outermost block ends, and every later use in the block reuses it; the uses'
float16 gradients add up in the one ``Cast`` node (in float16, as in PyTorch), which sends the sum to the
parameter in float32. The kept cast is
made again when the parameter was written in place since (an optimizer step inside the block: its version
counter moved) or when it was made without recording (``no_grad``) and the graph is recorded now.
``autocast(cache_enabled=False)`` casts at every use.
"""

import functools
import threading
import warnings

import numpy

from .. import backend
from ..engine.grad_mode import is_grad_enabled

FLOAT32 = numpy.dtype(numpy.float32)
DEVICE_TYPES = ("cuda", "cpu")
_NO_BFLOAT16 = ("PyTorch's autocast on the CPU computes in bfloat16 by default, a dtype NumPy does not have: "
                "give dtype=dlscratch.float16")


class _AutocastState(threading.local):
    cache_enabled = True
    on = False  # whether some device type's autocast is enabled: the one test outside every block
    depth = 0  # blocks entered and not yet left; the casts are kept while it is above 0

    def __init__(self):
        self.enabled = dict.fromkeys(DEVICE_TYPES, False)
        self.dtype = {"cuda": numpy.dtype(numpy.float16), "cpu": None}  # None: bfloat16 (_NO_BFLOAT16)
        self.casts = {}  # id(parameter) -> (parameter, (its array, its version, recorded?, dtype), cast)


_state = _AutocastState()


def _device_type(device_type, where):
    """``"cuda"`` or ``"cpu"`` for a device type as PyTorch names it (dlscratch's ``"gpu"`` too)."""
    if not isinstance(device_type, str):
        raise TypeError(f"{where}: device_type must be a str, 'cuda' or 'cpu', got {device_type!r}")
    return "cuda" if backend.device_name(device_type) == "gpu" else "cpu"  # refuses other names


def is_autocast_enabled(device_type="cuda"):
    """True inside an enabled ``autocast(device_type)`` block of this thread (PyTorch's default: CUDA's)."""
    return _state.enabled[_device_type(device_type, "is_autocast_enabled")]


def get_autocast_dtype(device_type):
    """The dtype ``autocast(device_type)`` computes the float16 list in: float16 on CUDA unless a block says."""
    dtype = _state.dtype[_device_type(device_type, "get_autocast_dtype")]
    if dtype is None:
        raise ValueError(_NO_BFLOAT16)
    return dtype


def is_autocast_cache_enabled():
    """Whether the innermost block keeps each parameter's cast until the outermost one ends (below)."""
    return _state.cache_enabled


def _checked_dtype(dtype):
    try:
        dtype = numpy.dtype(dtype)
    except TypeError:
        message = f"autocast: dtype must be a floating-point dtype such as numpy.float16, got {dtype!r}"
        raise TypeError(message) from None
    if dtype.kind != "f":
        raise TypeError(f"autocast: dtype must be a floating-point dtype such as numpy.float16, got {dtype}")
    if dtype.itemsize >= FLOAT32.itemsize:
        raise ValueError(f"autocast: dtype must be narrower than float32 (numpy.float16), got {dtype}; "
                         "for float32 throughout, use autocast(enabled=False) or no block")
    return dtype


class autocast:  # noqa: N801  (PyTorch's name)
    """Context manager (or decorator) that turns mixed precision on, ``enabled=True``, or off, for its block,
    for the operations on ``device_type``'s arrays: ``"cuda"`` (the GPU) or ``"cpu"``.

    ``dtype``: the low precision of the float16 list; None takes ``get_autocast_dtype(device_type)``, float16 on
    CUDA (on the CPU give it: module docstring). ``cache_enabled``: keep each parameter's cast until the outermost
    block ends (above); None keeps the current setting. Blocks nest; each restores the outer state when it ends,
    also on an exception."""

    def __init__(self, device_type, dtype=None, enabled=True, cache_enabled=None):
        self.device_type = _device_type(device_type, "autocast")
        for name, value in (("enabled", enabled), ("cache_enabled", cache_enabled)):
            if not isinstance(value, bool) and not (name == "cache_enabled" and value is None):
                raise TypeError(f"autocast: {name} must be True or False, got {value!r}")
        if dtype is None:
            dtype = get_autocast_dtype(self.device_type)
        self.dtype = _checked_dtype(dtype)
        self.cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else cache_enabled
        if enabled and self.device_type == "cuda" and not backend.gpu_available():
            warnings.warn(f"autocast('cuda') is enabled, but there is no usable GPU "
                          f"({backend.gpu_unavailable_reason()}): disabled, as PyTorch does", UserWarning,
                          stacklevel=2)
            enabled = False
        self.enabled = enabled
        self._outer = []

    def __enter__(self):
        device = self.device_type
        self._outer.append((_state.enabled[device], _state.dtype[device], _state.cache_enabled))
        _state.enabled[device], _state.dtype[device], _state.cache_enabled = self.enabled, self.dtype, \
            self.cache_enabled
        _state.on = any(_state.enabled.values())
        _state.depth += 1
        return self

    def __exit__(self, *exc_info):
        device = self.device_type
        _state.enabled[device], _state.dtype[device], _state.cache_enabled = self._outer.pop()
        _state.on = any(_state.enabled.values())
        _state.depth -= 1
        if _state.depth == 0:
            _state.casts.clear()
        return False

    def __call__(self, function):
        @functools.wraps(function)
        def run(*args, **kwargs):
            with autocast(self.device_type, self.dtype, self.enabled, self.cache_enabled):
                return function(*args, **kwargs)

        return run

    def __repr__(self):
        return (f"autocast({self.device_type!r}, dtype={self.dtype}, enabled={self.enabled}, "
                f"cache_enabled={self.cache_enabled})")


def _cast(value, source, target):
    """``value`` (a Tensor or array) cast to ``target`` through the differentiable ``astype`` when its dtype is
    ``source``; anything else (integers, float64, Python numbers, None) as it is."""
    if getattr(value, "dtype", None) != source:
        return value
    if not (_state.cache_enabled and getattr(value, "requires_grad", False) and value.is_leaf):
        return value.astype(target)
    key = (value.data, value._version, is_grad_enabled(), target)  # what the kept cast was made from
    kept = _state.casts.get(id(value))
    if kept is None or kept[0] is not value or not _same(kept[1], key):
        kept = _state.casts[id(value)] = (value, key, value.astype(target))
    return kept[2]


def _same(made_from, now):
    """Whether a kept cast was made from the array ``now`` names, at its version, recording as now."""
    return made_from[0] is now[0] and made_from[1:] == now[1:]


def _casting(function, source_of, target_of):
    @functools.wraps(function)
    def call(*args, **kwargs):
        if not _state.on:
            return function(*args, **kwargs)
        device = _device_of(args, kwargs)
        if device is None or not _state.enabled[device]:
            return function(*args, **kwargs)
        source, target = source_of(device), target_of(device)
        return function(*(_cast(a, source, target) for a in args),
                        **{name: _cast(v, source, target) for name, v in kwargs.items()})

    return call


def _device_of(args, kwargs):
    """``"cuda"`` or ``"cpu"``: where the first array among an operation's inputs lives; None without one."""
    for value in (*args, *kwargs.values()):
        array = getattr(value, "data", value)
        if hasattr(array, "dtype") and hasattr(array, "shape"):
            return "cuda" if backend.is_gpu_array(array) else "cpu"
    return None


def casts_to_low_precision(function):
    """Wrapper of a float16-list operation: inside ``autocast`` its float32 inputs become float16."""
    return _casting(function, lambda device: FLOAT32, lambda device: _state.dtype[device])


def casts_to_float32(function):
    """Wrapper of a float32-list operation: inside ``autocast`` its float16 inputs become float32."""
    return _casting(function, lambda device: _state.dtype[device], lambda device: FLOAT32)
