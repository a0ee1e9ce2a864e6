"""Layer: errors that say which operation, with which shapes, went wrong, at the moment it happens.

- A ``Function`` instance is one node: calling a recorded one again would overwrite what its backward
  needs, so the second call is refused (``refuse_second_call``, at ``Function.prepare``).
- A ValueError raised inside ``forward`` (NumPy's "operands could not be broadcast ...") is raised again
  with the operation's name and its inputs' shapes (``with_shapes``, at ``Function.failed``).
- A backward that returns a gradient of the wrong shape, or a number of gradients other than the number of
  inputs (PyTorch refuses both), is named at once (``check_gradient_shapes``, at
  ``Function.run_backward``), not several operations later where the shapes no longer say why. Only the
  functions written outside the library are checked: every operation of the library has its gradients
  compared with central differences by the tests (``tests/test_gradcheck_ops.py``), and the check would add
  to the cost of every operation in backward.
"""


#: ``Tensor.data`` assignments that changed an array's shape, in the whole process: after the first, every
#: backward checks its leaves' gradients first (``check_leaf_grads``); before it, no leaf's can be wrong
reshaped_data = [0]


def check_leaf_grads(output, reachable_functions):
    """Refuse a backward from ``output`` before it changes anything when a leaf it reaches has a ``.grad`` of
    another shape than its own (written through ``.grad.data``, or the leaf's ``.data`` replaced): the walk
    would fail at that leaf, after adding into the ``.grad`` of others, in an order that depends on the path."""
    leaves = [output] if output.creator is None else [
        x for fn in reachable_functions(output.creator) for x in fn.inputs if x.creator is None]
    for x in leaves:
        grad = x._grad
        if grad is not None and x._requires_grad and grad._data.shape != x._data.shape:
            raise RuntimeError(
                f"backward: a leaf of shape {x.shape} has a .grad of shape {grad.shape} (written through .grad.data, "
                "or the leaf's .data replaced by another shape); set its .grad to None (zero_grad()) first. "
                "Nothing was changed")


def refuse_second_call(fn):
    name = type(fn).__name__
    raise RuntimeError(
        f"{fn.name}: this {name} instance is already a node of a recorded graph, and a second call would "
        f"silently break its gradients; make a new instance for each call, e.g. {name}(...)(x)"
    )


def with_shapes(fn, error, inputs):
    shapes = ", ".join(str(x.shape) for x in inputs)
    raise ValueError(f"{fn.name}: {error} (input shapes: {shapes})") from error


def is_user_defined(function_class):
    """Whether backward checks the gradients' shapes of ``function_class``: one defined outside dlscratch."""
    return not function_class.__module__.startswith("dlscratch.")


def check_gradient_shapes(fn, gxs):
    if len(gxs) < len(fn.inputs) or any(gx is not None for gx in gxs[len(fn.inputs):]):  # trailing Nones pass
        raise RuntimeError(
            f"{fn.name}.backward returned {len(gxs)} gradient{'s' if len(gxs) != 1 else ''}, but forward took "
            f"{len(fn.inputs)} input{'s' if len(fn.inputs) != 1 else ''}: return one per input, None for an input "
            "that needs none")
    for x, gx in zip(fn.inputs, gxs):
        if gx is not None and x._requires_grad and gx.shape != x._data.shape:
            raise RuntimeError(
                f"{fn.name}.backward returned a gradient of shape {gx.shape} for an input of shape {x.shape}"
            )
