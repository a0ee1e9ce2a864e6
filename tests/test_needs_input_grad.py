"""``Function.needs_input_grad``: a backward computes no gradient for an input that requires none
(a first layer's input is data), and the gradients it does compute are unchanged by that."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch.operations import lstm_cell, lstm_layer

RNG = np.random.default_rng(7)


def _tensor(shape, requires_grad):
    return dlscratch.tensor(RNG.standard_normal(shape).astype(np.float32), requires_grad=requires_grad)


CASES = {
    "linear": (lambda x, w, b: F.linear(x, w, b), [(5, 4), (3, 4), (3,)]),
    "matmul": (lambda x, w: x @ w, [(5, 4), (4, 3)]),
    "conv2d": (lambda x, w, b: F.conv2d(x, w, b, padding=1), [(2, 3, 5, 5), (4, 3, 3, 3), (4,)]),
    "mul": (lambda x, w: x * w, [(5, 4), (5, 4)]),
    "div": (lambda x, w: x / (w * w + 1), [(5, 4), (5, 4)]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_backward_skips_the_input_that_needs_no_grad(path, name):
    op, shapes = CASES[name]
    data = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    grads = {}
    for x_requires in (True, False):
        inputs = [dlscratch.tensor(data[0], requires_grad=x_requires)]
        inputs += [dlscratch.tensor(a, requires_grad=True) for a in data[1:]]
        y = op(*inputs)
        assert y.creator.needs_input_grad[0] is x_requires
        direct = y.creator.backward(np.ones(y.shape, np.float32))  # what backward itself returns
        assert (direct[0] is None) is not x_requires
        y.sum().backward()
        grads[x_requires] = [None if t.grad is None else t.grad.numpy() for t in inputs]
    assert grads[False][0] is None and grads[True][0] is not None
    for with_x, without_x in zip(grads[True][1:], grads[False][1:]):
        np.testing.assert_array_equal(with_x, without_x)


def _lstm_call(kind, x, rest):
    if kind == "cell":
        h, c = lstm_cell(x, (rest[0], rest[1]), *rest[2:])
        return h.sum() + c.sum()
    y, h_n, c_n = lstm_layer(x, *rest)
    return y.sum() + c_n.sum()


@pytest.mark.parametrize("kind", ["cell", "layer"])
def test_lstm_backward_skips_the_input_sequence(path, kind):
    x_shape = (4, 5) if kind == "cell" else (6, 4, 5)  # layer: (T, N, I)
    x_data = RNG.standard_normal(x_shape).astype(np.float32)
    H, N = 3, x_shape[-2]
    rest_data = [RNG.standard_normal(s).astype(np.float32)
                 for s in [(N, H), (N, H), (4 * H, x_shape[-1]), (4 * H, H), (4 * H,), (4 * H,)]]
    grads = {}
    for x_requires in (True, False):
        x = dlscratch.tensor(x_data, requires_grad=x_requires)
        rest = [dlscratch.tensor(a, requires_grad=True) for a in rest_data]
        loss = _lstm_call(kind, x, rest)
        fn = next(f for f in _creators(loss) if f.name in ("lstm_cell", "lstm"))
        assert fn.needs_input_grad == (x_requires,) + (True,) * 6
        loss.backward()
        assert (x.grad is not None) is x_requires
        grads[x_requires] = [t.grad.numpy() for t in rest]
    for with_x, without_x in zip(grads[True], grads[False]):
        np.testing.assert_allclose(with_x, without_x, rtol=1e-6, atol=1e-6)


def _creators(loss):
    from dlscratch.autograd import reachable_functions

    return reachable_functions(loss.creator)
