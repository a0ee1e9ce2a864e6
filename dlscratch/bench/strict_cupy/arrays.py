"""A strict stand-in for CuPy on the CPU: NumPy computes, CuPy's refusals are kept.

Code that runs on NumPy can still be wrong on a GPU: an array made with ``np.zeros`` where
``xp.zeros`` was meant, a host array added to a device array, ``np.asarray`` on a device array.
NumPy never notices, and CI has no GPU. This module plays CuPy on the CPU so that it does notice:

    DLSCRATCH_STRICT_GPU=1 python -m pytest tests      # the "cupy" runs of every test, on the stand-in
    DLSCRATCH_STRICT_GPU=1 DLSCRATCH_DEVICE=gpu jupyter nbconvert --execute ...

With ``DLSCRATCH_STRICT_GPU=1``, ``dlscratch.backend`` takes this module for ``cupy`` (and its
``cupyx`` namespace for ``cupyx``) and reports a usable GPU. Its ``ndarray`` wraps a NumPy array and,
like CuPy's:

- refuses to mix with a NumPy array in arithmetic, in ufuncs and in the module's functions
  (``TypeError: Unsupported type <class 'numpy.ndarray'>``); Python and NumPy scalars are fine;
- refuses implicit conversion: ``np.asarray(a)`` raises; ``a.get()`` or ``backend.to_cpu(a)`` copy;
- is not a ``numpy.ndarray`` (``isinstance`` says so), and ``asarray(host_array)`` copies;
- returns 0-d arrays, not NumPy scalars, from reductions and scalar indexing;
- lets NumPy's functions run on it (``np.exp(a)`` gives a stand-in array, as CuPy's dispatch does).

It runs CuPy's ``ElementwiseKernel`` by translating the kernel's C body (``kernels.py``), so
``backend.has_kernels()`` is True on it and the fast path runs the same kernels as on a GPU; it has no
``ReductionKernel`` or ``RawKernel`` (dlscratch uses none). Timings on it mean nothing. Where CuPy is lenient
and the stand-in cannot tell (indices and assigned values may be host arrays), it is lenient too.
"""

import contextlib
import functools
import sys
import time
import types
import weakref

import numpy

from .. import ledger
from . import capture
from . import signatures as cupy_api

_NAME = "strict CuPy stand-in (NumPy on the CPU)"


class _Owners:
    """id(NumPy array) -> the stand-in array wrapping it, held weakly, with no callback when one dies.

    A ``WeakValueDictionary`` removes an entry from a Python callback run where the wrapper dies: anywhere,
    often. A Ctrl-C arriving while such a callback runs raises ``KeyboardInterrupt`` inside it, and Python
    drops an exception raised in a weakref callback (it prints "Exception ignored"): the interrupt was lost.
    Here the dead entries are swept out when the table has doubled since the last sweep, in the caller's
    frame, where a signal's exception propagates as anywhere else."""

    def __init__(self):
        self._refs, self._sweep_at = {}, 1024

    def get(self, a):
        """The live stand-in array wrapping NumPy array ``a``, or None."""
        ref = self._refs.get(id(a))
        owner = None if ref is None else ref()
        return owner if owner is not None and owner._a is a else None

    def add(self, a, owner):
        self._refs[id(a)] = weakref.ref(owner)
        if len(self._refs) >= self._sweep_at:
            self._refs = {key: ref for key, ref in self._refs.items() if ref() is not None}
            self._sweep_at = max(1024, 2 * len(self._refs))


_owners = _Owners()


class MixedArraysError(TypeError):
    """A NumPy array met a (stand-in) GPU array where CuPy would refuse it."""


def _refuse(value, where):
    raise MixedArraysError(
        f"Unsupported type {type(value)} in {where}: a NumPy array cannot mix with a GPU array (the strict "
        "CuPy stand-in refuses it, as CuPy does); create it with the array module of the data "
        "(backend.get_array_module(x)) or move it with backend.to_gpu"
    )


def _wrap(a):
    """A NumPy result as a stand-in array (the same object for the same NumPy array)."""
    if isinstance(a, numpy.generic):
        a = numpy.asarray(a)
    known = _owners.get(a)
    if known is not None:
        return known
    wrapped = ndarray.__new__(ndarray)
    wrapped._a = a
    _owners.add(a, wrapped)
    return wrapped


