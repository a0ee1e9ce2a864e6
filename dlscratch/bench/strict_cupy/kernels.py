"""CuPy's ``ElementwiseKernel`` on the CPU: the strict stand-in translates a kernel's CUDA C body and runs it.

On a GPU, ``cupy.ElementwiseKernel(in_params, out_params, body, name)`` compiles ``body`` once and runs it
in one thread per element: thread ``i`` reads element ``i`` of each plain parameter (broadcast together),
may index ``raw`` parameters anywhere, and writes element ``i`` of each output. CI has no GPU, so without
this the kernels in ``dlscratch/fast/`` would never run there. Here the body is read
(``kernel_parser.py``: the subset of C it accepts, and anything else refused by name) and run for
every thread at once (``kernel_threads.py``: C's arithmetic, float32 rounding included), so a
learner without a GPU can write a kernel and test it:

    from dlscratch import backend
    backend.use_strict_stand_in(); backend.use("gpu")
    square = backend.cupy.ElementwiseKernel("T x", "T y", "y = x * x", "square")
    square(backend.cupy.arange(4, dtype="float32"))      # array([0., 1., 4., 9.], dtype=float32)

Index arithmetic is exact; float results match the GPU's within a few units in the last place (NumPy's and
CUDA's ``tanh`` differ there): ``FLOAT_RTOL`` and ``FLOAT_ATOL`` state the tolerance the tests use. A thread
that reads or writes outside a raw array, divides an integer by zero or races another thread raises
``KernelFault`` naming the kernel, the thread and the place: the GPU would not say. What NumPy's type rules
would run but CUDA's compiler rejects as ambiguous (a ``?:`` with float16 and float branches, ``max`` of
``ptrdiff_t`` and ``int``) raises ``AmbiguousForCuda`` at the first launch, when the types are known.

The stand-in computes on the CPU with NumPy passes, tens of nanoseconds per thread and operation. A launch of
more than ``FULL_RUN_THREADS`` threads whose kernel has a NumPy *twin* (``backend.elementwise_kernel(...,
twin=)``: the same outputs from the same arguments, e.g. im2col by slices) runs its C body on a sample of
threads (both ends and an even spread) and the twin for all of them, and raises ``KernelFault`` where the two
disagree. A training loop repeats the same launches thousands of times, so such a launch is checked the first
``CHECKED_LAUNCHES`` times the kernel runs with the same shapes, dtypes and strides, and every
``RECHECK_EVERY``-th time after; the others run the twin alone. Smaller launches run their C body whole, always.
Where NVRTC is installed, every launch's source is also compiled first (``nvrtc.py``).
"""

import numpy

from .. import ledger
from . import arrays, capture, nvrtc
from .kernel_parser import Parser, UnsupportedKernelCode, as_cupy_writes
from .kernel_threads import AmbiguousForCuda, KernelFault, Raw, Run, Variable, convert

__all__ = ["AmbiguousForCuda", "ElementwiseKernel", "KernelFault", "UnsupportedKernelCode", "FULL_RUN_THREADS"]

# --- the kernel -------------------------------------------------------------------------------------------------

