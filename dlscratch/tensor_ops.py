"""The functions PyTorch has at its top level (``torch.matmul``, ``torch.max``, ``torch.all``, ...), by its names.

Each is the library's function or ``Tensor`` method with PyTorch's argument names (``input``, ``other``, ``dim``)
and, where PyTorch has it, ``out=``: the result is written into the tensor ``out`` and ``out`` returned. As in
PyTorch, ``out=`` is refused while gradients are recorded for the result (the write would not be in the graph),
a result is never cast to a lesser kind (float into an integer ``out``), and an ``out`` of another shape is
resized, with a warning unless it was empty.
"""

import warnings

import numpy

from . import operations as _fn
from .engine.grad_mode import is_grad_enabled
from .engine.tensor import Tensor


def _into(out, result, name):
    """``result`` (a tensor), or written into ``out`` when one is given."""
    if out is None:
        return result
    if not isinstance(out, Tensor):
        raise TypeError(f"{name}(): argument 'out' must be a Tensor, not {type(out).__name__}")
    if is_grad_enabled() and (result.requires_grad or out.requires_grad):
        raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad; call it under no_grad(), or drop out=")
    if not numpy.can_cast(result.dtype, out.dtype, "same_kind"):
        raise RuntimeError(f"{name}(): result type {result.dtype} can't be cast to the desired output type "
                           f"{out.dtype}")
    if result.device != out.device:
        raise RuntimeError(f"{name}(): the result is on {result.device} but out= is on {out.device}")
    if out.shape != result.shape:
        if out.numel():
            warnings.warn(f"{name}(): an output with one or more elements was resized since it had shape "
                          f"{out.shape}, which does not match the required output shape {result.shape}",
                          UserWarning, stacklevel=3)
        out.data = result.data.astype(out.dtype)  # a new array: a resize, counted as a write
    else:
        out.copy_(result)
    return out


def _tensor(x):
    return x if isinstance(x, Tensor) else Tensor(x)


def add(input, other, *, alpha=1, out=None):  # noqa: A002  (PyTorch's argument names, here and below)
    """``input + alpha * other``."""
    return _into(out, _fn.add(input, other if alpha == 1 else _fn.mul(other, alpha)), "add")


def sub(input, other, *, alpha=1, out=None):  # noqa: A002
    """``input - alpha * other``."""
    return _into(out, _fn.sub(input, other if alpha == 1 else _fn.mul(other, alpha)), "sub")


def mul(input, other, *, out=None):  # noqa: A002
    return _into(out, _fn.mul(input, other), "mul")


def div(input, other, *, out=None):  # noqa: A002
    return _into(out, _fn.div(input, other), "div")


def matmul(input, other, *, out=None):  # noqa: A002
    """The matrix product, NumPy's and PyTorch's ``@``."""
    return _into(out, _fn.matmul(input, other), "matmul")


def _unary(function, name):
    def unary(input, *, out=None):  # noqa: A002
        return _into(out, function(input), name)

    unary.__name__ = unary.__qualname__ = name
    unary.__doc__ = f"PyTorch's ``{name}`` (with ``out=``): ``{function.__module__}.{function.__name__}``."
    return unary


abs = _unary(_fn.abs_, "abs")  # noqa: A001  (PyTorch's name)
cos = _unary(_fn.cos, "cos")
exp = _unary(_fn.exp, "exp")
log = _unary(_fn.log, "log")
log10 = _unary(_fn.log10, "log10")
sigmoid = _unary(_fn.sigmoid, "sigmoid")
sin = _unary(_fn.sin, "sin")
sqrt = _unary(_fn.sqrt, "sqrt")
tan = _unary(_fn.tan, "tan")
tanh = _unary(_fn.tanh, "tanh")


def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    return _into(out, _fn.clamp(input, min, max), "clamp")


def cat(tensors, dim=0, *, out=None):
    """Join tensors along an existing dimension."""
    return _into(out, _fn.concatenate(tensors, dim), "cat")


def stack(tensors, dim=0, *, out=None):
    """Join same-shaped tensors along a new dimension."""
    return _into(out, _fn.stack(tensors, dim), "stack")


def flatten(input, start_dim=0, end_dim=-1):  # noqa: A002
    return _fn.flatten(input, start_dim, end_dim)


def sum(input, dim=None, keepdim=False):  # noqa: A001,A002
    return _fn.sum(input, dim, keepdim)


def mean(input, dim=None, keepdim=False):  # noqa: A002
    return _fn.mean(input, dim, keepdim)


def max(input, dim=None, keepdim=False):  # noqa: A001,A002
    """The maximum of all elements, or ``(values, indices)`` over ``dim``. PyTorch's ``max(input, other)``, the
    elementwise maximum, is not here: a tensor as ``dim`` is refused."""
    return _extremum(input, dim, keepdim, "max")


def min(input, dim=None, keepdim=False):  # noqa: A001,A002
    """The minimum of all elements, or ``(values, indices)`` over ``dim``; as ``max``."""
    return _extremum(input, dim, keepdim, "min")


def _extremum(input, dim, keepdim, which):  # noqa: A002
    if isinstance(dim, Tensor):
        raise TypeError(f"{which}(input, other), PyTorch's elementwise {which}imum, is not in dlscratch: pass an int "
                        "as dim")
    return getattr(_tensor(input), which)(dim, keepdim)


def argmax(input, dim=None, keepdim=False):  # noqa: A002
    """Indices of the maxima (of the flattened tensor when ``dim`` is None), an int64 tensor."""
    return _tensor(input).argmax(dim, keepdim)


def argmin(input, dim=None, keepdim=False):  # noqa: A002
    return _tensor(input).argmin(dim, keepdim)


def all(input, dim=None, keepdim=False):  # noqa: A001,A002
    """Whether every element is nonzero: a bool tensor."""
    return _tensor(input).all(dim, keepdim)


def any(input, dim=None, keepdim=False):  # noqa: A001,A002
    """Whether some element is nonzero: a bool tensor."""
    return _tensor(input).any(dim, keepdim)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Whether ``|input - other| <= atol + rtol * |other|`` everywhere: a Python bool."""
    return _tensor(input).allclose(other, rtol, atol, equal_nan)


def numel(input):  # noqa: A002
    return _tensor(input).numel()
