"""``conv2d(..., algorithm=)`` and ``Conv2d(algorithm=)``: FFT and Winograd through the public API, on both
paths, equal to im2col forward and backward in float64 (asymmetric padding included), with float32 errors
bounded, and clear refusals where an algorithm does not apply."""

import numpy as np
import pytest

import dlscratch
import dlscratch.functional as F
from dlscratch import nn
from dlscratch.engine import switch

ALGORITHMS = ["fft", "winograd2", "winograd4"]


def run(algorithm, arrays, padding, dtype=np.float64):
    """Forward output and the three gradients of ``sum(y * cos)``, as NumPy arrays."""
    inputs = [dlscratch.tensor(a, dtype=dtype, requires_grad=True) for a in arrays]
    y = F.conv2d(*inputs, padding=padding, algorithm=algorithm)
    seed = np.cos(np.arange(y.numel())).reshape(y.shape).astype(dtype)
    (y * dlscratch.tensor(seed)).sum().backward()
    return [dlscratch.backend.to_cpu(y.detach().data)] + [dlscratch.backend.to_cpu(t.grad.data) for t in inputs]


@pytest.mark.parametrize("path", [switch.fast_path, switch.reference])
@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("shape, padding", [((2, 3, 7, 6), (1, 2)), ((1, 2, 5, 8), (0, 1)), ((3, 1, 4, 4), 1)])
def test_each_algorithm_equals_im2col_in_float64(path, algorithm, shape, padding):
    rng = np.random.default_rng(shape[2] * 7 + shape[3])
    arrays = rng.standard_normal(shape), rng.standard_normal((4, shape[1], 3, 3)), rng.standard_normal(4)
    with path():
        got, expected = run(algorithm, arrays, padding), run("im2col", arrays, padding)
    assert got[0].shape == expected[0].shape
    for g, e in zip(got, expected):
        assert g.dtype == np.float64
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_gradcheck_through_the_public_function(algorithm):
    rng = np.random.default_rng(3)
    x, w, b = (dlscratch.tensor(rng.standard_normal(s), dtype=np.float64, requires_grad=True)
               for s in ((2, 2, 5, 6), (3, 2, 3, 3), (3,)))
    dlscratch.gradcheck(lambda x, w, b: F.conv2d(x, w, b, padding=(1, 0), algorithm=algorithm), x, w, b)


def test_fft_takes_any_kernel_size():
    rng = np.random.default_rng(5)
    arrays = rng.standard_normal((2, 2, 9, 8)), rng.standard_normal((3, 2, 5, 4)), rng.standard_normal(3)
    for g, e in zip(run("fft", arrays, (2, 1)), run("im2col", arrays, (2, 1))):
        np.testing.assert_allclose(g, e, rtol=1e-9, atol=1e-9)


def test_float32_errors_against_float64_grow_with_the_winograd_tile():
    """F(4x4, 3x3)'s transforms have larger entries than F(2x2, 3x3)'s: float32 loses more (measured: about
    20x), yet stays far below what training notices."""
    rng = np.random.default_rng(11)
    arrays = (rng.standard_normal((4, 32, 14, 14)), rng.standard_normal((16, 32, 3, 3)) * (2 / 288) ** .5,
              rng.standard_normal(16))
    exact = run("im2col", arrays, 1)[0]
    scale = np.abs(exact).max()
    errors = {a: np.abs(run(a, arrays, 1, np.float32)[0] - exact).max() / scale
              for a in ["im2col"] + ALGORITHMS}
    assert all(0 < e for e in errors.values())
    assert max(errors["im2col"], errors["fft"], errors["winograd2"]) < 2e-6
    assert 3 * errors["winograd2"] < errors["winograd4"] < 5e-5


def test_float32_stays_float32():
    x = dlscratch.randn(2, 3, 6, 6)
    for algorithm in ALGORITHMS:
        layer = nn.Conv2d(3, 4, 3, padding=1, algorithm=algorithm)
        y = layer(x)
        y.sum().backward()
        assert y.dtype == np.float32 and layer.weight.grad.dtype == np.float32


def test_a_layer_keeps_its_algorithm_and_matches_im2col():
    dlscratch.manual_seed(0)
    im2col = nn.Conv2d(3, 5, 3, padding=1)
    x = dlscratch.randn(2, 3, 8, 8)
    for algorithm in ALGORITHMS:
        layer = nn.Conv2d(3, 5, 3, padding=1, algorithm=algorithm)
        layer.load_state_dict(im2col.state_dict())
        assert f"algorithm='{algorithm}'" in repr(layer)
        np.testing.assert_allclose(layer(x).detach().numpy(), im2col(x).detach().numpy(), rtol=1e-4, atol=2e-5)
    assert "algorithm" not in repr(im2col)


def test_a_small_cnn_learns_with_winograd():
    dlscratch.manual_seed(0)
    rng = np.random.default_rng(0)
    x = dlscratch.tensor(rng.standard_normal((32, 1, 8, 8)).astype(np.float32))
    y = dlscratch.tensor((x.numpy()[:, 0, :4].sum(axis=(1, 2)) > 0).astype(np.int64))
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, algorithm="winograd4"), nn.ReLU(), nn.Flatten(),
                          nn.Linear(256, 2))
    optimizer = dlscratch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("kwargs, message", [
    (dict(algorithm="winograd"), "unknown algorithm 'winograd'; choose one of 'im2col', 'fft', 'winograd2'"),
    (dict(algorithm="fft", stride=2), r"needs stride 1, got stride \(2, 2\)"),
    (dict(algorithm="winograd2", kernel_size=5), "for 3 x 3 kernels; got 5 x 5"),
    (dict(algorithm="winograd4", kernel_size=(3, 1)), "got 3 x 1"),
])
def test_refusals(kwargs, message):
    arguments = {"kernel_size": 3, **kwargs}
    with pytest.raises(ValueError, match=message):
        nn.Conv2d(2, 3, **arguments)
    x, w = dlscratch.randn(1, 2, 6, 6), dlscratch.randn(3, 2, *nn.Conv2d(2, 3, arguments["kernel_size"]).kernel_size)
    with pytest.raises(ValueError, match=message):
        F.conv2d(x, w, stride=arguments.get("stride", 1), algorithm=arguments["algorithm"])


@pytest.mark.parametrize("path", [switch.fast_path, switch.reference])
def test_an_im2col_method_with_another_algorithm_is_refused(path):
    x, w = dlscratch.randn(1, 2, 6, 6), dlscratch.randn(3, 2, 3, 3)
    with path(), pytest.raises(ValueError, match="method='slices' picks how im2col copies its windows"):
        F.conv2d(x, w, im2col_method="slices", algorithm="fft")


def test_an_empty_batch():
    w = dlscratch.randn(4, 3, 3, 3)
    for algorithm in ALGORITHMS:
        assert F.conv2d(dlscratch.zeros(0, 3, 5, 5), w, algorithm=algorithm).shape == (0, 4, 3, 3)


@pytest.mark.parametrize("path", [switch.fast_path, switch.reference])
def test_a_weight_without_output_channels_is_refused(path):
    with path(), pytest.raises(ValueError, match=r"weight of shape \(0, 3, 3, 3\) has no output channels"):
        F.conv2d(dlscratch.randn(2, 3, 5, 5), dlscratch.randn(0, 3, 3, 3))
