"""Layer: errors that say which operation, with which shapes, went wrong, at the moment it happens.

- A ``Function`` instance is one node: calling a recorded one again would overwrite what its backward
  needs, so the second call is refused (``refuse_second_call``, at ``Function.prepare``).
- A ValueError raised inside ``forward`` (NumPy's "operands could not be broadcast ...") is raised again
  with the operation's name and its inputs' shapes (``with_shapes``, at ``Function.failed``).
- A backward that returns a gradient of the wrong shape is named at once (``check_gradient_shapes``, at
  ``Function.run_backward``), not several operations later where the shapes no longer say why. Only the
  functions written outside the library are checked: every operation of the library has its gradients
  compared with central differences by the tests (``tests/test_gradcheck_ops.py``), and the check cost a
  third of a microsecond per operation in backward (``python -m dlscratch.bench autograd``).
"""


def refuse_second_call(fn):
    name = type(fn).__name__
    raise RuntimeError(
        f"{fn.name}: this {name} instance is already a node of a recorded graph, and a second call would "
        f"silently break its gradients; make a new instance for each call, e.g. {name}(...)(x)"
    )


def with_shapes(fn, error, inputs):
    shapes = ", ".join(str(x.shape) for x in inputs)
    raise ValueError(f"{fn.name}: {error} (input shapes: {shapes})") from error


def checks_gradient_shapes(function_class):
    """Whether backward checks the gradients' shapes of ``function_class``: one defined outside dlscratch."""
    return not function_class.__module__.startswith("dlscratch.")


def check_gradient_shapes(fn, gxs):
    for x, gx in zip(fn.inputs, gxs):
        if gx is not None and x._requires_grad and gx.shape != x._data.shape:
            raise RuntimeError(
                f"{fn.name}.backward returned a gradient of shape {gx.shape} for an input of shape {x.shape}"
            )
