"""Shape operations given targets or dimensions they cannot take: ``sum_to_shape`` with a target
that does not broadcast to the input, dims out of range; and shape operations on 0-d tensors."""

import re

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import gradcheck

# ----- sum_to_shape -----

A23 = np.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize(
    "shape, target, expected",
    [
        ((2, 3), (2, 3), A23),
        ((2, 3), (1, 3), A23.sum(0, keepdims=True)),
        ((2, 3), (3,), A23.sum(0)),
        ((2, 3), (2, 1), A23.sum(1, keepdims=True)),
        ((2, 3), (1, 1), A23.sum(keepdims=True)),
        ((2, 3), (1,), A23.sum().reshape(1)),
        ((2, 3), (), A23.sum()),
    ],
    ids=str,
)
def test_sum_to_shape_valid_targets(shape, target, expected):
    out = F.sum_to_shape(dlscratch.tensor(A23.reshape(shape), dtype=np.float64), target)
    assert out.shape == target
    np.testing.assert_array_equal(out.numpy(), expected)


@pytest.mark.parametrize(
    "shape, target",
    [
        ((2, 3), (3, 2)),  # as many elements, rearranged: must not pass
        ((4,), (2, 2)),  # more dimensions than the input
        ((2, 3), (2,)),  # aligned from the right, 2 against 3
        ((2, 3), (4, 3)),
        ((2, 3), (1, 2, 3)),
        ((3,), (0,)),
    ],
    ids=str,
)
def test_sum_to_shape_rejects_a_target_that_does_not_broadcast_to_the_input(shape, target):
    x = dlscratch.tensor(np.ones(shape))
    pattern = f"sum_to_shape: .*{re.escape(str(target))} is not expandable to .*{re.escape(str(shape))}"
    with pytest.raises(ValueError, match=pattern):
        F.sum_to_shape(x, target)


def test_sum_to_shape_gradient_on_a_valid_target():
    gradcheck(lambda t: F.sum_to_shape(t, (3, 1)), np.random.default_rng(0).standard_normal((2, 3, 4)))


# ----- amax: tuple dims, ties, empty tensors -----


@pytest.mark.parametrize("keepdim", [False, True], ids=["", "keepdim"])
@pytest.mark.parametrize("dim", [(0, 2), (-1, 0), (1,), (0, 1, 2)], ids=str)
def test_amax_over_a_tuple_of_dims(dim, keepdim):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    out = dlscratch.tensor(x, dtype=np.float64).amax(dim, keepdim)
    np.testing.assert_array_equal(out.numpy(), x.max(axis=dim, keepdims=keepdim))
    gradcheck(lambda t: F.amax(t, dim, keepdim), x)


def test_amax_and_max_split_the_gradient_among_tied_maxima():
    x = dlscratch.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 2.0]], requires_grad=True)
    x.amax(1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1 / 2, 0, 1 / 2], [1 / 3, 1 / 3, 1 / 3]])
    x.zero_grad()
    x.amax((0, 1)).backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1 / 2, 0, 1 / 2], [0, 0, 0]])
    x.zero_grad()
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1 / 2, 0, 1 / 2], [0, 0, 0]])


def test_amax_keeps_float32_gradients_float32_with_ties():
    x = dlscratch.tensor([[1.0, 1.0]], dtype=np.float32, requires_grad=True)
    x.amax().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [[0.5, 0.5]])


def test_amax_of_an_empty_tensor_over_a_non_empty_dim_is_empty():
    x = dlscratch.tensor(np.zeros((0, 10)), requires_grad=True)
    out = x.amax(1)
    assert out.shape == (0,)
    out.sum().backward()
    assert x.grad.shape == (0, 10)
    assert x.amax(1, keepdim=True).shape == (0, 1)


def test_amax_over_an_empty_dim_names_the_dim_and_the_shape():
    x = dlscratch.tensor(np.zeros((0, 10)))
    with pytest.raises(ValueError, match=r"amax: .*dimension 0 of size 0 \(shape \(0, 10\)\)"):
        x.amax(0)
    with pytest.raises(ValueError, match=r"amax: .*dimension 0 of size 0"):
        x.amax()


def test_max_over_a_dim_sends_the_gradient_to_the_returned_index():
    x = dlscratch.tensor([[7.0, 0.0, 7.0]], requires_grad=True)
    values, indices = x.max(1)
    values.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 0]])


# ----- dims out of range; 0-d tensors -----

