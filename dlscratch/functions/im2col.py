"""im2col and col2im: a convolution becomes one matrix product.

The column matrix of ``x: (N, C, H, W)`` for a ``kh x kw`` window, stride ``(sh, sw)`` and zero
padding ``(ph, pw)`` has one row per (channel, kernel offset) and one column per (output pixel,
image), with the image index fastest::

    cols: (C*kh*kw, Ho*Wo*N)
    cols[(c*kh + i)*kw + j, (oy*Wo + ox)*N + n] = x_padded[n, c, oy*sh + i, ox*sw + j]
    Ho = (H + 2*ph - kh) // sh + 1,   Wo = (W + 2*pw - kw) // sw + 1

Each column is one window, flattened in the order of a weight ``(O, C, kh, kw)``, so
``weight.reshape(O, -1) @ cols`` is the whole convolution, ``(O, Ho*Wo*N)``. With the images
fastest (cuda-convnet's layout), the copies below move runs of ``Wo*N`` numbers at a time and
col2im's additions run 3x faster than with ``(C*kh*kw, N*Ho*Wo)``.

``col2im`` is the adjoint of ``im2col``: it adds every entry of a column matrix back onto the
pixel it was read from (pixels read by several windows get the sum; padding is dropped), so
``sum(im2col(x) * c) == sum(x * col2im(c))``. It is the backward of im2col and vice versa.

Methods, all giving the same numbers: ``"loops"`` (a Python loop over the windows: the
reference, for small inputs), ``"slices"`` (one strided-slice copy per kernel offset,
kh*kw in all; the default on NumPy), ``"strided"`` (one ``as_strided`` view of every window,
copied into a matrix) and, on CuPy, ``"kernel"`` (one CUDA thread per output number, see
``conv_kernels.py``; the default there). "slices" and "strided" first copy the input, padded,
into batch-last memory ``(C, Hp, Wp, N)`` (no copy when it is stored so and unpadded), and
col2im returns its ``(N, C, H, W)`` result as a view of such memory: an ordinary array with
other strides. The methods are ``im2col_<method>(x, g, out=None)`` (filling ``out`` when given)
and ``col2im_<method>(cols, g)``, with ``g`` the ``Geometry`` below; ``IM2COL`` and ``COL2IM``
map the names to them.
"""

import numbers
from dataclasses import dataclass

from .. import backend
from ..function import Function
from ..tensor import Tensor
from .conv_kernels import col2im_kernel, im2col_kernel
from .threads import in_parts

TILE_NUMBERS = 2048  # numbers of one image in a tile of to_batch_last


@dataclass(frozen=True)
class Geometry:
    """Where the windows of a sliding-window operation fall on an input ``(N, C, H, W)``:
    kernel ``kh x kw``, stride ``(sh, sw)``, padding ``(ph, pw)``; output ``Ho x Wo``."""

    N: int
    C: int
    H: int
    W: int
    kh: int
    kw: int
    sh: int
    sw: int
    ph: int
    pw: int

    @property
    def Ho(self):
        return (self.H + 2 * self.ph - self.kh) // self.sh + 1

    @property
    def Wo(self):
        return (self.W + 2 * self.pw - self.kw) // self.sw + 1

    @property
    def x_shape(self):
        return (self.N, self.C, self.H, self.W)

    @property
    def cols_shape(self):
        return (self.C * self.kh * self.kw, self.Ho * self.Wo * self.N)

    def rows(self, i):
        """The padded rows that kernel row ``i`` reads, one per output row."""
        return slice(i, i + self.sh * (self.Ho - 1) + 1, self.sh)

    def columns(self, j):
        """The padded columns that kernel column ``j`` reads, one per output column."""
        return slice(j, j + self.sw * (self.Wo - 1) + 1, self.sw)


