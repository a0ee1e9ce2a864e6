"""Functions on tensors by PyTorch's names: ``import dlscratch.functional as F``.

Every function here is differentiable (``argmax``-like helpers live on ``Tensor``). Axes are
called ``dim`` as in PyTorch.
"""

from . import operations as _fn
from .operations import (  # noqa: F401  (re-exported; the functions take PyTorch's dim and keepdim)
    adaptive_avg_pool2d,
    add,
    amax,
    avg_pool2d,
    binary_cross_entropy_with_logits,
    broadcast_to,
    clamp,
    col2im,
    concatenate,
    conv2d,
    cos,
    cross_entropy,
    div,
    dropout,
    embedding,
    exp,
    flatten,
    im2col,
    linear,
    log,
    log_softmax,
    lstm_cell,
    matmul,
    max_pool2d,
    mean,
    mse_loss,
    mul,
    neg,
    nll_loss,
    one_hot,
    permute,
    pow,
    relu,
    reshape,
    sigmoid,
    sin,
    softmax,
    sqrt,
    squeeze,
    stack,
    std,
    sub,
    sum,
    sum_to_shape,
    tan,
    tanh,
    transpose,
    unsqueeze,
    var,
)

abs = _fn.abs_
cat = _fn.concatenate
