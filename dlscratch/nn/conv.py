"""``Conv2d``: the 2-D convolution layer, ``y = conv(x, weight) + bias`` on images ``(N, C, H, W)``."""

import math

import numpy

from .. import backend
from ..operations.conv import conv2d
from ..operations.conv_algorithms import check_algorithm
from ..operations.im2col import pair
from . import init
from .module import Module, Parameter


class Conv2d(Module):
    """``x: (N, in_channels, H, W) -> (N, out_channels, Ho, Wo)``, ``Ho = (H + 2*ph - kh) // sh + 1``.

    ``weight: (out_channels, in_channels, kh, kw)``, ``bias: (out_channels,)`` (or None with
    ``bias=False``). ``kernel_size``, ``stride`` and ``padding`` (zeros) are ints or
    ``(height, width)`` pairs. Initialised as PyTorch does: the weight by
    ``kaiming_uniform_(a=sqrt(5))``, the bias uniformly on ``[-1/sqrt(fan_in), 1/sqrt(fan_in)]``
    with ``fan_in = in_channels * kh * kw``. ``device``: "cpu" or "gpu" (default: the current backend).
    ``algorithm``: how the arithmetic is done, ``"im2col"``, ``"fft"``, ``"winograd2"`` or ``"winograd4"``
    (``functional.conv2d``); FFT and Winograd need stride 1, Winograd a 3 x 3 kernel. Followed by ``ReLU`` in a
    ``Sequential`` on a GPU, its bias and the ReLU are one kernel on the fast path (``dlscratch/fast/bias_relu.py``).
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, bias=True, device=None,
                 algorithm="im2col"):
        super().__init__()
        for name, n in (("in_channels", in_channels), ("out_channels", out_channels)):
            if not isinstance(n, (int, numpy.integer)) or isinstance(n, bool) or n < 1:
                raise ValueError(f"Conv2d: {name} must be a positive integer, got {n!r}")
        self.in_channels, self.out_channels = int(in_channels), int(out_channels)
        self.kernel_size = pair(kernel_size, "kernel_size", "Conv2d")
        self.stride = pair(stride, "stride", "Conv2d")
        self.padding = pair(padding, "padding", "Conv2d")
        if min(self.kernel_size + self.stride) < 1 or min(self.padding) < 0:
            raise ValueError(
                f"Conv2d: kernel_size and stride must be positive and padding non-negative, got kernel_size "
                f"{self.kernel_size}, stride {self.stride}, padding {self.padding}"
            )
        self.algorithm = algorithm
        check_algorithm(algorithm, self.kernel_size, self.stride)  # refuse here, not at the first call
        xp = backend.xp if device is None else backend.module_for(device)
        shape = (self.out_channels, self.in_channels) + self.kernel_size
        self.weight = Parameter(xp.empty(shape, dtype=numpy.float32))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            self.bias = Parameter(xp.empty(self.out_channels, dtype=numpy.float32))
            bound = 1 / math.sqrt(self.in_channels * self.kernel_size[0] * self.kernel_size[1])
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, algorithm=self.algorithm)

    def extra_repr(self):
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, bias={self.bias is not None}"
            + ("" if self.algorithm == "im2col" else f", algorithm={self.algorithm!r}")
        )
