"""Functions on tensors by PyTorch's names: ``import dlscratch.functional as F``.

Every function here is differentiable (``argmax``-like helpers live on ``Tensor``). Axes are
called ``dim`` as in PyTorch.
"""

from . import functions as _fn
from .functions import (  # noqa: F401  (re-exported)
    add,
    avg_pool2d,
    broadcast_to,
    col2im,
    conv2d,
    cross_entropy,
    div,
    dropout,
    exp,
    flatten,
    im2col,
    linear,
    log,
    lstm_cell,
    matmul,
    max_pool2d,
    mse_loss,
    mul,
    neg,
    permute,
    pow,
    relu,
    reshape,
    sigmoid,
    sqrt,
    squeeze,
    sub,
    sum_to_shape,
    tanh,
    transpose,
    unsqueeze,
)

abs = _fn.abs_


def sum(x, dim=None, keepdim=False):
    return _fn.sum(x, dim, keepdim)


def mean(x, dim=None, keepdim=False):
    return _fn.mean(x, dim, keepdim)


def amax(x, dim=None, keepdim=False):
    return _fn.amax(x, dim, keepdim)


def softmax(x, dim=-1):
    return _fn.softmax(x, dim)


def log_softmax(x, dim=-1):
    return _fn.log_softmax(x, dim)


def cat(tensors, dim=0):
    return _fn.concatenate(tensors, dim)


concatenate = cat


def stack(tensors, dim=0):
    return _fn.stack(tensors, dim)