def pair(value, name, op):
    """``value`` (an int or a pair of ints) as ``(height, width)``."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value, value)
    if len(values) != 2 or not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in values):
        raise ValueError(f"{op}: {name} must be an int or a pair of ints (height, width), got {value!r}")
    return int(values[0]), int(values[1])


def geometry(x_shape, kernel_size, stride, padding, op):
    """Check an input shape and window parameters; return their ``Geometry``."""
    x_shape = tuple(x_shape)
    if len(x_shape) != 4:
        hint = "; for one image add a batch dimension with x.unsqueeze(0)" if len(x_shape) == 3 else ""
        raise ValueError(f"{op}: expected a 4-D input (N, C, H, W), got shape {x_shape}{hint}")
    kh, kw = pair(kernel_size, "kernel_size", op)
    sh, sw = pair(stride, "stride", op)
    ph, pw = pair(padding, "padding", op)
    if min(kh, kw, sh, sw) < 1 or min(ph, pw) < 0:
        raise ValueError(
            f"{op}: kernel_size and stride must be positive and padding non-negative, "
            f"got kernel_size {(kh, kw)}, stride {(sh, sw)}, padding {(ph, pw)}"
        )
    N, C, H, W = x_shape
    if kh > H + 2 * ph or kw > W + 2 * pw:
        raise ValueError(
            f"{op}: kernel {kh}x{kw} is larger than the padded input {H + 2 * ph}x{W + 2 * pw} "
            f"(input shape {x_shape}, padding {(ph, pw)}); use a smaller kernel or more padding"
        )
    return Geometry(N, C, H, W, kh, kw, sh, sw, ph, pw)


def memory_order(a):
    """``a``'s axes from the outermost in memory to the innermost (largest stride first)."""
    return sorted(range(a.ndim), key=lambda axis: -a.strides[axis])


def is_batch_last(x):
    """True when ``x: (N, C, H, W)`` is stored as ``(C, H, W, N)``, as a convolution's output is."""
    return memory_order(x) == [1, 2, 3, 0]


