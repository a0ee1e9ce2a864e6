"""PyTorch's ``torch.nn.functional``: ``import dlscratch.nn.functional as F`` reads as PyTorch's ``F`` does. The
functions are ``dlscratch.functional``'s (the lessons' ``F``), under the names that PyTorch's module has."""

from ..functional import (  # noqa: F401  (re-exported under PyTorch's path)
    adaptive_avg_pool2d,
    avg_pool2d,
    binary_cross_entropy_with_logits,
    conv2d,
    cross_entropy,
    dropout,
    embedding,
    linear,
    log_softmax,
    max_pool2d,
    mse_loss,
    nll_loss,
    one_hot,
    relu,
    sigmoid,
    softmax,
    tanh,
)

__all__ = ["adaptive_avg_pool2d", "avg_pool2d", "binary_cross_entropy_with_logits", "conv2d", "cross_entropy",
           "dropout", "embedding", "linear", "log_softmax", "max_pool2d", "mse_loss", "nll_loss", "one_hot", "relu",
           "sigmoid", "softmax", "tanh"]