def _wrap_all(value, inputs=None):
    """Wrap NumPy arrays and scalars in a result (also inside tuples and lists); leave the rest.

    With ``inputs`` (the call's unwrapped arguments), a new array that is not C-contiguous is made so, as
    CuPy makes every new array (``cupy_api.lays_out_as_numpy`` says when not); views of the inputs stay views.
    """
    if isinstance(value, numpy.ndarray) and inputs is not None and not value.flags.c_contiguous:
        if not any(isinstance(a, numpy.ndarray) and numpy.may_share_memory(value, a) for a in _arrays_in(inputs)):
            value = numpy.ascontiguousarray(value)
    if isinstance(value, (numpy.ndarray, numpy.generic)):
        return _wrap(value)
    if type(value) in (tuple, list):
        return type(value)(_wrap_all(v, inputs) for v in value)
    if isinstance(value, numpy.random.Generator):
        return _Namespace(value, "cupy.random.Generator")
    return value


def _arrays_in(values):
    """The NumPy arrays among ``values``, also inside tuples, lists and dicts."""
    for value in values:
        if isinstance(value, numpy.ndarray):
            yield value
        elif type(value) in (tuple, list):
            yield from _arrays_in(value)
        elif type(value) is dict:
            yield from _arrays_in(value.values())


def _strict(value, where):
    """Unwrap stand-in arrays for NumPy; refuse NumPy arrays (searching tuples, lists and dicts). An object with
    ``__cupy_get_ndarray__`` gives its array, as CuPy's kernels take it."""
    kind = type(value)
    if kind is ndarray:
        return value._a
    if isinstance(value, numpy.ndarray):
        _refuse(value, where)
    if kind in (tuple, list):
        return kind(_strict(v, where) for v in value)
    if kind is dict:
        return {k: _strict(v, where) for k, v in value.items()}
    held = getattr(value, "__cupy_get_ndarray__", None)
    if held is not None:
        return _strict(held(), where)
    return value


def _lenient(value):
    """Unwrap stand-in arrays; let NumPy arrays through (indices, assigned values, ``asarray``)."""
    kind = type(value)
    if kind is ndarray:
        return value._a
    if kind in (tuple, list):
        return kind(_lenient(v) for v in value)
    return value


_HOST_READS = {"item", "tolist", "tobytes", "asnumpy"}  # CuPy's methods that copy to the host and wait
_HOST_RANDOM = {"seed", "default_rng", "get_random_state", "set_random_state", "reset_states"}  # no device work


def _captured(operation, inputs, wrap=None):
    """``wrap(operation())`` (``wrap``: None keeps the result as it is), recorded as a node of the stream capture in
    progress (``capture.py``); ``inputs``: the unwrapped arguments that the operation reads or writes."""
    inputs = list(_arrays_in([inputs]))
    result = capture.run(operation, inputs, _current_stream())
    wrapped = result if wrap is None else wrap(result)
    capture.record(operation, list(_arrays_in([_lenient(wrapped)])), inputs)
    return wrapped


def _function(numpy_function, where, namespace, name, owner=None):
    """``numpy_function`` called as CuPy's ``namespace.name`` would be: arguments checked against CuPy's signature,
    NumPy arrays refused, results wrapped (and laid out as CuPy lays them out). ``owner``: the NumPy array
    whose method it is (a view of it stays a view)."""

    def strict_function(*args, **kwargs):
        spec = cupy_api.check_call(namespace, name, args, kwargs)
        args, kwargs = _strict(args, where), _strict(kwargs, where)
        layout = None if cupy_api.lays_out_as_numpy(spec) else (owner, args, kwargs)
        if capture.active is None:
            wrapped = _wrap_all(numpy_function(*args, **kwargs), layout)
        elif name in _HOST_READS:
            capture.refuse(capture.CAPTURE_UNSUPPORTED, f"a read on the host ({name})")
        elif namespace == "cupy.random":
            if name not in _HOST_RANDOM:
                capture.refuse_library("cuRAND")  # the legacy functions draw with cuRAND's host API
            wrapped = _wrap_all(numpy_function(*args, **kwargs), layout)  # the host's work, not captured
        elif name in ledger._GEMMS and _calls_cublas(args if owner is None else (owner, *args)):
            capture.refuse_library("cuBLAS")
        else:
            if namespace == "cupy.random.Generator":
                capture.draws_from(numpy_function.__self__)
            wrapped = _captured(lambda: numpy_function(*args, **kwargs), (owner, args, kwargs),
                                lambda result: _wrap_all(result, layout))
        if ledger.open_ledgers:
            _count_call(name, owner, args, kwargs, wrapped)
        return wrapped

    strict_function.__name__ = getattr(numpy_function, "__name__", where)
    strict_function.__doc__ = f"NumPy's {where}, refusing NumPy arrays, returning stand-in arrays."
    return strict_function


