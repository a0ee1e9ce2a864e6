"""``Function``: one differentiable operation, a node of the computation graph.

A subclass writes ``forward`` on arrays (NumPy or CuPy) and ``backward`` right beside it, keeping
in ``forward`` what ``backward`` needs (``arithmetic.py`` has examples). Calling an instance on
tensors runs ``forward`` and, when recording is on and an input requires grad, links the outputs
to the function (``link``). It holds its inputs strongly and its outputs by weak reference, so a
graph is freed as soon as the last tensor of it goes.

The library's extensions (``dlscratch/engine/extensions/``) attach at the *extension points* below: each does the plain
thing here and more in the library. The library's ``Function.__call__`` (``dlscratch/engine/function.py``) runs this
``__call__`` on the reference path and for a class that overrides an extension point; otherwise, on the fast
path, the same steps in one frame (``dlscratch/fast/graph.py``).
"""

import itertools
import weakref

from .grad_mode import _state

#: Creation numbers: backward runs the functions in decreasing ``seq`` (backprop.py).
clock = itertools.count()


class Function:
    """Base class of differentiable operations. See the module docstring."""

    seq = -1  # creation number, set when recorded
    inputs = ()
    outputs = ()

    def __call__(self, *inputs):
        inputs, arrays = self.prepare(inputs)
        try:
            ys = self.forward(*arrays)
        except ValueError as error:
            self.failed(error, inputs)
            raise
        # plain loops rather than any(): this line runs for every operation (dlscratch.bench autograd)
        record = False
        if _state.enabled:
            for x in inputs:
                if x._requires_grad:
                    record = True
                    break
        if type(ys) is tuple:
            outputs = tuple(self.output(y, record, inputs) for y in ys)
        else:
            outputs = self.output(ys, record, inputs)
        if record:
            self.link(inputs, outputs)
        return outputs

    def forward(self, *xs):
        """Compute the output array(s) from input arrays."""
        raise NotImplementedError(f"{type(self).__name__}.forward")

    def backward(self, *gys):
        """Given the gradient of each output, return the gradient of each input (None: none)."""
        raise NotImplementedError(f"{type(self).__name__}.backward")

    @property
    def needs_input_grad(self):
        """One bool per input: whether backward must compute its gradient (PyTorch's name)."""
        inputs = self.inputs
        if len(inputs) == 2:  # binary operations, the usual case, spelled out: no list built at every backward step
            return inputs[0]._requires_grad, inputs[1]._requires_grad
        return tuple([x._requires_grad for x in inputs])

    def link(self, inputs, outputs):
        """Record this call: keep the inputs, and be the outputs' creator."""
        self.seq = next(clock)
        self.inputs = inputs
        if type(outputs) is tuple:
            for out in outputs:
                out.creator = self
            self.outputs = tuple([weakref.ref(out) for out in outputs])
        else:
            outputs.creator = self
            self.outputs = (weakref.ref(outputs),)

    # ----- extension points -----
    def prepare(self, inputs):
        """The input tensors and the arrays ``forward`` gets: their data."""
        return inputs, [x._data for x in inputs]

    def failed(self, error, inputs):
        """``forward`` raised ValueError ``error``: nothing to add here."""

    def output(self, y, record, inputs):
        """Array ``y`` as an output tensor (``record``: it requires grad)."""
        return Tensor._make(y, record)

    def run_backward(self, gys):
        """The inputs' gradients, a tuple, from the outputs' gradients ``gys`` (a list)."""
        gxs = self.backward(*gys)
        return gxs if type(gxs) is tuple else (gxs,)


from .tensor import Tensor  # noqa: E402  (last: tensor.py's operators import the functions, which need Function)
