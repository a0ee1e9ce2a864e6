"""The batch-last layout: how the fast path avoids transposing copies between layers.

A convolution's GEMM ``W @ cols`` leaves its result as ``(O, Ho, Wo, N)`` in memory; the ``(N, O, Ho, Wo)`` view
of it costs nothing, and the next im2col wants exactly this memory. Every operation accepts any layout; only
``conv.py`` and col2im *produce* batch-last arrays, and ``pooling.py`` and ``dropout.py`` *keep* the layout they
are given, because NumPy's loops over two arrays of different layouts walk one of them across memory.
"""

from .. import backend
from . import tuning
from .threads import in_parts


def memory_order(a):
    """``a``'s axes from the outermost in memory to the innermost (largest stride first)."""
    return sorted(range(a.ndim), key=a.strides.__getitem__, reverse=True)  # a stable sort: ties keep their order


def is_batch_last(x):
    """True when ``x: (N, C, H, W)`` is stored as ``(C, H, W, N)``, as a convolution's output is."""
    return memory_order(x) == [1, 2, 3, 0]


def to_batch_last(x, out=None):
    """``x: (N, C, H, W)`` copied into ``out: (C, H, W, N)`` (a new array when None), in cache-sized tiles."""
    if out is None:
        out = backend.get_array_module(x).empty(x.shape[1:] + x.shape[:1], dtype=x.dtype)
    N, C, H, W = x.shape
    channels, images = max(1, tuning.TILE_NUMBERS // (H * W)), tuning.TILE_IMAGES

    def copy(c0, c1):
        for c in range(c0, c1, channels):
            c_end = min(c + channels, c1)
            for n in range(0, N, images):
                out[c:c_end, ..., n : n + images] = x[n : n + images, c:c_end].transpose(1, 2, 3, 0)

    if backend.is_gpu_array(x):
        out[...] = x.transpose(1, 2, 3, 0)
    else:
        in_parts(copy, C, x.size)
    return out


def pad_batch_last(x, g):
    """``x: (N, C, H, W)`` zero-padded and stored batch-last: ``(C, H + 2*ph, W + 2*pw, N)``.

    An unpadded batch-last input comes back as a view, no copy.
    """
    if g.ph == g.pw == 0:
        return x.transpose(1, 2, 3, 0) if is_batch_last(x) else to_batch_last(x)
    padded = backend.get_array_module(x).empty((g.C, g.H + 2 * g.ph, g.W + 2 * g.pw, g.N), dtype=x.dtype)
    for border in (padded[:, : g.ph], padded[:, g.ph + g.H :], padded[:, :, : g.pw], padded[:, :, g.pw + g.W :]):
        border[...] = 0  # only the border: the inside is written next
    inner = padded[:, g.ph : g.ph + g.H, g.pw : g.pw + g.W]
    if is_batch_last(x):
        inner[...] = x.transpose(1, 2, 3, 0)
    else:
        to_batch_last(x, inner)
    return padded


def unpad_batch_last(padded, g):
    """The inverse of ``pad_batch_last``: ``(C, Hp, Wp, N)`` -> an ``(N, C, H, W)`` view."""
    return padded[:, g.ph : g.ph + g.H, g.pw : g.pw + g.W].transpose(3, 0, 1, 2)


def new_array(shape, like, dtype, fill=None):
    """An array of ``shape`` with its axes in memory in the order of ``like``'s (empty, or filled with ``fill``)."""
    xp = backend.get_array_module(like)
    order = memory_order(like)
    stored = tuple(shape[axis] for axis in order)
    a = xp.empty(stored, dtype=dtype) if fill is None else xp.full(stored, fill, dtype=dtype)
    return a.transpose(tuple(order.index(axis) for axis in range(a.ndim)))


def multiply_in_layout(a, b, like):
    """``a * b`` laid out like ``like`` (CuPy writes every new array C-contiguous, so it needs the ``out``)."""
    xp = backend.get_array_module(a, b)
    return xp.multiply(a, b, out=new_array(a.shape, like, xp.result_type(a, b)))


def in_layout_of(a, like):
    """``a``, or a copy of it laid out like ``like`` when their axis orders in memory differ."""
    if memory_order(a) == memory_order(like):
        return a
    if is_batch_last(like):
        return to_batch_last(a).transpose(3, 0, 1, 2)
    out = new_array(a.shape, like, a.dtype)
    out[...] = a
    return out