# --- the launch ledger's hooks: each asks ledger.open_ledgers first; bench/ledger.py holds the rules ----------------


def _new_arrays(result, inputs):
    """The NumPy arrays in a (wrapped) result that are new: not views of ``inputs``, None for a None result."""
    if result is None:
        return None
    arrays = list(_arrays_in([_lenient(result)]))
    given = list(_arrays_in(inputs))
    return [a for a in arrays if not any(numpy.may_share_memory(a, b) for b in given)]


def _count_call(name, owner, args, kwargs, result):
    if owner is None and args and isinstance(args[0], numpy.ndarray):  # cupy.sum(a, 0) is counted as a.sum(0)
        owner, args = args[0], args[1:]
    inputs = ([owner] if owner is not None else []) + [a for a in args if isinstance(a, numpy.ndarray)]
    ledger.record_all(ledger.call(name, inputs, args, kwargs, _new_arrays(result, [owner, args, kwargs])))


def _count_indexing(key, operation, new_result=None):
    indices = ledger.advanced_indices(key)
    if indices is not None:
        events = ledger.index_kernels(indices, operation)
        ledger.record_all(events + ([("allocation", operation, 1)] if new_result is not None else []))


def _count_assignment(target, key, value):
    on_host = isinstance(value, numpy.ndarray)
    if ledger.advanced_indices(key) is not None:
        upload = [("copy_to_device", "setitem", 1)] if on_host and value.ndim else []
        ledger.record_all(upload)
        _count_indexing(key, "scatter_update")
    else:
        ledger.record_all(ledger.assignment(target[_lenient(key)], _lenient(value), on_host))


def _count_to_host(what):
    if capture.active is not None:  # a read on the host waits for the device: CUDA refuses it while capturing
        capture.refuse(capture.CAPTURE_UNSUPPORTED, f"a read on the host ({what})")
    if ledger.open_ledgers:  # cupy/_core/core.pyx: __float__, __int__, __repr__... are self.get(); get synchronizes
        ledger.record_all([("copy_to_host", what, 1), ("wait", what, 1)])


def _count_wait(what):
    if capture.active is not None:
        capture.refuse(capture.CAPTURE_UNSUPPORTED, f"a wait for the device ({what})")
    if ledger.open_ledgers:
        ledger.record("wait", what)


def _count_upload(what):
    if capture.active is not None:  # a copy from pageable host memory is synchronous
        capture.refuse(capture.CAPTURE_UNSUPPORTED, f"a copy from the host ({what})")
    if ledger.open_ledgers:  # core.pyx array(): copy_from_host_async into a new array
        ledger.record_all([("copy_to_device", what, 1), ("allocation", what, 1)])


class _Ufunc:
    """A NumPy ufunc that refuses NumPy arrays and returns stand-in arrays (``out=`` is returned as given)."""

    def __init__(self, ufunc):
        self._ufunc = ufunc
        self.__name__ = ufunc.__name__

    def __call__(self, *args, **kwargs):
        return _apply_ufunc(self._ufunc, "__call__", args, kwargs)

    def __getattr__(self, method):
        cupy_api.signature("cupy.ufunc", method)  # AttributeError where CuPy's ufunc has no such attribute
        attribute = getattr(self._ufunc, method)
        if method not in ("reduce", "accumulate", "reduceat", "outer", "at"):
            return attribute
        return lambda *args, **kwargs: _apply_ufunc(self._ufunc, method, args, kwargs)


