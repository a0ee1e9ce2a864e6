"""A Linear's or a Conv2d's bias and the ReLU after it in one kernel, on the GPU, inside ``Sequential``.

Unfused, the pair is three launches (the GEMM, the bias's ``add``, the ReLU's ``maximum``); here the GEMM runs
without its bias and one kernel computes ``max(y + b, 0)``, as cuBLASLt's and cuDNN's epilogues do. ``Sequential``
recognises the pair, so the models a learner writes with PyTorch's layers gain without change (same modules, repr
and ``state_dict``). A pair fuses only when nothing a program can observe changes: exactly a ``Linear`` or
``Conv2d`` with a bias before exactly a ``ReLU``, no hooks or instance overrides, one floating dtype; otherwise,
and on the CPU, the modules run one after the other.

The product goes through the public ``linear`` / ``conv2d``, so autocast and the convolution's algorithms apply as
unfused; the node after it is the model's ReLU with the bias as a second input, and its backward is ReLU's mask
kernel, one sum for the bias and the product's GEMMs. ``python -m dlscratch.bench launches`` counts the launches.
"""

import numpy

from .. import backend
from ..amp.autocast import casts_to_low_precision
from ..engine.switch import fast_version_of
from ..engine.tensor import data_of
from ..nn import activation
from ..nn.container import apply_in_turn as reference_apply_in_turn
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..operations.conv import conv2d
from ..operations.matmul import linear
from . import elementwise
from .layout import is_batch_last, new_array

# keeps a NaN, as the reference's maximum does; both branches T, or float16 and float are ambiguous to NVRTC
_BIAS_RELU = """
const T v = y + b;
out = v < (T)0 ? (T)0 : v;
"""


def _bias_relu_twin(y, b, out):
    numpy.add(y, b, out=out)
    numpy.maximum(out, 0, out=out)


class ReLU(elementwise.ReLU):  # the reference's class name, as a graph's node shows it
    """``relu(y + b)``, ``b: (O,)`` along ``axis`` of ``y``: a Linear's ``(*, O)`` (axis -1) or a convolution's
    ``(N, O, Ho, Wo)`` (axis 1), on GPU arrays."""

    returns_unshared_grads = True  # both gradients are new arrays: the bias adopts its own without a copy

    def __init__(self, axis):
        self.axis = axis

    def forward(self, y, b):
        self.axis = self.axis % y.ndim
        kernel = backend.elementwise_kernel("T y, T b", "T out", _BIAS_RELU, "dlscratch_bias_relu",
                                            twin=_bias_relu_twin)
        self.y = new_array(y.shape, y, y.dtype)  # in y's layout (a convolution's: batch-last)
        kernel(y, b.reshape(b.shape + (1,) * (y.ndim - 1 - self.axis)), self.y)
        return self.y

    def backward(self, gy):
        g = super().backward(gy)
        return g, summed_but(g, self.axis)


def summed_but(g, axis):
    """``g`` summed over every axis but ``axis``: one reduction over rows of contiguous memory."""
    if axis == g.ndim - 1:  # a Linear's (*, O)
        return g.reshape(-1, g.shape[-1]).sum(axis=0)
    if is_batch_last(g):  # a convolution's (N, O, Ho, Wo), stored (O, Ho, Wo, N)
        return g.transpose(1, 2, 3, 0).reshape(g.shape[1], -1).sum(axis=1)
    return g.sum(axis=tuple(a for a in range(g.ndim) if a != axis))


@casts_to_low_precision  # the bias, an argument of the unfused product, is cast under autocast as it is there
def bias_relu(y, b, axis):
    return ReLU(axis)(y, b)


def _linear_relu(layer, x):
    return bias_relu(linear(x, layer.weight), layer.bias, -1)


def _conv2d_relu(layer, x):
    y = conv2d(x, layer.weight, None, layer.stride, layer.padding, algorithm=layer.algorithm)
    return bias_relu(y, layer.bias, 1)


_FUSED = {Linear: _linear_relu, Conv2d: _conv2d_relu}  # the product's class, exactly -> the fused pair


def fused_pair(module, after, x):
    """What computes ``after(module(x))`` with one kernel for the bias and the ReLU, or None (see above)."""
    fused = _FUSED.get(type(module))
    if (fused is None or type(after) is not activation.ReLU or after.inplace or module.bias is None
            or not (runs_as_its_class(module) and runs_as_its_class(after))
            or not _one_float_dtype(data_of(x), data_of(module.weight), data_of(module.bias))
            or not (backend.is_gpu_array(data_of(x)) and backend.has_kernels())):
        return None
    return fused


def runs_as_its_class(module):
    """True when calling ``module`` runs its class's ``forward`` and nothing else: no hook of any kind (every
    ``*_hooks`` table of the instance is empty), no ``forward`` or ``__call__`` set on the instance."""
    attributes = vars(module)
    if "forward" in attributes or "__call__" in attributes:
        return False
    for name, value in attributes.items():
        if name.endswith("_hooks") and len(value):
            return False
    return True


def _one_float_dtype(x, weight, bias):
    """The input, weight and bias share one floating dtype, the one the kernel's ``T y, T b`` takes."""
    return x.dtype == weight.dtype == bias.dtype and x.dtype.kind == "f"


@fast_version_of(reference_apply_in_turn)
def apply_in_turn(modules, x):
    if not backend.is_gpu_array(data_of(x)):  # nothing fuses on the CPU: the plain loop, at its cost
        return reference_apply_in_turn.reference(modules, x)
    modules = tuple(modules)
    i = 0
    while i < len(modules):
        fused = fused_pair(modules[i], modules[i + 1], x) if i + 1 < len(modules) else None
        if fused is None:
            x = modules[i](x)
            i += 1
        else:
            x = fused(modules[i], x)
            i += 2
    return x
