"""Binary weights, BinaryConnect's way (M. Courbariaux, Y. Bengio and J.-P. David, "BinaryConnect: Training Deep
Neural Networks with binary weights during propagations", NeurIPS 2015).

Each binary layer keeps a float32 weight, the **shadow weight**, that the optimizer updates as usual; forward and
backward use only its sign, ``+1`` or ``-1`` (``+1`` at zero). The sign has a zero derivative almost everywhere,
so backward passes the gradient with respect to the signs straight through to the shadow weights (the
**straight-through estimator**), and ``clip_shadow_weights_`` keeps them in ``[-1, 1]`` after each step, where a
sign can still flip. At inference a weight is one bit: ``packed_signs`` stores eight to a byte.

BinaryConnect follows every layer with batch normalisation, which rescales the sums of ``fan_in`` terms of size 1.
dlscratch has no batch normalisation, so a binary layer multiplies its signs by the constant ``1 / sqrt(fan_in)``
(one number per layer), which keeps the outputs at the scale of the inputs; the weights stay one bit each.
"""

import math

import numpy

from .. import backend
from ..engine.function import Function
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor
from ..operations import linear
from ..operations.conv import conv2d
from .conv import Conv2d
from .linear import Linear


class BinarizeSTE(Function):
    """``w`` -> ``scale * sign(w)`` (``+scale`` at 0); backward: the straight-through ``scale * gy``."""

    saves_inputs = False

    def __init__(self, scale):
        self.scale = scale

    def forward(self, w):
        xp = backend.get_array_module(w)
        return xp.where(w >= 0, w.dtype.type(self.scale), w.dtype.type(-self.scale))

    def backward(self, gy):
        return gy * gy.dtype.type(self.scale)


class _Binary:
    """What the binary layers share: their weight as the forward sees it."""

    def binary_weight(self):
        """``sign(weight) / sqrt(fan_in)``, in the graph (straight-through to the shadow weight)."""
        return BinarizeSTE(1 / math.sqrt(math.prod(self.weight.shape[1:])))(self.weight)


class BinaryLinear(_Binary, Linear):
    """A ``Linear`` whose forward uses ``sign(weight) / sqrt(in_features)``; the bias stays float32."""

    def forward(self, x):
        return linear(x, self.binary_weight(), self.bias)


class BinaryConv2d(_Binary, Conv2d):
    """A ``Conv2d`` whose forward uses ``sign(weight) / sqrt(in_channels * kh * kw)``; the bias stays float32."""

    def forward(self, x):
        return conv2d(x, self.binary_weight(), self.bias, self.stride, self.padding, algorithm=self.algorithm)


def clip_shadow_weights_(model):
    """Clip the shadow weight of every binary layer of ``model`` to ``[-1, 1]``, in place; after each step."""
    with no_grad():
        for module in model.modules():
            if isinstance(module, _Binary):
                module.weight.data = module.weight.data.clip(-1, 1)


def packed_signs(weight):
    """A weight (array or tensor) -> its signs as bits, eight to a uint8 (1 for +1): ``ceil(numel / 8)`` bytes."""
    data = weight.data if isinstance(weight, Tensor) else weight
    xp = backend.get_array_module(data)
    return xp.packbits((data >= 0).ravel())


def unpacked_signs(bits, shape):
    """The ``+1``/``-1`` float32 weight of ``shape`` that ``packed_signs`` stored in ``bits``."""
    xp = backend.get_array_module(bits)
    signs = xp.unpackbits(bits)[:math.prod(shape)].reshape(shape)
    return (signs.astype(numpy.float32) * 2 - 1).astype(numpy.float32)


def deployed_bytes(model):
    """The bytes ``model`` takes at inference: one bit per weight of its binary layers (and their float32 scale),
    four bytes per number elsewhere (biases, other layers)."""
    total = 0
    binary_weights = set()
    for module in model.modules():
        if isinstance(module, _Binary):
            binary_weights.add(id(module.weight))
            total += -(-module.weight.numel() // 8) + 4
    return total + sum(4 * p.numel() for p in model.parameters() if id(p) not in binary_weights)