def _apply_ufunc(ufunc, method, args, kwargs):
    if method == "__call__":
        where = ufunc.__name__
        cupy_api.check_call("cupy", where, args, kwargs, ufunc=True)
    else:
        where = f"{ufunc.__name__}.{method}"
        cupy_api.check_call("cupy.ufunc", method, args, kwargs)
    out = kwargs.get("out")
    args, kwargs = _strict(args, where), _strict(kwargs, where)
    if ufunc is numpy.matmul and capture.active is not None and _calls_cublas(args):
        capture.refuse_library("cuBLAS")
    if ufunc is numpy.matmul and method == "__call__" and len(args) == 2:
        args = _laid_out_for_cublas(*args)
    if ufunc is numpy.matmul and method == "__call__" and _half_operands(args, kwargs):
        compute = functools.partial(_half_matmul, *args, **kwargs)
    else:
        compute = functools.partial(getattr(ufunc, method), *args, **kwargs)
    if out is not None:
        compute() if capture.active is None else _captured(compute, (args, kwargs))
        result = out[0] if type(out) is tuple and len(out) == 1 else out
    elif capture.active is None:
        result = _wrap_all(compute(), (args, kwargs))
    else:  # wrapped inside: a 0-d result is a NumPy scalar, which only its wrapped array lets a replay write
        result = _captured(compute, (args, kwargs), lambda value: _wrap_all(value, (args, kwargs)))
    if ledger.open_ledgers:
        outputs = list(_arrays_in([_lenient(result)]))
        ledger.record_all(ledger.ufunc(ufunc.__name__, method, args, out is not None, outputs))
    return result


def _calls_cublas(args):
    """Whether CuPy computes this product (NumPy arrays ``args``) with cuBLAS: not where there is nothing to sum or
    nowhere to put it (it fills zeros), nor for integers (its own kernel), nor for a 2-D ``(1, k) @ (k, 1)`` (its
    ``dot`` sums it with a reduction kernel, ``cupy/_core/_routines_linalg.pyx``)."""
    if len(args) < 2:
        return True  # not a product of two arrays: CuPy's check of its arguments comes after its refusal
    a, b = (numpy.asarray(x) for x in args[:2])
    if a.size == 0 or b.size == 0 or a.ndim == 0 or b.ndim == 0 or numpy.result_type(a, b).kind not in "fc":
        return False  # nothing to compute, or integers: CuPy's own integer GEMM kernel
    return max(a.ndim, b.ndim) > 2 or a.size // a.shape[-1] != 1 or b.size // b.shape[0] != 1


def _laid_out_for_cublas(a, b):
    """The operands of a product as CuPy hands them to cuBLAS (``_routines_linalg.pyx``): both operands of a
    batched product C-contiguous, in the dtype of the product; a 2-D operand of the other dtype cast in its own
    memory order, and one neither C- nor F-contiguous copied, the left one as its transpose (``dot`` copies
    ``a.T``: ``a`` in F order). NumPy would cast into a buffer of its own, and sum a strided operand in its own
    loop or through BLAS with the other transpose: other bits than the GPU's."""
    if not (isinstance(a, numpy.ndarray) and isinstance(b, numpy.ndarray)) or min(a.ndim, b.ndim) < 1:
        return a, b
    dtype = numpy.promote_types(a.dtype, b.dtype) if a.dtype.kind in "fc" and b.dtype.kind in "fc" else None
    if max(a.ndim, b.ndim) > 2:
        return numpy.ascontiguousarray(a, dtype), numpy.ascontiguousarray(b, dtype)
    if dtype is not None:
        a, b = (x.astype(dtype, copy=False) if x.ndim == 2 else x for x in (a, b))
    a, b = (x if x.ndim < 2 or x.flags.c_contiguous or x.flags.f_contiguous else copy(x)
            for x, copy in ((a, numpy.asfortranarray), (b, numpy.ascontiguousarray)))
    return a, b


def _half_operands(args, kwargs):
    return (len(args) == 2 and "dtype" not in kwargs
            and all(isinstance(a, numpy.ndarray) and a.dtype == numpy.float16 for a in args))


def _half_matmul(a, b, out=None, **kwargs):
    """A float16 product as a GPU's GEMM computes it: the products summed in float32, rounded to float16 once
    (``operations/products.py``). NumPy's own float16 loop is hundreds of times slower: a mixed-precision lesson
    would spend most of its time on the stand-in in it."""
    product = numpy.matmul(a, b, dtype=numpy.float32, **kwargs)
    with numpy.errstate(over="ignore"):  # past float16's range is inf, as on a GPU
        if out is None:
            return product.astype(numpy.float16)
        target = out[0] if isinstance(out, tuple) else out
        target[...] = product
        return target


def _binary(ufunc, a, b):
    for operand in (a, b):
        if isinstance(operand, (ndarray, numpy.ndarray, numpy.generic, int, float, complex, bool)):
            continue
        if getattr(operand, "__array_ufunc__", None) is None or not hasattr(operand, "__cupy_get_ndarray__"):
            return NotImplemented  # CuPy leaves it to the other operand's reflected method (a Tensor's, say)
    return _apply_ufunc(ufunc, "__call__", (a, b), {})


