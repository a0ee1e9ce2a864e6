"""Max pooling on the GPU: one CUDA kernel forward, one backward (CuPy only).

The separable maximum of ``pooling.py`` is two stages of a few array operations per kernel offset, and its
backward routes the gradient back through both: for 2x2 pooling some twenty launches forward and backward.
Here one thread per output computes the same maximum with the same rules, in the same order: over each
column of its window the rows, then over the columns; at each stage the last offset that beats the running
maximum wins (a NaN beats everything; the first real element beats the padding), and the value is
``maximum``'s (NaN propagates). It writes the maximum and the flat index of the winner in the input. The
backward is a *gather*, like ``conv_kernels``' col2im: one thread per input element sums the gradients of
the windows whose winner it is, so no two threads write one place and the result is deterministic.
"""

import numpy

from .. import backend
from .pool_windows import axis_views, first_real, pad, running_max

_FORWARD = """
const ptrdiff_t ox = i % Wo;
const ptrdiff_t oy = i / Wo % Ho;
const ptrdiff_t c = i / (Wo * Ho) % C;
const ptrdiff_t b = i / (Wo * Ho * C);
const ptrdiff_t top = oy * sh - ph;  // the window's first row and column, in the input's coordinates
const ptrdiff_t left = ox * sw - pw;
const ptrdiff_t first_row = max(ph - oy * sh, (ptrdiff_t)0);  // offset of the first row on the input
const ptrdiff_t first_col = max(pw - ox * sw, (ptrdiff_t)0);
T best = 0;
ptrdiff_t win_row = 0;
ptrdiff_t win_col = 0;
for (ptrdiff_t kx = 0; kx < kw; ++kx) {
    const ptrdiff_t xx = left + kx;
    T column = 0;
    ptrdiff_t column_row = 0;
    for (ptrdiff_t ky = 0; ky < kh; ++ky) {
        const ptrdiff_t yy = top + ky;
        T v = -infinity;
        if (0 <= yy && yy < H && 0 <= xx && xx < W) {
            const ptrdiff_t at[] = {b, c, yy, xx};
            v = x[at];
        }
        if (ky == 0) {
            column = v;
        } else {
            if (v > column || isnan(v) || (ky <= ph && ky == first_row)) column_row = ky;
            if (v > column || isnan(v)) column = v;
        }
    }
    if (kx == 0) {
        best = column;
        win_row = column_row;
    } else {
        if (column > best || isnan(column) || (kx <= pw && kx == first_col)) {
            win_col = kx;
            win_row = column_row;
        }
        if (column > best || isnan(column)) best = column;
    }
}
y = best;
const ptrdiff_t row = top + win_row;
const ptrdiff_t col = left + win_col;
winner = (0 <= row && row < H && 0 <= col && col < W) ? ((b * C + c) * H + row) * W + col : -1;
"""

_BACKWARD = """
const ptrdiff_t xx = i % W;
const ptrdiff_t yy = i / W % H;
const ptrdiff_t c = i / (W * H) % C;
const ptrdiff_t b = i / (W * H * C);
T total = 0;
for (ptrdiff_t ky = 0; ky < kh; ++ky) {
    const ptrdiff_t ty = yy + ph - ky;
    if (ty < 0 || ty % sh != 0 || ty / sh >= Ho) continue;
    for (ptrdiff_t kx = 0; kx < kw; ++kx) {
        const ptrdiff_t tx = xx + pw - kx;
        if (tx < 0 || tx % sw != 0 || tx / sw >= Wo) continue;
        const ptrdiff_t at[] = {b, c, ty / sh, tx / sw};
        if (winner[at] == i) total += gy[at];
    }
}
gx = total;
"""

_SIZES = ", ".join(f"int32 {name}" for name in ("C", "H", "W", "Ho", "Wo", "kh", "kw", "sh", "sw", "ph", "pw"))


def _sizes(g):
    return (g.C, g.H, g.W, g.Ho, g.Wo, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw)


# The NumPy twins, the array path's arithmetic (``bench/strict_cupy/kernels.py`` checks the kernels against them).
def _geometry_of(x_shape, sizes):
    from ..operations.pooling import geometry

    C, H, W, _, _, kh, kw, sh, sw, ph, pw = (int(v) for v in sizes)
    return geometry((x_shape[0], C, H, W), (kh, kw), (sh, sw), (ph, pw), "max_pool2d")


def _forward_twin(x, *arguments):
    *sizes, _, y, winner = arguments
    g = _geometry_of(x.shape, sizes)
    padded = pad(x, g, -numpy.inf)
    rows, row_offset = running_max(axis_views(padded, g, 2), first_real(g, 2, numpy) if g.ph else None)
    y[...], col_offset = running_max(axis_views(rows, g, 3), first_real(g, 3, numpy) if g.pw else None)
    winning_column = numpy.arange(g.Wo) * g.sw + col_offset.astype(numpy.int64)  # in the padded input
    win_row = numpy.take_along_axis(row_offset, winning_column, axis=3)
    row = numpy.arange(g.Ho)[:, None] * g.sh - g.ph + win_row
    col = numpy.arange(g.Wo) * g.sw - g.pw + col_offset
    plane = numpy.arange(g.N * g.C).reshape(g.N, g.C, 1, 1)
    inside = (row >= 0) & (row < g.H) & (col >= 0) & (col < g.W)
    winner[...] = numpy.where(inside, (plane * g.H + row) * g.W + col, -1)


def _backward_twin(gy, winner, *arguments):
    *sizes, gx = arguments
    flat = numpy.zeros(gx.size, dtype=gx.dtype)
    won = winner.reshape(-1) >= 0
    numpy.add.at(flat, winner.reshape(-1)[won], gy.reshape(-1)[won])
    gx[...] = flat.reshape(gx.shape)


def max_pool_forward(x, g, y, winner):
    """``x: (N, C, H, W)`` -> the window maxima into ``y: (N, C, Ho, Wo)`` and the winners' flat indices into
    ``winner`` (int64, -1 where a window has no input element)."""
    kernel = backend.elementwise_kernel(f"raw T x, {_SIZES}, float32 infinity", "T y, int64 winner", _FORWARD,
                                        "dlscratch_max_pool", twin=_forward_twin)
    kernel(x, *_sizes(g), float("inf"), y, winner)


def max_pool_backward(gy, winner, g, gx):
    """``gx: (N, C, H, W)``: each input element's sum of ``gy`` over the windows it won."""
    kernel = backend.elementwise_kernel(f"raw T gy, raw int64 winner, {_SIZES}", "T gx", _BACKWARD,
                                        "dlscratch_max_pool_backward", twin=_backward_twin)
    kernel(gy, winner, *_sizes(g), gx)
