"""Synthetic datasets: shapes, dtypes, values from their definitions, seeded determinism."""

import numpy
import pytest

import dlscratch
from dlscratch.data import blobs, sine_waves, spiral


def test_spiral_shapes_labels_and_radius():
    x, y = spiral(n_per_class=50, n_classes=4, noise=0.3, seed=0)
    assert x.shape == (200, 2) and x.dtype == numpy.float32
    assert y.shape == (200,) and y.dtype == numpy.int64
    assert numpy.bincount(y).tolist() == [50, 50, 50, 50] and y[:50].tolist() == [0] * 50
    radius = numpy.hypot(x[:, 0], x[:, 1])  # noise moves the angle only
    numpy.testing.assert_allclose(radius, numpy.tile(numpy.linspace(0, 1, 50), 4), atol=1e-6)


def test_spiral_without_noise_follows_its_formula():
    x, y = spiral(n_per_class=3, n_classes=2, noise=0.0, seed=0)
    r = numpy.array([0.0, 0.5, 1.0] * 2)
    angle = 4 * r + numpy.pi * numpy.array([0, 0, 0, 1, 1, 1])
    numpy.testing.assert_allclose(x, numpy.stack([r * numpy.cos(angle), r * numpy.sin(angle)], 1), atol=1e-6)


def test_blobs_cluster_around_their_centres():
    x, y = blobs(n_per_class=400, n_classes=3, n_features=5, std=0.5, seed=1)
    assert x.shape == (1200, 5) and x.dtype == numpy.float32 and y.dtype == numpy.int64
    centres = numpy.random.default_rng(1).uniform(-5.0, 5.0, size=(3, 5))
    for k in range(3):
        cluster = x[y == k]
        numpy.testing.assert_allclose(cluster.mean(0), centres[k], atol=0.1)
        numpy.testing.assert_allclose(cluster.std(0), 0.5, atol=0.05)


def test_sine_waves_target_is_the_next_step():
    x, y = sine_waves(n_series=8, length=30, seed=2)
    assert x.shape == y.shape == (8, 30, 1) and x.dtype == y.dtype == numpy.float32
    numpy.testing.assert_array_equal(x[:, 1:], y[:, :-1])
    assert numpy.abs(x).max() <= 1.0
    x[0, 1, 0] = 5.0
    assert y[0, 0, 0] != 5.0  # x and y do not share memory


@pytest.mark.parametrize("make", [spiral, blobs, sine_waves])
def test_seeded_determinism(make):
    first, second, other = make(seed=5), make(seed=5), make(seed=6)
    for a, b in zip(first, second, strict=True):
        numpy.testing.assert_array_equal(a, b)
    assert not numpy.array_equal(first[0], other[0])


@pytest.mark.parametrize("make", [spiral, blobs, sine_waves])
def test_without_a_seed_manual_seed_decides(make):
    dlscratch.manual_seed(11)
    first = make()
    dlscratch.manual_seed(11)
    numpy.testing.assert_array_equal(make()[0], first[0])


@pytest.mark.parametrize("call, message", [
    (lambda: spiral(n_per_class=0), "spiral: n_per_class must be a positive integer, got 0"),
    (lambda: blobs(n_features=2.0), "blobs: n_features must be a positive integer, got 2.0"),
    (lambda: sine_waves(length=-3), "sine_waves: length must be a positive integer, got -3"),
])
def test_bad_sizes(call, message):
    with pytest.raises(ValueError, match=message):
        call()
