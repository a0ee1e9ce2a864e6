"""Fast max and average pooling: the separable maximum, layout kept, and lesson 05's backward variants.

Offset ``(i, j)`` of every window is one strided view ``(N, C, Ho, Wo)`` of the padded input, and pooling
combines the ``kh*kw`` views elementwise, with no im2col copy. Output sizes are PyTorch's (``ceil_mode=False``).
Max pooling pads with minus infinity, which never wins; a NaN in a window wins, as in PyTorch. Average pooling
counts the zero padding (``count_include_pad=True``).

Max-pool backward variants (``max_pool2d(..., backward=...)``):

- ``"offsets"`` (default): forward keeps the 1-byte offset of each stage's winner (see ``MaxPool2d``) and
  backward retraces the two stages; no scatter, no atomics. On a GPU, one kernel each way
  (``pooling_kernels.py``).
- ``"mask"`` (the Qiita article's fix): a 0/1 mask per offset, ``view == max``; every tied maximum gets ``gy``.
- ``"argmax_scatter"`` (the Qiita article's slow original): ``gx.flat[index] = gy``; assignment loses
  contributions where windows overlap, so it needs ``stride >= kernel_size``.
- ``"scatter_add"``: the same indices, accumulated with ``backend.scatter_add``.

With ties, all but ``"mask"`` send the gradient to one element, the topmost in the leftmost winning column, the
element the reference picks too (PyTorch's may differ; the values never do). ``python -m dlscratch.bench pool``
times both paths and every variant.
"""

from .. import backend
from ..engine.function import Function
from ..engine.switch import fast_version_of
from ..operations.pooling import _geometry
from ..operations.pooling import avg_pool2d as reference_avg_pool2d
from ..operations.pooling import max_pool2d as reference_max_pool2d
from . import pooling_kernels
from .layout import in_layout_of, new_array
from .pool_windows import axis_views, crop, first_real, pad, padded_shape, running_max, window_views


def _tiles(g, axis):
    """True when the windows along ``axis`` cover the padded input exactly once (stride == kernel)."""
    if axis == 2:
        return g.sh == g.kh and g.H + 2 * g.ph == g.Ho * g.kh
    return g.sw == g.kw and g.W + 2 * g.pw == g.Wo * g.kw


def fold_axis(parts, shape, like, g, axis):
    """An array of ``shape`` with ``parts[i]`` added onto its ``i``-th view along ``axis`` (written without
    zeroing when the windows tile the axis)."""
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
    """An array of ``shape`` whose ``k``-th view along ``axis`` holds ``grad`` where ``offset == k``, else 0:
    the backward of one stage of the separable maximum."""
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
    """Flat index into a C-ordered ``(N, C, Hp, Wp)`` of the element at offset ``(row, col)`` of each window."""
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

    The maximum is taken over each window's rows (``rows: (N, C, Ho, Wp)``, contiguous), then over its columns;
    each stage keeps the offset of its winner.
    """

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, geometry, how):
        self.geometry, self.how = geometry, how

    def forward(self, x):
        geometry = self.geometry
        xp = backend.get_array_module(x)
        self.winner = None
        if self.how == "offsets" and backend.is_gpu_array(x) and backend.has_kernels():  # the same winners, one kernel
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

    ``kernel_size``, ``stride`` (default: ``kernel_size``) and ``padding``: ints or ``(height, width)`` pairs;
    ``backward``: one of ``MAX_POOL_BACKWARDS`` (None: ``DEFAULT_MAX_POOL_BACKWARD``).
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

