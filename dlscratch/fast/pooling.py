"""Fast max and average pooling: the separable maximum, layout kept, and lesson 05's backward variants.

Kernel offset ``(i, j)`` of every window at once is one strided view of the padded input,
``(N, C, Ho, Wo)``; pooling combines the ``kh*kw`` views elementwise (two ``maximum`` calls
on four views for 2x2 pooling), with no im2col copy. Output sizes are PyTorch's with
``ceil_mode=False``: ``Ho = (H + 2*ph - kh) // sh + 1``. Max pooling pads with minus infinity,
and the first real element of each window beats the padding even when it is minus infinity itself,
so padding never wins; average pooling pads with zeros and divides by ``kh*kw`` (PyTorch's
``count_include_pad=True``). NaN propagates, as in PyTorch: each stage lets a NaN win, the last
one it meets, so a window holding a NaN has the maximum NaN and sends its gradient to a NaN.

Max-pool backward variants (``max_pool2d(..., backward=...)``), one function each below:

- ``"offsets"`` (the default on every backend; fastest on the CPU): the maximum is separable,
  over each window's rows, then over its columns (see ``MaxPool2d``), and forward keeps the
  offset of each stage's winner (1 byte each). Backward retraces the two stages: ``gy`` goes to
  the view of the winning column, then to the view of the winning row. No scatter, no atomics.
  On a GPU the same rule runs as one kernel forward and one backward (``pooling_kernels.py``).
- ``"mask"`` (the Qiita article's fix): forward keeps a 0/1 mask per offset, ``view == max``; backward
  multiplies. **Ties**: every maximal element of a window keeps a 1, so each receives the full
  gradient (a window of four equal numbers passes on four times ``gy``). PyTorch and the other
  variants give it to one maximal element only.
- ``"argmax_scatter"`` (the Qiita article's slow original): forward keeps flat argmax indices into the
  padded input; backward assigns ``gx.flat[index] = gy`` by fancy indexing. Assignment drops all
  but one contribution when windows overlap, so it is only allowed for ``stride >= kernel_size``.
- ``"scatter_add"``: the same indices, accumulated with the shim's ``scatter_add`` (correct for
  overlapping windows).

With ties, all but "mask" pass the gradient to exactly one maximal element: forward takes the
maximum over each window's rows first, then over columns, keeping the first winner each time, so
the leftmost column holding the maximum wins and, within it, the topmost element (PyTorch scans
row by row instead, so on ties the element can differ from PyTorch's; the values never do).
The reference (``functions/pooling.py``) scans the offsets column by column with the same rule,
so both paths send a tied window's gradient to the same element.

Against the reference, which pads a copy, keeps a 4-byte winner per output and adds ``gy * (winner == k)``
once per offset into a zeroed gradient: here the first stage runs on contiguous rows, the offsets take 1 byte,
the layout is kept (no transposing copy of a batch-last input), and windows that tile the input write the
gradient once, without zeroing it first. ``python -m dlscratch.bench pool`` times both paths and every backward
variant.
"""

from .. import backend
from ..function import Function
from ..functions.pooling import _geometry
from ..functions.pooling import avg_pool2d as reference_avg_pool2d
from ..functions.pooling import max_pool2d as reference_max_pool2d
from ..paths import fast_version_of
from . import pooling_kernels
from .layout import in_layout_of, new_array
from .pool_windows import axis_views, crop, first_real, pad, padded_shape, running_max, window_views


def _tiles(g, axis):
    """True when the windows along ``axis`` cover the padded input exactly once (stride == kernel)."""
    if axis == 2:
        return g.sh == g.kh and g.H + 2 * g.ph == g.Ho * g.kh
    return g.sw == g.kw and g.W + 2 * g.pw == g.Wo * g.kw


def fold_axis(parts, shape, like, g, axis):
    """An array of ``shape`` with ``parts[i]`` added onto its ``i``-th view along ``axis``.

    When the windows tile that axis each number gets exactly one part, written without zeroing.
    """
    tiles = _tiles(g, axis)
    out = None
    for k, part in enumerate(parts):
        if out is None:
            out = new_array(shape, like, part.dtype, None if tiles else 0)
            views = axis_views(out, g, axis)
        if tiles:
            views[k][...] = part
        else:
            views[k] += part
    return out


