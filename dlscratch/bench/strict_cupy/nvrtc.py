"""CUDA's own compiler as the stand-in's judge: each launch's kernel source, as CuPy writes it, compiled by NVRTC.

The stand-in runs a kernel's C by translating it (``kernel_parser.py``), and a translator can accept what
CUDA's compiler rejects. NVRTC, CUDA's runtime compiler, needs no GPU: it ships as a Python wheel
(``pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12``). Where it is installed, the
stand-in compiles every new kernel *signature* once, before it interprets the kernel, and refuses the launch with
the compiler's message (``CudaCompileError``).

A signature is what makes CuPy write a different source for the same ``ElementwiseKernel``: the dtype of each
argument, whether it is an array or a scalar, and each array's ``ndim``, C-contiguity and 32-bit indexing, after
CuPy broadcasts the arrays and merges the dimensions it can (``reduce_dims``). The source is CuPy's own: its
generator (``cupy._core._kernel._get_elementwise_kernel_code``, what ``ElementwiseKernel.__call__`` compiles)
fed with the ``_ArgInfo``/``_TypeMap`` objects CuPy would build, with CuPy's headers and compiler options; only
the decisions above are made here, the way CuPy 14 makes them. ``tests/test_strict_nvrtc.py`` checks them against
CuPy's own ``cached_codes`` on a real GPU.

``DLSCRATCH_NVRTC``: ``0`` turns the check off; ``DLSCRATCH_NVRTC_ARCHS``: the targets, comma separated (default
``compute_75``, Colab's T4; CI compiles for ``compute_75,compute_90,sm_75``: PTX for two GPU generations, and
machine code through ptxas for one). ``compiled()`` lists what was compiled, and ``summary()`` counts it.
"""

import os
from dataclasses import dataclass

import numpy

from .kernel_parser import UnsupportedKernelCode

__all__ = ["CudaCompileError", "Compiled", "archs", "check", "compiled", "summary", "unavailable_reason"]

_NDARRAY, _INDEXER, _SCALAR = 1, 2, 3  # CuPy's _ArgKind
_INDEX_32_BITS = 1 << 31  # CuPy indexes with 32-bit integers while an array spans at most this many bytes


class CudaCompileError(UnsupportedKernelCode):
    """NVRTC rejected a kernel's source: the stand-in refuses to run what a GPU could not compile."""


@dataclass(frozen=True)
class Compiled:
    """One compile: the kernel's name, CuPy's full source, the target, and NVRTC's error (None when it compiled)."""

    name: str
    source: str
    arch: str
    error: str | None


_cupy_finder = None  # set by dlscratch.backend: a function returning the real CuPy module, or None
_status = None  # (cupy module or None, the reason it cannot compile)
_results = {}  # (source, options, arch) -> Compiled


def use_cupy_from(finder):
    """Let the check reach CuPy through ``finder()`` (the backend imports CuPy; the stand-in does not)."""
    global _cupy_finder, _status
    _cupy_finder, _status = finder, None


def archs():
    """The targets each signature is compiled for (``DLSCRATCH_NVRTC_ARCHS``)."""
    names = [a.strip() for a in os.environ.get("DLSCRATCH_NVRTC_ARCHS", "compute_75").split(",") if a.strip()]
    for name in names:
        if not name.startswith(("compute_", "sm_")) or not name.split("_", 1)[1].isdigit():
            raise ValueError(f"DLSCRATCH_NVRTC_ARCHS: {name!r} is not a target such as compute_75 or sm_75")
    return names


def unavailable_reason():
    """None when NVRTC can compile here; else why not (checking then rests on the stand-in's own type rules)."""
    return _load()[1]


