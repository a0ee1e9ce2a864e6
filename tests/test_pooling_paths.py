"""Pooling on both paths: the reference (operations/pooling.py) and the fast path (fast/pooling.py)
give the same outputs and the same input gradients, on random geometries and memory layouts, and
route tied maxima to the same element."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_strategies import LAYOUTS, window_geometries

import dlscratch
import dlscratch.fast.pooling  # noqa: F401  (registers the fast versions)
import dlscratch.functional as F
from dlscratch.engine import switch

POOLS = {"max": F.max_pool2d, "avg": F.avg_pool2d}
POOLING_GEOMETRIES = window_geometries(max_stride=4, pooling=True)


def run(pool, x, geometry, gy_of, fast):
    """``pool``'s output and input gradient on one path; ``gy_of(y_shape)`` gives the output gradient."""
    _, k, s, p = geometry
    with switch.fast_path() if fast else dlscratch.reference():
        t = dlscratch.tensor(x, requires_grad=True)
        y = pool(t, k, s, p)
        y.backward(dlscratch.tensor(gy_of(y.shape)))
        module = type(y.creator).__module__ if y.creator is not None else None
    return y.data, t.grad.data, module


def both_paths(pool, x, geometry, gy_of):
    y_ref, gx_ref, module_ref = run(pool, x, geometry, gy_of, fast=False)
    y_fast, gx_fast, module_fast = run(pool, x, geometry, gy_of, fast=True)
    if x.shape[0]:
        assert (module_ref, module_fast) == ("dlscratch.operations.pooling", "dlscratch.fast.pooling")
    assert y_ref.shape == y_fast.shape and gx_ref.shape == gx_fast.shape == x.shape
    return (y_ref, gx_ref), (y_fast, gx_fast)


def small_integers(scale=1, seed=0):
    """Output gradients of small integers times ``scale``: every sum of them is exact, so the paths
    (which add in different orders) must agree to the bit."""
    return lambda shape: (np.random.default_rng(seed).integers(-9, 10, shape) * scale).astype(np.float32)


@given(geometry=POOLING_GEOMETRIES, layout=st.sampled_from(sorted(LAYOUTS)), op=st.sampled_from(sorted(POOLS)))
def test_both_paths_give_the_same_outputs_and_gradients(geometry, layout, op):
    shape, (kh, kw), _, _ = geometry
    size = int(np.prod(shape))
    # distinct multiples of 1/8: no ties, and the window sums of avg pooling are exact in float32
    x = (np.random.default_rng(1).permutation(size) - size // 2).reshape(shape).astype(np.float32) / 8
    scale = kh * kw if op == "avg" else 1  # avg spreads gy / (kh*kw): keep the shares integers
    (y_ref, gx_ref), (y_fast, gx_fast) = both_paths(POOLS[op], LAYOUTS[layout](x), geometry, small_integers(scale))
    np.testing.assert_array_equal(y_fast, y_ref)
    np.testing.assert_array_equal(gx_fast, gx_ref)


@given(geometry=POOLING_GEOMETRIES, layout=st.sampled_from(sorted(LAYOUTS)))
def test_both_paths_agree_on_random_floats(geometry, layout):
    x = np.random.default_rng(2).standard_normal(geometry[0]).astype(np.float32)
    gy_of = lambda shape: np.random.default_rng(3).standard_normal(shape).astype(np.float32)  # noqa: E731
    for op, pool in POOLS.items():
        (y_ref, gx_ref), (y_fast, gx_fast) = both_paths(pool, LAYOUTS[layout](x), geometry, gy_of)
        if op == "max":
            np.testing.assert_array_equal(y_fast, y_ref)  # a maximum is one of the inputs: exact
        # sums in different orders: equal up to float32 rounding
        np.testing.assert_allclose(y_fast, y_ref, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(gx_fast, gx_ref, rtol=1e-5, atol=1e-6)


TIED = {
    "all equal": lambda rng, shape: np.ones(shape, np.float32),
    "three values": lambda rng, shape: rng.integers(0, 3, shape).astype(np.float32),
    "ReLU zeros": lambda rng, shape: np.maximum(rng.standard_normal(shape), 0).round(1).astype(np.float32),
}


@given(geometry=POOLING_GEOMETRIES, layout=st.sampled_from(sorted(LAYOUTS)), ties=st.sampled_from(sorted(TIED)))
def test_both_paths_send_a_tied_maximums_gradient_to_the_same_element(geometry, layout, ties):
    x = TIED[ties](np.random.default_rng(4), geometry[0])
    (y_ref, gx_ref), (y_fast, gx_fast) = both_paths(F.max_pool2d, LAYOUTS[layout](x), geometry, small_integers())
    np.testing.assert_array_equal(y_fast, y_ref)
    np.testing.assert_array_equal(gx_fast, gx_ref)


def test_the_tie_rule_is_leftmost_column_then_topmost_element():
    # the maximum 2 sits at (0, 1), (1, 0) and (1, 1): column 0 is the leftmost holding it
    x = np.array([[[[1, 2], [2, 2]]]], np.float32)
    for fast in (False, True):
        _, gx, _ = run(F.max_pool2d, x, (x.shape, 2, 2, 0), lambda shape: np.ones(shape, np.float32), fast)
        assert gx.tolist() == [[[[0, 0], [1, 0]]]], fast


def test_the_reference_path_refuses_a_backward_variant():
    x = np.zeros((1, 1, 4, 4), np.float32)
    with dlscratch.reference(), pytest.raises(ValueError, match=r"backward= picks a fast-path variant") as error:
        F.max_pool2d(x, 2, backward="mask")
    assert "leave it None or leave dlscratch.reference()" in str(error.value)
    with switch.fast_path():
        assert F.max_pool2d(x, 2, backward="mask").shape == (1, 1, 2, 2)
