"""Property tests (Hypothesis): random broadcastable shapes for the binary operators, random
axes for the reductions, random round trips through reshape and permute.

The reference gradient for a broadcast input is computed independently of ``sum_to``: every
output element adds its gradient to the input element it was broadcast from (``bincount``).
"""

import operator

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from property_strategies import BROADCAST_PAIRS as PAIRS
from property_strategies import SEEDS, SHAPES

import dlscratch
from dlscratch import gradcheck


def _unbroadcast(g, shape):
    """Sum ``g`` (the gradient of a broadcast result) back onto an input of ``shape``."""
    source = np.broadcast_to(np.arange(int(np.prod(shape))).reshape(shape), g.shape)
    return np.bincount(source.ravel(), weights=g.ravel(), minlength=int(np.prod(shape))).reshape(shape)


# Each entry: forward, and the gradients of a and b given the upstream gradient g.
BINARY = {
    "add": (operator.add, lambda a, b, g: (g, g)),
    "sub": (operator.sub, lambda a, b, g: (g, -g)),
    "mul": (operator.mul, lambda a, b, g: (g * b, g * a)),
    "div": (operator.truediv, lambda a, b, g: (g / b, -g * a / b**2)),
}


def _check_binary(name, shapes, seed):
    rng = np.random.default_rng(seed)
    (a_shape, b_shape), out_shape = shapes
    a = rng.uniform(-2, 2, a_shape)
    b = rng.uniform(0.5, 2, b_shape) * rng.choice([-1, 1], b_shape)  # away from 0 for div
    g = rng.standard_normal(out_shape)
    forward, reference_grads = BINARY[name]
    ta = dlscratch.tensor(a, dtype=np.float64, requires_grad=True)
    tb = dlscratch.tensor(b, dtype=np.float64, requires_grad=True)
    out = forward(ta, tb)
    np.testing.assert_allclose(out.detach().numpy(), forward(a, b), rtol=1e-12)
    out.backward(g)
    ga, gb = reference_grads(np.broadcast_to(a, out_shape), np.broadcast_to(b, out_shape), g)
    assert ta.grad.shape == a_shape and tb.grad.shape == b_shape
    np.testing.assert_allclose(ta.grad.numpy(), _unbroadcast(ga, a_shape), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(tb.grad.numpy(), _unbroadcast(gb, b_shape), rtol=1e-10, atol=1e-12)
    gradcheck(forward, a, b)


@given(shapes=PAIRS, seed=SEEDS)
def test_add_broadcasting(shapes, seed):
    _check_binary("add", shapes, seed)


@given(shapes=PAIRS, seed=SEEDS)
def test_sub_broadcasting(shapes, seed):
    _check_binary("sub", shapes, seed)


@given(shapes=PAIRS, seed=SEEDS)
def test_mul_broadcasting(shapes, seed):
    _check_binary("mul", shapes, seed)


@given(shapes=PAIRS, seed=SEEDS)
def test_div_broadcasting(shapes, seed):
    _check_binary("div", shapes, seed)


@st.composite
def shape_and_axes(draw):
    """A shape, and None or a tuple of distinct axes of it, each possibly negative."""
    shape = draw(SHAPES)
    if draw(st.booleans()):
        return shape, None
    axes = draw(st.lists(st.integers(0, len(shape) - 1), unique=True, max_size=len(shape)))
    axes = [a - len(shape) if draw(st.booleans()) else a for a in axes]
    return shape, tuple(axes) if len(axes) != 1 or draw(st.booleans()) else axes[0]


@given(case=shape_and_axes(), keepdims=st.booleans(), seed=SEEDS)
def test_sum_and_mean_over_random_axes(case, keepdims, seed):
    shape, axes = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    for op in ("sum", "mean"):
        t = dlscratch.tensor(x, dtype=np.float64, requires_grad=True)
        out = getattr(t, op)(axes, keepdims)
        expected = getattr(np, op)(x, axis=axes, keepdims=keepdims)
        assert out.shape == expected.shape
        np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-12, atol=1e-12)
        g = rng.standard_normal(out.shape)
        out.backward(g)
        reduced = range(len(shape)) if axes is None else np.atleast_1d(axes) % len(shape)
        count = int(np.prod([shape[a] for a in reduced]))
        g_kept = g if keepdims else np.expand_dims(g, tuple(reduced))
        expected_grad = np.broadcast_to(g_kept, shape) / (count if op == "mean" else 1)
        np.testing.assert_allclose(t.grad.numpy(), expected_grad, rtol=1e-12)


@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_amax_over_a_random_axis(shape, data, seed):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    x = np.random.default_rng(seed).permutation(int(np.prod(shape))).reshape(shape).astype(np.float64)  # no ties
    t = dlscratch.tensor(x, dtype=np.float64, requires_grad=True)
    out = t.amax(axis)
    np.testing.assert_array_equal(out.detach().numpy(), x.max(axis=axis))
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), x == x.max(axis=axis, keepdims=True))


@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_permute_round_trip(shape, data, seed):
    dims = data.draw(st.permutations(range(len(shape))))
    x = np.random.default_rng(seed).standard_normal(shape)
    t = dlscratch.tensor(x, dtype=np.float64, requires_grad=True)
    permuted = t.permute(*dims)
    np.testing.assert_array_equal(permuted.detach().numpy(), np.transpose(x, dims))
    back = permuted.permute(*np.argsort(dims).tolist())
    np.testing.assert_array_equal(back.detach().numpy(), x)
    g = np.random.default_rng(seed + 1).standard_normal(permuted.shape)
    permuted.backward(g)
    np.testing.assert_array_equal(t.grad.numpy(), np.transpose(g, np.argsort(dims)))


@st.composite
def same_size_shape(draw, size):
    """A shape of 1 to 4 dimensions holding ``size`` elements: its prime factors dealt out at random."""
    dims = [1] * draw(st.integers(1, 4))
    p = 2
    while size > 1:
        while size % p == 0:
            dims[draw(st.integers(0, len(dims) - 1))] *= p
            size //= p
        p += 1
    return tuple(dims)


@given(shape=SHAPES, data=st.data(), seed=SEEDS)
def test_reshape_round_trip(shape, data, seed):
    new_shape = data.draw(same_size_shape(int(np.prod(shape))))
    x = np.random.default_rng(seed).standard_normal(shape)
    t = dlscratch.tensor(x, dtype=np.float64, requires_grad=True)
    reshaped = t.reshape(new_shape)
    np.testing.assert_array_equal(reshaped.detach().numpy(), x.reshape(new_shape))
    np.testing.assert_array_equal(reshaped.reshape(shape).detach().numpy(), x)
    g = np.random.default_rng(seed + 1).standard_normal(new_shape)
    reshaped.backward(g)
    np.testing.assert_array_equal(t.grad.numpy(), g.reshape(shape))
