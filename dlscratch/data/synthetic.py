"""Small synthetic datasets for the lessons, as NumPy arrays, reproducible by ``seed``.

    x, y = spiral(n_per_class=100, n_classes=3, seed=0)   # x: (300, 2) float32, y: (300,) int64
    x, y = blobs(n_per_class=50, n_classes=4, seed=0)     # Gaussian clusters
    x, y = sine_waves(n_series=64, length=50, seed=0)     # x, y: (64, 50, 1); y is x one step ahead

With ``seed=None`` the samples come from dlscratch's generator (``dlscratch.manual_seed``).
Wrap them in a ``TensorDataset`` to train on them with a ``DataLoader``.
"""

import numpy

from ..engine import creation


def _rng(seed):
    return creation.generator(numpy) if seed is None else numpy.random.default_rng(seed)


def _check_positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, numpy.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def spiral(n_per_class=100, n_classes=3, noise=0.2, seed=None):
    """Points on ``n_classes`` interleaved spiral arms: not linearly separable, easy for an MLP.

    Arm k: radius r from 0 to 1, angle 4r + 2πk/K plus Gaussian noise of std ``noise`` (radians).
    Returns x: (n_per_class * n_classes, 2) float32 and y: (n_per_class * n_classes,) int64, by class.
    """
    _check_positive("spiral: n_per_class", n_per_class)
    _check_positive("spiral: n_classes", n_classes)
    rng = _rng(seed)
    r = numpy.tile(numpy.linspace(0.0, 1.0, n_per_class), n_classes)
    y = numpy.repeat(numpy.arange(n_classes, dtype=numpy.int64), n_per_class)
    angle = 4.0 * r + 2.0 * numpy.pi * y / n_classes + noise * rng.standard_normal(r.shape)
    x = numpy.stack([r * numpy.cos(angle), r * numpy.sin(angle)], axis=1)
    return x.astype(numpy.float32), y


def blobs(n_per_class=100, n_classes=3, n_features=2, std=1.0, spread=5.0, seed=None):
    """Gaussian clusters around centres drawn uniformly in [-spread, spread]^n_features.

    Returns x: (n_per_class * n_classes, n_features) float32 and y: (n_per_class * n_classes,) int64.
    """
    for name, value in (("n_per_class", n_per_class), ("n_classes", n_classes), ("n_features", n_features)):
        _check_positive(f"blobs: {name}", value)
    rng = _rng(seed)
    centres = rng.uniform(-spread, spread, size=(n_classes, n_features))
    y = numpy.repeat(numpy.arange(n_classes, dtype=numpy.int64), n_per_class)
    x = centres[y] + std * rng.standard_normal((len(y), n_features))
    return x.astype(numpy.float32), y


def sine_waves(n_series=100, length=50, noise=0.0, seed=None):
    """Sine waves for next-step prediction: y[:, t] is the value after x[:, t].

    Each series has its own frequency (0.05 to 0.3 radians per step) and phase; Gaussian noise of
    std ``noise`` is added to every value. Returns x, y: (n_series, length, 1) float32.
    """
    _check_positive("sine_waves: n_series", n_series)
    _check_positive("sine_waves: length", length)
    rng = _rng(seed)
    frequency = rng.uniform(0.05, 0.3, size=(n_series, 1))
    phase = rng.uniform(0.0, 2.0 * numpy.pi, size=(n_series, 1))
    values = numpy.sin(frequency * numpy.arange(length + 1) + phase)
    values = (values + noise * rng.standard_normal(values.shape)).astype(numpy.float32)
    return values[:, :-1, None].copy(), values[:, 1:, None].copy()  # copies: x and y must not share memory
