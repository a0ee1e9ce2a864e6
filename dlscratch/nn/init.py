"""Weight initialisers (PyTorch's names): fill a tensor in place, on its device, in its dtype.

Why the scale matters: a layer with ``fan_in`` inputs sums ``fan_in`` products, so weights of
variance ``1 / fan_in`` keep the activations' variance steady from layer to layer (LeCun);
Glorot and Bengio average the forward and backward fans (``xavier_*``); He et al. double the
variance to make up for ReLU zeroing half its inputs (``kaiming_*``, via ``calculate_gain``).
A uniform distribution on ``[-b, b]`` has variance ``b**2 / 3``, hence the ``sqrt(3)`` below.

Randomness comes from ``dlscratch.generator``, so ``dlscratch.manual_seed`` makes it repeatable.
"""

import math

import numpy

from ..backend import get_array_module
from ..engine.creation import generator
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor


def calculate_fan_in_and_fan_out(tensor):
    """``(fan_in, fan_out)`` of a weight: ``(out, in)`` for a linear layer, ``(out, in, kh, kw)``
    for a convolution (each input channel contributes ``kh * kw`` products)."""
    if tensor.ndim < 2:
        raise ValueError(f"fans need a weight of at least 2 dimensions (out, in, ...), got shape {tensor.shape}")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def calculate_gain(nonlinearity, param=None):
    """The factor by which a nonlinearity shrinks the standard deviation, to be made up for:
    1 for linear and sigmoid, 5/3 for tanh, sqrt(2) for relu, sqrt(2 / (1 + slope**2)) for
    leaky_relu (``param``: the negative slope, default 0.01)."""
    if nonlinearity in ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1.0 + slope**2))
    raise ValueError(
        f"calculate_gain: unknown nonlinearity {nonlinearity!r}; "
        "use 'linear', 'sigmoid', 'tanh', 'relu' or 'leaky_relu'"
    )


def _fan(tensor, mode):
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"mode must be 'fan_in' or 'fan_out', got {mode!r}")
    return fan_in if mode == "fan_in" else fan_out


def _check(tensor):
    if not isinstance(tensor, Tensor):
        raise TypeError(f"initialisers fill a Tensor in place; got {type(tensor).__name__}")
    if tensor.dtype.kind != "f":
        raise TypeError(f"initialisers fill floating-point tensors, not {tensor.dtype}")


def _random(tensor, draw):
    """``draw(rng, shape, dtype)`` from the tensor's device, in float32 or float64."""
    _check(tensor)
    dtype = numpy.float64 if tensor.dtype == numpy.float64 else numpy.float32
    return draw(generator(get_array_module(tensor.data)), tensor.shape, dtype)


def _write(tensor, values):
    """Overwrite in place as a counted write (see ``engine/extensions/versions.py``); not part of any graph."""
    with no_grad():
        tensor.copy_(values)


def uniform_(tensor, a=0.0, b=1.0):
    """Fill with samples of the uniform distribution on ``[a, b)``."""
    u = _random(tensor, lambda rng, shape, dtype: rng.random(shape, dtype=dtype))
    _write(tensor, a + (b - a) * u)
    return tensor


def normal_(tensor, mean=0.0, std=1.0):
    """Fill with samples of the normal distribution ``N(mean, std**2)``."""
    z = _random(tensor, lambda rng, shape, dtype: rng.standard_normal(shape, dtype=dtype))
    _write(tensor, mean + std * z)
    return tensor


def zeros_(tensor):
    _check(tensor)
    _write(tensor, 0)
    return tensor


def ones_(tensor):
    _check(tensor)
    _write(tensor, 1)
    return tensor


def xavier_uniform_(tensor, gain=1.0):
    """Glorot & Bengio (2010): ``U(-b, b)`` with ``b = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    """Glorot & Bengio (2010): ``N(0, std**2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He et al. (2015): ``U(-b, b)`` with ``b = gain * sqrt(3 / fan)``; ``a`` is leaky_relu's slope.

    PyTorch's default for Linear and Conv2d weights is ``a=sqrt(5)``, which gives
    ``b = 1 / sqrt(fan_in)``.
    """
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(tensor, mode))
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu"):
    """He et al. (2015): ``N(0, std**2)`` with ``std = gain / sqrt(fan)``."""
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std)
