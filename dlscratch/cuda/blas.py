"""``matmul``: CuPy's matrix product, made through a cuBLAS call that a CUDA graph capture can record.

cuBLAS captures a GEMM (PyTorch captures every product), but CuPy 14 refuses: each of its cuBLAS wrappers first
sets the handle's stream, and ``setStream`` raises ``NotImplementedError`` on a capturing stream
(``cupy_backends/cuda/libs/cublas.pyx``). ``matmul`` makes the call CuPy's ``matmul`` makes, the same cuBLAS
function with the same arguments on CuPy's own handle (``cupy.cuda.device.get_cublas_handle()``), through ``ctypes``
instead of CuPy's wrapper. So a captured product computes what the eager one computes, bit for bit;
``operations/products.gemm`` calls it only while a stream captures, and CuPy's ``matmul`` at all other times.

It takes what the course's products are: float16, float32, float64, complex64 or complex128 operands (of two
dtypes, the other is cast first, as CuPy casts it: an autocast backward multiplies float32 gradients by float16
weights), either 2-D (CuPy's ``dot``: ``cublasGemmEx``) or batches of one shape (CuPy's ``matmul``:
``cublasGemmStridedBatchedEx``; the FFT convolution's products are complex ones). Anything else (1-D or
broadcast operands, integers) goes to CuPy's ``matmul``, which refuses the float ones inside a capture with its own
message; so do products with nothing to sum, which CuPy makes without cuBLAS and so captures.

On the stand-in, ``bench/strict_cupy/cublas.py`` plays the library: it reads and writes the memory the pointers
name, with cuBLAS's column-major rules, so a wrong leading dimension or transpose gives wrong numbers there too.
"""

import ctypes
import os

import numpy

from .. import backend

# cuBLAS's and CUDA's enums (cublas_api.h, library_types.h), as cupy_backends/cuda/libs/cublas.pxd names them
OP_N, OP_T = 0, 1
GEMM_DEFAULT, GEMM_DEFAULT_TENSOR_OP = -1, 99
COMPUTE_32F, COMPUTE_32F_FAST_TF32, COMPUTE_64F = 68, 77, 70
DATA_TYPES = {numpy.dtype(numpy.float16): 2, numpy.dtype(numpy.float32): 0, numpy.dtype(numpy.float64): 1,
              numpy.dtype(numpy.complex64): 4, numpy.dtype(numpy.complex128): 5}  # CUDA_R_16F ... CUDA_C_64F
DOUBLES = (numpy.float64, numpy.complex128)  # summed in double precision
STATUS = {1: "CUBLAS_STATUS_NOT_INITIALIZED", 3: "CUBLAS_STATUS_ALLOC_FAILED", 7: "CUBLAS_STATUS_INVALID_VALUE",
          8: "CUBLAS_STATUS_ARCH_MISMATCH", 11: "CUBLAS_STATUS_MAPPING_ERROR", 13: "CUBLAS_STATUS_EXECUTION_FAILED",
          14: "CUBLAS_STATUS_INTERNAL_ERROR", 15: "CUBLAS_STATUS_NOT_SUPPORTED", 16: "CUBLAS_STATUS_LICENSE_ERROR"}

_handle_t, _ptr, _int, _int64 = ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong
#: The C prototypes called (cublas_api.h of CUDA 12 and 13): each argument after the handle is an ``int`` (the
#: enums too), a ``long long`` or a pointer. ``tests/test_cuda_blas.py`` reads them against the header's text in
#: the stand-in.
PROTOTYPES = {
    "cublasSetStream_v2": (_handle_t, _ptr),
    "cublasGemmEx": (_handle_t, _int, _int, _int, _int, _int, _ptr, _ptr, _int, _int, _ptr, _int, _int, _ptr, _ptr,
                     _int, _int, _int, _int),
    "cublasGemmStridedBatchedEx": (_handle_t, _int, _int, _int, _int, _int, _ptr, _ptr, _int, _int, _int64, _ptr,
                                   _int, _int, _int64, _ptr, _ptr, _int, _int, _int64, _int, _int, _int),
}


class CublasError(RuntimeError):
    """cuBLAS answered a call with an error status (the message starts with its name, as CuPy's ``CUBLASError``)."""


def _declared(library):
    """``library``, a ``ctypes.CDLL`` of cuBLAS given the prototypes above (once), so that ``ctypes`` converts each
    argument to its C type: undeclared, a Python int goes as a 32-bit ``int``, and a pointer would be cut. The
    stand-in's library (not a ``CDLL``) checks its arguments against cuBLAS's header itself."""
    if isinstance(library, ctypes.CDLL) and library.cublasGemmEx.argtypes is None:
        for name, argtypes in PROTOTYPES.items():
            function = getattr(library, name)
            function.argtypes, function.restype = argtypes, ctypes.c_int
    return library


def _check(status):
    if status != 0:
        raise CublasError(STATUS.get(status, f"cuBLAS status {status}"))


def matmul(a, b, out=None):
    """``cupy.matmul(a, b, out=out)``, computed by the cuBLAS call CuPy makes, made so that a capture records it."""
    xp = backend.get_array_module(a)
    library = _declared(backend.cublas_library()) if _takes(a, b, out) else None
    if library is None:
        return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)
    if a.ndim == 2:
        return _dot(xp, library, a, b, out)
    return _batched(xp, library, a, b, out)


