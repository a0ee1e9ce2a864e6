"""Arrays that never change, made once and kept: the seed of ``loss.backward()``, and scalar operands
(``engine/extensions/operands.py``).

The seed of ``loss.backward()`` and the 0-d array of a scalar operand (``x * 0.5``) hold the same values in every
training step; on a GPU, making each anew would be a launch or a copy to the device every time. Each is kept by a
key that says what it holds and where (array type, device). A kept array is read-only where the array module
allows it (NumPy; CuPy has no such flag), so code that wrote into one would fail loudly rather than change every
later use.

The seed is a scalar output's implicit gradient, 1: one kept array per shape, dtype and device, so that no training
step fills a new array of ones (a launch, on a GPU). Taken at ``Tensor.backward`` (``dlscratch/engine/tensor.py``).
"""

from .. import backend

_seeds = {}  # (array type, device id, shape, dtype) -> the array of ones


def keep(table, key, array, limit=None):
    """``array`` made read-only where it can be, and kept in ``table`` under ``key`` while ``table`` holds fewer
    than ``limit`` arrays (None: no limit). Returns ``array``. Never kept while a CUDA graph captures: an array
    made then holds its values only when the graph replays (``dlscratch/cuda/graphs.py``)."""
    flags = getattr(array, "flags", None)
    if hasattr(flags, "writeable"):
        flags.writeable = False
    if (limit is None or len(table) < limit) and not backend.capturing():
        table[key] = array
    return array


def ones_seed(data):
    """A read-only array of ones shaped like ``data`` (a scalar output's array: one element), on its device."""
    device = getattr(data, "device", None)
    key = (type(data), getattr(device, "id", None), data.shape, data.dtype)
    seed = _seeds.get(key)
    if seed is None:
        seed = keep(_seeds, key, backend.get_array_module(data).ones_like(data))
    return seed
