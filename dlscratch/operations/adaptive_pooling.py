"""Adaptive average pooling: the output size is given, and the windows follow from it.

PyTorch's windows: output row ``i`` of ``out`` averages input rows ``floor(i*H/out)`` to
``ceil((i+1)*H/out)`` (end excluded). When ``out`` divides ``H`` these are ``H/out`` rows each, without
overlap; otherwise neighbouring windows may share a row and differ in size by one. Columns alike.

Averaging a rectangle is averaging its rows, then its columns, so the pooling is two small matrix
products: ``y = R @ x @ C.T`` with ``R: (out_h, H)`` holding ``1/size`` across each row window
and ``C: (out_w, W)`` likewise. The backward is the transpose of the same products,
``gx = R.T @ gy @ C``: each input element receives ``1/size`` of the gradient of every window holding it.

Each product is one 2-D GEMM over the whole batch (``on_both_axes``), not ``R`` broadcast over the images, which
CuPy makes as a batched GEMM of many small matrices after three kernels per batch dimension that list their
addresses. ``R`` and ``C`` are made once per size, dtype and device (``window_matrices``).
"""

import functools
import math

from .. import backend
from ..engine.function import Function
from .products import gemm
from .shape import is_int


@functools.cache
def window_matrices(sizes, output_size, xp, dtype, device=None):
    """``(R, C)`` of ``window_matrix`` for an input of ``sizes`` ``(H, W)`` pooled to ``output_size``, made once per
    sizes, array module, dtype and device: on a GPU each is a dozen small kernels. Read them, never write them, and
    never call this inside a CUDA graph capture (what is made there holds values only when the graph replays)."""
    return tuple(window_matrix(size, out, xp, dtype) for size, out in zip(sizes, output_size))


def window_matrix(size, out, xp, dtype):
    """``(out, size)``: row ``i`` is ``1/count`` on PyTorch's window ``i`` of an axis of ``size``, 0 elsewhere."""
    i = xp.arange(out)
    start, end = (i * size) // out, -((-(i + 1) * size) // out)
    position = xp.arange(size)
    inside = (start[:, None] <= position) & (position < end[:, None])
    return (inside / (end - start)[:, None]).astype(dtype)


class AdaptiveAvgPool2d(Function):
    """x: (..., H, W) -> (..., out_h, out_w), the mean of each of PyTorch's adaptive windows."""

    saves_inputs = False  # backward reads the window matrices only

    def __init__(self, output_size):
        self.output_size = output_size

    def forward(self, x):
        xp = backend.get_array_module(x)
        device = getattr(getattr(x, "device", None), "id", None)  # a CuPy array's GPU
        # made inside a CUDA graph capture, they hold values only when the graph replays: not kept then
        make = window_matrices.__wrapped__ if backend.capturing() else window_matrices
        self.rows, self.columns = make(x.shape[-2:], self.output_size, xp, x.dtype, device)
        return on_both_axes(self.rows, x, self.columns.T)

    def backward(self, gy):
        return on_both_axes(self.rows.T, gy, self.columns)


def on_both_axes(left, x, right):
    """``left @ x[..., :, :] @ right`` for every matrix of ``x: (..., H, W)``, ``left: (h, H)``,
    ``right: (W, w)`` -> ``(..., h, w)``, in two 2-D products: ``x`` read as rows of ``W`` times ``right``, then
    ``left`` times that result with its ``H`` axis moved first (a copy of the smaller array)."""
    xp = backend.get_array_module(x)
    batch, (H, W), (h, w) = x.shape[:-2], x.shape[-2:], (left.shape[0], right.shape[1])
    n = math.prod(batch)
    columns_done = gemm(x.reshape(n * H, W), right).reshape(n, H, w)
    both = gemm(left, columns_done.transpose(1, 0, 2).reshape(H, n * w))  # (h, n * w)
    return xp.ascontiguousarray(both.reshape(h, n, w).transpose(1, 0, 2)).reshape(*batch, h, w)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling of ``input: (N, C, H, W)`` or ``(C, H, W)`` to ``output_size``: an int ``s`` for
    ``(s, s)``, or a pair ``(out_h, out_w)`` where None keeps that input size. ``output_size=1`` is global
    average pooling. Any sizes work, with PyTorch's windows (module docstring)."""
    if input.ndim not in (3, 4):
        raise ValueError(f"adaptive_avg_pool2d: expected input (N, C, H, W) or (C, H, W), got shape {input.shape}")
    if input.dtype.kind != "f":
        raise TypeError(f"adaptive_avg_pool2d: expected a floating-point input, got {input.dtype}; use .float()")
    sizes = (output_size, output_size) if is_int(output_size) else output_size
    sizes = tuple(sizes) if isinstance(sizes, (tuple, list)) else (sizes,)
    if len(sizes) != 2 or not all(s is None or (is_int(s) and s > 0) for s in sizes):
        raise ValueError(f"adaptive_avg_pool2d: output_size must be a positive int or a pair of them (None keeps "
                         f"the input's size), got {output_size!r}")
    sizes = tuple(int(input.shape[-2 + k] if s is None else s) for k, s in enumerate(sizes))
    return AdaptiveAvgPool2d(sizes)(input)
