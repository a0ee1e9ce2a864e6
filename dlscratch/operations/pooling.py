"""Max and average pooling (the reference implementation).

Kernel offset ``(i, j)`` of every window at once is one strided slice of the padded input,
``padded[:, :, i::sh, j::sw]`` cut to ``(N, C, Ho, Wo)``; pooling combines the ``kh*kw`` slices
elementwise, with no loop over pixels. Output sizes are PyTorch's with ``ceil_mode=False``:
``Ho = (H + 2*ph - kh) // sh + 1``. Max pooling pads with minus infinity, and a real element
beats the padding even when it is minus infinity itself, so padding never wins; average pooling
pads with zeros and divides by ``kh*kw`` (PyTorch's ``count_include_pad=True``).

The max-pool backward sends each window's gradient to one element: the maximum, and with ties
the first maximal element found scanning the window column by column (the leftmost column
holding the maximum, the topmost element in it), the rule of the fast path
(``dlscratch/fast/pooling.py``), which also holds the backward variants lesson 05 compares.
(PyTorch scans row by row, so on ties the element can differ from PyTorch's; the values never do.)
NaN propagates, as in PyTorch: a window holding a NaN has the maximum NaN, and its gradient goes to
the last NaN found in that scan.
"""

from .. import backend
from ..engine.function import Function
from ..engine.switch import switched
from .im2col import geometry, pair


def offsets(g):
    """The kernel offsets ``(i, j)``, columns outer: the order in which ties are decided."""
    return [(i, j) for j in range(g.kw) for i in range(g.kh)]


def window_slice(padded, g, i, j):
    """Offset ``(i, j)`` of every window: ``(N, C, Ho, Wo)``, a view of ``padded``."""
    return padded[:, :, g.rows(i), g.columns(j)]


def pad(x, g, value):
    xp = backend.get_array_module(x)
    return xp.pad(x, ((0, 0), (0, 0), (g.ph, g.ph), (g.pw, g.pw)), constant_values=value)


def zeros_padded(like, g):
    """Zeros ``(N, C, H + 2*ph, W + 2*pw)`` to gather an input gradient in."""
    return backend.get_array_module(like).zeros((g.N, g.C, g.H + 2 * g.ph, g.W + 2 * g.pw), dtype=like.dtype)


def crop(padded, g):
    return padded[:, :, g.ph : g.ph + g.H, g.pw : g.pw + g.W]


def is_real(g, i, j, xp):
    """``(Ho, Wo)`` bools: where offset ``(i, j)`` of a window falls on the input, not on its padding."""
    rows, columns = xp.arange(g.Ho) * g.sh + i, xp.arange(g.Wo) * g.sw + j
    return ((g.ph <= rows) & (rows < g.ph + g.H))[:, None] & ((g.pw <= columns) & (columns < g.pw + g.W))


class MaxPool2d(Function):
    """x: (N, C, H, W) -> (N, C, Ho, Wo), the maximum of each window."""

    saves_inputs = False  # backward reads which offset won, kept by forward

    def __init__(self, geometry):
        self.geometry = geometry

    def forward(self, x):
        geometry, xp = self.geometry, backend.get_array_module(x)
        padded = pad(x, geometry, -xp.inf)
        y = winner = real = None
        for k, (i, j) in enumerate(offsets(geometry)):
            view, view_real = window_slice(padded, geometry, i, j), is_real(geometry, i, j, xp)
            if y is None:
                y, winner, real = view.copy(), xp.zeros(view.shape, dtype=xp.int32), view_real
            else:
                # strictly greater: on a tie the earlier offset keeps the window; but a NaN always
                # wins (the maximum is NaN), and so does a real element over padding, even -inf over -inf
                beats = (view > y) | xp.isnan(view) | (view_real & ~real)
                y = xp.where(beats, view, y)
                winner = xp.where(beats, k, winner)
                real = real | view_real
        self.winner = winner  # (N, C, Ho, Wo): the offset number of each window's maximum
        return y

    def backward(self, gy):
        geometry = self.geometry
        gx = zeros_padded(gy, geometry)
        for k, (i, j) in enumerate(offsets(geometry)):
            window_slice(gx, geometry, i, j)[...] += gy * (self.winner == k)
        return crop(gx, geometry)


class AvgPool2d(Function):
    """x: (N, C, H, W) -> (N, C, Ho, Wo), the mean of each zero-padded window."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry):
        self.geometry = geometry

    def forward(self, x):
        geometry = self.geometry
        padded = pad(x, geometry, 0)
        return sum(window_slice(padded, geometry, i, j) for i, j in offsets(geometry)) / (geometry.kh * geometry.kw)

    def backward(self, gy):
        geometry = self.geometry
        gx = zeros_padded(gy, geometry)
        share = gy / (geometry.kh * geometry.kw)  # each element of a window contributed 1 / (kh*kw) of its mean
        for i, j in offsets(geometry):
            window_slice(gx, geometry, i, j)[...] += share
        return crop(gx, geometry)


def check_window(kernel_size, stride, padding, op):
    """``kernel_size``, ``stride`` (None means ``kernel_size``) and ``padding`` as ``(height, width)``
    pairs, checked as PyTorch checks them: kernel and stride positive, padding non-negative and at
    most half the kernel. ``ValueError`` naming ``op`` and the argument otherwise."""
    kernel = pair(kernel_size, "kernel_size", op)
    stride = kernel if stride is None else pair(stride, "stride", op)
    padding = pair(padding, "padding", op)
    for name, value, least in (("kernel_size", kernel, 1), ("stride", stride, 1), ("padding", padding, 0)):
        if min(value) < least:
            raise ValueError(f"{op}: {name} must be {'positive' if least else 'non-negative'}, got {value}")
    if 2 * padding[0] > kernel[0] or 2 * padding[1] > kernel[1]:
        raise ValueError(
            f"{op}: padding {padding} must be at most half the kernel {kernel}, "
            "or some windows would hold nothing but padding"
        )
    return kernel, stride, padding


def _geometry(x, kernel_size, stride, padding, op):
    """Check a pooling call; return its geometry. ``stride`` None means ``kernel_size``."""
    kernel, stride, padding = check_window(kernel_size, stride, padding, op)
    g = geometry(x.shape, kernel, stride, padding, op)
    if x.dtype.kind != "f":
        raise TypeError(f"{op}: expected a floating-point input, got {x.dtype}; use .astype('float32')")
    return g


@switched
def max_pool2d(x, kernel_size, stride=None, padding=0, backward=None):
    """Max pooling of ``x: (N, C, H, W)`` -> ``(N, C, Ho, Wo)``; padding is minus infinity.

    ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding`` are ints or
    ``(height, width)`` pairs. ``backward`` picks one of the fast path's backward variants
    (``dlscratch/fast/pooling.py``); the reference path has one.
    """
    g = _geometry(x, kernel_size, stride, padding, "max_pool2d")
    if backward is not None:
        raise ValueError(
            "max_pool2d: backward= picks a fast-path variant (see dlscratch/fast/pooling.py); the reference path "
            f"has one implementation; leave it None or leave dlscratch.reference() (got backward={backward!r})"
        )
    return MaxPool2d(g)(x)


@switched
def avg_pool2d(x, kernel_size, stride=None, padding=0):
    """Average pooling of ``x: (N, C, H, W)`` -> ``(N, C, Ho, Wo)``; zero padding counts in the mean."""
    return AvgPool2d(_geometry(x, kernel_size, stride, padding, "avg_pool2d"))(x)
