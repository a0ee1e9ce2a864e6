"""``Tensor``: an array that remembers the function that made it.

A tensor holds ``data`` (a NumPy or CuPy array), ``grad`` (a Tensor, or None until a backward
pass reaches it), ``requires_grad``, and ``creator``: the ``Function`` whose output it is, None
for a leaf. The operators build the graph as they compute (define-by-run); ``backward()`` walks
it in reverse (backprop.py). ``data``, ``grad`` and ``requires_grad`` are properties, so that the
library can check what is assigned (``dlscratch/engine/tensor.py``); the engine reads ``_data`` and
``_requires_grad`` in its loops, which is faster.
"""

import numpy

from . import backprop


class Tensor:
    """A node of the computation graph holding an array. See the module docstring."""

    __slots__ = ("_data", "_grad", "_requires_grad", "creator", "retains_grad", "__weakref__")
    __array_ufunc__ = None  # NumPy defers to the reflected operators: array + tensor -> Tensor

    def __init__(self, data, requires_grad=False):
        if not hasattr(data, "dtype"):  # Python numbers and lists: float32, the default
            data = numpy.asarray(data, dtype=numpy.float32)
        self._data, self._grad, self._requires_grad = data, None, requires_grad
        self.creator, self.retains_grad = None, False

    @classmethod
    def _make(cls, data, requires_grad):
        """Wrap an array as it is: how functions make their outputs."""
        t = cls.__new__(cls)
        t._data, t._grad, t._requires_grad, t.creator, t.retains_grad = data, None, requires_grad, None, False
        return t

    @property
    def data(self):
        return self._data

    @data.setter
    def data(self, array):
        self._data = array

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, grad):
        self._grad = grad

    @property
    def requires_grad(self):
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, requires_grad):
        self._requires_grad = bool(requires_grad)

    shape = property(lambda self: self._data.shape)
    dtype = property(lambda self: self._data.dtype)
    ndim = property(lambda self: self._data.ndim)
    is_leaf = property(lambda self: self.creator is None)

    def backward(self, grad=None):
        """Add the gradient of this tensor to every leaf it depends on that requires grad.
        A scalar output starts from 1; any other needs ``grad``, an array of its shape."""
        if grad is None:
            grad = array_module(self._data).ones_like(self._data)
        backprop.walk(self, grad)

    def accumulate_grad(self, g):
        """Add array ``g`` to ``.grad`` (a new array each time: nothing else sees ``.grad`` change)."""
        total = g if self._grad is None else self._grad._data + g
        self._grad = type(self)._make(total, False)

    def retain_grad(self):
        """Keep this computed tensor's gradient in ``.grad`` during backward, as a leaf does."""
        self.retains_grad = True
        return self

    def __repr__(self):
        return f"Tensor({self._data!r}, requires_grad={self._requires_grad})"

    # ----- operators: each builds one node (arithmetic.py) -----
    def __add__(self, other):
        return _arith.Add()(self, _tensor(other))

    __radd__ = __add__  # 2 + x: the same sum, and the same gradients

    def __sub__(self, other):
        return self + -_tensor(other)

    def __rsub__(self, other):
        return _tensor(other) + -self

    def __mul__(self, other):
        return _arith.Mul()(self, _tensor(other))

    __rmul__ = __mul__

    def __truediv__(self, other):
        return _arith.Div()(self, _tensor(other))

    def __rtruediv__(self, other):
        return _arith.Div()(_tensor(other), self)

    def __neg__(self):
        return _arith.Neg()(self)

    def __matmul__(self, other):
        return _arith.MatMul()(self, _tensor(other))

    def sum(self):
        return _arith.Sum()(self)


def array_module(a):
    """NumPy or CuPy, whichever array ``a`` belongs to (NumPy 1.26 has no ``__array_namespace__``)."""
    return a.__array_namespace__() if hasattr(a, "__array_namespace__") else numpy


def _tensor(x):
    """``x`` as a tensor: a number or an array becomes a constant (it requires no grad)."""
    return x if isinstance(x, Tensor) else Tensor(x)


from . import arithmetic as _arith  # noqa: E402  (its functions need Tensor defined first)