def _operators():
    """Python's arithmetic, comparison and in-place operators for ``ndarray``, each through a ufunc."""
    namespace = {}
    binary = {"add": numpy.add, "sub": numpy.subtract, "mul": numpy.multiply, "truediv": numpy.true_divide,
              "floordiv": numpy.floor_divide, "mod": numpy.remainder, "pow": numpy.power,
              "matmul": numpy.matmul, "and": numpy.bitwise_and, "or": numpy.bitwise_or,
              "xor": numpy.bitwise_xor, "lshift": numpy.left_shift, "rshift": numpy.right_shift}
    for name, ufunc in binary.items():
        namespace[f"__{name}__"] = lambda self, other, u=ufunc: _binary(u, self, other)
        namespace[f"__r{name}__"] = lambda self, other, u=ufunc: _binary(u, other, self)
        namespace[f"__i{name}__"] = lambda self, other, u=ufunc: _apply_ufunc(u, "__call__", (self, other),
                                                                            {"out": (self,)})
    comparisons = {"lt": numpy.less, "le": numpy.less_equal, "eq": numpy.equal, "ne": numpy.not_equal,
                   "gt": numpy.greater, "ge": numpy.greater_equal}
    for name, ufunc in comparisons.items():
        namespace[f"__{name}__"] = lambda self, other, u=ufunc: _binary(u, self, other)
    unary = {"neg": numpy.negative, "pos": numpy.positive, "abs": numpy.absolute, "invert": numpy.invert}
    for name, ufunc in unary.items():
        namespace[f"__{name}__"] = lambda self, u=ufunc: _apply_ufunc(u, "__call__", (self,), {})
    return namespace


class ndarray:  # noqa: N801 (CuPy's name)
    """A stand-in GPU array: a NumPy array inside, CuPy's rules outside."""

    __slots__ = ("_a", "__weakref__")
    __hash__ = None

    def __init__(self, shape, dtype=float, order="C"):
        self._a = numpy.empty(shape, dtype, order=order)
        _owners.add(self._a, self)
        if ledger.open_ledgers:
            ledger.record("allocation", "ndarray")

    def get(self, stream=None, order="C", out=None):
        """A NumPy copy on the host (CuPy's ``ndarray.get``)."""
        _count_to_host("get")
        if out is not None:
            numpy.copyto(out, self._a)
            return out
        return numpy.array(self._a, order=order)

    def __array__(self, dtype=None, copy=None):
        raise MixedArraysError(
            "Implicit conversion to a NumPy array is not allowed (the strict CuPy stand-in refuses it, as "
            "CuPy does). Please use `.get()` or backend.to_cpu to construct a NumPy array explicitly."
        )

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if not cupy_api.has("cupy", ufunc.__name__):
            return NotImplemented  # as CuPy answers a NumPy ufunc it has not got
        return _apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        # CuPy answers NumPy's functions with its own function of the same name, where it has one
        namespace = {"numpy": "cupy", "numpy.linalg": "cupy.linalg", "numpy.fft": "cupy.fft"}.get(
            func.__module__.replace("._core", "").replace(".core", ""), "cupy")
        if not cupy_api.has(namespace, func.__name__):
            return NotImplemented  # NumPy then raises its TypeError: no implementation found
        return _function(func, f"numpy.{func.__name__}", namespace, func.__name__)(*args, **kwargs)

    def __getattr__(self, name):
        if name == "_a" or name.startswith("__"):  # no __array_interface__ or buffer: no implicit host copy
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        cupy_api.signature("cupy.ndarray", name)  # AttributeError where CuPy's ndarray has no such attribute
        value = getattr(self._a, name)
        if callable(value):
            return _function(value, f"ndarray.{name}", "cupy.ndarray", name, owner=self._a)
        return _wrap_all(value)

    def fill(self, value):
        """CuPy's ``fill``; a host value equal to zero, on a C-contiguous array, is a memset (``_zero_as_memset``)."""
        _function(self._a.fill, "ndarray.fill", "cupy.ndarray", "fill", owner=self._a)(value)
        if type(value) is not ndarray and self._a.flags.c_contiguous and self._a.dtype.kind in "fc" and value == 0:
            target = self._a
            if capture.active is not None:
                _captured(lambda: target.fill(0), (target,))
            else:
                target[...] = 0

    @property
    def data(self):
        """CuPy's ``MemoryPointer`` to the first element: its ``ptr`` is the address the stand-in's cuBLAS reads."""
        from .cublas import pointer_of
        return types.SimpleNamespace(ptr=pointer_of(self._a))

    @property
    def base(self):
        """The stand-in array this one views (None for an array that owns its memory)."""
        base = self._a.base
        return None if base is None else _wrap(base) if isinstance(base, numpy.ndarray) else None

    def __getitem__(self, key):
        if capture.active is not None:
            key = _lenient(key)
            return _captured(lambda: self._a[key], (self._a, key), _wrap)
        result = _wrap(self._a[_lenient(key)])
        if ledger.open_ledgers:
            _count_indexing(key, "take", result)
        return result

    def __setitem__(self, key, value):
        if ledger.open_ledgers:
            _count_assignment(self._a, key, value)
        key, value, target = _lenient(key), _lenient(value), self._a
        if capture.active is not None:
            _captured(lambda: target.__setitem__(key, value), (target, key, value))
            return
        target[key] = value

    def __divmod__(self, other):
        return _apply_ufunc(numpy.divmod, "__call__", (self, other), {})

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self._a)))

    def __bool__(self):
        _count_to_host("bool")
        return bool(self._a)

    def __float__(self):
        _count_to_host("float")
        return float(self._a)

    def __int__(self):
        _count_to_host("int")
        return int(self._a)

    def __index__(self):
        _count_to_host("index")
        return self._a.__index__()

    def __complex__(self):
        _count_to_host("complex")
        return complex(self._a)

    def __repr__(self):
        _count_to_host("repr")
        return repr(self._a)

    def __str__(self):
        _count_to_host("str")
        return str(self._a)

    def __format__(self, spec):
        _count_to_host("format")
        return format(self._a, spec)

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        return _wrap, (self._a,)


