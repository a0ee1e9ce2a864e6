"""Pooling layers: ``MaxPool2d``, ``AvgPool2d`` and ``AdaptiveAvgPool2d`` on images ``(N, C, H, W)``, no
parameters."""

from ..operations.adaptive_pooling import adaptive_avg_pool2d
from ..operations.pooling import avg_pool2d, check_window, max_pool2d
from .module import Module


class _Pool2d(Module):
    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = check_window(kernel_size, stride, padding, type(self).__name__)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool2d(_Pool2d):
    """The maximum of each ``kernel_size`` window: ``(N, C, H, W) -> (N, C, Ho, Wo)``.

    ``stride`` defaults to ``kernel_size``; ``padding`` is minus infinity (it never wins).
    """

    def forward(self, x):
        return max_pool2d(x, self.kernel_size, self.stride, self.padding)


class AvgPool2d(_Pool2d):
    """The mean of each ``kernel_size`` window: ``(N, C, H, W) -> (N, C, Ho, Wo)``.

    ``stride`` defaults to ``kernel_size``; zero padding counts in the mean (PyTorch's default).
    """

    def forward(self, x):
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding)


class AdaptiveAvgPool2d(Module):
    """The mean over each of PyTorch's adaptive windows: ``(N, C, H, W) -> (N, C, *output_size)`` whatever H and
    W. ``output_size``: an int, or a pair in which None keeps that input size; ``AdaptiveAvgPool2d(1)`` is global
    average pooling (a CNN's head before its ``Flatten``)."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"
