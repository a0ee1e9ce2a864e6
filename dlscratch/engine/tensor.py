"""The library's ``Tensor``: the core's (``core/tensor.py``) with the extensions and the rest of the API.

A tensor holds ``data`` (a NumPy or CuPy array), ``grad`` (a Tensor, or None until a backward
pass reaches it), ``requires_grad``, and ``creator``, the ``Function`` whose output it is
(None for a leaf). Operators build the graph as they compute (define-by-run); ``backward()``
walks it in reverse.

Dtype policy: a tensor made from Python numbers or from a float64 array is float32 unless a
``dtype`` is asked for; integers stay integers. Operations never promote float32 to float64
(the rule, PyTorch's, is in ``engine/extensions/dtypes.py``). Only numbers (bool, integer, floating, complex) become
tensors: None, strings, objects and arrays of them are refused with a TypeError, and operators
given one return NotImplemented, so Python raises "unsupported operand type(s)", as PyTorch does.

Memory: ``Tensor(array)`` is the low-level constructor the library uses to wrap the arrays it
makes; it shares the array's memory when the dtype and device allow (as ``dlscratch.as_tensor`` does).
``dlscratch.tensor(data)`` always copies, as ``torch.tensor`` does (``engine/creation.py``).

The members it shares with the core's ``Tensor`` replace the core's rather than call them: each adds a check or
PyTorch's arguments on a path that every operation or step takes, where a call into the core would be one more
Python frame (``python -m dlscratch.bench trace`` counts them).
"""

import numpy

from .. import backend
from ..core import tensor as core
from ..device import cuda_device
from ..device import device as device_type
from ..fast import kept_arrays
from . import inplace
from .extensions import deferred_checks, errors, leaf_hooks
from .extensions.dtypes import DEFAULT_FLOAT
from .extensions.operands import NUMERIC_KINDS, PYTHON_SCALARS
from .extensions.operands import is_number as _is_number
from .extensions.versions import bump, counter_of

REQUIRES_GRAD_NUMPY = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."


def _to_array(data, dtype=None, device=None, copy=False):
    """The array a tensor will hold: on ``device`` (default: where ``data`` is, or the current
    backend for lists and numbers), float64 turned into float32 unless ``dtype`` says otherwise.
    It shares ``data``'s memory where it can, unless ``copy``."""
    source = data._data if isinstance(data, Tensor) else data
    if isinstance(source, (list, tuple)):
        source = _values_of(source)
    on_gpu = backend.is_gpu_array(source)
    if device is not None:
        xp = backend.module_for(device)
    elif on_gpu or isinstance(source, numpy.ndarray):
        xp = backend.get_array_module(source)
    else:
        xp = backend.xp
    array = source if on_gpu else numpy.asarray(source)
    if array.dtype.kind not in NUMERIC_KINDS:
        raise TypeError(f"cannot make a tensor from {type(data).__name__} (NumPy dtype {array.dtype}): expected a "
                        "number, a (nested) list of numbers, an array of numbers or a tensor")
    array = backend.to_cpu(array) if xp is numpy else backend.to_gpu(array)
    if dtype is not None:
        array = array.astype(dtype, copy=False)
    elif array.dtype == numpy.float64:
        array = array.astype(DEFAULT_FLOAT)
    if copy and (array is source or array.base is not None):
        array = array.copy(order="K")  # memory of its own, in the same layout (a batch-last array stays so)
    return array


def _values_of(items):
    """A (nested) list with each one-element tensor in it replaced by its value, as
    ``torch.tensor`` reads them; a tensor of more elements is refused."""
    values = []
    for item in items:
        if isinstance(item, Tensor):
            item = item._value("tensor")
        elif isinstance(item, (list, tuple)):
            item = _values_of(item)
        values.append(item)
    return values


def _operand(other):
    """Whether an operator takes ``other`` (a tensor, a number, an array or a list, whose values
    are checked when converted); for anything else it returns NotImplemented."""
    return (type(other) is Tensor or type(other) in PYTHON_SCALARS
            or isinstance(other, (Tensor, list, tuple, numpy.ndarray))
            or backend.is_gpu_array(other) or _is_number(other))


_new_object = object.__new__  # a tensor without ``__init__``'s conversions: how functions make their outputs