for _name, _operator in _operators().items():
    setattr(ndarray, _name, _operator)


def asarray(a, dtype=None, order=None):
    """An array on the stand-in device: a host array is copied (as CuPy copies to the GPU)."""
    if type(a) is ndarray:
        return a if dtype is None or a.dtype == numpy.dtype(dtype) else a.astype(dtype)
    _count_upload("asarray")
    return _wrap(_zero_as_memset(numpy.array(_lenient(a), dtype=dtype, order=order or "K")))


def _zero_as_memset(a):
    """``a`` as CuPy writes it: a 0-d value, and ``fill``'s value, that equals zero is written with a memset,
    all bits clear, so -0.0 arrives as +0.0 (CuPy 14 on an H200; a 1-d array's bytes are copied)."""
    if a.ndim == 0 and a.dtype.kind in "fc" and a == 0:
        a[...] = 0
    return a


def array(a, dtype=None, copy=True, order="K", ndmin=0):
    """A new stand-in array (a copy unless ``copy=False`` allows otherwise)."""
    if type(a) is ndarray and not copy:
        return asarray(a, dtype)
    if type(a) is ndarray and ledger.open_ledgers:  # core.pyx array(): a device array is astype'd (a copy kernel)
        ledger.record_all([("kernel", "copy", 1), ("allocation", "array", 1)])
    elif type(a) is not ndarray:
        _count_upload("array")
    source = _lenient(a)
    compute = functools.partial(numpy.array, source, dtype=dtype, order=order, ndmin=ndmin)
    if capture.active is not None:
        return _captured(compute, (source,), _wrap)
    return _wrap(_zero_as_memset(compute()))


asanyarray = asarray


def ascontiguousarray(a, dtype=None):
    source = _strict(a, "ascontiguousarray")
    compute = functools.partial(numpy.ascontiguousarray, source, dtype=dtype)
    result = _wrap(compute()) if capture.active is None else _captured(compute, (source,), _wrap)
    if ledger.open_ledgers and result is not a:  # core.pyx ascontiguousarray: elementwise_copy into a new array
        ledger.record_all([("kernel", "copy", 1), ("allocation", "ascontiguousarray", 1)])
    return result


def asnumpy(a, stream=None, order="C", out=None):
    """A NumPy copy of ``a`` (host arrays are returned as they are, as CuPy does)."""
    return a.get(order=order, out=out) if type(a) is ndarray else numpy.asarray(a, order=order)


def get_array_module(*args):
    """This module when any argument is a stand-in array, else NumPy."""
    return sys.modules[__name__] if any(type(a) is ndarray for a in args) else numpy