_DTYPE_NAMES = {"bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                "float32", "float64", "complex64", "complex128"}
_BLOCK = 1 << 18  # threads run together; bounds the temporaries' memory
#: Launches of more threads than this run their C body on a sample of threads when the kernel has a NumPy twin:
#: the first and last 256 and 4,096 spread evenly: interpreting every thread of a large launch would make the
#: lessons far slower on the stand-in, and a sample still catches C that disagrees with its twin.
FULL_RUN_THREADS = 1 << 15
_SAMPLE_ENDS, _SAMPLE_SPREAD = 256, 1 << 12
#: Which large launches check their C body on a sample: the first few of each kind (shapes, dtypes, strides) and
#: then every so many. Checking every launch would spend most of a CNN lesson's time interpreting col2im's loops;
#: one launch in every ``RECHECK_EVERY`` keeps a long run spot-checked.
CHECKED_LAUNCHES, RECHECK_EVERY = 3, 25
#: How closely a float output computed in C must match the reference (NumPy's and CUDA's math differ in the last
#: places, and sums in another order round differently).
FLOAT_RTOL, FLOAT_ATOL = 1e-5, 1e-6


class _Parameter:
    __slots__ = ("name", "type", "raw", "output")

    def __init__(self, text, output):
        words = text.split()
        self.raw = words[0] == "raw"
        if self.raw:
            words = words[1:]
        if len(words) != 2:
            raise ValueError(f"ElementwiseKernel: cannot read the parameter {text.strip()!r} "
                             "(write 'TYPE name' or 'raw TYPE name')")
        self.type, self.name = words
        self.output = output
        if self.name in ("i", "n") or self.name.startswith("_"):
            raise ValueError(f"ElementwiseKernel: the parameter name {self.name!r} is reserved by CuPy")

    @property
    def placeholder(self):
        return self.type not in _DTYPE_NAMES


def _parameters(text, output):
    return [_Parameter(part, output) for part in text.split(",") if part.strip()]


class ElementwiseKernel:
    """CuPy's ``ElementwiseKernel`` on the stand-in: the body is translated once and run for every thread."""

    def __init__(self, in_params, out_params, operation, name="kernel", reduce_dims=True, preamble="",
                 no_return=False, return_tuple=False, twin=None, **kwargs):
        self.in_params, self.out_params, self.operation, self.preamble = in_params, out_params, operation, preamble
        self.options = tuple(kwargs.get("options", ()))
        self.inputs, self.outputs = _parameters(in_params, False), _parameters(out_params, True)
        self.params = self.inputs + self.outputs
        self.name, self.no_return, self.return_tuple = name, no_return, return_tuple
        self.twin = twin
        self.launches = {}  # large launches so far, by kind (due_for_check)
        if twin is not None and any(p.raw for p in self.outputs):
            raise ValueError(f"kernel {name!r}: a twin cannot stand for raw outputs (threads may write anywhere)")
        placeholders = {p.type for p in self.params if p.placeholder}
        try:
            self.functions = Parser(preamble, placeholders).functions()
            self.body = Parser(operation + "\n;", placeholders).statements_until("")  # CuPy adds the ';' too
        except UnsupportedKernelCode as exc:
            raise UnsupportedKernelCode(f"kernel {name!r}: {exc}") from None

    def __call__(self, *args, size=None, block_size=None, stream=None):
        if len(args) not in (len(self.inputs), len(self.params)):
            raise TypeError(f"kernel {self.name!r} takes {len(self.inputs)} or {len(self.params)} arguments, "
                            f"got {len(args)}")
        values = [_unwrap(a, p, self.name) for a, p in zip(args, self.params)]
        types = self.decide_types(values)
        shape = self.decide_shape(values, size)
        outputs = values[len(self.inputs):]
        for p in self.outputs[len(outputs):]:
            outputs.append(numpy.empty(shape, types.get(p.type) or numpy.dtype(p.type)))
            ledger.record("allocation", f"ElementwiseKernel {self.name} output")
        values = values[:len(self.inputs)] + outputs
        nvrtc.check(self, values, shape, size)  # where NVRTC is installed: CUDA's own verdict
        ledger.record("kernel", f"ElementwiseKernel {self.name}")
        if capture.active is None:
            self.launch(values, types, shape)
        else:  # a node of the stream capture in progress, run again at each replay
            arrays._captured(lambda: self.launch(values, types, shape), values)
        wrapped = [arrays._wrap(a) for a in outputs]
        if self.no_return:
            return None
        return tuple(wrapped) if self.return_tuple or len(wrapped) > 1 else wrapped[0]

    def launch(self, values, types, shape):
        """Run the kernel on ``values`` (its arguments, outputs last): every thread, or the twin and a sample."""
        if self.twin is not None and int(numpy.prod(shape)) > FULL_RUN_THREADS:
            if self.due_for_check(values):
                self.run_sampled(values, types, shape)
            else:
                self.twin(*values)
        else:
            self.run(values, types, shape)

    def due_for_check(self, values):
        """Whether this large launch checks its C body (``CHECKED_LAUNCHES``, ``RECHECK_EVERY``); counts it."""
        kind = tuple((v.shape, v.dtype.str, v.strides) if isinstance(v, numpy.ndarray) else type(v).__name__
                     for v in values)
        count = self.launches[kind] = self.launches.get(kind, 0) + 1
        return count <= CHECKED_LAUNCHES or count % RECHECK_EVERY == 0

    def decide_types(self, values):
        types = {}
        for p, v in sorted(zip(self.params, values), key=lambda pv: not pv[0].output):
            if p.placeholder and isinstance(v, numpy.ndarray):
                if p.type in types and types[p.type] != v.dtype:
                    raise TypeError(f"kernel {self.name!r}: type {p.type} is both {types[p.type]} and {v.dtype} "
                                    f"(argument {p.name!r}); CuPy refuses mismatched placeholder types")
                types[p.type] = v.dtype
        for p, v in zip(self.params, values):
            if p.placeholder and p.type not in types:
                types[p.type] = numpy.asarray(v).dtype
        return types

    def decide_shape(self, values, size):
        shapes = [v.shape for p, v in zip(self.params, values) if not p.raw and isinstance(v, numpy.ndarray)]
        if size is not None:
            if shapes:
                raise ValueError(f"kernel {self.name!r}: size= is for kernels without plain array arguments")
            return (int(size),)
        if not shapes:
            raise ValueError(f"kernel {self.name!r}: give size= (no plain array argument sets the threads)")
        try:
            shape = numpy.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"kernel {self.name!r}: the arguments' shapes {shapes} do not broadcast") from None
        for p, v in zip(self.outputs, values[len(self.inputs):]):
            if not p.raw and v.shape != shape:
                raise ValueError(f"kernel {self.name!r}: output {p.name!r} has shape {v.shape}, the threads {shape}")
        return shape

    def run(self, values, types, shape):
        """Every thread, a block at a time, each block's outputs written back. A plain operand that is strided or
        broadcast is copied into C order once for the whole launch (its blocks are then slices of the copy, not
        gathers by coordinates: a Keras CNN's step on the stand-in spent most of its time in those), and a
        strided output is written back from its copy at the end."""
        total = int(numpy.prod(shape))
        staged = [_in_c_order(v, shape) if isinstance(v, numpy.ndarray) and not p.raw else v
                  for p, v in zip(self.params, values)]
        for first in range(0, total, _BLOCK):
            block = _Block(shape, numpy.arange(first, min(first + _BLOCK, total), dtype=numpy.int64), first)
            for array, computed in self.run_block(staged, types, block, total):
                block.write(array, computed)
        for original, copy in zip(values[len(self.inputs):], staged[len(self.inputs):]):
            if copy is not original:
                original[...] = copy

    def run_sampled(self, values, types, shape):
        """A sample of the threads in C, all of them in the twin; raises ``KernelFault`` where they differ."""
        total = int(numpy.prod(shape))
        block = _Block(shape, _sample(total))
        computed = self.run_block(values, types, block, total)  # reads the inputs before the twin writes
        self.twin(*values)
        for (array, in_c), p in zip(computed, [p for p in self.outputs if not p.raw]):
            in_twin = block.read(array)
            if not _agree(in_c, in_twin):
                k = int(numpy.argmax(~_close(in_c, in_twin)))
                raise KernelFault(f"kernel {self.name!r}: thread i={int(block.lanes[k])} computes {p.name} = "
                                  f"{in_c[k].item()!r} in C, its NumPy twin {in_twin[k].item()!r} "
                                  f"(one of {len(block.lanes)} threads checked of {total})")

    def run_block(self, values, types, block, total):
        """Runs ``block``'s threads; returns ``[(output array, the threads' values)]`` for the plain outputs."""
        run = Run(self, types, block.lanes, total)
        scope, outputs = run.frame.scopes[0], []
        scope["i"] = Variable("i", numpy.dtype("l"), block.lanes, const=True)  # CuPy's loop index: ptrdiff_t
        for p, v in zip(self.params, values):
            dtype = as_cupy_writes(types[p.type] if p.placeholder else numpy.dtype(p.type))
            if p.raw:
                scope[p.name] = Raw(p.name, v, p.output)
                continue
            # a scalar argument is one value for every thread
            element = block.read(v) if isinstance(v, numpy.ndarray) else numpy.asarray(v)
            scope[p.name] = Variable(p.name, dtype, convert((element, None), dtype).copy(), const=not p.output)
            if p.output:
                outputs.append((v, scope[p.name]))
        run.block(self.body, numpy.arange(len(block.lanes)))
        return [(array, variable.values) for array, variable in outputs]


