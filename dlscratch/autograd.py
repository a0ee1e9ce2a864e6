"""Backpropagation, as the library runs it, and PyTorch's ``torch.autograd`` names.

``propagate`` picks the walk: on the reference path the core's (``core/backprop.py``), which calls each function's
``Function.run_backward`` with its extensions; on the fast path the same walk in one frame (``graph.walk``).
Where a leaf has post-accumulate-grad hooks, they run once its gradient is whole
(``engine/extensions/leaf_hooks.py``); once
some ``.data`` was given another shape, a leaf's ``.grad`` of the wrong shape is refused before the walk
(``engine/extensions/errors.py``). Then it runs the callbacks that hooks queued during the walk
(``engine/extensions/callbacks.py``).

``Tensor.backward`` checks its gradient and calls ``propagate``; ``backward`` here is PyTorch's
``torch.autograd.backward``, which calls ``Tensor.backward``. ``Function`` is PyTorch's ``torch.autograd.Function``
(``autograd_function.py``), beside the lessons' ``dlscratch.Function``.
"""

import functools

from .autograd_function import Function, FunctionCtx
from .core import backprop
from .core.backprop import reachable_functions
from .engine.extensions import callbacks, errors, leaf_hooks
from .engine.extensions.callbacks import queue_callback
from .engine.switch import _state as _path
from .engine.tensor import Tensor
from .fast import graph

__all__ = ["Function", "FunctionCtx", "backward", "propagate", "queue_callback", "reachable_functions"]


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """PyTorch's ``torch.autograd.backward``: ``tensor.backward(gradient)`` for each tensor of ``tensors`` (one
    tensor, or a sequence) with its gradient of ``grad_tensors`` (None: a scalar's 1). The gradients add up
    in ``.grad``; see ``Tensor.backward`` for the other arguments."""
    if isinstance(tensors, Tensor):
        tensors, grad_tensors = (tensors,), (grad_tensors,)
    elif grad_tensors is None:
        grad_tensors = (None,) * len(tensors)
    elif isinstance(grad_tensors, Tensor):
        grad_tensors = (grad_tensors,)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"autograd.backward: got {len(tensors)} tensors and {len(grad_tensors)} gradients; "
                           "pass one gradient (or None) per tensor")
    for t, g in zip(tensors, grad_tensors):
        t.backward(g, retain_graph, create_graph, inputs)


def propagate(output, grad, inputs=None):
    """Propagate array ``grad`` (shaped like tensor ``output``) to every tensor ``output`` depends on, into the
    ``.grad`` of the leaves (of ``inputs`` only, when given), then call what hooks queued with ``queue_callback``."""
    if errors.reshaped_data[0]:
        errors.check_leaf_grads(output, reachable_functions)
    walk = graph.walk if _path.fast else backprop.walk
    if leaf_hooks.registered[0]:
        walk = functools.partial(leaf_hooks.walk_calling_hooks_once, walk)
    if inputs is not None:
        walk = functools.partial(_only_into, _as_inputs(inputs), walk)
    callbacks.run_then_callbacks(walk, output, grad)


def _as_inputs(inputs):
    """``backward(inputs=)``: a tensor or a non-empty sequence of tensors that require grad, as a tuple."""
    inputs = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if not inputs:
        raise RuntimeError("backward: inputs= cannot be empty; leave it out to accumulate into every leaf")
    for i, t in enumerate(inputs):
        if not (isinstance(t, Tensor) and t.requires_grad):
            raise RuntimeError(f"backward: inputs[{i}] is not a tensor that requires grad, so no gradient can "
                               "accumulate into it")
    return inputs


def _only_into(inputs, walk, output, grad):
    """``walk(output, grad)`` accumulating only into ``inputs``: during the walk, the other leaves it reaches stop
    requiring grad, and a computed tensor among ``inputs`` retains its gradient (``retain_grad``)."""
    wanted = {id(t) for t in inputs}
    leaves = [output] if output.creator is None else [
        x for fn in reachable_functions(output.creator) for x in fn.inputs if x.creator is None]
    others = list({id(x): x for x in leaves if x._requires_grad and id(x) not in wanted}.values())
    retaining = [t for t in inputs if t.creator is not None and not t.retains_grad]
    for x in others:
        x._requires_grad = False
    for t in retaining:
        t.retains_grad = True
    try:
        walk(output, grad)
    finally:
        for x in others:
            x._requires_grad = True
        for t in retaining:
            t.retains_grad = False
