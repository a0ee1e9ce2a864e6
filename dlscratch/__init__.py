"""dlscratch: a deep learning framework built from scratch, one lesson at a time.

    import dlscratch
    import dlscratch.functional as F

    x = dlscratch.randn(4, 3, requires_grad=True)
    loss = F.relu(x @ x.T).mean()
    loss.backward()          # x.grad now holds d loss / d x
"""

from . import backend, functional, memory, training
from .checkpoint import load, save
from .creation import arange, generator, manual_seed, ones, ones_like, rand, randint, randn, tensor, zeros, zeros_like
from .function import Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, GradcheckReport, gradcheck
from .tensor import Tensor

__version__ = "0.1.0"

float32 = backend.numpy.float32
float64 = backend.numpy.float64
int64 = backend.numpy.int64

__all__ = [
    "Function", "GradcheckError", "GradcheckReport", "Tensor", "arange", "backend", "enable_grad",
    "float32", "float64", "functional", "generator", "gradcheck", "int64", "is_grad_enabled", "load", "manual_seed",
    "memory", "no_grad", "ones", "ones_like", "rand", "randint", "randn", "save", "set_grad_enabled", "tensor",
    "training", "zeros", "zeros_like",
]
