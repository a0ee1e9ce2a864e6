"""PyTorch's ``torch.autograd.Function``, as an adapter on the library's ``Function`` (``engine/function.py``).

The library's own protocol is the lessons': an instance per call, ``forward`` and ``backward`` on arrays,
``Square()(x)``. PyTorch's, which its tutorials use, is a class of static methods on tensors, called through
``apply``::

    class LegendreP3(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return 0.5 * (5 * x**3 - 3 * x)

        @staticmethod
        def backward(ctx, grad_output):
            x, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * x**2 - 1)

    y = LegendreP3.apply(x)

Each subclass gets a node class of the library's kind, ``LegendreP3Backward``, and each ``apply`` one node: the
graph's ``grad_fn``. The node's ``forward`` runs the user's under ``no_grad`` and hands back the tensors it
returned; its ``backward`` wraps the incoming gradient arrays as tensors, runs the user's, and checks what comes
back as PyTorch does (one gradient per argument of ``apply``, None for a non-tensor; a gradient of a broadcast
shape is summed back to the input's). ``ctx`` is a ``FunctionCtx`` of its own, so no attribute a user sets on it
can hide one the graph uses. The node overrides the extension points, so it takes the core's route on both paths.
"""

import weakref

from . import backend
from .core.function import clock
from .engine.extensions.versions import counter_of
from .engine.function import Function as GraphFunction
from .engine.grad_mode import no_grad
from .engine.tensor import Tensor
from .operations.broadcast import sum_to

__all__ = ["Function", "FunctionCtx"]


