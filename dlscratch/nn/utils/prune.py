"""Magnitude pruning, by PyTorch's names (``torch.nn.utils.prune``): S. Han, J. Pool, J. Tran and W. J. Dally,
"Learning both Weights and Connections for Efficient Neural Networks", NeurIPS 2015.

Pruning ``module.weight`` re-parametrises it: the learned values move to the parameter ``weight_orig``, a buffer
``weight_mask`` of ones and zeros joins them, and before every forward a hook sets the plain attribute
``module.weight = weight_orig * weight_mask``. The optimizer trains ``weight_orig``; the mask's zeros get no
gradient through the product, so pruned weights stay zero however long training goes on. Pruning the same
tensor again prunes among the weights still there (``amount`` counts those), and the masks multiply. ``remove``
makes it permanent: the zeros are written into ``weight_orig``, that same Parameter object becomes ``weight``
again (an optimizer built before pruning trains it throughout, as in PyTorch), and the hook and the mask go.

``amount``: a fraction in [0, 1] of the weights (or channels) still unpruned, or a whole number of them.
"""

import numpy

from ... import backend
from ...engine.tensor import Tensor
from ..binary import _Binary


def _count(amount, total, what):
    if isinstance(amount, bool) or not isinstance(amount, (int, float, numpy.integer, numpy.floating)):
        raise TypeError(f"prune: amount must be a fraction or a whole number, got {type(amount).__name__}")
    if isinstance(amount, (int, numpy.integer)):
        if not 0 <= amount <= total:
            raise ValueError(f"prune: amount {amount} is more than the {total} {what} left (or negative)")
        return int(amount)
    if not 0.0 <= amount <= 1.0:
        raise ValueError(f"prune: a fractional amount must be in [0, 1], got {amount}")
    return int(round(amount * total))


def _smallest(scores, k):
    """A boolean array, True at the ``k`` smallest entries of ``scores`` (ties broken by position)."""
    xp = backend.get_array_module(scores)
    chosen = xp.zeros(scores.size, dtype=bool)
    if k:
        chosen[xp.argsort(scores.ravel(), kind="stable")[:k]] = True
    return chosen.reshape(scores.shape)


class ForwardPreHookMask:
    """The hook of one pruned tensor: ``module.<name> = <name>_orig * <name>_mask`` before each forward. It
    reads the module it is given, so a copied model's hook serves the copy."""

    def __init__(self, name):
        self.name = name
        self.derived_attributes = (name,)  # left out of copies and pickles, computed again (Module.__getstate__)

    def __call__(self, module, args):
        _recompute(module, self.name)


def _recompute(module, name):
    object.__setattr__(module, name, getattr(module, name + "_orig") * getattr(module, name + "_mask"))


def _hook_of(module, name):
    return next((key for key, hook in module._forward_pre_hooks.items()
                 if isinstance(hook, ForwardPreHookMask) and hook.name == name), None)


