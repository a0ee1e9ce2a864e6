"""``Function``: one differentiable operation, a node of the computation graph.

A subclass writes ``forward`` on raw arrays (NumPy or CuPy) and ``backward`` right beside it,
saving in ``forward`` whatever ``backward`` needs. Calling an instance on tensors runs
``forward`` and, when any input requires grad (and recording is on), links the output
tensors to the function. The function holds its inputs strongly and its outputs by weak
reference, so a graph is freed as soon as the last tensor of it goes.

    class Exp(Function):
        saves_inputs, saves_outputs = False, True   # backward reads y, not x
        def forward(self, x):
            self.y = get_array_module(x).exp(x)
            return self.y
        def backward(self, gy):
            return gy * self.y

``saves_inputs`` and ``saves_outputs`` say which tensors backward reads, so that it can refuse to
run when one was changed in place in between (see ``versions.py``). ``needs_input_grad`` says which
inputs want a gradient, so a backward can skip the others (a first layer's input is data).

What the engine does for speed, all of it here (``python -m dlscratch.bench autograd`` measures it):

- ``__call__`` runs for every operation, so it is written as plain loops that stop early instead of
  ``any()`` and generator expressions, and reaches the array through ``_data`` rather than the
  ``data`` property; the dtype rule (``dtypes.py``) runs only when the inputs' dtypes differ.
  Together: about 2.5 µs per operation for forward and backward on a 2-core AMD EPYC.
- ``fresh_grads``: a function whose backward always returns new arrays that nothing else keeps
  (the GEMM results of matmul, linear, conv2d and the LSTM) says so, and backward then lets a leaf
  keep such an array as its ``.grad`` instead of copying it, as PyTorch's AccumulateGrad does when
  it holds the only reference. Without the flag the engine copies, which is always safe. Measured:
  copying makes an MLP training step 24-28% slower at batch 1 and 8 (784-1000-10) and 6% slower at
  batch 128 (784-256-256-10); the Keras CNN step (72 ms) does not notice.
"""

import operator
import weakref

from . import backend, dtypes
from .grad_mode import _state
from .tensor import Tensor, as_constant
from .versions import clock, counter_of, record_outputs

_data = operator.attrgetter("_data")  # the array, without the ``data`` property's call


class Function:
    """Base class of differentiable operations. See the module docstring."""

    inputs = ()
    outputs = ()
    seq = -1  # creation number, set when recorded; backward runs in decreasing seq
    fresh_grads = False  # backward returns only new arrays nothing else keeps: see the module docstring
    saves_inputs = True  # backward reads the inputs' values (False: only their shapes, or nothing)
    saves_outputs = False  # backward reads the outputs' values
    float_result = False  # integer inputs alone give a float result (true division, exp): float32
    integer_inputs = ()  # positions of inputs that must stay integers (labels): see dtypes.py

    @property
    def name(self):
        """The name errors use; a subclass sets ``name = "..."`` where its public name differs."""
        return type(self).__name__.lower()

    @property
    def needs_input_grad(self):
        """One bool per input: whether backward must compute its gradient (PyTorch's name)."""
        return tuple(x._requires_grad for x in self.inputs)

    def __call__(self, *inputs):
        if self.seq != -1:  # forward would overwrite what the recorded call saved for its backward
            raise RuntimeError(
                f"{self.name}: this {type(self).__name__} instance is already a node of a recorded graph, and a "
                f"second call would silently break its gradients; make a new instance for each call, "
                f"e.g. {type(self).__name__}(...)(x)"
            )
        for x in inputs:
            if not isinstance(x, Tensor):
                inputs = _wrap_constants(self, inputs)
                break
        if backend.cupy is not None:
            _check_same_device(self, inputs)
        arrays = list(map(_data, inputs))
        first = arrays[0].dtype
        for a in arrays:
            if a.dtype is not first:  # mixed dtypes: integers take the float dtype (dtypes.py)
                arrays = dtypes.operands(self, arrays)
                break
        else:
            if self.float_result and first.kind not in "fc":
                arrays = dtypes.operands(self, arrays)
        try:
            ys = self.forward(*arrays)
        except ValueError as exc:
            shapes = ", ".join(str(x.shape) for x in inputs)
            raise ValueError(f"{self.name}: {exc} (input shapes: {shapes})") from exc
        record = False
        if _state.enabled:
            for x in inputs:
                if x._requires_grad:
                    record = True
                    break
        if type(ys) is tuple:
            outputs = tuple(_output(y, record, inputs) for y in ys)
        elif ys.base is None:  # a new array (the usual case)
            outputs = Tensor._make(ys, record)
        else:
            outputs = _output(ys, record, inputs)
        if record:
            self.seq = next(clock)
            self.inputs = inputs
            if self.saves_outputs:
                record_outputs(self, outputs)
            if type(outputs) is tuple:
                for out in outputs:
                    out.creator = self
                self.outputs = [weakref.ref(out) for out in outputs]
            else:
                outputs.creator = self
                self.outputs = (weakref.ref(outputs),)
        return outputs

    def forward(self, *xs):
        """Compute the output array(s) from input arrays."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *gys):
        """Given the gradient of each output, return the gradient of each input (None: none)."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    def __repr__(self):
        return f"<{type(self).__name__}>"


def _output(y, record, inputs):
    """Array ``y`` as an output tensor; a view of an input's memory shares that input's version
    counter, since a write through either changes both."""
    base = y.base
    if base is not None:
        for x in inputs:
            data = x._data
            if base is data or base is data.base:
                return Tensor._make(y, record, counter_of(x))
    return Tensor._make(y, record)


def _wrap_constants(fn, inputs):
    """Turn plain numbers and arrays among ``inputs`` into constant tensors; anything else (None,
    a string, an object) is refused with a TypeError naming ``fn``.

    Python and NumPy scalars are weak, as Python scalars are in NumPy 2: ``x * 2.0`` stays
    float32 for a float32 ``x``, and so does ``x * numpy.float64(2.0)``.
    """
    like = next((x for x in inputs if isinstance(x, Tensor)), None)
    try:
        return tuple(x if isinstance(x, Tensor) else as_constant(x, like) for x in inputs)
    except TypeError as exc:
        raise TypeError(f"{fn.name}: {exc}") from None


def _check_same_device(fn, inputs):
    devices = [x.device for x in inputs]
    if len(set(devices)) > 1:
        where = ", ".join(f"input {i} is on {d}" for i, d in enumerate(devices))
        raise RuntimeError(
            f"{fn.name}: tensors are on different devices ({where}); move them to one device "
            "first, e.g. x.to('gpu') or x.to('cpu')"
        )
