"""The fast path's float16 matrix products on a CPU (``fast.matmul.gemm``): float16 operands summed in float32 by
BLAS and rounded once, as tensor cores do; NumPy's own float16 loop is hundreds of times slower."""

import warnings

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch.engine import switch
from dlscratch.fast.matmul import gemm


def test_gemm_rounds_float32_sums_once():
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((7, 300), (300, 5)))
    got = gemm(a, b)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16))


def test_gemm_leaves_other_dtypes_to_matmul():
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float64):
        a, b = (rng.standard_normal(s).astype(dtype) for s in ((4, 6), (6, 3)))
        got = gemm(a, b)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, a @ b)


@pytest.mark.parametrize("operation", ["linear", "matmul", "conv2d"])
def test_float16_products_agree_with_float32_on_both_paths(operation):
    rng = np.random.default_rng(2)
    if operation == "conv2d":
        shapes = (2, 3, 6, 6), (4, 3, 3, 3)
        run = lambda x, w: F.conv2d(x, w, padding=1)  # noqa: E731
    else:
        shapes = (5, 40), ((3, 40) if operation == "linear" else (40, 3))
        run = F.linear if operation == "linear" else F.matmul
    arrays = [rng.standard_normal(s) * 0.5 for s in shapes]
    exact = run(*(dlscratch.tensor(a, dtype=np.float64) for a in arrays)).numpy()
    for path in (switch.fast_path, switch.reference):
        with path():
            inputs = [dlscratch.tensor(a, dtype=np.float16, requires_grad=True) for a in arrays]
            y = run(*inputs)
            y.sum().backward()
        assert y.dtype == np.float16 and all(t.grad.dtype == np.float16 for t in inputs)
        np.testing.assert_allclose(y.detach().numpy(), exact, rtol=0, atol=2e-2 * np.abs(exact).max())


def test_a_product_past_float16s_range_is_inf_without_a_warning():
    a = np.full((2, 4), 200.0, dtype=np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = gemm(a, a.T)
    assert np.isinf(got).all() and got.dtype == np.float16
