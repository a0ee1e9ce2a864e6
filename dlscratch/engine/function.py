"""The library's ``Function``: the core's (``core/function.py``) with the extensions attached.

A subclass writes ``forward`` on raw arrays (NumPy or CuPy) and ``backward`` right beside it, as in the core,
and may say more about itself for the extensions:

- ``saves_inputs`` and ``saves_outputs``: which tensors backward reads, so that it can refuse to run when one
  was changed in place in between (``engine/extensions/versions.py``);
- ``float_result`` and ``integer_inputs``: how the dtype rule treats its inputs (``engine/extensions/dtypes.py``);
- ``returns_unshared_grads``: its backward returns only new arrays, which leaves may keep (``fast/unshared_grads.py``);
- ``name``: the name its errors use.

``needs_input_grad`` (the core's) says which inputs want a gradient, so a backward can skip the others (a
first layer's input is data). ``next_functions`` shows the graph as PyTorch's ``grad_fn.next_functions`` does,
computed from ``inputs`` when asked, so recording pays nothing for it.

Calling an instance runs ``Function.__call__`` below, which picks one of two routes, in code a reader sees:

- the core's ``__call__``, through the extension points (``prepare``, ``failed``, ``output``, ``link``; in the
  walk back, ``run_backward``) filled in below with the extensions: on the reference path, and for every class that
  overrides one of them, so that a user's override runs on both paths;
- on the fast path, for a class that keeps them, ``graph.record`` (``dlscratch/graph.py``): the same
  steps and checks in one Python frame, for the usual two-operand case, and the core's ``__call__`` otherwise.

Each extension point calls its extensions in a few plain lines: ``prepare`` runs for every operation on the
reference path, so it loops and stops early rather than using ``any()`` and generator expressions, and the dtype
rule runs only when the inputs' dtypes differ (``python -m dlscratch.bench autograd`` measures the cost per
operation).
"""

import operator

from .. import backend
from ..core import function as core
from ..fast import unshared_grads
from .extensions import devices, dtypes, errors, operands, versions
from .extensions.versions import latest_write
from .switch import _state as _path

_data = operator.attrgetter("_data")  # the array, without the ``data`` property's call

#: The methods a subclass may override to change how a call is recorded or walked back; a class that overrides
#: one of them takes the core's route, which calls each, on both paths.
EXTENSION_POINTS = ("prepare", "failed", "output", "link", "run_backward")


class Function(core.Function):
    """Base class of the library's differentiable operations. See the module docstring."""

    returns_unshared_grads = False  # backward returns only new arrays nothing else keeps (fast/unshared_grads.py)
    saves_inputs = True  # backward reads the inputs' values (False: only their shapes, or nothing)
    saves_outputs = False  # backward reads the outputs' values
    float_result = False  # integer inputs alone give a float result (true division, exp): float32
    integer_inputs = ()  # positions of inputs that must stay integers (labels): see engine/extensions/dtypes.py

    user_defined = True  # set per subclass (engine/extensions/errors.py)
    keeps_stock_extension_points = True  # set per subclass: it overrides none of EXTENSION_POINTS

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.user_defined = errors.is_user_defined(cls)
        cls.keeps_stock_extension_points = all(getattr(cls, name) is getattr(Function, name)
                                               for name in EXTENSION_POINTS)

    def __call__(self, *inputs):
        """Run ``forward`` on ``inputs`` (tensors or numbers) and record it: on the fast path, in one frame
        when the class keeps the extension points below; otherwise through them (see the module docstring)."""
        if _path.fast and self.keeps_stock_extension_points:
            return graph.record(self, inputs)
        return core.Function.__call__(self, *inputs)

    @property
    def name(self):
        """The name errors use; a subclass sets ``name = "..."`` where its public name differs."""
        return type(self).__name__.lower()

    def prepare(self, inputs):
        """Layers errors (one call per instance), constants, devices and dtypes, then the arrays."""
        if self.seq != -1:
            errors.refuse_second_call(self)
        for x in inputs:
            if not isinstance(x, Tensor):
                inputs = operands.wrap_constants(self, inputs, Tensor)
                break
        if backend.cupy is not None:
            devices.check_same_device(self, inputs)
        if len(inputs) == 2:  # binary operations, spelled out: no list to build
            a, b = inputs[0]._data, inputs[1]._data
            if a.dtype is b.dtype and (not self.float_result or a.dtype.kind in "fc"):
                return inputs, (a, b)
            return inputs, dtypes.promote(self, [a, b])
        arrays = list(map(_data, inputs))
        first = arrays[0].dtype
        for a in arrays:
            if a.dtype is not first:  # mixed dtypes: integers take the float dtype
                return inputs, dtypes.promote(self, arrays)
        if self.float_result and first.kind not in "fc":
            return inputs, dtypes.promote(self, arrays)
        return inputs, arrays

    failed = errors.with_shapes

    def output(self, y, record, inputs):
        """Layer versions: an output that is a view of an input shares its version counter, and a recorded
        function whose backward reads its outputs keeps their counters."""
        if y.base is None:  # a new array (the usual case)
            out = Tensor._make(y, record)
        else:
            out = Tensor._make(y, record, versions.shared_counter(y, inputs))
        if record and self.saves_outputs:
            versions.keep_output_counter(self, out)
        return out

    def run_backward(self, gys):
        """Layers versions (refuse stale saved values), errors (gradient shapes) and unshared_grads."""
        if latest_write.stamp > self.seq:  # something was written in place since this ran
            versions.check_unchanged(self)
        gxs = self.backward(*gys)
        if type(gxs) is not tuple:
            gxs = (gxs,)
        if self.user_defined:
            errors.check_gradient_shapes(self, gxs)
        if self.returns_unshared_grads:
            return unshared_grads.hand_to_leaves(self, gxs)
        return gxs

    @property
    def next_functions(self):
        """PyTorch's: one ``(node, output index)`` pair per input: the function that computed it and which of its
        outputs it is, an ``AccumulateGrad`` for a leaf that requires grad, ``(None, 0)`` for one that does not."""
        return tuple([_next_function(x) for x in self.inputs])

    def __repr__(self):
        return f"<{type(self).__name__}>"


def _next_function(x):
    """``x``'s entry of ``next_functions``."""
    fn = x.creator
    if fn is not None:
        return fn, next(i for i, ref in enumerate(fn.outputs) if ref() is x)
    return (AccumulateGrad(x), 0) if x._requires_grad else (None, 0)


class AccumulateGrad:
    """PyTorch's graph node for a leaf that requires grad (``variable``), where backward adds into ``.grad``.
    Here the walk adds itself (``Tensor.accumulate_grad``); this node only shows the leaf in ``next_functions``,
    and two of the same leaf compare equal."""

    next_functions = ()

    def __init__(self, variable):
        self.variable = variable

    def __eq__(self, other):
        return isinstance(other, AccumulateGrad) and other.variable is self.variable

    def __hash__(self):
        return id(self.variable)

    def __repr__(self):
        return "<AccumulateGrad>"


from ..fast import graph  # noqa: E402  (it records with Tensor)
from .tensor import Tensor  # noqa: E402  (engine/tensor.py's operators import the functions, which need Function)