def to_batch_last(x, out=None):
    """``x: (N, C, H, W)`` copied into ``out: (C, H, W, N)`` (a new array when None).

    The copy goes in tiles of 16 images by a few channels (about 2,000 numbers of each image):
    a tile's reads stay in cache while its writes, 16 numbers apart, fill whole cache lines. A
    transposing copy of all channels at once ran 1.5-2.5x slower here (29 ms against 12 ms for
    a 25 MB gradient at batch 128).
    """
    if out is None:
        out = backend.get_array_module(x).empty(x.shape[1:] + x.shape[:1], dtype=x.dtype)
    N, C, H, W = x.shape
    channels = max(1, TILE_NUMBERS // (H * W))

    def copy(c0, c1):
        for c in range(c0, c1, channels):
            c_end = min(c + channels, c1)
            for n in range(0, N, 16):
                out[c:c_end, ..., n : n + 16] = x[n : n + 16, c:c_end].transpose(1, 2, 3, 0)

    if backend.is_gpu_array(x):
        out[...] = x.transpose(1, 2, 3, 0)
    else:
        in_parts(copy, C, x.size)
    return out


def pad_batch_last(x, g):
    """``x: (N, C, H, W)`` zero-padded and stored batch-last: ``(C, H + 2*ph, W + 2*pw, N)``.

    An unpadded batch-last input is returned as a transposed view, no copy.
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


def _zero_padded(x, g):
    """``x: (N, C, H, W)`` in a zero-padded ``(N, C, Hp, Wp)`` copy (for the loops)."""
    padded = backend.get_array_module(x).zeros((g.N, g.C, g.H + 2 * g.ph, g.W + 2 * g.pw), dtype=x.dtype)
    padded[:, :, g.ph : g.ph + g.H, g.pw : g.pw + g.W] = x
    return padded


def _cols_for(x, g, out):
    """``out``, or a new array for the column matrix of ``x``."""
    return backend.get_array_module(x).empty(g.cols_shape, dtype=x.dtype) if out is None else out


def im2col_loops(x, g, out=None):
    """One window at a time: the definition, in Python loops. ``x: (N, C, H, W)`` -> ``cols``."""
    padded = _zero_padded(x, g)
    cols = _cols_for(x, g, out)
    for oy in range(g.Ho):
        for ox in range(g.Wo):
            for n in range(g.N):
                y0, x0 = oy * g.sh, ox * g.sw
                cols[:, (oy * g.Wo + ox) * g.N + n] = padded[n, :, y0 : y0 + g.kh, x0 : x0 + g.kw].reshape(-1)
    return cols


def col2im_loops(cols, g):
    """One window at a time, added back: ``cols`` -> ``(N, C, H, W)``."""
    padded = backend.get_array_module(cols).zeros((g.N, g.C, g.H + 2 * g.ph, g.W + 2 * g.pw), dtype=cols.dtype)
    for oy in range(g.Ho):
        for ox in range(g.Wo):
            for n in range(g.N):
                y0, x0 = oy * g.sh, ox * g.sw
                window = cols[:, (oy * g.Wo + ox) * g.N + n].reshape(g.C, g.kh, g.kw)
                padded[n, :, y0 : y0 + g.kh, x0 : x0 + g.kw] += window
    return padded[:, :, g.ph : g.ph + g.H, g.pw : g.pw + g.W]


def im2col_slices(x, g, out=None):
    """Kernel offset ``(i, j)`` reads a strided slice of the padded input: kh*kw slice copies."""
    padded = pad_batch_last(x, g)
    cols = _cols_for(x, g, out)
    blocks = cols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N)

    def copy(c0, c1):
        for i in range(g.kh):
            for j in range(g.kw):
                blocks[c0:c1, i, j] = padded[c0:c1, g.rows(i), g.columns(j)]

    _copy_channels(copy, g.C, cols)
    return cols


def _copy_channels(copy, channels, cols):
    """``copy(c0, c1)`` fills the rows of channels ``c0:c1`` of ``cols``: on NumPy, one part per core."""
    if backend.is_gpu_array(cols):
        copy(0, channels)
    else:
        in_parts(copy, channels, cols.size)


def col2im_slices(cols, g):
    """Kernel offset ``(i, j)`` adds its rows of ``cols`` onto a strided slice: kh*kw slice additions."""
    cols = cols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N)
    padded = backend.get_array_module(cols).zeros((g.C, g.H + 2 * g.ph, g.W + 2 * g.pw, g.N), dtype=cols.dtype)
    for i in range(g.kh):
        for j in range(g.kw):
            padded[:, g.rows(i), g.columns(j)] += cols[:, i, j]
    return unpad_batch_last(padded, g)


def window_view(padded, g):
    """Every window of a batch-last ``padded: (C, Hp, Wp, N)`` as one view ``(C, kh, kw, Ho, Wo, N)``.

    No copy: moving one output row down is ``sh`` padded rows, so that axis gets ``sh`` times the
    row stride. Windows overlap when the stride is smaller than the kernel: never write to the
    whole view at once.
    """
    sC, sH, sW, sN = padded.strides
    shape = (g.C, g.kh, g.kw, g.Ho, g.Wo, g.N)
    strides = (sC, sH, sW, sH * g.sh, sW * g.sw, sN)
    return backend.get_array_module(padded).lib.stride_tricks.as_strided(padded, shape, strides)


def im2col_strided(x, g, out=None):
    """The window view, copied into a matrix."""
    cols = _cols_for(x, g, out)
    blocks, windows = cols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N), window_view(pad_batch_last(x, g), g)

    def copy(c0, c1):
        blocks[c0:c1] = windows[c0:c1]

    _copy_channels(copy, g.C, cols)
    return cols


def col2im_strided(cols, g):
    """Adds through the window view, one kernel offset at a time (within one offset no windows overlap)."""
    cols = cols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N)
    padded = backend.get_array_module(cols).zeros((g.C, g.H + 2 * g.ph, g.W + 2 * g.pw, g.N), dtype=cols.dtype)
    windows = window_view(padded, g)
    for i in range(g.kh):
        for j in range(g.kw):
            windows[:, i, j] += cols[:, i, j]
    return unpad_batch_last(padded, g)


IM2COL = {"loops": im2col_loops, "slices": im2col_slices, "strided": im2col_strided, "kernel": im2col_kernel}
COL2IM = {"loops": col2im_loops, "slices": col2im_slices, "strided": col2im_strided, "kernel": col2im_kernel}


def resolve_method(method, array, op):
    """The im2col method to use for ``array``: ``method``, or the backend's default when None."""
    on_gpu = backend.is_gpu_array(array)
    if method is None:
        return "kernel" if on_gpu else "slices"
    if method not in IM2COL:
        raise ValueError(f"{op}: unknown method {method!r}; choose one of {', '.join(map(repr, IM2COL))}")
    if method == "kernel" and not on_gpu:
        raise ValueError(f"{op}: method 'kernel' needs CuPy arrays; move the input with .to('gpu') or use 'slices'")
    return method


def array_of(x):
    """The array inside a tensor; arrays pass through."""
    return x.data if isinstance(x, Tensor) else x


def im2col_array(x, kernel_size, stride=1, padding=0, method=None):
    """``x: (N, C, H, W)`` array -> ``cols: (C*kh*kw, Ho*Wo*N)`` array (layout in the module docstring)."""
    g = geometry(x.shape, kernel_size, stride, padding, "im2col")
    return IM2COL[resolve_method(method, x, "im2col")](x, g)


def col2im_array(cols, x_shape, kernel_size, stride=1, padding=0, method=None):
    """``cols: (C*kh*kw, Ho*Wo*N)`` array -> ``(N, C, H, W)`` array: the adjoint of ``im2col_array``."""
    g = geometry(x_shape, kernel_size, stride, padding, "col2im")
    _check_cols(cols.shape, g)
    return COL2IM[resolve_method(method, cols, "col2im")](cols, g)


def _check_cols(shape, g):
    if tuple(shape) != g.cols_shape:
        raise ValueError(
            f"col2im: cols of shape {tuple(shape)} do not match input {g.x_shape} with kernel {g.kh}x{g.kw}, "
            f"stride {(g.sh, g.sw)}, padding {(g.ph, g.pw)}: expected {g.cols_shape} (C*kh*kw, Ho*Wo*N)"
        )


class Im2col(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, g, method):
        self.g, self.method = g, method

    def forward(self, x):
        return IM2COL[self.method](x, self.g)

    def backward(self, gcols):
        return COL2IM[self.method](gcols, self.g)


class Col2im(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, g, method):
        self.g, self.method = g, method

    def forward(self, cols):
        return COL2IM[self.method](cols, self.g)

    def backward(self, gx):
        return IM2COL[self.method](gx, self.g)


def im2col(x, kernel_size, stride=1, padding=0, method=None):
    """Differentiable im2col: ``x: (N, C, H, W)`` -> ``(C*kh*kw, Ho*Wo*N)``; backward is col2im."""
    g = geometry(x.shape, kernel_size, stride, padding, "im2col")
    return Im2col(g, resolve_method(method, array_of(x), "im2col"))(x)


def col2im(cols, x_shape, kernel_size, stride=1, padding=0, method=None):
    """Differentiable col2im: ``(C*kh*kw, Ho*Wo*N)`` -> ``x_shape = (N, C, H, W)``; backward is im2col."""
    g = geometry(x_shape, kernel_size, stride, padding, "col2im")
    _check_cols(cols.shape, g)
    return Col2im(g, resolve_method(method, array_of(cols), "col2im"))(cols)
