"""The differentiable operations, one small ``Function`` subclass each, grouped by kind.

These are the reference implementations a lesson reads. Code that uses them goes through the public
API, ``dlscratch.functional`` and ``Tensor``'s methods, which take the same arguments (PyTorch's
``dim`` and ``keepdim``) and pick the fast version where there is one (``dlscratch.engine.switch``).
"""

from .adaptive_pooling import adaptive_avg_pool2d
from .arithmetic import add, div, mul, neg, pow, sub
from .broadcast import broadcast_to, sum_to, sum_to_shape
from .conv import conv2d
from .conversion import astype, clone, to_device
from .dropout import dropout
from .elementwise import abs_, clamp, cos, exp, log, log10, relu, sigmoid, sin, sqrt, tan, tanh
from .embedding import embedding
from .im2col import col2im, im2col
from .indexing import getitem
from .joining import concatenate, stack
from .loss import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss
from .lstm_cell import lstm_cell
from .lstm_layer import lstm_layer
from .matmul import linear, matmul
from .one_hot import one_hot
from .pooling import avg_pool2d, max_pool2d
from .reduction import amax, amin, mean, std, sum, var
from .shape import flatten, permute, reshape, squeeze, transpose, unsqueeze, wrap_dim
from .softmax import log_softmax, softmax

__all__ = [
    "abs_", "adaptive_avg_pool2d", "add", "amax", "amin", "astype", "avg_pool2d", "binary_cross_entropy_with_logits",
    "broadcast_to", "clamp", "clone", "col2im", "concatenate", "conv2d", "cos", "cross_entropy", "div", "dropout",
    "embedding", "exp", "flatten", "getitem", "im2col", "linear", "log", "log10", "log_softmax", "lstm_cell",
    "lstm_layer", "matmul", "max_pool2d", "mean", "mse_loss", "mul", "neg", "nll_loss", "one_hot", "permute", "pow",
    "relu", "reshape", "sigmoid", "sin", "softmax", "sqrt", "squeeze", "stack", "std", "sub", "sum", "sum_to",
    "sum_to_shape", "tan", "tanh", "to_device", "transpose", "unsqueeze", "var", "wrap_dim",
]

# last, once the engine is loaded: importing them registers conv2d's other algorithms (conv_algorithms.py)
from . import fft_conv, winograd  # noqa: E402
