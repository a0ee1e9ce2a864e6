"""im2col and col2im on the GPU as CUDA elementwise kernels (CuPy only), as Chainer does them.

``im2col_kernel`` runs one thread per entry of the column matrix: each thread works out which
input pixel its entry reads (or that it falls on the zero padding) and copies it. ``col2im_kernel``
runs one thread per input pixel, a *gather*: the thread loops over the kernel offsets, finds
the windows that read its pixel and sums their column entries. No two threads write the same
number, so there are no atomic additions and the result is the same on every run.

Both use the column layout of ``im2col.py``: ``cols: (C*kh*kw, Ho*Wo*N)``, images fastest, so
neighbouring threads touch neighbouring memory. Indexing a raw array with a list of indices,
``img[at]`` with ``at = {b, c, y, x}``, follows its strides, so inputs of any layout work without a copy.
"""

from .. import backend
from .im2col_slices import col2im_slices, im2col_slices

IM2COL_BODY = """
const ptrdiff_t b = i % N;  // the image (n and i are CuPy's names)
const ptrdiff_t ox = i / N % Wo;
const ptrdiff_t oy = i / (N * Wo) % Ho;
const ptrdiff_t kx = i / (N * Wo * Ho) % kw;
const ptrdiff_t ky = i / (N * Wo * Ho * kw) % kh;
const ptrdiff_t c = i / (N * Wo * Ho * kw * kh);
const ptrdiff_t y = oy * sh + ky - ph;
const ptrdiff_t x = ox * sw + kx - pw;
if (0 <= y && y < H && 0 <= x && x < W) {
    const ptrdiff_t at[] = {b, c, y, x};
    col = img[at];
} else {
    col = 0;
}
"""

COL2IM_BODY = """
const ptrdiff_t b = i % N;  // the image (n and i are CuPy's names)
const ptrdiff_t x = i / N % W + pw;
const ptrdiff_t y = i / (N * W) % H + ph;
const ptrdiff_t c = i / (N * W * H);
T total = 0;
for (ptrdiff_t ky = 0; ky < kh; ++ky) {
    const ptrdiff_t ty = y - ky;
    if (ty < 0 || ty % sh != 0 || ty / sh >= Ho) continue;
    for (ptrdiff_t kx = 0; kx < kw; ++kx) {
        const ptrdiff_t tx = x - kx;
        if (tx < 0 || tx % sw != 0 || tx / sw >= Wo) continue;
        const ptrdiff_t at[] = {(c * kh + ky) * kw + kx, ((ty / sh) * Wo + tx / sw) * N + b};
        total += cols[at];
    }
}
img = total;
"""

SIZE_PARAMS = ", ".join(f"int32 {name}" for name in
                        ("N", "C", "H", "W", "Ho", "Wo", "kh", "kw", "sh", "sw", "ph", "pw"))


def size_arguments(g):
    return (g.N, g.C, g.H, g.W, g.Ho, g.Wo, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw)


def _geometry_of(sizes):
    from ..operations.im2col import geometry

    N, C, H, W, _, _, kh, kw, sh, sw, ph, pw = (int(s) for s in sizes)
    return geometry((N, C, H, W), (kh, kw), (sh, sw), (ph, pw), "kernel")


# The NumPy twins of the kernels are the slice methods (``bench/strict_cupy/kernels.py`` checks them).
def _im2col_twin(img, *sizes_and_col):
    *sizes, col = sizes_and_col
    im2col_slices(img, _geometry_of(sizes), out=col)


def _col2im_twin(cols, *sizes_and_img):
    *sizes, img = sizes_and_img
    img[...] = col2im_slices(cols, _geometry_of(sizes)).transpose(1, 2, 3, 0)


def im2col_kernel(x, g, out=None):
    """``x: (N, C, H, W)`` (a CuPy array) -> ``cols: (C*kh*kw, Ho*Wo*N)`` for geometry ``g`` (into ``out``)."""
    kernel = backend.elementwise_kernel(f"raw T img, {SIZE_PARAMS}", "T col", IM2COL_BODY, "dlscratch_im2col",
                                        twin=_im2col_twin)
    cols = backend.get_array_module(x).empty(g.cols_shape, dtype=x.dtype) if out is None else out
    kernel(x, *size_arguments(g), cols)
    return cols


def col2im_kernel(cols, g):
    """``cols: (C*kh*kw, Ho*Wo*N)`` -> ``(N, C, H, W)``, stored batch-last ``(C, H, W, N)`` like ``col2im_slices``."""
    kernel = backend.elementwise_kernel(f"raw T cols, {SIZE_PARAMS}", "T img", COL2IM_BODY, "dlscratch_col2im",
                                        twin=_col2im_twin)
    img = backend.get_array_module(cols).empty((g.C, g.H, g.W, g.N), dtype=cols.dtype)
    kernel(cols, *size_arguments(g), img)
    return img.transpose(3, 0, 1, 2)
