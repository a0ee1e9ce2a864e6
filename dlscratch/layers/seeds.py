"""Layer: the seed of ``loss.backward()``. A scalar output's implicit gradient, 1, is one kept array per shape,
dtype and device, made once (``kept.py``): on a GPU, filling a new array of ones would be a launch in every
training step for a value that never changes. It is read-only on NumPy, so a backward that wrote into its incoming
gradient would fail loudly rather than change the next step's seed.
Attached at ``Tensor.backward`` (``dlscratch/tensor.py``).
"""

from .. import backend
from .kept import keep

_kept = {}  # (array type, device id, shape, dtype) -> the array of ones


def ones_like(data):
    """A read-only array of ones shaped like ``data`` (a scalar output's array: one element), on its device."""
    device = getattr(data, "device", None)
    key = (type(data), getattr(device, "id", None), data.shape, data.dtype)
    seed = _kept.get(key)
    if seed is None:
        seed = keep(_kept, key, backend.get_array_module(data).ones_like(data))
    return seed