def _current(module, name):
    """``(weight, mask)`` arrays: the learned values and the mask so far (all ones when not yet pruned)."""
    if _hook_of(module, name) is not None:
        return getattr(module, name + "_orig").data, getattr(module, name + "_mask").data
    param = module._parameters.get(name)
    if param is None:
        raise ValueError(f"prune: {type(module).__name__} has no parameter {name!r}")
    if name == "weight" and isinstance(module, _Binary):
        raise ValueError(f"prune: {type(module).__name__}'s forward uses sign(weight), and a pruned 0 would compute as "
                         "+1, not 0; prune float layers (or the bias) instead")
    return param.data, backend.get_array_module(param.data).ones(param.shape, dtype=param.dtype)


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` where ``mask`` (an array or tensor of its shape) is 0, on top of any earlier
    mask. Returns the module."""
    weight, old = _current(module, name)
    mask = mask.data if isinstance(mask, Tensor) else mask
    if tuple(mask.shape) != weight.shape:
        raise ValueError(f"prune: a mask of shape {tuple(mask.shape)} for {name!r} of shape {weight.shape}")
    combined = (old * backend.get_array_module(weight).asarray(mask)).astype(weight.dtype)
    if _hook_of(module, name) is None:
        param = module._parameters[name]
        del module._parameters[name]
        module.register_parameter(name + "_orig", param)
        module.register_buffer(name + "_mask", Tensor(combined))
        module.register_forward_pre_hook(ForwardPreHookMask(name))
    else:
        getattr(module, name + "_mask").data = combined
    _recompute(module, name)
    return module


def identity(module, name):
    """Re-parametrise ``module.<name>`` with a mask of ones (prunes nothing)."""
    weight, _ = _current(module, name)
    return custom_from_mask(module, name, backend.get_array_module(weight).ones(weight.shape, dtype=weight.dtype))


def l1_unstructured(module, name, amount):
    """Prune the ``amount`` unpruned entries of ``module.<name>`` that are smallest in magnitude."""
    weight, mask = _current(module, name)
    xp = backend.get_array_module(weight)
    alive = mask != 0
    k = _count(amount, int(alive.sum()), "weights")
    scores = xp.where(alive, xp.abs(weight), xp.inf)  # the pruned ones are not chosen again
    return custom_from_mask(module, name, ~_smallest(scores, k))


def ln_structured(module, name, amount, n, dim):
    """Prune whole slices along ``dim`` (``dim=0``: output channels of a Conv2d, rows of a Linear): the
    ``amount`` unpruned slices of smallest L``n`` norm (``n``: 1, 2, or ``numpy.inf``)."""
    weight, mask = _current(module, name)
    xp = backend.get_array_module(weight)
    if not -weight.ndim <= dim < weight.ndim:
        raise ValueError(f"prune: dim {dim} for a tensor of {weight.ndim} dimensions")
    dim %= weight.ndim
    others = tuple(d for d in range(weight.ndim) if d != dim)
    masked = weight * mask
    if n == numpy.inf:
        norms = xp.abs(masked).max(axis=others)
    elif n in (1, 2):
        norms = (xp.abs(masked) ** n).sum(axis=others) ** (1 / n)
    else:
        raise ValueError(f"prune: n must be 1, 2 or numpy.inf, got {n!r}")
    alive = mask.any(axis=others)
    k = _count(amount, int(alive.sum()), "slices")
    keep = ~_smallest(xp.where(alive, norms, xp.inf), k)
    shape = [1] * weight.ndim
    shape[dim] = -1
    return custom_from_mask(module, name, xp.broadcast_to(keep.reshape(shape), weight.shape))


class L1Unstructured:
    """The method ``global_unstructured`` takes (PyTorch's name): magnitude, across all the tensors given."""


def global_unstructured(parameters, pruning_method=L1Unstructured, amount=0.0):
    """Prune the ``amount`` unpruned weights smallest in magnitude among all ``parameters``, a list of
    ``(module, name)``: one threshold for the whole model, so layers lose different shares."""
    parameters = list(parameters)
    if pruning_method is not L1Unstructured:
        raise ValueError("global_unstructured: only prune.L1Unstructured is supported")
    if not parameters:
        raise ValueError("global_unstructured: no (module, name) pairs given")
    current = [_current(module, name) for module, name in parameters]
    xp = backend.get_array_module(current[0][0])
    scores = xp.concatenate([xp.where(m != 0, xp.abs(w), xp.inf).ravel() for w, m in current])
    k = _count(amount, int(sum(int((m != 0).sum()) for _, m in current)), "weights")
    keep, start = ~_smallest(scores, k), 0
    for (module, name), (weight, _) in zip(parameters, current):
        custom_from_mask(module, name, keep[start:start + weight.size].reshape(weight.shape))
        start += weight.size


def is_pruned(module):
    """True when any module of the tree has a pruned tensor."""
    hooks = [hook for m in module.modules() for hook in m._forward_pre_hooks.values()]
    return any(isinstance(hook, ForwardPreHookMask) for hook in hooks)


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: ``orig * mask`` is written into the Parameter
    ``<name>_orig``, which becomes ``<name>`` again (the same object, as in PyTorch, so an optimizer built
    before pruning keeps training it); the hook and the mask go. Returns the module."""
    key = _hook_of(module, name)
    if key is None:
        raise ValueError(f"prune.remove: {name!r} of {type(module).__name__} is not pruned")
    param = getattr(module, name + "_orig")
    param.data = param.data * getattr(module, name + "_mask").data
    del module._forward_pre_hooks[key]
    module._forget(name + "_orig")
    module._forget(name + "_mask")
    module.__dict__.pop(name, None)
    module.register_parameter(name, param)
    return module


def sparsity(module, name="weight"):
    """The fraction of ``module.<name>`` that is zero (pruned or not)."""
    weight = getattr(module, name).data
    return float((weight == 0).sum()) / weight.size
