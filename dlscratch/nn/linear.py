"""``Linear``: the fully connected layer ``y = x @ W.T + b``."""

import math

import numpy

from .. import backend
from ..operations import linear
from . import init
from .module import Module, Parameter


class Linear(Module):
    """``x: (*, in_features) -> (*, out_features)``. ``weight: (out_features, in_features)``,
    ``bias: (out_features,)`` (or None with ``bias=False``).

    Initialised as PyTorch does: the weight by ``kaiming_uniform_(a=sqrt(5))`` and the bias
    uniformly, both on ``[-1/sqrt(in_features), 1/sqrt(in_features)]``. ``device``: "cpu" or
    "gpu" (default: the current backend). Followed by ``ReLU`` in a ``Sequential`` on a GPU, its bias
    and the ReLU are one kernel on the fast path (``dlscratch/fast/bias_relu.py``).
    """

    def __init__(self, in_features, out_features, bias=True, device=None):
        super().__init__()
        for name, n in (("in_features", in_features), ("out_features", out_features)):
            if not isinstance(n, (int, numpy.integer)) or isinstance(n, bool) or n < 1:
                raise ValueError(f"Linear: {name} must be a positive integer, got {n!r}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        xp = backend.xp if device is None else backend.module_for(device)
        self.weight = Parameter(xp.empty((self.out_features, self.in_features), dtype=numpy.float32))
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if bias:
            self.bias = Parameter(xp.empty(self.out_features, dtype=numpy.float32))
            bound = 1 / math.sqrt(self.in_features)
            init.uniform_(self.bias, -bound, bound)
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        return linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