def fold(parts, like, g):
    """``(N, C, Hp, Wp)`` with ``parts[k]: (N, C, Ho, Wo)`` added onto window view ``k``."""
    tiles = _tiles(g, 2) and _tiles(g, 3)
    out = None
    for k, part in enumerate(parts):
        if out is None:
            out = new_array(padded_shape(g), like, part.dtype, None if tiles else 0)
            views = window_views(out, g)
        if tiles:
            views[k][...] = part
        else:
            views[k] += part
    return out


def route_axis(grad, offset, shape, like, g, axis):
    """An array of ``shape`` whose ``k``-th view along ``axis`` holds ``grad`` where ``offset == k``, else 0.

    The backward of one stage of the separable maximum. When the windows tile the axis, each
    view is written once by a multiply straight into it (no zeroing, no temporary).
    """
    xp = backend.get_array_module(grad)
    tiles = _tiles(g, axis)
    out = new_array(shape, like, grad.dtype, None if tiles else 0)
    for k, view in enumerate(axis_views(out, g, axis)):
        if tiles:
            xp.multiply(grad, offset == k, out=view)
        else:
            view += grad * (offset == k)
    return out


def winning_row(row_offset, col_offset, g):
    """The row offset ``i`` of each window's maximum: the first stage's winner at the winning column."""
    return sum(rows_at_j * (col_offset == j) for j, rows_at_j in enumerate(axis_views(row_offset, g, 3)))


def flat_index(row, col, g):
    """Flat index into a C-ordered padded input ``(N, C, Hp, Wp)`` of the element at offset
    ``(row, col)`` of each window."""
    xp = backend.get_array_module(row)
    Hp, Wp = g.H + 2 * g.ph, g.W + 2 * g.pw
    top = xp.arange(g.N * g.C).reshape(g.N, g.C, 1, 1) * Hp + xp.arange(g.Ho).reshape(-1, 1) * g.sh
    return (top + row) * Wp + (xp.arange(g.Wo) * g.sw + col)


def max_pool_backward_offsets(gy, row_offset, col_offset, g, like):
    """Back through the two stages: to the winning column of each window, then to the winning row."""
    g_rows = route_axis(gy, col_offset, (g.N, g.C, g.Ho, g.W + 2 * g.pw), like, g, 3)
    return crop(route_axis(g_rows, row_offset, padded_shape(g), like, g, 2), g)


def max_pool_backward_mask(gy, masks, g, like):
    """``gy * masks[k]`` added onto window view ``k``: every maximal element of a window gets ``gy``."""
    return crop(fold((gy * mask for mask in masks), like, g), g)


def max_pool_backward_argmax_scatter(gy, index, g):
    """``gy`` assigned at the flat argmax indices by fancy indexing (non-overlapping windows only)."""
    padded = backend.get_array_module(gy).zeros(padded_shape(g), dtype=gy.dtype)
    padded.reshape(-1)[index.reshape(-1)] = gy.reshape(-1)
    return crop(padded, g)


def max_pool_backward_scatter_add(gy, index, g):
    """``gy`` added at the flat argmax indices with ``backend.scatter_add``."""
    padded = backend.get_array_module(gy).zeros(padded_shape(g), dtype=gy.dtype)
    backend.scatter_add(padded.reshape(-1), index.reshape(-1), gy.reshape(-1))
    return crop(padded, g)


MAX_POOL_BACKWARDS = ("offsets", "mask", "argmax_scatter", "scatter_add")
DEFAULT_MAX_POOL_BACKWARD = "offsets"


