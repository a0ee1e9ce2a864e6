"""PyTorch's ``torch.nn.functional``: ``import dlscratch.nn.functional as F`` reads as PyTorch's ``F`` does. The
functions are ``dlscratch.functional``'s (the lessons' ``F``), under the names that PyTorch's module has."""

from ..functional import (  # noqa: F401  (re-exported under PyTorch's path)
    avg_pool2d,
    conv2d,
    cross_entropy,
    dropout,
    linear,
    log_softmax,
    max_pool2d,
    mse_loss,
    relu,
    sigmoid,
    softmax,
    tanh,
)

__all__ = ["avg_pool2d", "conv2d", "cross_entropy", "dropout", "linear", "log_softmax", "max_pool2d", "mse_loss",
           "relu", "sigmoid", "softmax", "tanh"]
