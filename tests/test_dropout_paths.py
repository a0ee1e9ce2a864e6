"""Dropout on both paths: the reference (operations/dropout.py) draws its mask in C order, the fast
path (fast/dropout.py) in the input's memory order; for a C-ordered input, one seed gives both
the same mask. The reference mask keeps 1 - p of the numbers, scaled by 1 / (1 - p)."""

import numpy as np
import pytest

import dlscratch
import dlscratch.fast.dropout  # noqa: F401  (registers the fast version)
import dlscratch.functional as F
from dlscratch.engine import switch


def dropped(x, p, fast, seed=5):
    """``F.dropout(x, p)`` on one path, from ``seed``: the output array and the Function that made it."""
    dlscratch.manual_seed(seed)
    with switch.fast_path() if fast else dlscratch.reference():
        y = F.dropout(dlscratch.tensor(x, dtype=x.dtype, requires_grad=True), p)
    return y.data, y.creator


@pytest.mark.parametrize("p", [0.1, 0.3, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (4, 3, 5, 6), (0, 3)])
def test_one_seed_gives_both_paths_the_same_output_for_a_c_ordered_input(shape, dtype, p):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    y_ref, creator_ref = dropped(x, p, fast=False)
    y_fast, creator_fast = dropped(x, p, fast=True)
    assert type(creator_ref).__module__ == "dlscratch.operations.dropout"
    assert type(creator_fast).__module__ == "dlscratch.fast.dropout"
    assert y_ref.dtype == y_fast.dtype == dtype
    np.testing.assert_array_equal(y_fast, y_ref)


def test_the_reference_mask_keeps_one_minus_p_scaled_by_its_inverse():
    p = 0.3
    y, _ = dropped(np.ones(200_000, np.float32), p, fast=False)
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.005  # about 5 standard errors of the fraction
    assert np.unique(y[kept]).tolist() == [np.float32(1) / np.float32(1 - p)]


def test_the_reference_mask_is_drawn_in_c_order_whatever_the_layout():
    # the reference ignores memory layout: a batch-last input gets the mask of its C-ordered copy
    x = np.random.default_rng(1).random((6, 3, 4, 5), dtype=np.float32) + 1
    batch_last = x.transpose(1, 2, 3, 0).copy().transpose(3, 0, 1, 2)
    np.testing.assert_array_equal(dropped(batch_last, 0.5, fast=False)[0], dropped(x, 0.5, fast=False)[0])
    dlscratch.manual_seed(5)
    u = dlscratch.generator(np).random(x.shape, dtype=np.float32)  # what the reference draws, in C order
    np.testing.assert_array_equal(dropped(x, 0.5, fast=False)[0], np.where(u >= 0.5, x / np.float32(0.5), 0))


@pytest.mark.parametrize("fast", [False, True])
def test_the_gradient_is_the_mask(fast):
    x = dlscratch.tensor(np.ones((8, 3, 4, 4), np.float32), requires_grad=True)
    dlscratch.manual_seed(2)
    with switch.fast_path() if fast else dlscratch.reference():
        y = F.dropout(x, 0.25)
    mask = y.data  # x is all ones
    assert set(np.unique(mask).tolist()) == {0, np.float32(1) / np.float32(0.75)}
    gy = np.random.default_rng(3).standard_normal(y.shape).astype(np.float32)
    y.backward(dlscratch.tensor(gy))
    np.testing.assert_array_equal(x.grad.data, gy * mask)