def _load():
    global _status
    if os.environ.get("DLSCRATCH_NVRTC", "") == "0":
        return None, "DLSCRATCH_NVRTC=0 turns the compile check off"
    if _status is None:
        cupy = _cupy_finder() if _cupy_finder is not None else None
        if cupy is None:
            _status = None, "CuPy is not installed (pip install cupy-cuda12x)"
        else:
            try:
                cupy.cuda.nvrtc.getVersion()
                cupy._core.core.assemble_cupy_compiler_options(())
                _status = cupy, None
            except Exception as exc:  # the NVRTC library or CUDA's headers are missing
                _status = None, (f"NVRTC cannot run ({type(exc).__name__}: {str(exc)[:200]}); "
                                 "pip install nvidia-cuda-nvrtc-cu12 nvidia-cuda-runtime-cu12")
    return _status


def compiled():
    """Every compile so far, in order: ``[Compiled]``."""
    return list(_results.values())


def summary():
    """``{"sources": distinct sources, "compiles": compiles, "failures": failed compiles, "archs": [...]}``."""
    done = compiled()
    return {"sources": len({c.source for c in done}), "compiles": len(done),
            "failures": sum(c.error is not None for c in done), "archs": sorted({c.arch for c in done})}


def check(kernel, values, shape, size):
    """Compile ``kernel``'s source for this launch (once per signature and target); raise ``CudaCompileError``
    with NVRTC's message if it does not compile. Nothing happens where NVRTC is not installed.

    ``values``: the launch's arguments as the stand-in holds them (NumPy arrays and scalars, outputs included),
    ``shape``: the threads' shape, ``size``: ``size=``. The placeholder types are CuPy's, decided from the arrays.
    """
    cupy, _ = _load()
    if cupy is None or 0 in shape:  # CuPy launches nothing (and compiles nothing) for no threads
        return
    source = kernel_source(cupy, kernel, values, shape, size is not None)
    options = _options(cupy, kernel.options)
    for arch in archs():
        key = (source, options, arch)
        if key not in _results:
            _results[key] = Compiled(kernel.name, source, arch, _compile(cupy, source, options + (f"-arch={arch}",)))
        error = _results[key].error
        if error is not None:
            raise CudaCompileError(f"kernel {kernel.name!r} does not compile for {arch} (NVRTC):\n{error}")


def _options(cupy, kernel_options):
    """CuPy's options for NVRTC (its include folders, C++17), then what its compile path adds, less the target."""
    return (tuple(cupy._core.core.assemble_cupy_compiler_options(tuple(kernel_options)))
            + ("-ftz=true", "--device-as-default-execution-space"))


def _compile(cupy, source, options):
    program = cupy.cuda.compiler._NVRTCProgram(source, "kern.cu")
    try:
        program.compile(options)
    except cupy.cuda.compiler.CompileException as exc:
        return str(exc).strip()
    return None


def kernel_source(cupy, kernel, values, shape, size_given):
    """The whole ``.cu`` source CuPy would compile for this launch (its header include first)."""
    core = cupy._core._kernel
    params = (core._get_param_info(kernel.in_params, True) + core._get_param_info(kernel.out_params, False)
              + core._get_param_info("CIndexer _ind", False))
    type_map = _type_map(kernel, values)
    arrays = [_broadcast(v, shape, p.raw) if isinstance(v, numpy.ndarray) else v
              for v, p in zip(values, kernel.params)]
    if not size_given:
        shape = _reduced_shape(arrays, kernel.params, tuple(shape))
    infos = []
    for value, p in zip(arrays, kernel.params):
        if isinstance(value, _Array):
            infos.append(core._ArgInfo(_NDARRAY, cupy.ndarray, value.dtype.type, value.ndim, value.c_contiguous,
                                       value.index_32_bits))
        else:
            dtype = type_map.get(p.type) if p.placeholder else numpy.dtype(p.type).type
            if dtype is None:
                raise TypeError(f"kernel {kernel.name!r}: CuPy decides type {p.type} from array arguments only, and "
                                f"none is of type {p.type} (argument {p.name!r} is a scalar)")
            infos.append(core._ArgInfo(_SCALAR, cupy._core._scalar.CScalar, dtype, 0, True, True))
    size = int(numpy.prod(shape)) if shape else 1
    infos.append(core._ArgInfo(_INDEXER, cupy._core._carray.Indexer, None, len(shape), True, size <= _INDEX_32_BITS))
    code = core._get_elementwise_kernel_code(tuple(infos), core._TypeMap(tuple(sorted(type_map.items()))), params,
                                             kernel.operation, kernel.name, kernel.preamble)
    return "".join(f"#include <{h}>\n" for h in cupy._core.core._cupy_header_list) + code


