"""dlscratch: a deep learning framework built from scratch, one lesson at a time.

    import dlscratch
    import dlscratch.functional as F

    x = dlscratch.randn(4, 3, requires_grad=True)
    loss = F.relu(x @ x.T).mean()
    loss.backward()          # x.grad now holds d loss / d x

``dlscratch.nn``, ``dlscratch.optim`` and ``dlscratch.data`` are reachable after ``import dlscratch``,
as ``torch.nn`` is after ``import torch``; so are PyTorch's paths to them (``nn.functional``, ``utils.data``)
and its names for dtypes and devices (``dlscratch.float``, ``dlscratch.device("cuda")``, ``dlscratch.cuda``).
"""

import importlib

from . import backend, functional, training
from .checkpoint import load, save
from .device import device, get_default_device, set_default_device
from .dtype_names import (  # noqa: A004  (PyTorch's names: dlscratch.float, dlscratch.long, ...)
    bool,  # noqa: F401  (not in __all__, below)
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    float,  # noqa: F401
    float16,
    float32,
    float64,
    half,
    int,  # noqa: F401
    int8,
    int16,
    int32,
    int64,
    long,
    short,
    uint8,
)
from .engine.creation import (
    arange,
    as_tensor,
    eye,
    from_numpy,
    full,
    generator,
    linspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from .engine.function import Function
from .engine.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .engine.tensor import Tensor
from .gradcheck import GradcheckError, GradcheckReport, gradcheck
from .random import Generator
from .sampling import multinomial
from .tensor_ops import (  # torch.sin, torch.matmul, ...: PyTorch's top-level functions
    abs,  # noqa: A004,F401  (abs, all, any, max, min and sum: not in __all__, below)
    add,
    all,  # noqa: A004,F401
    allclose,
    any,  # noqa: A004,F401
    argmax,
    argmin,
    cat,
    clamp,
    cos,
    div,
    exp,
    flatten,
    log,
    log10,
    matmul,
    max,  # noqa: A004,F401
    mean,
    min,  # noqa: A004,F401
    mul,
    numel,
    sigmoid,
    sin,
    sqrt,
    stack,
    sub,
    sum,  # noqa: A004,F401
    tan,
    tanh,
)

__version__ = "0.1.0"

# last, as in torch/__init__.py: data's modules import creation, which must find tensor loaded above
from . import (  # noqa: E402
    accelerator,
    amp,  # noqa: F401  (registers autocast's casting lists; see engine/wrappable.py)
    backends,
    cuda,
    data,
    nn,
    optim,
    utils,
)
from .amp import GradScaler, autocast, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled  # noqa: E402
from .engine.switch import fast_path_enabled, reference  # noqa: E402

for _name in ("bias_relu", "conv", "dropout", "elementwise", "im2col", "loss", "lstm", "lstm_layer", "matmul",
              "optim", "pooling"):
    importlib.import_module(f"dlscratch.fast.{_name}")  # importing registers its fast versions (engine/switch.py)
del _name

# float, int, bool, abs, all, any, max, min and sum are attributes, as in PyTorch, but not in __all__: a star
# import must not hide the builtins
__all__ = [
    "accelerator", "add", "allclose", "arange", "argmax", "argmin", "as_tensor", "autocast", "backend", "backends",
    "cat", "cdouble", "cfloat", "clamp", "complex128", "complex64", "cos", "cuda", "data", "device", "div", "double",
    "enable_grad", "exp", "eye", "fast_path_enabled", "flatten", "float16", "float32", "float64", "from_numpy", "full",
    "Function", "functional", "generator", "Generator", "get_autocast_dtype", "get_default_device", "gradcheck",
    "GradcheckError", "GradcheckReport", "GradScaler", "half", "int16", "int32", "int64", "int8",
    "is_autocast_cache_enabled", "is_autocast_enabled", "is_grad_enabled", "linspace", "load", "log", "log10", "long",
    "manual_seed", "matmul", "mean", "mul", "multinomial", "nn", "no_grad", "numel", "ones", "ones_like", "optim",
    "rand", "rand_like", "randint", "randn", "randn_like", "randperm", "reference", "save", "set_default_device",
    "set_grad_enabled", "short", "sigmoid", "sin", "sqrt", "stack", "sub", "tan", "tanh", "Tensor", "tensor",
    "training", "uint8", "utils", "zeros", "zeros_like"
]