def _in_c_order(array, shape):
    """``array`` broadcast to the threads' ``shape`` in C order: itself when it already is, else a copy."""
    if array.shape == shape and array.flags.c_contiguous:
        return array
    return numpy.ascontiguousarray(numpy.broadcast_to(array, shape))


def _sample(total):
    """The threads checked in C when a launch is too large to run whole: both ends and an even spread."""
    ends = numpy.r_[0:_SAMPLE_ENDS, total - _SAMPLE_ENDS:total]
    spread = numpy.linspace(0, total - 1, _SAMPLE_SPREAD).astype(numpy.int64)
    return numpy.unique(numpy.concatenate([ends, spread]).astype(numpy.int64))


def _close(a, b):
    if a.dtype.kind != "f":
        return a == b
    return numpy.isclose(a, b, rtol=FLOAT_RTOL, atol=FLOAT_ATOL, equal_nan=True)


def _agree(a, b):
    return bool(_close(a, b).all())


class _Block:
    """Some threads of a kernel over ``shape`` (``lanes``: their numbers; ``first``: set when they are the
    consecutive run ``first, first + 1, ...``) and where their elements are."""

    def __init__(self, shape, lanes, first=None):
        self.shape, self.lanes, self.first = shape, lanes, first
        self._where = None

    def where(self):
        if self._where is None:
            self._where = numpy.unravel_index(self.lanes, self.shape) if self.shape else ()
        return self._where

    def run_of(self, array):
        """The threads' elements of ``array`` as a view, when they lie in one run of memory; else None."""
        if self.first is not None and array.shape == self.shape and array.flags.c_contiguous:
            return array.reshape(-1)[self.first:self.first + len(self.lanes)]
        return None

    def read(self, array):
        view = self.run_of(array)
        if view is not None:
            return view
        return numpy.broadcast_to(array, self.shape)[self.where()].reshape(len(self.lanes))

    def write(self, array, values):
        view = self.run_of(array)
        if view is not None:
            view[...] = values
        else:
            array[self.where()] = values.reshape(()) if not self.shape else values


def _unwrap(value, parameter, kernel):
    """A stand-in array's NumPy array (a scalar stays a scalar); host arrays are refused as CuPy refuses them."""
    if type(value) is arrays.ndarray:
        array = value._a
        if parameter.raw and not parameter.placeholder and array.dtype != numpy.dtype(parameter.type):
            raise TypeError(f"kernel {kernel!r}: raw argument {parameter.name!r} is {array.dtype}, "
                            f"declared {parameter.type}")
        return array
    if isinstance(value, numpy.ndarray):
        arrays._refuse(value, f"kernel {kernel!r} argument {parameter.name!r}")
    if parameter.raw or parameter.output:
        raise TypeError(f"kernel {kernel!r}: argument {parameter.name!r} must be a device array, got {type(value)}")
    if not isinstance(value, (int, float, bool, numpy.generic)):
        raise TypeError(f"kernel {kernel!r}: unsupported argument {parameter.name!r} of type {type(value)}")
    return value