def _check_can_require_grad(dtype):
    if dtype.kind == "c":
        raise RuntimeError("dlscratch computes gradients of real floating-point tensors only; complex tensors "
                           "cannot require gradients")
    if dtype.kind != "f":
        raise RuntimeError(f"only Tensors of floating point dtype can require gradients (this one is {dtype})")


class _HookHandle:
    """What ``register_post_accumulate_grad_hook`` returns: ``remove()`` unregisters the hook."""

    _next = [0]

    def __init__(self, hooks, hook):
        self._hooks, self._key = hooks, self._next[0]
        self._next[0] += 1
        hooks[self._key] = hook
        leaf_hooks.registered[0] += 1

    def remove(self):
        if self._hooks.pop(self._key, None) is not None:
            leaf_hooks.registered[0] -= 1


# A NumPy ufunc met a tensor: the tensor's operator answers, once its operands are put in order
_OPERATORS = {numpy.add: ("__add__", "__radd__"), numpy.subtract: ("__sub__", "__rsub__"),
              numpy.multiply: ("__mul__", "__rmul__"), numpy.true_divide: ("__truediv__", "__rtruediv__"),
              numpy.power: ("__pow__", "__rpow__"), numpy.matmul: ("__matmul__", "__rmatmul__"),
              numpy.less: ("__lt__", "__gt__"), numpy.less_equal: ("__le__", "__ge__"),
              numpy.greater: ("__gt__", "__lt__"), numpy.greater_equal: ("__ge__", "__le__"),
              numpy.equal: ("__eq__", "__eq__"), numpy.not_equal: ("__ne__", "__ne__")}


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    """NumPy's ufunc protocol. Into an array (``out=``, as ``array += tensor`` asks): the tensors' data, so that
    ``p.data += -lr * p.grad`` writes into ``p.data``. Otherwise the tensor's own operator (``array + tensor``
    is a tensor in the graph); anything else NumPy refuses."""
    out = kwargs.get("out")
    if out is not None and not any(isinstance(o, Tensor) for o in out):
        return getattr(ufunc, method)(*map(data_of, inputs), **kwargs)
    if method != "__call__" or out is not None or kwargs or len(inputs) != 2 or ufunc not in _OPERATORS:
        return NotImplemented
    forward, reflected = _OPERATORS[ufunc]
    a, b = inputs
    return getattr(a, forward)(b) if isinstance(a, Tensor) else getattr(b, reflected)(a)


class _ArrayUfunc:
    """``Tensor.__array_ufunc__``: NumPy reads it from the class, CuPy from the instance (before an operator).

    NumPy gets ``_array_ufunc`` above. CuPy gets None, which tells its operators to leave ``array + tensor`` to
    the tensor's reflected operator; its in-place operators (``array += tensor``) take the tensor's data through
    ``__cupy_get_ndarray__``."""

    def __get__(self, tensor, owner=None):
        return _array_ufunc if tensor is None else None


