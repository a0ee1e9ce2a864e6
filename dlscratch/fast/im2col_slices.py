"""The "slices" method of im2col and col2im (``im2col.py``), and the NumPy twins of the CUDA kernels.

Kernel offset ``(i, j)`` of every window is one strided slice of the padded batch-last input ``(C, Hp, Wp, N)``:
im2col copies the ``kh*kw`` slices into the column matrix (runs of ``Wo*N`` contiguous numbers), col2im adds them
back. The strict CuPy stand-in checks ``conv_kernels.py`` against these.
"""

from .. import backend
from .layout import pad_batch_last, unpad_batch_last
from .threads import in_parts


def columns_for(x, g, out):
    """``out``, or a new array for the column matrix of ``x``."""
    return backend.get_array_module(x).empty(g.cols_shape, dtype=x.dtype) if out is None else out


def im2col_slices(x, g, out=None):
    """Kernel offset ``(i, j)`` reads a strided slice of the padded input: kh*kw slice copies."""
    padded = pad_batch_last(x, g)
    cols = columns_for(x, g, out)
    blocks = cols.reshape(g.C, g.kh, g.kw, g.Ho, g.Wo, g.N)

    def copy(c0, c1):
        for i in range(g.kh):
            for j in range(g.kw):
                blocks[c0:c1, i, j] = padded[c0:c1, g.rows(i), g.columns(j)]

    copy_channels(copy, g.C, cols)
    return cols


def copy_channels(copy, channels, cols):
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