OUT_OF_RANGE = {
    "unsqueeze(5)": (lambda x: x.unsqueeze(5), "unsqueeze", -3, 2, 5),
    "unsqueeze(-4)": (lambda x: x.unsqueeze(-4), "unsqueeze", -3, 2, -4),
    "squeeze(5)": (lambda x: x.squeeze(5), "squeeze", -2, 1, 5),
    "squeeze(-3)": (lambda x: x.squeeze(-3), "squeeze", -2, 1, -3),
    "flatten(7)": (lambda x: F.flatten(x, 7), "flatten", -2, 1, 7),
    "flatten(0, 2)": (lambda x: x.flatten(0, 2), "flatten", -2, 1, 2),
    "transpose(0, 5)": (lambda x: x.transpose(0, 5), "transpose", -2, 1, 5),
    "transpose(-3, 0)": (lambda x: x.transpose(-3, 0), "transpose", -2, 1, -3),
    "permute(0, 5)": (lambda x: x.permute(0, 5), "permute", -2, 1, 5),
    "sum(2)": (lambda x: x.sum(2), "sum", -2, 1, 2),
    "sum((0, -3))": (lambda x: x.sum((0, -3)), "sum", -2, 1, -3),
    "mean(-3)": (lambda x: x.mean(-3), "mean", -2, 1, -3),
    "amax(2)": (lambda x: x.amax(2), "amax", -2, 1, 2),
    "max(2)": (lambda x: x.max(2), "max", -2, 1, 2),
    "argmax(-3)": (lambda x: x.argmax(-3), "argmax", -2, 1, -3),
    "softmax(2)": (lambda x: x.softmax(2), "softmax", -2, 1, 2),
    "log_softmax(-3)": (lambda x: x.log_softmax(-3), "log_softmax", -2, 1, -3),
}


@pytest.mark.parametrize("case", OUT_OF_RANGE)
def test_a_dim_out_of_range_raises_index_error(case):
    op, name, low, high, got = OUT_OF_RANGE[case]
    x = dlscratch.ones(2, 1)
    expected = f"{name}: Dimension out of range (expected to be in range of [{low}, {high}], but got {got})"
    with pytest.raises(IndexError, match=re.escape(expected)):
        op(x)


def test_flatten_with_start_after_end_raises():
    with pytest.raises(ValueError, match="flatten: start_dim 1 .* after end_dim 0"):
        dlscratch.ones(2, 3).flatten(1, 0)


ZERO_D = {
    "unsqueeze(0)": (lambda x: x.unsqueeze(0), (1,)),
    "unsqueeze(-1)": (lambda x: x.unsqueeze(-1), (1,)),
    "squeeze()": (lambda x: x.squeeze(), ()),
    "squeeze(0)": (lambda x: x.squeeze(0), ()),
    "squeeze(-1)": (lambda x: x.squeeze(-1), ()),
    "flatten()": (lambda x: x.flatten(), (1,)),
    "flatten(0, -1)": (lambda x: F.flatten(x, 0, -1), (1,)),
    "transpose()": (lambda x: x.transpose(), ()),
    "transpose(0, -1)": (lambda x: x.transpose(0, -1), ()),
    "permute()": (lambda x: x.permute(), ()),
    "sum(0)": (lambda x: x.sum(0), ()),
    "mean(-1)": (lambda x: x.mean(-1), ()),
    "amax(0)": (lambda x: x.amax(0), ()),
}


@pytest.mark.parametrize("case", ZERO_D)
def test_shape_operations_on_a_0d_tensor(case):
    op, shape = ZERO_D[case]
    x = dlscratch.tensor(3.0, requires_grad=True)
    out = op(x)
    assert out.shape == shape
    np.testing.assert_array_equal(out.detach().numpy(), np.full(shape, 3.0))
    out.sum().backward()
    assert x.grad.shape == () and x.grad.item() == 1.0


@pytest.mark.parametrize(
    "op, got",
    [(lambda x: x.unsqueeze(1), 1), (lambda x: x.squeeze(1), 1), (lambda x: x.flatten(-2), -2)],
    ids=["unsqueeze(1)", "squeeze(1)", "flatten(-2)"],
)
def test_a_0d_tensor_takes_only_dims_minus_1_and_0(op, got):
    with pytest.raises(IndexError, match=re.escape(f"expected to be in range of [-1, 0], but got {got})")):
        op(dlscratch.tensor(3.0))
