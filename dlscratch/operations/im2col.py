"""im2col and col2im: a convolution becomes one matrix product (the reference implementation).

The column matrix of ``x: (N, C, H, W)`` for a ``kh x kw`` window, stride ``(sh, sw)`` and zero
padding ``(ph, pw)`` has one row per (channel, kernel offset) and one column per (output pixel,
image), with the image index fastest::

    cols: (C*kh*kw, Ho*Wo*N)
    cols[(c*kh + i)*kw + j, (oy*Wo + ox)*N + n] = x_padded[n, c, oy*sh + i, ox*sw + j]
    Ho = (H + 2*ph - kh) // sh + 1,   Wo = (W + 2*pw - kw) // sw + 1

Each column is one window, flattened in the order of a weight ``(O, C, kh, kw)``, so
``weight.reshape(O, -1) @ cols`` is the whole convolution, ``(O, Ho*Wo*N)``. Images fastest is
cuda-convnet's layout: with it, copies and col2im's additions move runs of ``Wo*N`` contiguous
numbers at a time, where ``(C*kh*kw, N*Ho*Wo)`` gives runs of ``Wo``; the fast path
(``dlscratch/fast/im2col.py``) builds on it.

Kernel offset ``(i, j)`` reads one strided slice of the padded input, ``padded[:, :, i::sh,
j::sw]`` cut to ``Ho x Wo``: the whole column matrix is kh*kw slice copies, with no loop over
pixels. ``col2im`` is the adjoint: it adds every entry of a column matrix back onto the pixel it
was read from (pixels read by several windows get the sum; padding is dropped), so
``sum(im2col(x) * c) == sum(x * col2im(c))``. Each is the other's backward.
"""

import numbers
from dataclasses import dataclass, field

from .. import backend
from ..engine.function import Function
from ..engine.switch import switched


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
    Ho: int = field(init=False)  # worked out once: every copy of a window reads them
    Wo: int = field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "Ho", (self.H + 2 * self.ph - self.kh) // self.sh + 1)
        object.__setattr__(self, "Wo", (self.W + 2 * self.pw - self.kw) // self.sw + 1)

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
    if len(values) != 2 or not (isinstance(values[0], numbers.Integral) and isinstance(values[1], numbers.Integral)) \
            or isinstance(values[0], bool) or isinstance(values[1], bool):
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


def im2col_reference(x, g):
    """``x: (N, C, H, W)`` -> ``cols: (C*kh*kw, Ho*Wo*N)``: one slice copy per kernel offset."""
    xp = backend.get_array_module(x)
    padded = xp.pad(x, ((0, 0), (0, 0), (g.ph, g.ph), (g.pw, g.pw)))
    cols = xp.empty((g.C, g.kh, g.kw, g.Ho, g.Wo, g.N), dtype=x.dtype)
    for i in range(g.kh):
        for j in range(g.kw):
            window_offset = padded[:, :, g.rows(i), g.columns(j)]  # (N, C, Ho, Wo)
            cols[:, i, j] = window_offset.transpose(1, 2, 3, 0)  # (C, Ho, Wo, N)
    return cols.reshape(g.cols_shape)


def col2im_reference(cols, g):
    """``cols: (C*kh*kw, Ho*Wo*N)`` -> ``(N, C, H, W)``: each kernel offset's rows added back."""
    xp = backend.get_array_module(cols)
    blocks = cols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N)
    padded = xp.zeros((g.N, g.C, g.H + 2 * g.ph, g.W + 2 * g.pw), dtype=cols.dtype)
    for i in range(g.kh):
        for j in range(g.kw):
            padded[:, :, g.rows(i), g.columns(j)] += blocks[:, i, j].transpose(3, 0, 1, 2)
    return padded[:, :, g.ph : g.ph + g.H, g.pw : g.pw + g.W]


def refuse_method(method, op, argument="method"):
    """The reference path has one implementation: refuse a fast-path ``method`` (given as ``argument``)."""
    if method is not None:
        raise ValueError(
            f"{op}: {argument}={method!r} picks a fast-path variant (see dlscratch/fast/im2col.py); the reference "
            f"path has one implementation: leave {argument}=None, or run outside dlscratch.reference()"
        )


@switched
def im2col_array(x, kernel_size, stride=1, padding=0, method=None):
    """``x: (N, C, H, W)`` array -> ``cols: (C*kh*kw, Ho*Wo*N)`` array (layout in the module docstring)."""
    g = geometry(x.shape, kernel_size, stride, padding, "im2col")
    refuse_method(method, "im2col")
    return im2col_reference(x, g)


@switched
def col2im_array(cols, x_shape, kernel_size, stride=1, padding=0, method=None):
    """``cols: (C*kh*kw, Ho*Wo*N)`` array -> ``(N, C, H, W)`` array: the adjoint of ``im2col_array``."""
    g = geometry(x_shape, kernel_size, stride, padding, "col2im")
    _check_cols(cols.shape, g)
    refuse_method(method, "col2im")
    return col2im_reference(cols, g)


def _check_cols(shape, g):
    if tuple(shape) != g.cols_shape:
        raise ValueError(
            f"col2im: cols of shape {tuple(shape)} do not match input {g.x_shape} with kernel {g.kh}x{g.kw}, "
            f"stride {(g.sh, g.sw)}, padding {(g.ph, g.pw)}: expected {g.cols_shape} (C*kh*kw, Ho*Wo*N)"
        )


class Im2col(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry):
        self.geometry = geometry

    def forward(self, x):
        return im2col_reference(x, self.geometry)

    def backward(self, gcols):
        return col2im_reference(gcols, self.geometry)


class Col2im(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry):
        self.geometry = geometry

    def forward(self, cols):
        return col2im_reference(cols, self.geometry)

    def backward(self, gx):
        return im2col_reference(gx, self.geometry)


@switched
def im2col(x, kernel_size, stride=1, padding=0, method=None):
    """Differentiable im2col: ``x: (N, C, H, W)`` -> ``(C*kh*kw, Ho*Wo*N)``; backward is col2im."""
    g = geometry(x.shape, kernel_size, stride, padding, "im2col")
    refuse_method(method, "im2col")
    return Im2col(g)(x)


@switched
def col2im(cols, x_shape, kernel_size, stride=1, padding=0, method=None):
    """Differentiable col2im: ``(C*kh*kw, Ho*Wo*N)`` -> ``x_shape = (N, C, H, W)``; backward is im2col."""
    g = geometry(x_shape, kernel_size, stride, padding, "col2im")
    _check_cols(cols.shape, g)
    refuse_method(method, "col2im")
    return Col2im(g)(cols)