def _type_map(kernel, values):
    """CuPy's placeholder types: each from the arrays that carry it, the outputs' first (scalars decide none)."""
    types = {}
    for p, v in sorted(zip(kernel.params, values), key=lambda pv: not pv[0].output):
        if p.placeholder and isinstance(v, numpy.ndarray):
            types.setdefault(p.type, v.dtype.type)
    return types


class _Array:
    """What CuPy's source depends on of one array argument."""

    def __init__(self, shape, strides, dtype, c_contiguous, index_32_bits):
        self.shape, self.strides, self.dtype = tuple(shape), tuple(strides), dtype
        self.c_contiguous, self.index_32_bits = c_contiguous, index_32_bits

    @property
    def ndim(self):
        return len(self.shape)


def _broadcast(array, shape, raw):
    """The array as CuPy passes it: a raw one as it is, a plain one broadcast to the threads' shape."""
    root = array
    while isinstance(root.base, numpy.ndarray):
        root = root.base
    index_32_bits = max(root.nbytes, array.nbytes) <= _INDEX_32_BITS
    view = array if raw else numpy.broadcast_to(array, shape)
    return _Array(view.shape, view.strides, array.dtype, view.flags.c_contiguous, index_32_bits)


def _reduced_shape(arrays, params, shape):
    """CuPy's ``reduce_dims``: merge the dimensions that every strided plain array walks as one; all arrays
    C-contiguous: one dimension. Returns the threads' new shape; rewrites the plain arrays' shapes in place."""
    plain = [i for i, (a, p) in enumerate(zip(arrays, params)) if isinstance(a, _Array) and not p.raw]
    if len(shape) <= 1 or not plain:
        return shape
    if len(arrays) == 1:  # CuPy's shortcut for one argument: the array's own reduced view
        return _reduced_view(arrays, plain[0], shape)
    strided = [i for i in plain if not arrays[i].c_contiguous]
    if strided and len(shape) == 2:
        return shape
    if not strided:
        total = int(numpy.prod(shape))
        for i in plain:
            arrays[i] = _Array((total,), (arrays[i].dtype.itemsize,), arrays[i].dtype, arrays[i].c_contiguous,
                               arrays[i].index_32_bits)
        return (total,)
    sizes, kept, last = list(shape), [], -1
    for axis in range(len(shape)):
        if sizes[axis] == 1:
            continue
        if last < 0:
            last = axis
            continue
        if any(arrays[i].strides[axis] * sizes[axis] != arrays[i].strides[last] for i in strided):
            kept.append(last)
        else:
            sizes[axis] *= sizes[last]
        last = axis
    if last >= 0:
        kept.append(last)
    if len(kept) == len(shape):
        return shape
    for i in plain:
        a = arrays[i]
        arrays[i] = _Array([sizes[k] for k in kept], [a.strides[k] for k in kept], a.dtype, a.c_contiguous,
                           a.index_32_bits)
    return tuple(sizes[k] for k in kept)


def _reduced_view(arrays, index, shape):
    """One C-contiguous array becomes one dimension (a strided one keeps its shape here, where CuPy may merge
    some of its dimensions: no kernel of the library has a single argument)."""
    a = arrays[index]
    if a.c_contiguous:
        arrays[index] = _Array((int(numpy.prod(shape)),), (a.dtype.itemsize,), a.dtype, True, a.index_32_bits)
        return arrays[index].shape
    return shape
