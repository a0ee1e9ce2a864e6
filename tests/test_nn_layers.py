"""Layers: Linear, the activations, Flatten and Dropout against NumPy, gradient checks, and a
small MLP that has to learn."""

import math

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn, optim


def _numpy_softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ----- Linear -----
def test_linear_matches_numpy(backend):
    layer = nn.Linear(4, 3)
    assert layer.weight.shape == (3, 4) and layer.bias.shape == (3,)
    assert layer.weight.dtype == layer.bias.dtype == np.float32
    assert layer.weight.device == dlscratch.backend.device()
    x = dlscratch.randn(5, 4)
    W, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    np.testing.assert_allclose(layer(x).detach().numpy(), x.numpy() @ W.T + b, rtol=1e-5, atol=1e-6)
    x3 = dlscratch.randn(2, 5, 4)  # leading dimensions are batch dimensions
    y3 = layer(x3)
    assert y3.shape == (2, 5, 3) and y3.dtype == np.float32
    np.testing.assert_allclose(y3.detach().numpy(), x3.numpy() @ W.T + b, rtol=1e-5, atol=1e-6)


def test_linear_without_bias_and_its_gradients():
    layer = nn.Linear(3, 2, bias=False)
    assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]
    x = dlscratch.tensor([[1.0, 2.0, 3.0]])
    layer(x).sum().backward()
    # d sum(x W^T) / dW[i, j] = x[j] for every output i
    np.testing.assert_array_equal(layer.weight.grad.numpy(), [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])


def test_linear_default_init_is_pytorchs():
    layer = nn.Linear(300, 200)
    bound = 1 / math.sqrt(300)
    for p in (layer.weight.detach().numpy(), layer.bias.detach().numpy()):
        assert np.abs(p).max() <= bound and np.abs(p).max() > 0.95 * bound
    assert layer.weight.detach().numpy().std() == pytest.approx(bound / math.sqrt(3), rel=0.02)


def test_linear_rejects_bad_sizes_and_inputs():
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match="in_features must be a positive integer"):
            nn.Linear(bad, 3)
    with pytest.raises(ValueError, match=r"x \(2, 5\) and weight \(3, 4\)"):
        nn.Linear(4, 3)(dlscratch.randn(2, 5))


def test_gradcheck_linear_tanh_linear():
    dlscratch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))
    params = list(model.parameters())
    x = dlscratch.randn(5, 3, requires_grad=True)

    def mlp(x, w1, b1, w2, b2):
        return F.linear(F.tanh(F.linear(x, w1, b1)), w2, b2)

    # float64 copies of the input and every parameter, through the same functions the layers call
    assert dlscratch.gradcheck(mlp, x, *params)

    # the module computes that function, with the same gradients
    seed = np.random.default_rng(1).standard_normal((5, 2)).astype(np.float32)
    model(x).backward(seed)
    copies = [dlscratch.tensor(p.detach().numpy(), requires_grad=True) for p in params]
    reference = mlp(x, *copies)
    np.testing.assert_array_equal(model(x).detach().numpy(), reference.detach().numpy())
    reference.backward(seed)
    for p, c in zip(params, copies):
        np.testing.assert_allclose(p.grad.numpy(), c.grad.numpy(), rtol=1e-6, atol=1e-7)

    # and the module itself in float64, with respect to its input
    model.to(np.float64)
    assert dlscratch.gradcheck(lambda inp: model(inp), x)


