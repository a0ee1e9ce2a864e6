"""Activation layers: the elementwise nonlinearities (and softmax) as modules, for ``Sequential``."""

from .. import operations as fn
from .module import Module


class ReLU(Module):
    """``max(x, 0)`` elementwise; any shape. ``inplace=True`` writes it into ``x`` (``Tensor.relu_``)."""

    inplace = False  # the default for a ReLU unpickled without the attribute too

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return x.relu_() if self.inplace else fn.relu(x)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class Sigmoid(Module):
    """``1 / (1 + exp(-x))`` elementwise; any shape."""

    def forward(self, x):
        return fn.sigmoid(x)


class Tanh(Module):
    """``tanh(x)`` elementwise; any shape."""

    def forward(self, x):
        return fn.tanh(x)


class Softmax(Module):
    """``exp(x) / sum(exp(x))`` along ``dim``: each slice along it sums to 1. For training with
    ``cross_entropy`` keep the raw logits instead (it applies log-softmax itself, stably)."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return fn.softmax(x, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """``log(softmax(x))`` along ``dim``, computed stably; with ``NLLLoss`` it is ``CrossEntropyLoss``."""

    def forward(self, x):
        return fn.log_softmax(x, self.dim)
