"""The differentiable operations, one small ``Function`` subclass each, grouped by kind.

These are the reference implementations a lesson reads. Code that uses them goes through the public
API, ``dlscratch.functional`` and ``Tensor``'s methods, which take the same arguments (PyTorch's
``dim`` and ``keepdim``) and pick the fast version where there is one (``dlscratch.paths``).
"""

from .arithmetic import add, div, mul, neg, pow, sub
from .broadcast import broadcast_to, sum_to, sum_to_shape
from .conv import conv2d
from .conversion import astype, clone, to_device
from .dropout import dropout
from .elementwise import abs_, clamp, cos, exp, log, relu, sigmoid, sin, sqrt, tan, tanh
from .im2col import col2im, im2col
from .indexing import getitem
from .joining import concatenate, stack
from .loss import cross_entropy, mse_loss
from .lstm_cell import lstm_cell
from .lstm_layer import lstm_layer
from .matmul import linear, matmul
from .pooling import avg_pool2d, max_pool2d
from .reduction import amax, mean, std, sum, var
from .shape import flatten, permute, reshape, squeeze, transpose, unsqueeze, wrap_dim
from .softmax import log_softmax, softmax

__all__ = [
    "abs_", "add", "amax", "astype", "broadcast_to", "clamp", "clone", "concatenate", "cos", "cross_entropy", "div",
    "dropout", "exp", "sin", "tan",
    "flatten", "getitem", "linear", "log", "log_softmax", "lstm_cell", "lstm_layer", "matmul", "mean", "mse_loss",
    "mul",
    "neg", "permute", "pow", "relu", "reshape", "sigmoid", "softmax", "sqrt", "squeeze", "stack",
    "std", "sub", "sum", "sum_to", "sum_to_shape", "tanh", "to_device", "transpose", "unsqueeze", "var", "wrap_dim",
    "avg_pool2d", "col2im", "conv2d", "im2col", "max_pool2d",
]

# last, once the engine is loaded: importing them registers conv2d's other algorithms (conv_algorithms.py)
from . import fft_conv, winograd  # noqa: E402
