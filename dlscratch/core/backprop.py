"""Backpropagation: walk the graph from an output back to its leaves, in topological order.

The order comes for free: a function can only run once its inputs exist, so it is created after
every function that produced them. Running the reachable functions by creation number (``seq``),
newest first, runs each after every function that used its outputs: after all of its outputs'
gradient has arrived. Iterative, so a chain of any length works (no recursion limit).
"""

import operator

_by_seq = operator.attrgetter("seq")


def reachable_functions(root):
    """Every function that ``root`` (a Function) depends on, ``root`` included, newest first."""
    seen = {root}
    stack = [root]
    while stack:
        for x in stack.pop().inputs:
            producer = x.creator
            if producer is not None and producer not in seen:
                seen.add(producer)
                stack.append(producer)
    return sorted(seen, key=_by_seq, reverse=True)


def walk(output, grad):
    """Propagate array ``grad`` (shaped like tensor ``output``) to every tensor ``output`` depends
    on: a leaf that requires grad adds its gradient to ``.grad``; a computed tensor's gradient is
    kept only until its creator has used it."""
    if output.creator is None:
        output.accumulate_grad(grad)
        return
    grads = {id(output): grad}  # the gradients gathered so far for computed tensors, by id
    for fn in reachable_functions(output.creator):
        gys = _take_grads(fn, grads)
        if gys is None:
            continue  # no gradient reached this function's outputs
        for x, gx in zip(fn.inputs, fn.run_backward(gys)):
            if gx is None or not x._requires_grad:
                continue
            if x.creator is None:  # a leaf: the gradient goes to .grad
                x.accumulate_grad(gx)
            else:  # a tensor used twice gets the sum of both gradients
                key = id(x)
                previous = grads.get(key)
                grads[key] = gx if previous is None else previous + gx


def _take_grads(fn, grads):
    """Remove and return the gradients gathered for ``fn``'s outputs (a list, None for an output that got
    none), or None when none arrived. A tensor that asked with ``retain_grad()`` keeps a copy in ``.grad``."""
    gys = []
    for ref in fn.outputs:
        y = ref()  # None: the output tensor is gone, so nothing can have used it
        gy = None if y is None else grads.pop(id(y), None)
        if gy is not None and y.retains_grad:
            y.accumulate_grad(gy)
        gys.append(gy)
    for gy in gys:
        if gy is not None:
            return gys
    return None