def fuse(*args, **kwargs):
    """CuPy's kernel fusion; on the stand-in the function runs as it is."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda function: function


class _NoKernel:
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"the {_NAME} runs ElementwiseKernel (translating its C body, see "
                                  f"kernels.py) but not {type(self).__name__}: dlscratch uses none")


class ReductionKernel(_NoKernel):
    pass


class RawKernel(_NoKernel):
    pass


class RawModule(_NoKernel):
    pass




class _Namespace:
    """A NumPy namespace or object that offers what CuPy's ``namespace`` offers (``"cupy.random"``...): its
    functions take CuPy's arguments, refuse NumPy arrays and return stand-in arrays."""

    def __init__(self, target, namespace):
        self._target, self._namespace = target, namespace

    def __getattr__(self, name):
        cupy_api.signature(self._namespace, name)  # AttributeError where CuPy has no such name
        return _treat(getattr(self._target, name), self._namespace, name)


def _treat(value, namespace, name):
    if isinstance(value, type) or isinstance(value, (numpy.dtype, int, float, str, tuple)) or value is None:
        return value  # dtypes, classes (errstate, finfo), constants
    if isinstance(value, numpy.ufunc):
        return _Ufunc(value)
    if isinstance(value, types.ModuleType):
        return _Namespace(value, f"{namespace}.{name}")
    if callable(value):
        return _function(value, f"{namespace}.{name}", namespace, name)
    return value


def __getattr__(name):
    cupy_api.signature("cupy", name)  # AttributeError where CuPy has no such name
    try:
        return _treat(getattr(numpy, name), "cupy", name)
    except AttributeError:
        raise AttributeError(f"the {_NAME} has no {name!r} (CuPy has it, NumPy has not)") from None


random = _Namespace(numpy.random, "cupy.random")
linalg = _Namespace(numpy.linalg, "cupy.linalg")
fft = _Namespace(numpy.fft, "cupy.fft")
lib = types.SimpleNamespace(stride_tricks=_Namespace(numpy.lib.stride_tricks, "cupy.lib.stride_tricks"))
__version__ = f"stand-in (numpy {numpy.__version__})"


# --- cuda: what dlscratch and the lessons call, doing nothing or timing on the host ---------------------------


class _Stream:
    """CuPy's ``cupy.cuda.Stream`` (14's arguments). Work runs when it is issued here, so a stream is done at once;
    what it tracks is which stream is current and which one captures."""

    null = None  # CuPy's object for the legacy default stream, set below

    def __init__(self, null=False, non_blocking=False, ptds=False, priority=None):
        self._legacy, self.blocking = null, not non_blocking
        self.ptr = 0 if null else id(self)  # CUDA's handle of the stream; the legacy default stream's is 0

    @property
    def done(self):
        """``cudaStreamQuery``: refused on the capturing stream, as CUDA refuses it."""
        if capture.active is not None and capture.active.stream is self:
            capture.refuse(capture.CAPTURE_UNSUPPORTED, "a query of the capturing stream (stream.done)")
        return True

    def synchronize(self):
        _count_wait("stream.synchronize")

    def record(self, event=None):
        event = event or _Event()
        event.record(self)
        return event

    def wait_event(self, event):
        pass

    def use(self):
        _streams[-1] = self
        return self

    def __enter__(self):
        _streams.append(self)
        return self

    def __exit__(self, *exc):
        _streams.pop()
        return False

    def begin_capture(self, mode=None):
        """Record the work issued on this stream as a graph instead of running it (``capture.py``)."""
        capture.begin(self, self._legacy)

    def end_capture(self):
        """Stop recording; the captured ``Graph``."""
        return capture.end(self)

    def is_capturing(self):
        return capture.active is not None and capture.active.stream is self


class _Event:
    """CuPy's ``cupy.cuda.Event``: the host's clock at ``record``, for ``get_elapsed_time``."""

    def __init__(self, block=False, disable_timing=False, interprocess=False):
        self.time, self._capture = None, None

    @property
    def done(self):
        """``cudaEventQuery``: refused for an event recorded in the capture in progress, as CUDA refuses it."""
        if capture.active is not None and self._capture is capture.active:
            capture.refuse(capture.CAPTURE_UNSUPPORTED, "a query of an event recorded in the capture (event.done)")
        return True

    def record(self, stream=None):
        self.time, self._capture = time.perf_counter(), capture.active

    def synchronize(self):
        _count_wait("event.synchronize")


