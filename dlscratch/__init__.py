"""dlscratch: a deep learning framework built from scratch, one lesson at a time.

    import dlscratch
    import dlscratch.functional as F

    x = dlscratch.randn(4, 3, requires_grad=True)
    loss = F.relu(x @ x.T).mean()
    loss.backward()          # x.grad now holds d loss / d x

``dlscratch.nn``, ``dlscratch.optim`` and ``dlscratch.data`` are reachable after ``import dlscratch``,
as ``torch.nn`` is after ``import torch``.
"""

from . import backend, functional, memory, training
from .checkpoint import load, save
from .creation import (
    arange,
    as_tensor,
    from_numpy,
    generator,
    manual_seed,
    ones,
    ones_like,
    rand,
    randint,
    randn,
    tensor,
    zeros,
    zeros_like,
)
from .function import Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import GradcheckError, GradcheckReport, gradcheck
from .tensor import Tensor

__version__ = "0.1.0"

float32 = backend.numpy.float32
float64 = backend.numpy.float64
int64 = backend.numpy.int64

# last, as in torch/__init__.py: data's modules import creation, which must find tensor loaded above
from . import (  # noqa: E402
    amp,  # noqa: F401  (registers autocast's casting lists; see entry_points.py)
    data,
    fast,  # noqa: E402,F401  (registers the fast path's implementations; see paths.py)
    nn,
    optim,
)
from .paths import fast_path_enabled, reference  # noqa: E402

__all__ = [
    "Function", "GradcheckError", "GradcheckReport", "Tensor", "arange", "as_tensor", "backend", "data", "enable_grad",
    "fast_path_enabled", "from_numpy", "reference",
    "float32", "float64", "functional", "generator", "gradcheck", "int64", "is_grad_enabled", "load", "manual_seed",
    "memory", "nn", "no_grad", "ones", "ones_like", "rand", "randint", "randn", "save", "optim", "set_grad_enabled",
    "tensor", "training", "zeros", "zeros_like",
]
