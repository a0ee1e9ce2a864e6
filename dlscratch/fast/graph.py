"""The engine's own fast path: recording an operation, and the walk back, each in one Python frame.

The core (``dlscratch/core/``) records an operation in five calls: ``__call__``, then its extension points
``prepare``, ``output`` (with ``Tensor._make``) and ``link``, where the library's extensions attach; the walk back
calls ``_take_grads`` and ``run_backward`` for every function. Each Python call costs time of its own, and so do
the tuples the calls hand each other. Here the usual case runs the same steps, with the same extensions' checks,
inline. Who takes which route is decided in two places a reader finds from the class and from ``backward()``:

- ``record``: ``Function.__call__`` (``engine/function.py``) calls it on the fast path for a class that keeps the
  library's extension points (``Function.keeps_stock_extension_points``). It takes two operands (tensors, or numbers
  made constants as ``engine/extensions/operands.py`` does), NumPy arrays of one dtype (so one device and nothing
  for the dtype rule to change), a new output array. Anything else (one or three inputs, a view as the output,
  CuPy arrays, mixed dtypes, a function whose backward reads its outputs) goes through the core's ``__call__``
  and the extensions, as on the reference path: what protects a user is the same code in both.
- ``walk``: ``dlscratch.autograd.propagate`` walks with it on the fast path. The core's order
  (``reachable_functions``), with ``_take_grads`` for a single output and ``Function.run_backward``'s extensions (the
  version check, the gradient-shape check of a user's function, ``returns_unshared_grads``) written out in the loop;
  a function whose class has its own extension points gets its own ``run_backward``.

``python -m dlscratch.bench autograd`` prints what the two save together (the reference path's time over the fast
path's, 1.2 at 16x16 on a 2-core CPU). ``tests/test_fast_graph.py`` checks that both routes give the same tensors,
gradients and errors.
"""

import weakref

import numpy

from ..core import backprop
from ..core import function as core
from ..core.function import clock
from ..core.grad_mode import _state as _grad_mode
from ..engine.extensions import errors, operands, versions
from ..engine.extensions.versions import latest_write
from ..engine.tensor import Tensor
from . import unshared_grads

_ndarray = numpy.ndarray
_core_call = core.Function.__call__
_make = Tensor._make


def record(fn, inputs):
    """``fn(*inputs)``: run ``fn.forward`` and record it, as the core's ``__call__`` does with the library's
    extensions. See the module docstring for the case it takes; it hands every other to the core's."""
    if len(inputs) != 2 or fn.seq != -1:
        return _core_call(fn, *inputs)  # the core and its extensions: refuse a second call, and the rest
    x0, x1 = inputs
    if not (isinstance(x0, Tensor) and isinstance(x1, Tensor)):
        inputs = operands.wrap_constants(fn, inputs, Tensor)
        x0, x1 = inputs
    a, b = x0._data, x1._data
    if (type(a) is not _ndarray or type(b) is not _ndarray or a.dtype is not b.dtype
            or (fn.float_result and a.dtype.kind not in "fc")):
        return _core_call(fn, *inputs)  # the device check, the dtype rule
    try:
        y = fn.forward(a, b)
    except ValueError as error:
        fn.failed(error, inputs)
        raise
    recorded = _grad_mode.enabled and (x0._requires_grad or x1._requires_grad)
    if type(y) is not _ndarray or y.base is not None or (recorded and fn.saves_outputs):
        return _output_and_link(fn, y, recorded, inputs)  # several outputs, a view, kept counters
    out = _make(y, recorded)
    if recorded:  # core.Function.link, for one output
        fn.seq = next(clock)
        fn.inputs = inputs
        out.creator = fn
        fn.outputs = (weakref.ref(out),)
    return out


def _output_and_link(fn, ys, recorded, inputs):
    """The end of the core's ``__call__``, through the extension points (``output``, ``link``)."""
    if type(ys) is tuple:
        outputs = tuple([fn.output(y, recorded, inputs) for y in ys])
    else:
        outputs = fn.output(ys, recorded, inputs)
    if recorded:
        fn.link(inputs, outputs)
    return outputs


def walk(output, grad):
    """The core's ``backprop.walk`` with ``Function.run_backward``'s extensions inline (see the module docstring)."""
    if output.creator is None:
        output.accumulate_grad(grad)
        return
    grads = {id(output): grad}
    for fn in backprop.reachable_functions(output.creator):
        if len(fn.outputs) == 1:  # backprop._take_grads, for one output
            y = fn.outputs[0]()
            gy = None if y is None else grads.pop(id(y), None)
            if gy is None:
                continue
            if y.retains_grad:
                y.accumulate_grad(gy)
            gys = (gy,)
        else:
            gys = backprop._take_grads(fn, grads)
            if gys is None:
                continue
        if not fn.keeps_stock_extension_points:
            gxs = fn.run_backward(list(gys))  # a user's own extension point, given a list as the core's walk does
        else:  # Function.run_backward's extensions, inline
            if latest_write.stamp > fn.seq:
                versions.check_unchanged(fn)
            gxs = fn.backward(*gys)
            if type(gxs) is not tuple:
                gxs = (gxs,)
            if fn.user_defined:
                errors.check_gradient_shapes(fn, gxs)
            if fn.returns_unshared_grads:
                gxs = unshared_grads.hand_to_leaves(fn, gxs)
        for x, gx in zip(fn.inputs, gxs):  # the core's walk again
            if gx is None or not x._requires_grad:
                continue
            if x.creator is None:
                x.accumulate_grad(gx)
            else:
                key = id(x)
                previous = grads.get(key)
                grads[key] = gx if previous is None else previous + gx

