"""The fast path computes what the reference path computes: conv2d and im2col/col2im on random
geometries, strides, paddings and memory layouts of the input, values and gradients."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from property_strategies import LAYOUTS, window_geometries

import dlscratch
import dlscratch.functional as F
from dlscratch.engine import switch


def _run(fast, x, w, b, stride, padding, gy):
    """Output and the gradients of x, w and b on one path."""
    xt, wt, bt = (dlscratch.tensor(a, requires_grad=True) for a in (x, w, b))
    with switch.fast_path() if fast else dlscratch.reference():
        y = F.conv2d(xt, wt, bt, stride, padding)
        y.backward(dlscratch.tensor(gy))
    return [y.detach().numpy(), xt.grad.numpy(), wt.grad.numpy(), bt.grad.numpy()]


@given(geometry=window_geometries(), o=st.integers(1, 4), layout=st.sampled_from(sorted(LAYOUTS)))
def test_conv2d_fast_equals_reference(geometry, o, layout):
    (n, c, h, w), (kh, kw), (sh, sw), (ph, pw) = geometry
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


@given(geometry=window_geometries(), layout=st.sampled_from(sorted(LAYOUTS)))
def test_im2col_and_col2im_fast_equal_reference(geometry, layout):
    (n, c, h, w), (kh, kw), (sh, sw), (ph, pw) = geometry
    rng = np.random.default_rng(h * 10 + w)
    x = LAYOUTS[layout](rng.integers(-9, 10, (n, c, h, w)).astype(np.float32))
    args = ((kh, kw), (sh, sw), (ph, pw))
    with switch.fast_path():
        cols = F.im2col(x, *args).numpy()
        back = F.col2im(cols, x.shape, *args).numpy()
    with dlscratch.reference():
        np.testing.assert_array_equal(F.im2col(x, *args).numpy(), cols)
        np.testing.assert_array_equal(F.col2im(cols, x.shape, *args).numpy(), back)
