"""``Tensor``: an array that remembers the function that made it.

A tensor holds ``data`` (a NumPy or CuPy array), ``grad`` (a Tensor, or None until a backward
pass reaches it), ``requires_grad``, and ``creator``, the ``Function`` whose output it is
(None for a leaf). Operators build the graph as they compute (define-by-run); ``backward()``
walks it in reverse.

Dtype policy: a tensor made from Python numbers or from a float64 array is float32 unless a
``dtype`` is asked for; integers stay integers. Operations never promote float32 to float64
(the rule, PyTorch's, is in ``dtypes.py``).
"""

import numpy

from . import autograd, backend, dtypes, inplace
from .versions import bump, counter_of

DEFAULT_FLOAT = numpy.float32


def _to_array(data, dtype=None, device=None):
    """The array a tensor will hold: on ``device`` (default: where ``data`` is, or the current
    backend for lists and numbers), float64 turned into float32 unless ``dtype`` says otherwise."""
    if isinstance(data, Tensor):
        data = data.data
    on_gpu = backend.is_gpu_array(data)
    if device is not None:
        xp = backend.module_for(device)
    elif on_gpu or isinstance(data, numpy.ndarray):
        xp = backend.get_array_module(data)
    else:
        xp = backend.xp
    if xp is numpy:
        array = backend.to_cpu(data) if on_gpu else numpy.asarray(data)
    else:
        array = backend.to_gpu(data)
    if dtype is not None:
        return array.astype(dtype, copy=False)
    if array.dtype == numpy.float64:
        return array.astype(DEFAULT_FLOAT)
    return array


def as_tensor(value, like=None):
    """``value`` as a constant tensor. Scalars (Python or NumPy) take ``like``'s dtype and device
    when that keeps their value's kind, as Python scalars do under NumPy 2's promotion rules;
    float64 arrays and lists of floats take a floating ``like``'s dtype."""
    if isinstance(value, Tensor):
        return value
    if like is not None and (numpy.isscalar(value) or getattr(value, "ndim", None) == 0):
        if hasattr(value, "item"):
            value = value.item()
        xp = backend.get_array_module(like.data)
        return Tensor._make(xp.asarray(value, dtype=dtypes.scalar_dtype(like.data.dtype, value)), False)
    if like is None:
        return Tensor(value)
    value_dtype = value.dtype if hasattr(value, "dtype") else numpy.asarray(value).dtype
    # float64 data takes the graph's float dtype, rather than the default float32: no rounding in a float64 graph.
    dtype = like.dtype if value_dtype == numpy.float64 and like.dtype.kind == "f" else None
    return Tensor(value, dtype=dtype, device=like.device)


