"""A column times a row (the weight gradient at batch size 1): each fast path gives exactly the
broadcast product, the zero-padded GEMM is taken where it is meant to be, and the gradients of
``linear`` and ``matmul`` that go through it pass the float64 gradient check."""

import numpy as np
import pytest

import dlscratch.functional as F
from dlscratch.fast import matmul as matmul_module
from dlscratch.gradcheck import gradcheck

pytestmark = pytest.mark.usefixtures("fast_path")  # the padded GEMM is a fast-path trick

# (rows, row length, padded GEMM expected): many short rows go to BLAS, others stay a multiply
CASES = [((1000, 784), True), ((128, 1), True), ((128, 1024), True), ((127, 784), False), ((300, 1025), False)]


@pytest.fixture
def padded_calls(monkeypatch):
    """Count the columns and rows padded for the GEMM."""
    calls, original = [], matmul_module._pad_inner

    def counting(v, axis):
        calls.append(v.shape)
        return original(v, axis)

    monkeypatch.setattr(matmul_module, "_pad_inner", counting)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, padded", CASES, ids=str)
def test_a_column_times_a_row_equals_the_broadcast_product(padded_calls, dtype, shape, padded):
    rows, length = shape
    rng = np.random.default_rng(rows + length)
    column = rng.standard_normal((rows, 1)).astype(dtype)
    row = rng.standard_normal((1, length)).astype(dtype)
    column[::7] = 0  # zeros, as ReLU leaves them in gradients
    row[0, ::5] = -np.inf
    with np.errstate(invalid="ignore"):  # 0 * inf
        expected = column * row
        got = matmul_module.outer_or_matmul(column, row)
    assert got.dtype == dtype and got.shape == (rows, length)
    np.testing.assert_array_equal(got, expected)  # bit for bit, NaN where 0 * inf
    assert padded_calls == ([(rows, 1), (1, length)] if padded else [])


def test_a_transposed_gradient_row_is_padded_like_a_column(padded_calls):
    gy = np.arange(1, 201, dtype=np.float32).reshape(1, 200)  # (batch 1, out); .T is not contiguous
    x = np.linspace(-1, 1, 30, dtype=np.float32).reshape(1, 30)
    np.testing.assert_array_equal(matmul_module.outer_or_matmul(gy.T, x), gy.T * x)
    assert padded_calls == [(200, 1), (1, 30)]


def test_other_products_are_plain_matmuls(padded_calls):
    a, b = np.ones((200, 2), np.float32), np.ones((2, 30), np.float32)
    np.testing.assert_array_equal(matmul_module.outer_or_matmul(a, b), np.full((200, 30), 2, np.float32))
    assert padded_calls == []


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no-bias"])
def test_linear_at_batch_one_through_the_padded_gemm(padded_calls, bias):
    rng = np.random.default_rng(5)
    x, W, b = rng.standard_normal((1, 6)), rng.standard_normal((130, 6)), rng.standard_normal(130)
    gradcheck(F.linear, *((x, W, b) if bias else (x, W)))
    assert (130, 1) in padded_calls


def test_the_matmul_weight_gradient_at_batch_one_through_the_padded_gemm(padded_calls):
    rng = np.random.default_rng(6)
    gradcheck(F.matmul, rng.standard_normal((1, 130)), rng.standard_normal((130, 4)))  # gb = a.T @ gy
    assert (130, 1) in padded_calls


def test_the_lstm_cell_weight_gradients_at_batch_one_through_the_padded_gemm(padded_calls):
    """Both gate GEMMs' weight gradients are outer products at batch 1 (4H = 128 rows here)."""
    rng = np.random.default_rng(7)
    x, h, c = rng.standard_normal((1, 3)), rng.standard_normal((1, 32)), rng.standard_normal((1, 32))
    W_ih, W_hh = rng.standard_normal((128, 3)) * 0.3, rng.standard_normal((128, 32)) * 0.3
    gradcheck(lambda x, h, c, W_ih, W_hh: F.lstm_cell(x, (h, c), W_ih, W_hh), x, h, c, W_ih, W_hh)
    assert (128, 1) in padded_calls and (1, 3) in padded_calls and (1, 32) in padded_calls