class MaxPool2d(Function):
    """x: (N, C, H, W) -> (N, C, Ho, Wo), the maximum of each window; ``how``: a backward variant.

    The maximum is separable: first over each window's rows (``rows: (N, C, Ho, Wp)``), then over
    its columns. The first stage runs on whole padded rows, contiguous in memory, and halves
    the data before the strided second stage; each stage keeps the offset of its winner.
    """

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry, how):
        self.geometry, self.how = geometry, how

    def forward(self, x):
        geometry = self.geometry
        xp = backend.get_array_module(x)
        self.winner = None
        if self.how == "offsets" and pooling_kernels.runs_on_kernels(x):  # the same winners, in one kernel
            self.like = x
            out_shape = (geometry.N, geometry.C, geometry.Ho, geometry.Wo)
            y = new_array(out_shape, x, x.dtype)
            self.winner = xp.empty(out_shape, dtype=xp.int64)
            pooling_kernels.max_pool_forward(x, geometry, y, self.winner)
            return y
        padded = pad(x, geometry, -float("inf"))
        row_real = first_real(geometry, 2, xp) if geometry.ph else None
        rows, row_offset = running_max(axis_views(padded, geometry, 2), row_real)
        col_real = first_real(geometry, 3, xp) if geometry.pw else None
        y, col_offset = running_max(axis_views(rows, geometry, 3), col_real)
        self.like = x  # for its memory layout
        if self.how == "offsets":
            self.row_offset, self.col_offset = row_offset, col_offset
        elif self.how == "mask":
            self.masks = [(view == y) | xp.isnan(view) for view in window_views(padded, geometry)]
        else:
            self.index = flat_index(winning_row(row_offset, col_offset, geometry), col_offset, geometry)
        return y

    def backward(self, gy):
        if self.winner is not None:
            geometry = self.geometry
            gx = new_array((geometry.N, geometry.C, geometry.H, geometry.W), self.like, gy.dtype)
            pooling_kernels.max_pool_backward(gy, self.winner, geometry, gx)
            return gx
        gy = in_layout_of(gy, self.like)  # one transposing copy here is cheaper than mixed layouts below
        if self.how == "offsets":
            return max_pool_backward_offsets(gy, self.row_offset, self.col_offset, self.geometry, self.like)
        if self.how == "mask":
            return max_pool_backward_mask(gy, self.masks, self.geometry, self.like)
        if self.how == "argmax_scatter":
            return max_pool_backward_argmax_scatter(gy, self.index, self.geometry)
        return max_pool_backward_scatter_add(gy, self.index, self.geometry)


class AvgPool2d(Function):
    """x: (N, C, H, W) -> (N, C, Ho, Wo), the mean of each zero-padded window (separable, like the max)."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry):
        self.geometry = geometry

    def forward(self, x):
        geometry = self.geometry
        self.like = x  # for its memory layout
        rows = sum(axis_views(pad(x, geometry, 0), geometry, 2))
        y = sum(axis_views(rows, geometry, 3))
        y /= geometry.kh * geometry.kw
        return y

    def backward(self, gy):
        geometry = self.geometry
        part = in_layout_of(gy, self.like) / (geometry.kh * geometry.kw)
        rows_shape = (geometry.N, geometry.C, geometry.Ho, geometry.W + 2 * geometry.pw)
        g_rows = fold_axis([part] * geometry.kw, rows_shape, self.like, geometry, 3)
        return crop(fold_axis([g_rows] * geometry.kh, padded_shape(geometry), self.like, geometry, 2), geometry)


@fast_version_of(reference_max_pool2d)
def max_pool2d(x, kernel_size, stride=None, padding=0, backward=None):
    """Max pooling of ``x: (N, C, H, W)`` -> ``(N, C, Ho, Wo)``; padding is minus infinity.

    ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding`` are ints or
    ``(height, width)`` pairs. ``backward`` picks a variant from ``MAX_POOL_BACKWARDS`` (see the
    module docstring); None means ``DEFAULT_MAX_POOL_BACKWARD``.
    """
    g = _geometry(x, kernel_size, stride, padding, "max_pool2d")
    how = DEFAULT_MAX_POOL_BACKWARD if backward is None else backward
    if how not in MAX_POOL_BACKWARDS:
        choices = ", ".join(map(repr, MAX_POOL_BACKWARDS))
        raise ValueError(f"max_pool2d: unknown backward {how!r}; choose one of {choices}")
    if how == "argmax_scatter" and (g.sh < g.kh or g.sw < g.kw):
        raise ValueError(
            f"max_pool2d: backward 'argmax_scatter' assigns, which loses gradients where windows overlap "
            f"(kernel {(g.kh, g.kw)}, stride {(g.sh, g.sw)}); use 'scatter_add' or the default"
        )
    return MaxPool2d(g, how)(x)


@fast_version_of(reference_avg_pool2d)
def avg_pool2d(x, kernel_size, stride=None, padding=0):
    """Average pooling of ``x: (N, C, H, W)`` -> ``(N, C, Ho, Wo)``; zero padding counts in the mean."""
    return AvgPool2d(_geometry(x, kernel_size, stride, padding, "avg_pool2d"))(x)

