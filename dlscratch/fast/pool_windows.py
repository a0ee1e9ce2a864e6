"""Pooling's windows as strided views, and the separable running maximum (``pooling.py``).

They are also the NumPy twins against which the strict CuPy stand-in checks ``pooling_kernels.py``.
"""

from .. import backend
from .layout import new_array


def padded_shape(g):
    return (g.N, g.C, g.H + 2 * g.ph, g.W + 2 * g.pw)


def pad(x, g, value):
    """``x: (N, C, H, W)`` padded with ``value`` to ``(N, C, H + 2*ph, W + 2*pw)`` (``x`` itself without padding)."""
    if g.ph == g.pw == 0:
        return x
    padded = new_array(padded_shape(g), x, x.dtype, value)
    padded[:, :, g.ph : g.ph + g.H, g.pw : g.pw + g.W] = x
    return padded


def crop(padded, g):
    return padded[:, :, g.ph : g.ph + g.H, g.pw : g.pw + g.W]


def axis_views(a, g, axis):
    """The views of ``a`` that kernel rows (``axis=2``) or kernel columns (``axis=3``) read, one per offset."""
    count, pick = (g.kh, g.rows) if axis == 2 else (g.kw, g.columns)
    index = [slice(None)] * 4
    views = []
    for i in range(count):
        index[axis] = pick(i)
        views.append(a[tuple(index)])
    return views


def window_views(padded, g):
    """The ``kh*kw`` views ``(N, C, Ho, Wo)`` of ``padded: (N, C, Hp, Wp)``; offset ``(i, j)`` at ``i*kw + j``."""
    return [view for rows in axis_views(padded, g, 2) for view in axis_views(rows, g, 3)]


def first_real(g, axis, xp):
    """Per offset along ``axis`` (rows: 2, columns: 3), the windows whose first real (not padding) element is
    at that offset: ``(Ho, 1)`` or ``(Wo,)`` bools, None where there are none."""
    count, stride, padding, out = (g.kh, g.sh, g.ph, g.Ho) if axis == 2 else (g.kw, g.sw, g.pw, g.Wo)
    first = xp.maximum(padding - xp.arange(out) * stride, 0)  # offset of each window's first real element
    masks = [None] + [(first == k).reshape((out, 1) if axis == 2 else out) for k in range(1, count)]
    return [None if k > padding else mask for k, mask in enumerate(masks)]


def running_max(views, first=None):
    """The elementwise maximum of ``views`` and the index of the first view holding it (uint8 up to 256).

    A NaN beats everything (the last NaN wins, as in PyTorch). ``first[k]`` marks where view ``k`` beats the
    views before it whatever their values, because those are padding.
    """
    xp = backend.get_array_module(views[0])
    kind = xp.uint8 if len(views) <= 256 else xp.int32
    if len(views) == 1:
        return views[0].copy(order="K"), xp.zeros_like(views[0], dtype=kind)
    y, offset = views[0], None
    for k, view in enumerate(views[1:], start=1):
        beats = view > y
        beats |= xp.isnan(view)
        if first is not None and first[k] is not None:
            beats |= first[k]
        if offset is None:  # the first comparison's True/False bytes are already offsets 1/0
            offset = beats.view(xp.uint8) if kind == xp.uint8 else beats.astype(kind)
        else:
            xp.maximum(offset, beats * kind(k), out=offset)  # k beats every earlier offset
        y = xp.maximum(y, view)  # maximum propagates NaN
    return y, offset