class _Device:
    compute_capability = "90"  # the course's GPUs (H100, H200); cuda/blas.py picks cuBLAS's algorithm by it

    def __init__(self, device=0):
        self.id = int(device)

    def synchronize(self):
        _count_wait("device.synchronize")

    def use(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _MemoryPool:
    """CuPy's memory pool. The stand-in's arrays are NumPy's: none comes from a pool, and a capture keeps the arrays
    it made alive itself (``capture.py``), as a graph's private pool does on a GPU."""

    def malloc(self, size):
        raise NotImplementedError("the stand-in's arrays are NumPy's: they do not come from a memory pool")

    def used_bytes(self):
        return 0

    def total_bytes(self):
        return 0

    def free_all_blocks(self, stream=None):
        pass

    def set_limit(self, size=None, fraction=None):
        pass


_runtime = types.SimpleNamespace(
    getDeviceCount=lambda: 1,
    getDeviceProperties=lambda device: {"name": _NAME.encode(), "totalGlobalMem": 0, "multiProcessorCount": 0},
    runtimeGetVersion=lambda: 0,
    deviceSynchronize=lambda: _count_wait("deviceSynchronize"),
)
_null_stream = _Stream.null = _Stream(null=True)
_streams = [_null_stream]  # the current stream last: ``with stream:`` pushes one, ``use()`` replaces the last


def _current_stream():
    return _streams[-1]

_memory_pool = _MemoryPool()
cuda = types.SimpleNamespace(
    runtime=_runtime,
    Stream=_Stream,
    Event=_Event,
    Device=_Device,
    get_current_stream=lambda device=None: _current_stream(),
    get_elapsed_time=lambda start, end: (end.time - start.time) * 1000.0,
    is_available=lambda: True,
    MemoryPool=_MemoryPool,
    using_allocator=lambda allocator=None: contextlib.nullcontext(),  # no array comes from an allocator here
    graph=types.SimpleNamespace(Graph=capture.Graph),
    device=types.SimpleNamespace(get_cublas_handle=lambda: 1),  # one handle: the stand-in's cuBLAS (cublas.py)
)
cuda.runtime.CUDARuntimeError = capture.CUDARuntimeError
get_default_memory_pool = get_default_pinned_memory_pool = lambda: _memory_pool


def _scatter_add(a, slices, value):
    """cupyx.scatter_add: ``a[slices] += value`` where repeated indices all add up."""
    if type(a) is not ndarray:
        _refuse(a, "cupyx.scatter_add")
    if ledger.open_ledgers:  # _routines_indexing.pyx _scatter_op(..., "add"): a basic index adds with one kernel
        _count_indexing(slices, "scatter_add")
        if ledger.advanced_indices(slices) is None:
            ledger.record("kernel", "add")
    compute = functools.partial(numpy.add.at, a._a, _lenient(slices), _strict(value, "cupyx.scatter_add"))
    if capture.active is not None:
        _captured(compute, compute.args)
        return
    compute()


class _csr_matrix:  # noqa: N801 (cupyx.scipy.sparse's name)
    """cupyx.scipy.sparse.csr_matrix from a dense stand-in array, or from ``(data, indices, indptr)`` stand-in
    arrays with ``shape`` (SciPy's inside); ``matrix @ dense`` gives a stand-in array, and a NumPy operand is
    refused, as on a GPU."""

    def __init__(self, arg, shape=None):
        import scipy.sparse

        parts = arg if isinstance(arg, tuple) else (arg,)
        for a in parts:
            if type(a) is not ndarray:
                raise TypeError(f"cupyx.scipy.sparse.csr_matrix: expected cupy arrays (the strict stand-in's), got "
                                f"{type(a).__name__}")
        if isinstance(arg, tuple):
            self._m = scipy.sparse.csr_matrix(tuple(a._a for a in arg), shape=shape)
        else:
            self._m = scipy.sparse.csr_matrix(arg._a)
        self.shape, self.dtype, self.nnz = self._m.shape, self._m.dtype, self._m.nnz
        self.data, self.indices, self.indptr = (_wrap(a) for a in (self._m.data, self._m.indices, self._m.indptr))

    def __matmul__(self, other):
        return _wrap(numpy.asarray(self._m @ _strict(other, "cupyx.scipy.sparse.csr_matrix.__matmul__")))

    def dot(self, other):
        return self @ other


cupyx = types.SimpleNamespace(scatter_add=_scatter_add, __name__="cupyx (strict stand-in)",
                              scipy=types.SimpleNamespace(sparse=types.SimpleNamespace(csr_matrix=_csr_matrix)))
