"""Fast im2col and col2im: the methods lesson 04 compares, the threaded copies, the CUDA kernels.

The reference (``operations/im2col.py``) pads the input in NCHW order and copies one strided slice
per kernel offset, transposing it into the column layout as it goes. The methods here give the
same numbers faster:

- ``"slices"`` (the default on NumPy; ``im2col_slices.py``): the same kh*kw slice copies, but from the input padded into
  batch-last memory ``(C, Hp, Wp, N)`` (``layout.py``; no copy at all when a convolution's output
  comes in unpadded), so every copy moves runs of ``Wo*N`` contiguous numbers, split over the
  cores (``threads.py``). col2im returns its ``(N, C, H, W)`` result as a view of batch-last memory.
- ``"strided"``: one ``as_strided`` view of every window, copied into the matrix at once.
- ``"kernel"`` (the default on CuPy): one CUDA thread per output number (``conv_kernels.py``).
- ``"loops"``: one window at a time in Python, the definition, for lesson 04's first timing.

``im2col_<method>(x, g, out=None)`` fills ``out`` when given; ``col2im_<method>(cols, g)``;
``IM2COL`` and ``COL2IM`` map the names to them. ``python -m dlscratch.bench conv`` times a convolution with
"slices" and with "strided".
"""

from .. import backend
from ..engine.function import Function
from ..engine.switch import fast_version_of
from ..engine.tensor import data_of
from ..operations.im2col import _check_cols, geometry
from ..operations.im2col import col2im as reference_col2im
from ..operations.im2col import col2im_array as reference_col2im_array
from ..operations.im2col import im2col as reference_im2col
from ..operations.im2col import im2col_array as reference_im2col_array
from .conv_kernels import col2im_kernel, im2col_kernel
from .im2col_slices import col2im_slices, columns_for, copy_channels, im2col_slices
from .layout import pad_batch_last, unpad_batch_last


def _zero_padded(x, g):
    """``x: (N, C, H, W)`` in a zero-padded ``(N, C, Hp, Wp)`` copy (for the loops)."""
    padded = backend.get_array_module(x).zeros((g.N, g.C, g.H + 2 * g.ph, g.W + 2 * g.pw), dtype=x.dtype)
    padded[:, :, g.ph : g.ph + g.H, g.pw : g.pw + g.W] = x
    return padded


def im2col_loops(x, g, out=None):
    """One window at a time: the definition, in Python loops. ``x: (N, C, H, W)`` -> ``cols``."""
    padded = _zero_padded(x, g)
    cols = columns_for(x, g, out)
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
    cols = columns_for(x, g, out)
    blocks, windows = cols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N), window_view(pad_batch_last(x, g), g)

    def copy(c0, c1):
        blocks[c0:c1] = windows[c0:c1]

    copy_channels(copy, g.C, cols)
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
        return "kernel" if on_gpu and backend.has_kernels() else "slices"
    if method not in IM2COL:
        raise ValueError(f"{op}: unknown method {method!r}; choose one of {', '.join(map(repr, IM2COL))}")
    if method == "kernel" and not on_gpu:
        raise ValueError(f"{op}: method 'kernel' needs CuPy arrays; move the input with .to('gpu') or use 'slices'")
    return method




class Im2col(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry, method):
        self.geometry, self.method = geometry, method

    def forward(self, x):
        return IM2COL[self.method](x, self.geometry)

    def backward(self, gcols):
        return COL2IM[self.method](gcols, self.geometry)


class Col2im(Function):
    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry, method):
        self.geometry, self.method = geometry, method

    def forward(self, cols):
        return COL2IM[self.method](cols, self.geometry)

    def backward(self, gx):
        return IM2COL[self.method](gx, self.geometry)


@fast_version_of(reference_im2col_array)
def im2col_array(x, kernel_size, stride=1, padding=0, method=None):
    g = geometry(x.shape, kernel_size, stride, padding, "im2col")
    return IM2COL[resolve_method(method, x, "im2col")](x, g)


@fast_version_of(reference_col2im_array)
def col2im_array(cols, x_shape, kernel_size, stride=1, padding=0, method=None):
    g = geometry(x_shape, kernel_size, stride, padding, "col2im")
    _check_cols(cols.shape, g)
    return COL2IM[resolve_method(method, cols, "col2im")](cols, g)


@fast_version_of(reference_im2col)
def im2col(x, kernel_size, stride=1, padding=0, method=None):
    g = geometry(x.shape, kernel_size, stride, padding, "im2col")
    return Im2col(g, resolve_method(method, data_of(x), "im2col"))(x)


@fast_version_of(reference_col2im)
def col2im(cols, x_shape, kernel_size, stride=1, padding=0, method=None):
    g = geometry(x_shape, kernel_size, stride, padding, "col2im")
    _check_cols(cols.shape, g)
    return Col2im(g, resolve_method(method, data_of(cols), "col2im"))(cols)
