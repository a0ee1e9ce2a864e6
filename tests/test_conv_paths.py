"""The fast path computes what the reference path computes: conv2d and im2col/col2im on random
geometries, strides, paddings and memory layouts of the input, values and gradients."""

import numpy as np
from hypothesis import assume, given
from hypothesis import strategies as st

import dlscratch
import dlscratch.functional as F
from dlscratch import paths

LAYOUTS = {
    "C order": lambda a: a,
    "batch-last": lambda a: np.ascontiguousarray(a.transpose(1, 2, 3, 0)).transpose(3, 0, 1, 2),
    "reversed columns": lambda a: np.ascontiguousarray(a[..., ::-1])[..., ::-1],
    "every other row": lambda a: np.repeat(a, 2, axis=2)[:, :, ::2],
}


def _run(fast, x, w, b, stride, padding, gy):
    """Output and the gradients of x, w and b on one path."""
    xt, wt, bt = (dlscratch.tensor(a, requires_grad=True) for a in (x, w, b))
    with paths.fast() if fast else dlscratch.reference():
        y = F.conv2d(xt, wt, bt, stride, padding)
        y.backward(dlscratch.tensor(gy))
    return [y.numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]


@given(
    n=st.integers(0, 3), c=st.integers(1, 3), o=st.integers(1, 4), h=st.integers(1, 7), w=st.integers(1, 7),
    kh=st.integers(1, 4), kw=st.integers(1, 4), sh=st.integers(1, 3), sw=st.integers(1, 3),
    ph=st.integers(0, 2), pw=st.integers(0, 2), layout=st.sampled_from(sorted(LAYOUTS)),
)
def test_conv2d_fast_equals_reference(n, c, o, h, w, kh, kw, sh, sw, ph, pw, layout):
    assume(kh <= h + 2 * ph and kw <= w + 2 * pw)
    rng = np.random.default_rng(n * 1000 + c * 100 + h * 10 + w)
    x = LAYOUTS[layout](rng.integers(-4, 5, (n, c, h, w)).astype(np.float32))  # small integers: exact sums
    weight = rng.integers(-3, 4, (o, c, kh, kw)).astype(np.float32)
    bias = rng.integers(-3, 4, o).astype(np.float32)
    ho, wo = (h + 2 * ph - kh) // sh + 1, (w + 2 * pw - kw) // sw + 1
    gy = rng.integers(-3, 4, (n, o, ho, wo)).astype(np.float32)
    fast = _run(True, x, weight, bias, (sh, sw), (ph, pw), gy)
    reference = _run(False, x, weight, bias, (sh, sw), (ph, pw), gy)
    for name, got, want in zip(["y", "gx", "gw", "gb"], fast, reference):
        np.testing.assert_array_equal(got, want, err_msg=name)


@given(
    n=st.integers(0, 3), c=st.integers(1, 3), h=st.integers(1, 7), w=st.integers(1, 7),
    kh=st.integers(1, 4), kw=st.integers(1, 4), sh=st.integers(1, 3), sw=st.integers(1, 3),
    ph=st.integers(0, 2), pw=st.integers(0, 2), layout=st.sampled_from(sorted(LAYOUTS)),
)
def test_im2col_and_col2im_fast_equal_reference(n, c, h, w, kh, kw, sh, sw, ph, pw, layout):
    assume(kh <= h + 2 * ph and kw <= w + 2 * pw)
    rng = np.random.default_rng(h * 10 + w)
    x = LAYOUTS[layout](rng.integers(-9, 10, (n, c, h, w)).astype(np.float32))
    args = ((kh, kw), (sh, sw), (ph, pw))
    with paths.fast():
        cols = F.im2col(x, *args).numpy()
        back = F.col2im(cols, x.shape, *args).numpy()
    with dlscratch.reference():
        np.testing.assert_array_equal(F.im2col(x, *args).numpy(), cols)
        np.testing.assert_array_equal(F.col2im(cols, x.shape, *args).numpy(), back)