# ----- activations and Flatten -----
def test_activations_match_numpy(backend):
    x = dlscratch.randn(3, 4) * 3
    a = x.numpy()
    np.testing.assert_array_equal(nn.ReLU()(x).numpy(), np.maximum(a, 0))
    np.testing.assert_allclose(nn.Sigmoid()(x).numpy(), 1 / (1 + np.exp(-a)), rtol=1e-6)
    np.testing.assert_allclose(nn.Tanh()(x).numpy(), np.tanh(a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(nn.Softmax()(x).numpy(), _numpy_softmax(a, -1), rtol=1e-6)
    column = nn.Softmax(dim=0)(x).numpy()
    np.testing.assert_allclose(column, _numpy_softmax(a, 0), rtol=1e-6)
    np.testing.assert_allclose(column.sum(axis=0), np.ones(4), rtol=1e-6)
    assert all(m(x).dtype == np.float32 for m in (nn.ReLU(), nn.Sigmoid(), nn.Tanh(), nn.Softmax()))


def test_activation_layers_gradcheck():
    x = dlscratch.randn(2, 3)
    for layer in (nn.Sigmoid(), nn.Tanh(), nn.Softmax(dim=1)):
        assert dlscratch.gradcheck(layer, x)


def test_flatten():
    x = dlscratch.randn(2, 3, 4, 5, requires_grad=True)
    y = nn.Flatten()(x)
    assert y.shape == (2, 60)
    np.testing.assert_array_equal(y.detach().numpy(), x.detach().numpy().reshape(2, 60))
    assert nn.Flatten(0, -1)(x).shape == (120,)
    assert nn.Flatten(1, 2)(x).shape == (2, 12, 5)
    assert nn.Flatten(-3, -2)(x).shape == (2, 12, 5)
    y.sum().backward()
    assert x.grad.shape == x.shape
    with pytest.raises(ValueError, match=r"Flatten\(start_dim=1, end_dim=-1\) does not fit an input of shape \(4,\)"):
        nn.Flatten()(dlscratch.randn(4))
    with pytest.raises(ValueError, match="start_dim not after end_dim"):
        nn.Flatten(2, 1)(x)


# ----- Dropout -----
def test_dropout_in_training_zeroes_about_p_and_scales_the_rest(backend):
    dlscratch.manual_seed(0)
    p = 0.3
    x = dlscratch.tensor(backend.full(100_000, 2.0, dtype=np.float32), requires_grad=True)
    y = nn.Dropout(p)(x)
    out = y.detach().numpy()
    zeroed = out == 0
    assert abs(zeroed.mean() - p) < 0.006  # about 4 standard errors of the fraction
    np.testing.assert_allclose(out[~zeroed], 2.0 / (1 - p), rtol=1e-6)
    assert y.dtype == np.float32 and type(y.creator).__name__ == "Dropout" and y.creator.inputs == (x,)

    g = np.random.default_rng(0).standard_normal(100_000).astype(np.float32)
    y.backward(g)
    np.testing.assert_allclose(x.grad.numpy(), np.where(zeroed, 0.0, g / (1 - p)), rtol=1e-6)


def test_dropout_keeps_a_batch_last_layout_and_backpropagates_any_layout(fast_path, backend):
    # a convolution's output is stored (C, H, W, N): the mask is drawn in that order and y keeps it
    dlscratch.manual_seed(1)
    stored = backend.asarray(np.random.default_rng(2).random((4, 3, 3, 16), dtype=np.float32) + 1)
    x = dlscratch.tensor(stored.transpose(3, 0, 1, 2), requires_grad=True)
    y = F.dropout(x, 0.25)
    assert y.shape == (16, 4, 3, 3) and np.argsort(y.data.strides).tolist() == [0, 3, 2, 1]
    zeroed = y.detach().numpy() == 0
    assert 0 < zeroed.mean() < 0.5
    np.testing.assert_allclose(y.detach().numpy(), np.where(zeroed, 0.0, x.detach().numpy() / 0.75), rtol=1e-6)
    g = np.random.default_rng(3).standard_normal(y.shape).astype(np.float32)  # C-ordered, as Flatten gives it
    y.backward(g)
    np.testing.assert_allclose(x.grad.numpy(), np.where(zeroed, 0.0, g / 0.75), rtol=1e-6)


def test_dropout_mask_comes_from_the_seeded_generator():
    x = dlscratch.ones(1000)
    dlscratch.manual_seed(7)
    first, second = F.dropout(x, 0.5).numpy(), F.dropout(x, 0.5).numpy()
    dlscratch.manual_seed(7)
    np.testing.assert_array_equal(F.dropout(x, 0.5).numpy(), first)
    assert not np.array_equal(first, second)


def test_dropout_is_the_identity_in_eval_mode_and_for_p_zero():
    x = dlscratch.randn(4, 5, requires_grad=True)
    layer = nn.Dropout(0.5).eval()
    assert layer(x) is x
    assert F.dropout(x, 0.5, training=False) is x
    assert nn.Dropout(0.0)(x) is x
    layer.train()
    assert (layer(dlscratch.ones(1000)).numpy() == 0).any()


def test_dropout_keeps_float64_and_rejects_bad_p():
    y = F.dropout(dlscratch.tensor(np.ones(10), dtype=np.float64), 0.5)
    assert y.dtype == np.float64
    for bad in (1.0, -0.1, 1.5, "0.5", True, None):
        with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\)"):
            nn.Dropout(bad)
    with pytest.raises(ValueError, match="p must be a probability"):
        F.dropout(dlscratch.ones(3), p=1.0)


# ----- learning -----
def _xor_blobs(n, rng):
    """Four Gaussian blobs at (+-1, +-1); the label is 1 where the signs differ (XOR)."""
    corners = np.array([[1, 1], [-1, -1], [1, -1], [-1, 1]], dtype=np.float32)
    which = rng.integers(0, 4, n)
    x = corners[which] + 0.3 * rng.standard_normal((n, 2)).astype(np.float32)
    return dlscratch.tensor(x), dlscratch.tensor((which >= 2).astype(np.int64))


def test_mlp_learns_xor_blobs():
    dlscratch.manual_seed(0)
    rng = np.random.default_rng(0)
    x, y = _xor_blobs(400, rng)
    x_test, y_test = _xor_blobs(400, rng)
    model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Dropout(0.1), nn.Linear(16, 2))
    opt = optim.SGD(model.parameters(), lr=0.2, momentum=0.9)
    for _ in range(300):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    model.eval()
    with dlscratch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test.numpy()).mean()
    assert loss.item() < 0.2 and accuracy > 0.95