def _takes(a, b, out):
    """Whether the product is one ``matmul`` computes: float or complex dtypes, 2-D or batches of one shape,
    something to sum (``k > 0``) into more than one number, ``out`` (if any) of the result's shape and dtype."""
    if a.dtype not in DATA_TYPES or b.dtype not in DATA_TYPES or a.ndim < 2 or a.ndim != b.ndim:
        return False
    if a.shape[:-2] != b.shape[:-2] or a.shape[-1] != b.shape[-2] or a.size == 0 or b.size == 0:
        return False
    shape = a.shape[:-1] + b.shape[-1:]
    if out is not None and (out.shape != shape or out.dtype != numpy.promote_types(a.dtype, b.dtype)):
        return False
    return a.ndim > 2 or shape != (1, 1)  # CuPy's dot sums a (1, k) @ (k, 1) product with a reduction kernel


def _cublas_matrix(x, trans):
    """CuPy's ``_mat_to_cublas_contiguous``: ``(matrix, its cuBLAS op, its leading dimension)``; a matrix neither
    C- nor F-contiguous is copied first."""
    if x.flags.f_contiguous:
        return x, trans, max(x.strides[1] // x.itemsize, x.shape[0])
    if not x.flags.c_contiguous:
        x = x.copy()
    return x, 1 - trans, x.strides[0] // x.itemsize


def _compute_type(dtype):
    """CuPy's choice for ``dot`` (``_routines_linalg.pyx``): float32 and complex64 sum in TF32 only where
    ``CUPY_TF32`` asks."""
    if dtype in DOUBLES:
        return COMPUTE_64F
    if dtype.char in "fF" and int(os.environ.get("CUPY_TF32", "0")) > 0:
        return COMPUTE_32F_FAST_TF32
    return COMPUTE_32F


def _scalars(compute, dtype):
    """The host's ``1`` and ``0`` (alpha, beta) in the compute type, kept with the call: ``cuComplex`` pairs
    (real, imaginary) for a complex product."""
    kind = ctypes.c_double if compute == COMPUTE_64F else ctypes.c_float
    if dtype.kind == "c":
        kind = kind * 2
    return kind(1), kind(0)


def _dot(xp, library, a, b, out):
    """CuPy's ``dot`` for 2-D operands (``tensordot_core_v11``): ``C^T = B^T A^T`` in cuBLAS's column-major terms,
    ``(M, K) @ (K, N)`` as an ``N x M`` product into a C-contiguous ``(M, N)``."""
    (m, k), n = a.shape, b.shape[1]
    dtype = numpy.promote_types(a.dtype, b.dtype)
    at, trans_a, lda = _cublas_matrix(a.T.astype(dtype, copy=False), 0)  # CuPy casts in the operand's order ("K")
    b, trans_b, ldb = _cublas_matrix(b.astype(dtype, copy=False), 1)
    shared = out is not None and (xp.may_share_memory(out, a) or xp.may_share_memory(out, b))
    c = xp.empty((m, n), dtype) if out is None or shared or not out.flags.c_contiguous else out
    compute = _compute_type(dtype)
    capability = int(backend.cupy.cuda.Device().compute_capability)
    algo = GEMM_DEFAULT_TENSOR_OP if capability >= 80 or (capability >= 70 and dtype == numpy.float16) \
        else GEMM_DEFAULT
    one, zero = _scalars(compute, dtype)
    kind = DATA_TYPES[dtype]
    handle = _on_current_stream(library)
    _check(library.cublasGemmEx(handle, trans_b, trans_a, n, m, k, ctypes.addressof(one), b.data.ptr, kind, ldb,
                                at.data.ptr, kind, lda, ctypes.addressof(zero), c.data.ptr, kind, n, compute, algo))
    if out is not None and c is not out:
        out[...] = c
        return out
    return c


def _batched(xp, library, a, b, out):
    """CuPy's ``matmul`` for batches of one shape: both operands made C-contiguous (float16 as float32, summed in
    float32 and rounded once), then one strided-batched GEMM, ``C_i^T = B_i^T A_i^T``."""
    wanted = numpy.promote_types(a.dtype, b.dtype)
    dtype = numpy.dtype(numpy.float32) if wanted == numpy.float16 else wanted
    a, b = xp.ascontiguousarray(a, dtype), xp.ascontiguousarray(b, dtype)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    shape = a.shape[:-1] + (n,)
    ready = out is not None and out.dtype == dtype and out.flags.c_contiguous and not (
        xp.may_share_memory(out, a) or xp.may_share_memory(out, b))
    c = out if ready else xp.empty(shape, dtype)
    # CuPy passes the data type (CUDA_R_32F ...) as the compute type, which cuBLAS reads as 32F or 64F: never TF32
    compute = COMPUTE_64F if dtype in DOUBLES else COMPUTE_32F
    one, zero = _scalars(compute, dtype)
    kind = DATA_TYPES[dtype]
    handle = _on_current_stream(library)
    _check(library.cublasGemmStridedBatchedEx(
        handle, OP_N, OP_N, n, m, k, ctypes.addressof(one), b.data.ptr, kind, n, k * n, a.data.ptr, kind, k, m * k,
        ctypes.addressof(zero), c.data.ptr, kind, n, m * n, a.size // (m * k), compute, GEMM_DEFAULT))
    if c is out:
        return out
    if out is None:
        return c if dtype == wanted else c.astype(wanted)
    out[...] = c
    return out


def _on_current_stream(library):
    """CuPy's cuBLAS handle, set to run on the current stream (the capturing one, inside a capture); returned."""
    cupy = backend.cupy
    handle = cupy.cuda.device.get_cublas_handle()
    _check(library.cublasSetStream_v2(handle, cupy.cuda.get_current_stream().ptr))
    return handle