class Tensor(core.Tensor):
    """A node of the computation graph holding an array. See the module docstring.

    ``Tensor(data)`` is the low-level constructor: it shares ``data``'s memory where the dtype and
    device allow, as ``dlscratch.as_tensor`` does. For a tensor with memory of its own, which
    writes into the array cannot change, use ``dlscratch.tensor(data)``."""

    __slots__ = ("_version_counter", "name", "deferred_check", "_grad_hooks")  # the core's, and these

    def __init__(self, data, requires_grad=False, dtype=None, device=None, name=None):
        self._data = _to_array(data, dtype, device)
        self._version_counter = None  # made on the first in-place write or view (engine/extensions/versions.py)
        self._grad = None
        self.requires_grad = requires_grad
        self.creator = None
        self.retains_grad = False
        self.name = name
        self.deferred_check = None  # engine/extensions/deferred_checks.py
        self._grad_hooks = None

    @classmethod
    def _make(cls, data, requires_grad, version_counter=None):
        """Wrap an array as it is (no conversion): how functions make their outputs. A view of
        another tensor's memory passes that tensor's ``version_counter``."""
        t = _new_object(cls)
        t._data, t._requires_grad, t.retains_grad = data, requires_grad, False
        t._version_counter = version_counter
        t._grad = t.creator = t.name = t.deferred_check = t._grad_hooks = None
        return t

    # ----- what it is -----
    @property
    def data(self):
        """The array (NumPy or CuPy). Assigning it, or augmenting it (``p.data -= lr * g``), counts
        as an in-place write (see ``engine/extensions/versions.py``); writing into it (``t.data[0] = 1``) is not seen:
        use ``copy_``, ``fill_`` or item assignment under ``no_grad()`` instead."""
        return self._data

    @data.setter
    def data(self, array):
        if isinstance(array, Tensor):
            array = array._data
        if not (isinstance(array, numpy.ndarray) or backend.is_gpu_array(array)):
            raise TypeError(f"Tensor.data must be a NumPy or CuPy array, not {type(array).__name__}")
        if array.dtype.kind not in NUMERIC_KINDS:
            raise TypeError(f"Tensor.data must be an array of numbers, not of NumPy dtype {array.dtype}")
        if array.shape != self._data.shape:
            errors.reshaped_data[0] += 1  # backward checks the leaves' gradients from now on
        self._data = array
        bump(self)

    @property
    def _version(self):
        """How many in-place writes this tensor (or a view of its memory) has had: PyTorch's name."""
        return 0 if self._version_counter is None else self._version_counter.count

    @property
    def device(self):
        return "gpu" if backend.is_gpu_array(self._data) else "cpu"

    @property
    def grad_fn(self):
        return self.creator

    def size(self, dim=None):
        """The shape (PyTorch's name), or the length of one dimension."""
        return self._data.shape if dim is None else self._data.shape[dim]

    def numel(self):
        return self._data.size

    nelement = numel  # PyTorch's older name

    def __index__(self):
        """A one-element integer tensor used as an index (``range(t)``, ``lst[t]``), as in PyTorch."""
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError(f"only integer tensors of a single element can be converted to an index (this one: "
                            f"{self._data.dtype}, {self._data.size} elements)")
        return int(self._read(self._data.item()))

    def __len__(self):
        return len(self._data)

    def item(self):
        return self._read(self._data.item())

    def _read(self, value):
        """``value``, just read from this tensor to the host, after its deferred check
        (``engine/extensions/deferred_checks.py``)."""
        return deferred_checks.read(self, value)

    def _value(self, op):
        """The one element, as a Python number, for ``float()``, ``int()`` and ``tensor([...])``."""
        if self._data.size != 1:
            hint = ("to join tensors into one, use dlscratch.functional.stack(tensors)" if op == "tensor" else
                    "reduce it first (e.g. .sum()) or index one element")
            raise ValueError(f"{op}: only one element tensors can be converted to Python scalars, and this one has "
                             f"shape {self.shape} ({self._data.size} elements); {hint}")
        return self._read(self._data.item())

    def __float__(self):
        return float(self._value("float"))

    def __int__(self):
        return int(self._value("int"))

    __array_ufunc__ = _ArrayUfunc()

    @property
    def __cupy_get_ndarray__(self):
        """CuPy's protocol for an object that holds a GPU array (``gpu_array += tensor``); absent on the CPU."""
        if not backend.is_gpu_array(self._data):
            raise AttributeError("__cupy_get_ndarray__: the tensor is not on the GPU")
        return lambda: self._data

    def __array__(self, dtype=None, copy=None):
        """``numpy.asarray(tensor)``: the data of a tensor on the CPU (no copy unless asked or needed);
        a tensor on the GPU is refused, since that would be a hidden device-to-host copy."""
        if backend.is_gpu_array(self._data):
            raise TypeError("numpy.asarray of a tensor on the GPU: call .numpy() to copy it to the host, or .cpu()")
        if copy:
            return self._data.astype(dtype or self._data.dtype, copy=True)
        return self._data if dtype is None else self._data.astype(dtype, copy=False)

    def numpy(self):
        """The data as a NumPy array (copied to the host when on the GPU). Refused, as in PyTorch, on
        a tensor that requires grad: a write into the array would change a graph's values unseen."""
        if self._requires_grad:
            raise RuntimeError(REQUIRES_GRAD_NUMPY)
        return self._read(backend.to_cpu(self._data))

    def tolist(self):
        return self._read(backend.to_cpu(self._data)).tolist()

    def __getstate__(self):
        """Pickle a leaf: its data, ``requires_grad``, ``grad`` and name. A tensor computed in a
        graph is refused: its ``grad_fn`` cannot travel, and dropping it would change what it is."""
        if self.creator is not None:
            raise TypeError(f"cannot pickle a tensor that is part of a graph (it has a grad_fn: "
                            f"{type(self.creator).__name__}); pickle tensor.detach() instead")
        return {"data": self._data, "requires_grad": self._requires_grad, "grad": self._grad, "name": self.name}

    def __setstate__(self, state):
        self._data, self._requires_grad, self._grad = state["data"], state["requires_grad"], state["grad"]
        self.name, self.creator, self.retains_grad, self._version_counter = state["name"], None, False, None
        self.deferred_check = self._grad_hooks = None  # hooks are the process's own: they do not travel

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
    @property
    def requires_grad(self):
        """Whether gradients are recorded for this tensor; only real floating-point tensors may."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, requires_grad):
        if requires_grad:
            _check_can_require_grad(self._data.dtype)
        self._requires_grad = bool(requires_grad)

    @property
    def grad(self):
        """The accumulated gradient: None, or a tensor of this tensor's shape, dtype and device."""
        return self._grad

    @grad.setter
    def grad(self, grad):
        if grad is not None:
            if not isinstance(grad, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type "
                                f"{type(grad).__name__}")
            if grad.shape != self.shape:
                raise RuntimeError(f"assigned grad has data of a different size: {grad.shape}, but the tensor has "
                                   f"shape {self.shape}")
            if grad.dtype != self.dtype:
                raise RuntimeError(f"assigned grad has data of a different type: {grad.dtype}, but the tensor is "
                                   f"{self.dtype}")
            if grad.device != self.device:
                raise RuntimeError(f"assigned grad has data located on a different device: {grad.device}, but the "
                                   f"tensor is on {self.device}")
        self._grad = grad

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None, *, grad=None):
        """Compute the gradient of this tensor with respect to every leaf that requires grad (PyTorch's arguments).

        Gradients accumulate: a second call adds to ``.grad``; reset with ``zero_grad()``.
        A scalar output is seeded with 1; any other output needs ``gradient`` (the lessons' ``grad=``) of its own
        shape. ``inputs``: the leaves (or computed tensors) to accumulate into, the others left alone. The graph
        stays after backward, so ``retain_graph`` changes nothing; ``create_graph=True`` is refused: the walk
        computes on arrays and builds no graph of the gradients.
        """
        if grad is not None:
            if gradient is not None:
                raise TypeError("backward: pass gradient= or grad= (two names for one argument), not both")
            gradient = grad
        if create_graph:
            raise NotImplementedError(
                "backward(create_graph=True): dlscratch computes gradients on arrays and builds no graph of "
                "them, so they cannot be differentiated again (no higher-order derivatives)")
        if not self.requires_grad:
            raise RuntimeError(
                "backward: this tensor does not require grad and has no graph; was it computed under "
                "no_grad(), or from inputs none of which has requires_grad=True?"
            )
        if gradient is None:
            if self._data.size != 1:
                raise RuntimeError(
                    f"backward: a gradient can only be created implicitly for a scalar output, and this "
                    f"one has shape {self.shape}; pass gradient= (or grad=) an array of that shape (or call "
                    ".sum() first)"
                )
            gradient = kept_arrays.ones_seed(self._data)
        else:
            gradient = _to_array(gradient, dtype=self.dtype, device=self.device)
            if gradient.shape != self.shape:
                raise ValueError(f"backward: the gradient has shape {gradient.shape} but the output has shape "
                                 f"{self.shape}")
        autograd.propagate(self, gradient, inputs)

    def accumulate_grad(self, g, copy=True):
        """Add array ``g`` to ``.grad``, in this tensor's dtype, then call the hooks registered with
        ``register_post_accumulate_grad_hook``.

        ``copy=False`` lets the first gradient be kept as it is, when the caller knows that nothing
        else holds ``g``; otherwise ``.grad`` never shares ``g``'s memory. Later gradients are added into
        the ``.grad`` array in place, as PyTorch does: what holds it, or a view of it, sees the sum.
        """
        if self._grad is None:  # C order, as the parameter: a view of .grad (reshape(-1)) is then a view, as in PyTorch
            self._grad = Tensor._make(g.astype(self._data.dtype, order="C", copy=copy), False)
        else:
            self._grad._data += g
        if self._grad_hooks and leaf_hooks.gradient_is_whole(self):
            self.run_grad_hooks()

    def run_grad_hooks(self):
        """Call the hooks of ``register_post_accumulate_grad_hook``, in the order they were registered."""
        for hook in list(self._grad_hooks.values()):
            hook(self)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` once in each backward pass, when the leaf's ``.grad`` holds the whole gradient
        of the pass (every use's part added: ``engine/extensions/leaf_hooks.py``), as PyTorch's of that name does;
        ``DistributedDataParallel`` uses it to send gradients while the backward goes on. Returns a handle whose
        ``remove()`` unregisters it."""
        if self.creator is not None:
            raise RuntimeError("register_post_accumulate_grad_hook: only a leaf tensor accumulates a gradient; "
                               "this one was computed by an operation")
        if not callable(hook):
            raise TypeError(f"register_post_accumulate_grad_hook: the hook must be callable, got {hook!r}")
        if self._grad_hooks is None:
            self._grad_hooks = {}
        return _HookHandle(self._grad_hooks, hook)

    def zero_grad(self, set_to_none=True):
        """Forget the accumulated gradient: set ``.grad`` to None (PyTorch's default), or with ``set_to_none=False``
        fill its array with zeros in place, so that what holds it sees the zeros."""
        if set_to_none or self._grad is None:
            self._grad = None
        else:
            self._grad._data.fill(0)

    def detach(self):
        """The same data (and version counter), cut from the graph."""
        detached = Tensor._make(self._data, False, counter_of(self))
        detached.deferred_check = self.deferred_check
        return detached

    def clone(self):
        """A copy with memory of its own, in the graph (gradients flow back to this tensor)."""
        return _fn.clone(self)

    def requires_grad_(self, requires_grad=True):
        self.requires_grad = requires_grad
        return self

    # ----- conversions -----
    def to(self, target):
        """Move to ``"cpu"`` or ``"gpu"`` (or PyTorch's ``"cuda"``, a ``dlscratch.device``), or cast to a dtype
        (both stay in the graph)."""
        if isinstance(target, (str, device_type)):
            target = backend.device_name(target)
            return self if target == self.device else _fn.to_device(self, target)
        return self.astype(target)

    def astype(self, dtype):
        """Cast to ``dtype``; a cast to an integer or bool dtype cuts the graph, as in PyTorch."""
        return self if numpy.dtype(dtype) == self.dtype else _fn.astype(self, dtype)

    def type(self, dtype=None):
        """With no argument, PyTorch's name of the tensor's type (``"dlscratch.FloatTensor"``); with a dtype, or one
        of those names, the tensor cast to it (as ``astype``)."""
        names = {numpy.dtype(t): name for name, t in _TYPE_NAMES.items()}
        if dtype is None:
            name = names.get(self.dtype)
            if name is None:
                raise TypeError(f"type(): no PyTorch tensor type name for dtype {self.dtype}")
            return f"dlscratch.{'cuda.' if self.device == 'gpu' else ''}{name}"
        if isinstance(dtype, str):
            name = dtype.rsplit(".", 1)[-1]
            if name not in _TYPE_NAMES:
                raise ValueError(f"type(): invalid type {dtype!r}; give a dtype or a name such as 'torch.FloatTensor'")
            target = self.to("gpu" if ".cuda." in dtype else "cpu")
            return target.astype(_TYPE_NAMES[name])
        return self.astype(dtype)

    def float(self):
        return self.astype(numpy.float32)

    def double(self):
        return self.astype(numpy.float64)

    def cpu(self):
        return self.to("cpu")

    def gpu(self):
        return self.to("gpu")

    def cuda(self, device=None, non_blocking=False):
        """PyTorch's ``to("cuda")``; ``device``: None, 0, ``"cuda:0"`` or a ``dlscratch.device`` of the one GPU
        dlscratch uses. ``non_blocking`` is taken and has no effect: CuPy's copies from the host wait."""
        return self.to(cuda_device(device))

    # ----- arithmetic (an operand that is no number, array or tensor gives NotImplemented: see _operand;
    # a tensor, the usual operand, is recognised before the call) -----
    def __add__(self, other):
        return _arith.Add()(self, other) if type(other) is Tensor or _operand(other) else NotImplemented

    def __radd__(self, other):
        return _arith.Add()(other, self) if type(other) is Tensor or _operand(other) else NotImplemented

    def __sub__(self, other):
        return _arith.Sub()(self, other) if type(other) is Tensor or _operand(other) else NotImplemented

    def __rsub__(self, other):
        return _arith.Sub()(other, self) if type(other) is Tensor or _operand(other) else NotImplemented

    def __mul__(self, other):
        return _arith.Mul()(self, other) if type(other) is Tensor or _operand(other) else NotImplemented

    def __rmul__(self, other):
        return _arith.Mul()(other, self) if type(other) is Tensor or _operand(other) else NotImplemented

    def __truediv__(self, other):
        return _arith.Div()(self, other) if type(other) is Tensor or _operand(other) else NotImplemented

    def __rtruediv__(self, other):
        return _arith.Div()(other, self) if type(other) is Tensor or _operand(other) else NotImplemented

    def __pow__(self, exponent):
        return _fn.pow(self, exponent) if _operand(exponent) else NotImplemented

    def __rpow__(self, base):
        return _fn.pow(base, self) if _operand(base) else NotImplemented

    def __matmul__(self, other):
        return _fn.matmul(self, other) if _operand(other) else NotImplemented

    def __rmatmul__(self, other):
        return _fn.matmul(other, self) if _operand(other) else NotImplemented

    def __neg__(self):
        return _fn.neg(self)

    def __abs__(self):
        return _fn.abs_(self)

    # Comparisons give boolean tensors, outside any graph (they are not differentiable). With an operand that
    # is no number, array or tensor, == is False and != True (Python's fallback, as in PyTorch); < raises.
    def __lt__(self, other):
        return _compared(self._data < data_of(other)) if _operand(other) else NotImplemented

    def __le__(self, other):
        return _compared(self._data <= data_of(other)) if _operand(other) else NotImplemented

    def __gt__(self, other):
        return _compared(self._data > data_of(other)) if _operand(other) else NotImplemented

    def __ge__(self, other):
        return _compared(self._data >= data_of(other)) if _operand(other) else NotImplemented

    def __eq__(self, other):
        return _compared(self._data == data_of(other)) if _operand(other) else NotImplemented

    def __ne__(self, other):
        return _compared(self._data != data_of(other)) if _operand(other) else NotImplemented

    __hash__ = object.__hash__

    def __bool__(self):
        return bool(self._data)

    def __getitem__(self, index):
        return _fn.getitem(self, index)

    # ----- in-place writes (not recorded in the graph; see engine/inplace.py) -----
    def __setitem__(self, index, value):
        """``t[index] = value``, in place: under ``no_grad()``, or on a tensor outside any graph."""
        inplace.setitem(self, index, value)

    def copy_(self, src):
        """Copy ``src`` (broadcast to this shape, cast to this dtype, moved to this device) in place."""
        return inplace.copy_(self, src)

    def fill_(self, value):
        return inplace.fill_(self, value)

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fill with samples of a normal distribution, in place (``generator=``: a ``dlscratch.Generator``)."""
        return self.copy_(self._random(generator, "normal_").standard_normal(self.shape, self._draw_dtype) * std + mean)

    def uniform_(self, low=0.0, high=1.0, *, generator=None):
        """Fill with samples of the uniform distribution on [low, high), in place (PyTorch's ``from``, ``to``)."""
        return self.copy_(self._random(generator, "uniform_").random(self.shape, self._draw_dtype) * (high - low) + low)

    def _random(self, generator, where):
        return _random.array_generator(generator, backend.get_array_module(self._data), where)

    @property
    def _draw_dtype(self):
        """The dtype to draw random floats in: this one where the array module's generator has it."""
        return self._data.dtype if self._data.dtype in (numpy.float32, numpy.float64) else numpy.float32

    def zero_(self):
        return inplace.fill_(self, 0)

    def add_(self, other, alpha=1):
        """``self += alpha * other``, in place."""
        return inplace.add_(self, other, alpha)

    def sub_(self, other, alpha=1):
        """``self -= alpha * other``, in place."""
        return inplace.sub_(self, other, alpha)

    def mul_(self, other):
        return inplace.mul_(self, other)

    def div_(self, other):
        return inplace.div_(self, other)

    # ``x += y`` and the others write into x, as in PyTorch: under no_grad() the update of a leaf that requires
    # grad (``p -= lr * p.grad``), anywhere on a tensor outside a graph (engine/inplace.py refuses the rest)
    def __iadd__(self, other):
        return inplace.add_(self, other)

    def __isub__(self, other):
        return inplace.sub_(self, other)

    def __imul__(self, other):
        return inplace.mul_(self, other)

    def __itruediv__(self, other):
        return inplace.div_(self, other)

    def relu_(self):
        """``max(self, 0)`` written into this tensor, recorded in the graph (see ``inplace.relu_``)."""
        return inplace.relu_(self)

    # ----- elementwise and reductions -----
    def exp(self):
        return _fn.exp(self)

    def log(self):
        return _fn.log(self)

    def sqrt(self):
        return _fn.sqrt(self)

    def abs(self):
        return _fn.abs_(self)

    def log10(self):
        return _fn.log10(self)

    def all(self, dim=None, keepdim=False):
        """Whether every element is nonzero (over ``dim``, or all): a bool tensor, not differentiable."""
        return _truth(self, "all", dim, keepdim)

    def any(self, dim=None, keepdim=False):
        """Whether some element is nonzero (over ``dim``, or all): a bool tensor, not differentiable."""
        return _truth(self, "any", dim, keepdim)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Whether ``|self - other| <= atol + rtol * |other|`` everywhere: a Python bool, as PyTorch's."""
        xp = backend.get_array_module(self._data)
        return bool(self._read(xp.allclose(self._data, data_of(other), rtol=rtol, atol=atol, equal_nan=equal_nan)))

    def sin(self):
        return _fn.sin(self)

    def cos(self):
        return _fn.cos(self)

    def tan(self):
        return _fn.tan(self)

    def clamp(self, min=None, max=None):  # noqa: A002 (PyTorch's argument names)
        return _fn.clamp(self, min, max)

    def pow(self, exponent):
        return _fn.pow(self, exponent)

    def mul(self, other):
        return _fn.mul(self, other)

    def matmul(self, other):
        return _fn.matmul(self, other)

    def t(self):
        """The transpose of a matrix (a tensor of 0 or 1 dimensions is returned as it is), as PyTorch's ``t``."""
        if self.ndim > 2:
            raise ValueError(f"t: expects a tensor of at most 2 dimensions, got {self.ndim}; use transpose(dim0, dim1)")
        return self if self.ndim < 2 else _fn.transpose(self, 0, 1)

    def tanh(self):
        return _fn.tanh(self)

    def sigmoid(self):
        return _fn.sigmoid(self)

    def relu(self):
        return _fn.relu(self)

    def sum(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Sum over ``dim`` (int or tuple; all when None). NumPy's ``axis``/``keepdims`` also work."""
        return _fn.sum(self, _torch_or_numpy(dim, axis), _torch_or_numpy(keepdim, keepdims))

    def mean(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        return _fn.mean(self, _torch_or_numpy(dim, axis), _torch_or_numpy(keepdim, keepdims))

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """The variance over ``dim``, dividing by ``n - 1`` by default, as PyTorch's (``operations/reduction.py``)."""
        return _fn.var(self, dim, unbiased, keepdim, correction=correction)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        """The standard deviation over ``dim``, with ``var``'s arguments."""
        return _fn.std(self, dim, unbiased, keepdim, correction=correction)

    def amax(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Maximum values over one dimension (or all)."""
        return _fn.amax(self, _torch_or_numpy(dim, axis), _torch_or_numpy(keepdim, keepdims))

    def amin(self, dim=None, keepdim=False, *, axis=None, keepdims=None):
        """Minimum values over one dimension (or all)."""
        return _fn.amin(self, _torch_or_numpy(dim, axis), _torch_or_numpy(keepdim, keepdims))

    def max(self, dim=None, keepdim=False):
        """Over all elements: the maximum (tied maxima share its gradient). Over ``dim``:
        ``(values, indices)`` as in PyTorch, each value's gradient going to the element at its index."""
        return self._extremum("max", dim, keepdim)

    def min(self, dim=None, keepdim=False):
        """Over all elements: the minimum. Over ``dim``: ``(values, indices)``, as ``max``."""
        return self._extremum("min", dim, keepdim)

    def _extremum(self, which, dim, keepdim):
        if dim is None:
            return _fn.amax(self) if which == "max" else _fn.amin(self)
        dim = _fn.wrap_dim(which, dim, self.ndim)
        indices = _arg_extremum(self, which, dim, keepdim=True)
        xp = backend.get_array_module(indices)
        where = [xp.arange(n).reshape([n if axis == k else 1 for k in range(self.ndim)])
                 for axis, n in enumerate(indices.shape)]  # an open grid (CuPy's indices has no sparse=)
        where[dim] = indices
        values = self[tuple(where)]  # picks (and routes gradients to) exactly the returned elements
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return MaxResult(values, Tensor._make(indices, False))

    def argmax(self, dim=None, keepdim=False):
        """Indices of the maxima, an int64 tensor (not differentiable): of the flattened tensor when ``dim`` is
        None, as in PyTorch."""
        return Tensor._make(_arg_extremum(self, "max", dim, keepdim), False)

    def argmin(self, dim=None, keepdim=False):
        """Indices of the minima, as ``argmax``."""
        return Tensor._make(_arg_extremum(self, "min", dim, keepdim), False)

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
    """``(values, indices)``, as returned by ``Tensor.max(dim)`` and ``Tensor.min(dim)``."""

    def __new__(cls, values, indices):
        return super().__new__(cls, (values, indices))

    values = property(lambda self: self[0])
    indices = property(lambda self: self[1])


# PyTorch's legacy type names, for Tensor.type()
_TYPE_NAMES = {"FloatTensor": numpy.float32, "DoubleTensor": numpy.float64, "HalfTensor": numpy.float16,
               "LongTensor": numpy.int64, "IntTensor": numpy.int32, "ShortTensor": numpy.int16,
               "CharTensor": numpy.int8, "ByteTensor": numpy.uint8, "BoolTensor": numpy.bool_}


def _truth(t, which, dim, keepdim):
    """``all`` or ``any`` (``which``) of ``t``'s elements over ``dim`` (None: all), as a bool tensor."""
    axis = None if dim is None else _fn.wrap_dim(which, dim, t.ndim)
    found = getattr(t._data.astype(bool, copy=False), which)(axis=axis, keepdims=keepdim)
    return _compared(found)


def _compared(result):
    """A comparison's result as a bool tensor (NumPy gives a scalar for 0-d operands)."""
    return Tensor._make(numpy.asarray(result) if isinstance(result, numpy.generic) else result, False)


def _arg_extremum(t, which, dim, keepdim):
    """The int64 array of ``argmax`` or ``argmin`` (``which``) over ``dim`` (None: the flattened array)."""
    if t._data.size == 0:
        raise RuntimeError(f"arg{which}(): expected a non-empty tensor, got shape {t.shape}")
    pick = t._data.argmax if which == "max" else t._data.argmin
    if dim is None:
        found = pick()
        if keepdim:
            found = found.reshape((1,) * t.ndim)
    else:
        found = pick(axis=_fn.wrap_dim(f"arg{which}", dim, t.ndim), keepdims=keepdim)
    return backend.get_array_module(t._data).asarray(found).astype("int64", copy=False)


def data_of(x):
    """The array inside a tensor; anything else passes through."""
    return x._data if isinstance(x, Tensor) else x


def _torch_or_numpy(torch_value, numpy_value):
    return torch_value if numpy_value is None else numpy_value


from .. import autograd  # noqa: E402
from .. import operations as _fn  # noqa: E402  (the functions need Tensor defined first)
from .. import random as _random  # noqa: E402  (it makes tensors)  (its walk in one frame makes tensors: it needs Tensor defined first)
from ..operations import arithmetic as _arith  # noqa: E402