class Tensor:
    """A node of the computation graph holding an array. See the module docstring."""

    __slots__ = ("_data", "_version_counter", "grad", "requires_grad", "creator", "retains_grad", "name", "__weakref__")
    __array_ufunc__ = None  # make NumPy defer to Tensor's reflected operators: array + tensor -> Tensor

    def __init__(self, data, requires_grad=False, dtype=None, device=None, name=None):
        self._data = _to_array(data, dtype, device)
        self._version_counter = None  # made on the first in-place write or view (versions.py)
        if requires_grad and self._data.dtype.kind not in "fc":
            raise TypeError(f"only floating-point tensors can require gradients, not {self._data.dtype}")
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self.creator = None
        self.retains_grad = False
        self.name = name

    @classmethod
    def _make(cls, data, requires_grad, version_counter=None):
        """Wrap an array as it is (no conversion): how functions make their outputs. A view of
        another tensor's memory passes that tensor's ``version_counter``."""
        t = cls.__new__(cls)
        t._data, t.requires_grad, t.retains_grad = data, requires_grad, False
        t._version_counter = version_counter
        t.grad = t.creator = t.name = None
        return t

    # ----- what it is -----
    @property
    def data(self):
        """The array (NumPy or CuPy). Assigning it, or augmenting it (``p.data -= lr * g``), counts
        as an in-place write (see ``versions.py``); writing into it (``t.data[0] = 1``) is not seen:
        use ``copy_``, ``fill_`` or item assignment under ``no_grad()`` instead."""
        return self._data

    @data.setter
    def data(self, array):
        if isinstance(array, Tensor):
            array = array._data
        if not (isinstance(array, numpy.ndarray) or backend.is_gpu_array(array)):
            raise TypeError(f"Tensor.data must be a NumPy or CuPy array, not {type(array).__name__}")
        self._data = array
        bump(self)

    @property
    def _version(self):
        """How many in-place writes this tensor (or a view of its memory) has had: PyTorch's name."""
        return 0 if self._version_counter is None else self._version_counter.count

    @property
    def shape(self):
        return self._data.shape

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def device(self):
        return "gpu" if backend.is_gpu_array(self._data) else "cpu"

    @property
    def is_leaf(self):
        return self.creator is None

    @property
    def grad_fn(self):
        return self.creator

    def size(self, dim=None):
        """The shape (PyTorch's name), or the length of one dimension."""
        return self._data.shape if dim is None else self._data.shape[dim]

    def numel(self):
        return self._data.size

    def __len__(self):
        return len(self._data)

    def item(self):
        return self._data.item()

    def __array__(self, dtype=None, copy=None):
        """``numpy.asarray(tensor)``: the data of a tensor on the CPU (no copy unless asked or needed);
        a tensor on the GPU is refused, since that would be a hidden device-to-host copy."""
        if backend.is_gpu_array(self._data):
            raise TypeError("numpy.asarray of a tensor on the GPU: call .numpy() to copy it to the host, or .cpu()")
        if copy:
            return self._data.astype(dtype or self._data.dtype, copy=True)
        return self._data if dtype is None else self._data.astype(dtype, copy=False)

    def numpy(self):
        """The data as a NumPy array (copied to the host when on the GPU)."""
        return backend.to_cpu(self._data)

    def tolist(self):
        return self.numpy().tolist()

    def __repr__(self):
        data = numpy.array2string(backend.to_cpu(self._data), prefix="Tensor(", separator=", ", threshold=50)
        parts = [f"Tensor({data}", f"dtype={self._data.dtype}", f"device={self.device}"]
        if self.creator is not None:
            parts.append(f"grad_fn=<{type(self.creator).__name__}>")
        elif self.requires_grad:
            parts.append("requires_grad=True")
        if self.grad is not None:
            parts.append("grad=" + numpy.array2string(backend.to_cpu(self.grad._data), separator=", ", threshold=50))
        return ", ".join(parts) + ")"

    # ----- gradients -----
    def backward(self, grad=None):
        """Compute the gradient of this tensor with respect to every leaf that requires grad.

        Gradients accumulate: a second call adds to ``.grad``; reset with ``zero_grad()``.
        A scalar output is seeded with 1; any other output needs ``grad`` of its own shape.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward: this tensor does not require grad and has no graph; was it computed under "
                "no_grad(), or from inputs none of which has requires_grad=True?"
            )
        if grad is None:
            if self._data.size != 1:
                raise RuntimeError(
                    f"backward: a gradient can only be created implicitly for a scalar output, and this "
                    f"one has shape {self.shape}; pass grad= an array of that shape (or call .sum() first)"
                )
            grad = backend.get_array_module(self._data).ones_like(self._data)
        else:
            grad = _to_array(grad, dtype=self.dtype, device=self.device)
            if grad.shape != self.shape:
                raise ValueError(f"backward: grad has shape {grad.shape} but the output has shape {self.shape}")
        if self.creator is None:
            self.accumulate_grad(grad)
        else:
            autograd.backward(self, grad)

    def accumulate_grad(self, g, copy=True):
        """Add array ``g`` to ``.grad``, in this tensor's dtype.

        ``copy=False`` lets the first gradient be kept as it is, when the caller knows that nothing
        else holds ``g``; otherwise ``.grad`` never shares ``g``'s memory.
        """
        if self.grad is None:
            self.grad = Tensor._make(g.astype(self._data.dtype, copy=copy), False)
        else:
            self.grad = Tensor._make((self.grad._data + g).astype(self._data.dtype, copy=False), False)

    def retain_grad(self):
        """Keep the gradient of this non-leaf tensor in ``.grad`` during backward."""
        self.retains_grad = True
        return self

    def zero_grad(self):
        """Forget the accumulated gradient (sets ``.grad`` to None, as PyTorch does)."""
        self.grad = None

    def detach(self):
        """The same data (and version counter), cut from the graph."""
        return Tensor._make(self._data, False, counter_of(self))

    def clone(self):
        """A copy with memory of its own, in the graph (gradients flow back to this tensor)."""
        return _fn.clone(self)

    def requires_grad_(self, requires_grad=True):
        if requires_grad and self._data.dtype.kind not in "fc":
            raise TypeError(f"only floating-point tensors can require gradients, not {self._data.dtype}")
        self.requires_grad = requires_grad
        return self

    # ----- conversions -----
    def to(self, target):
        """Move to ``"cpu"`` or ``"gpu"``, or cast to a dtype (both stay in the graph)."""
        if isinstance(target, str):
            target = target.lower()
            if target == "cuda":
                target = "gpu"
            if target not in ("cpu", "gpu"):
                raise ValueError(f"to: unknown device {target!r}; use 'cpu' or 'gpu'")
            return self if target == self.device else _fn.to_device(self, target)
        return self.astype(target)

    def astype(self, dtype):
        return self if numpy.dtype(dtype) == self.dtype else _fn.astype(self, dtype)

    def float(self):
        return self.astype(numpy.float32)

    def double(self):
        return self.astype(numpy.float64)

    def cpu(self):
        return self.to("cpu")

    def gpu(self):
        return self.to("gpu")

    # ----- arithmetic -----
    def __add__(self, other):
        return _arith.Add()(self, other)

    def __radd__(self, other):
        return _arith.Add()(other, self)

    def __sub__(self, other):
        return _arith.Sub()(self, other)

    def __rsub__(self, other):
        return _arith.Sub()(other, self)

    def __mul__(self, other):
        return _arith.Mul()(self, other)

    def __rmul__(self, other):
        return _arith.Mul()(other, self)

    def __truediv__(self, other):
        return _arith.Div()(self, other)

    def __rtruediv__(self, other):
        return _arith.Div()(other, self)

    def __pow__(self, exponent):
        return _fn.pow(self, exponent)

    def __rpow__(self, base):
        return _fn.pow(base, self)

    def __matmul__(self, other):
        return _fn.matmul(self, other)

    def __rmatmul__(self, other):
        return _fn.matmul(other, self)

    def __neg__(self):
        return _fn.neg(self)

    def __abs__(self):
        return _fn.abs_(self)

    # Comparisons give plain boolean arrays: they are not differentiable.
    def __lt__(self, other):
        return self._data < _raw(other)

    def __le__(self, other):
        return self._data <= _raw(other)

    def __gt__(self, other):
        return self._data > _raw(other)

    def __ge__(self, other):
        return self._data >= _raw(other)

    def __eq__(self, other):
        return self._data == _raw(other)

    def __ne__(self, other):
        return self._data != _raw(other)

    __hash__ = object.__hash__

    def __bool__(self):
        return bool(self._data)

    def __getitem__(self, index):
        return _fn.getitem(self, index)

    # ----- in-place writes (not recorded in the graph; see inplace.py) -----
    def __setitem__(self, index, value):
        """``t[index] = value``, in place: under ``no_grad()``, or on a tensor outside any graph."""
        inplace.setitem(self, index, value)

    def copy_(self, src):
        """Copy ``src`` (broadcast to this shape, cast to this dtype, moved to this device) in place."""
        return inplace.copy_(self, src)

    def fill_(self, value):
        return inplace.fill_(self, value)

    def zero_(self):
        return inplace.fill_(self, 0)

    def add_(self, other, alpha=1):
        """``self += alpha * other``, in place."""
        return inplace.add_(self, other, alpha)

    def mul_(self, other):
        return inplace.mul_(self, other)

    # ----- elementwise and reductions -----
    def exp(self):
        return _fn.exp(self)

    def log(self):
        return _fn.log(self)

    def sqrt(self):
        return _fn.sqrt(self)

    def abs(self):
        return _fn.abs_(self)

    def tanh(self):
        return _fn.tanh(self)

    def sigmoid(self):
        return _fn.sigmoid(self)

    def relu(self):
        return _fn.relu(self)

    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Sum over ``dim`` (int or tuple; all when None). NumPy's ``axis``/``keepdims`` also work."""
        return _fn.sum(self, _pick(dim, axis), _pick(keepdim, keepdims))

    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return _fn.mean(self, _pick(dim, axis), _pick(keepdim, keepdims))

    def amax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Maximum values over one dimension (or all)."""
        return _fn.amax(self, _pick(dim, axis), _pick(keepdim, keepdims))

    def max(self, dim=None, keepdim=False):
        """Over all elements: the maximum (tied maxima share its gradient). Over ``dim``:
        ``(values, indices)`` as in PyTorch, each value's gradient going to the element at its index."""
        if dim is None:
            return _fn.amax(self)
        dim = _fn.wrap_dim("max", dim, self.ndim)
        indices = self.argmax(dim, keepdim=True)
        xp = backend.get_array_module(indices)
        where = [xp.arange(n).reshape([n if axis == k else 1 for k in range(self.ndim)])
                 for axis, n in enumerate(indices.shape)]  # an open grid (CuPy's indices has no sparse=)
        where[dim] = indices
        values = self[tuple(where)]  # picks (and routes gradients to) exactly the returned elements
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return MaxResult(values, indices)

    def argmax(self, dim=None, keepdim=False):
        """Indices of the maxima (a plain integer array: not differentiable)."""
        if dim is None:
            return self._data.argmax()
        return self._data.argmax(axis=_fn.wrap_dim("argmax", dim, self.ndim), keepdims=keepdim)

    def softmax(self, dim=-1):
        return _fn.softmax(self, dim)

    def log_softmax(self, dim=-1):
        return _fn.log_softmax(self, dim)

    # ----- shapes -----
    def reshape(self, *shape):
        return _fn.reshape(self, *shape)

    view = reshape

    def permute(self, *dims):
        return _fn.permute(self, *dims)

    def transpose(self, dim0=None, dim1=None):
        return _fn.transpose(self, dim0, dim1)

    @property
    def T(self):
        return _fn.transpose(self)

    def flatten(self, start_dim=0, end_dim=-1):
        return _fn.flatten(self, start_dim, end_dim)

    def unsqueeze(self, dim):
        return _fn.unsqueeze(self, dim)

    def squeeze(self, dim=None):
        return _fn.squeeze(self, dim)

    def broadcast_to(self, *shape):
        return _fn.broadcast_to(self, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)

    expand = broadcast_to


class MaxResult(tuple):
    """``(values, indices)``, as returned by ``Tensor.max(dim)``."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


def _raw(x):
    return x.data if isinstance(x, Tensor) else x


def _pick(torch_value, numpy_value):
    return torch_value if numpy_value is None else numpy_value


from . import functions as _fn  # noqa: E402  (the functions need Tensor defined first)
from .functions import arithmetic as _arith  # noqa: E402