class FunctionCtx:
    """What ``forward`` hands ``backward``: saved tensors, ``needs_input_grad``, and any attribute set on it."""

    def __init__(self, name, needs_input_grad):
        self._name = name  # the Function's, for errors
        self.needs_input_grad = needs_input_grad  # one bool per argument of apply: a tensor that requires grad
        self.materialize_grads = True
        self.non_differentiable = ()
        self._saved = ()
        self._saved_versions = ()

    def save_for_backward(self, *tensors):
        """Keep ``tensors`` (or None) for ``backward``, which reads them as ``saved_tensors``."""
        for i, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"{self._name}: save_for_backward can only save tensors (or None), but argument {i} is "
                                f"{type(t).__name__}; keep other values as attributes of ctx (ctx.k = k)")
        self._saved = tensors
        self._saved_versions = tuple([None if t is None else t._version for t in tensors])

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, refused if one was changed in place since."""
        for i, (t, version) in enumerate(zip(self._saved, self._saved_versions)):
            if t is not None and t._version != version:
                raise RuntimeError(
                    f"{self._name}: saved tensor {i} (shape {t.shape}) was changed in place after save_for_backward "
                    f"(version {version}, now {t._version}), so backward would read values forward never saw; "
                    "change a copy (x.clone()) instead")
        return self._saved

    def mark_non_differentiable(self, *outputs):
        """These outputs of ``forward`` get no gradient: they do not require grad, and backward gets zeros."""
        self.non_differentiable = outputs

    def set_materialize_grads(self, value):
        """Whether ``backward`` gets zeros (True, the default) or None for an output that got no gradient."""
        self.materialize_grads = bool(value)


class Function:
    """Base class of PyTorch-style differentiable operations. See the module docstring."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.node_class = type(f"{cls.__name__}Backward", (Node,), {"__module__": cls.__module__, "function": cls})

    @staticmethod
    def forward(ctx, *args):
        """Compute the output tensor(s) from the arguments of ``apply``; runs without recording."""
        raise NotImplementedError("a subclass of dlscratch.autograd.Function writes a static forward(ctx, ...)")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """PyTorch's other style: a ``forward`` without ``ctx``, and this to fill ``ctx`` from its result."""

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Given the gradient of each output, return the gradient of each argument of ``apply`` (None: none)."""
        raise NotImplementedError("a subclass of dlscratch.autograd.Function writes a static backward(ctx, ...) "
                                  "to be differentiated")

    @classmethod
    def apply(cls, *args):
        """Run ``forward`` on ``args`` (tensors and any other values) and record one graph node for it."""
        return cls.node_class(args)(*[a for a in args if isinstance(a, Tensor)])

    def __call__(self, *args):
        name = type(self).__name__
        raise RuntimeError(f"{name}: call {name}.apply(x), not {name}()(x): an autograd.Function's methods are "
                           "static (an instance per call is the protocol of dlscratch.Function)")


def _no_tensor():
    """The weak reference of an output that is no tensor: nothing, ever."""


class Node(GraphFunction):
    """The graph node of one ``apply``: the user's static methods run inside the library's ``Function``."""

    saves_inputs = False  # ctx.saved_tensors checks the tensors the user saved

    def __init__(self, args):
        self.args = args  # for forward only: the graph keeps the tensors (``inputs``), not the other values
        self.arity = len(args)
        self.tensor_positions = tuple([i for i, a in enumerate(args) if isinstance(a, Tensor)])
        needs_input_grad = tuple([isinstance(a, Tensor) and a._requires_grad for a in args])
        self.ctx = FunctionCtx(self.function.__name__, needs_input_grad)
        self.output_like = []  # (shape, dtype, array module) of each output tensor, None for other values

    def prepare(self, inputs):
        """The tensors as they are: the user's forward computes with tensors, as in PyTorch."""
        return inputs, inputs

    def forward(self, *tensors):
        """The user's forward on the arguments of ``apply`` (``tensors`` are among them), without recording."""
        fn, args, self.args = self.function, self.args, None
        with no_grad():
            if fn.setup_context is Function.setup_context:  # the usual style: forward(ctx, *args)
                return fn.forward(self.ctx, *args)
            output = fn.forward(*args)
            fn.setup_context(self.ctx, args, output)
            return output

    def failed(self, error, inputs):
        """The user's error, unchanged, as PyTorch raises it."""

    def output(self, y, record, inputs):
        """A tensor that ``forward`` returned as an output of this node: a new tensor on its memory, sharing its
        version counter, so that ``ctx`` never holds the node's own outputs (no reference cycle). Integer
        outputs and those marked non-differentiable do not require grad; other values pass as they are."""
        if not isinstance(y, Tensor):
            self.output_like.append(None)
            return y
        array = y._data
        self.output_like.append((array.shape, array.dtype, backend.get_array_module(array)))
        differentiable = (record and array.dtype.kind in "fc"
                          and not any(y is t for t in self.ctx.non_differentiable))
        return Tensor._make(array, differentiable, counter_of(y))

    def link(self, inputs, outputs):
        """Be the creator of the outputs that require grad; keep every output tensor weakly, in order."""
        self.seq = next(clock)
        self.inputs = inputs
        refs = []
        for out in outputs if type(outputs) is tuple else (outputs,):
            if isinstance(out, Tensor):
                if out._requires_grad:
                    out.creator = self
                refs.append(weakref.ref(out))
            else:
                refs.append(_no_tensor)
        self.outputs = tuple(refs)

    def backward(self, *gys):
        """The user's backward on tensors; its gradients as arrays, one per tensor argument of ``apply``."""
        grads = [self._incoming(gy, like) for gy, like in zip(gys, self.output_like)]
        with no_grad():
            gxs = self.function.backward(self.ctx, *grads)
        if type(gxs) is not tuple:
            gxs = (gxs,)
        n, positions = self.arity, self.tensor_positions
        if len(gxs) > n and all(g is None for g in gxs[n:]):  # trailing Nones pass, as in PyTorch
            gxs = gxs[:n]
        if len(gxs) != n:
            raise RuntimeError(f"function {type(self).__name__} returned an incorrect number of gradients "
                               f"(expected {n}, got {len(gxs)}): one per argument of apply, None for one that "
                               "needs none")
        for i, g in enumerate(gxs):
            if g is not None and i not in positions:
                raise RuntimeError(f"function {type(self).__name__} returned a gradient for argument {i}, which is "
                                   "not a tensor; return None there")
        return tuple([self._outgoing(i, x, gxs[i]) for i, x in zip(positions, self.inputs)])

    def _incoming(self, gy, like):
        """The gradient array ``gy`` of one output as a tensor; zeros (or None) where none arrived."""
        if gy is not None:
            return Tensor._make(gy, False)
        if like is None or not self.ctx.materialize_grads:
            return None
        shape, dtype, xp = like
        return Tensor._make(xp.zeros(shape, dtype=dtype), False)

    def _outgoing(self, i, x, g):
        """Gradient ``g`` of argument ``i``, tensor ``x``, as an array of ``x``'s shape and dtype (None: none)."""
        name = type(self).__name__
        if g is None:
            return None
        if not isinstance(g, Tensor):
            raise RuntimeError(f"function {name} returned {type(g).__name__} as the gradient of argument {i}; "
                               "return a tensor or None")
        if g.device != x.device:
            raise RuntimeError(f"function {name} returned a gradient on {g.device} for argument {i}, "
                               f"which is on {x.device}")
        array = g._data
        if array.shape != x._data.shape:
            try:
                array = sum_to(array, x._data.shape)
            except ValueError:
                raise RuntimeError(f"function {name} returned an invalid gradient for argument {i}: shape "
                                   f"{g.shape}, but expected a shape that {x.shape} broadcasts to") from None
        return array.astype(x._data.dtype, copy=False)

