"""Backpropagation: walk the graph from an output back to its leaves, in topological order.

Iterative throughout, so a chain of any length works (no recursion limit). Gradients of
intermediate tensors live in a dictionary only while they are needed; leaves that require grad
accumulate theirs into ``.grad``, as do tensors that asked for it with ``retain_grad()``.

The order: a function can only be called once its inputs exist, so every function is created
after the functions that produced its inputs. Each recorded function carries a creation number
(``seq``), and processing the reachable functions from the newest to the oldest visits every
function after all functions that consumed its outputs: a topological order for free.
"""

import operator

from .versions import check_unchanged, latest_write


def reachable_functions(root):
    """Every function that ``root`` (a Function) depends on, ``root`` included, newest first."""
    seen = {root}
    stack = [root]
    while stack:
        fn = stack.pop()
        for x in fn.inputs:
            producer = x.creator
            if producer is not None and producer not in seen:
                seen.add(producer)
                stack.append(producer)
    return sorted(seen, key=_by_seq, reverse=True)


_by_seq = operator.attrgetter("seq")


_callbacks = []  # one list per backward pass running, innermost last


def queue_callback(callback):
    """Call ``callback()`` once the backward pass running now has reached every leaf (PyTorch's engine has
    the same; ``DistributedDataParallel`` waits there for its gradient averages). Outside a backward pass
    this raises RuntimeError."""
    if not _callbacks:
        raise RuntimeError("queue_callback: no backward pass is running; call it from a hook during backward()")
    _callbacks[-1].append(callback)


def backward(output, grad):
    """Propagate ``grad`` (an array shaped like ``output``) to every tensor ``output`` depends on, then run
    the callbacks queued during the pass (``queue_callback``), in order."""
    _callbacks.append([])
    try:
        if output.creator is None:
            output.accumulate_grad(grad)
        else:
            _propagate(output, grad)
        queued = _callbacks[-1]
        while queued:
            queued.pop(0)()
    finally:
        _callbacks.pop()


def _propagate(output, grad):
    grads = {id(output): grad}
    for fn in reachable_functions(output.creator):
        if len(fn.outputs) == 1:
            gy = _take_grad(fn.outputs[0], grads)
            if gy is None:
                continue
            if latest_write.stamp > fn.seq:  # something was written in place since fn ran
                check_unchanged(fn)
            gxs = fn.backward(gy)
        else:
            gys = [_take_grad(ref, grads) for ref in fn.outputs]
            if all(gy is None for gy in gys):
                continue
            if latest_write.stamp > fn.seq:
                check_unchanged(fn)
            gxs = fn.backward(*gys)
        if type(gxs) is not tuple:
            gxs = (gxs,)
        for x, gx in zip(fn.inputs, gxs):
            if gx is None or not x.requires_grad:
                continue
            if gx.shape != x._data.shape:
                raise RuntimeError(
                    f"{fn.name}.backward returned a gradient of shape {gx.shape} for an input of shape {x.shape}"
                )
            if x.creator is None:  # a leaf: the gradient goes to .grad
                x.accumulate_grad(gx, copy=not _owned(fn, gx, gxs))
            else:
                key = id(x)
                previous = grads.get(key)
                grads[key] = gx if previous is None else previous + gx


def _owned(fn, gx, gxs):
    """True when nothing but this leaf will hold ``gx``, so ``.grad`` may be ``gx`` itself: ``fn``
    returns only new arrays (``Function.fresh_grads``, see function.py) and ``gx`` is not also the
    gradient of another of its inputs."""
    return fn.fresh_grads and sum(g is gx for g in gxs) == 1


def _take_grad(output_ref, grads):
    """Remove and return the gradient gathered for a function's output (None if none came)."""
    y = output_ref()
    if y is None:
        return None
    gy = grads.pop(id(y), None)
    if gy is not None and y.retains_grad:
        y.accumulate_grad(gy)
    return gy
