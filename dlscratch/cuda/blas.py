"""``matmul``: CuPy's matrix product, made through a cuBLAS call that a CUDA graph capture can record.

cuBLAS captures a GEMM (PyTorch captures every product), but CuPy 14 refuses: each of its cuBLAS wrappers first
sets the handle's stream, and ``setStream`` raises ``NotImplementedError`` on a capturing stream
(``cupy_backends/cuda/libs/cublas.pyx``). ``matmul`` makes the call CuPy's ``matmul`` makes, the same cuBLAS
function with the same arguments on CuPy's own handle (``cupy.cuda.device.get_cublas_handle()``), through ``ctypes``
instead of CuPy's wrapper. So a captured product computes what the eager one computes, bit for bit;
``operations/products.gemm`` calls it only while a stream captures, and CuPy's ``matmul`` at all other times.

It takes what ``numpy.matmul`` takes, of float16, float32, float64, complex64 or complex128 operands (of two
dtypes, the other is cast first, as CuPy casts it: an autocast backward multiplies float32 gradients by float16
weights), and makes CuPy's call for each form: one or two dimensions (CuPy's ``dot``: ``cublasGemmEx``), batches
of one shape (CuPy's ``matmul``: ``cublasGemmStridedBatchedEx``; the FFT convolution's products are complex
ones), and batches that broadcast, as ``x @ W`` with ``x: (B, T, K)`` and ``W: (K, N)`` (CuPy's ``matmul``: an
array of each operand's matrix addresses, then ``cublasSgemmBatched`` and its D, C, Z kins). Integer products,
those with nothing to sum, and 1-D or 2-D ones that make one number go to CuPy's ``matmul``, which makes them
without cuBLAS, with kernels a capture records.

On the stand-in, ``bench/strict_cupy/cublas.py`` plays the library: it reads and writes the memory the pointers
name, with cuBLAS's column-major rules, so a wrong leading dimension or transpose gives wrong numbers there too.
"""

import ctypes
import math
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
#: the batched GEMM on arrays of matrix addresses, by the dtype it computes in (a float16 batch is cast to float32)
POINTER_BATCHED = {numpy.dtype(numpy.float32): "cublasSgemmBatched", numpy.dtype(numpy.float64): "cublasDgemmBatched",
                   numpy.dtype(numpy.complex64): "cublasCgemmBatched",
                   numpy.dtype(numpy.complex128): "cublasZgemmBatched"}
PROTOTYPES.update({name: (_handle_t, _int, _int, _int, _int, _int, _ptr, _ptr, _int, _ptr, _int, _ptr, _ptr, _int, _int)
                   for name in POINTER_BATCHED.values()})


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
    shape = _result_shape(a, b)
    library = _declared(backend.cublas_library()) if _takes(a, b, out, shape) else None
    if library is None:
        return xp.matmul(a, b) if out is None else xp.matmul(a, b, out=out)
    if max(a.ndim, b.ndim) <= 2:
        return _dot(xp, library, a, b, out, shape)
    return _batched(xp, library, a, b, out, shape)


def _result_shape(a, b):
    """``numpy.matmul``'s result shape for ``a @ b``, or None where they do not match (CuPy then says why)."""
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != (b.shape[0] if b.ndim == 1 else b.shape[-2]):
        return None
    try:
        batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    return batch + a.shape[-2:-1] + b.shape[-1:] * (b.ndim > 1)


def _takes(a, b, out, shape):
    """Whether the product is one cuBLAS makes in CuPy: float or complex dtypes, shapes that match, something to
    sum into (no empty operand), more than one number where neither operand has more than two dimensions (CuPy's
    ``dot`` sums one with a reduction kernel), ``out`` (if any) of the result's shape and dtype."""
    if a.dtype not in DATA_TYPES or b.dtype not in DATA_TYPES or shape is None or a.size == 0 or b.size == 0:
        return False
    if out is not None and (out.shape != shape or out.dtype != numpy.promote_types(a.dtype, b.dtype)):
        return False
    return max(a.ndim, b.ndim) > 2 or math.prod(shape) > 1


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


def _dot(xp, library, a, b, out, shape):
    """CuPy's ``dot`` for operands of one or two dimensions (``tensordot_core_v11``): a vector as a one-row (left)
    or one-column (right) matrix, then ``C^T = B^T A^T`` in cuBLAS's column-major terms, ``(M, K) @ (K, N)`` as an
    ``N x M`` product into a C-contiguous result."""
    a = a.reshape(1, a.size) if a.ndim == 1 else a
    b = b.reshape(b.size, 1) if b.ndim == 1 else b
    (m, k), n = a.shape, b.shape[1]
    dtype = numpy.promote_types(a.dtype, b.dtype)
    at, trans_a, lda = _cublas_matrix(a.T.astype(dtype, copy=False), 0)  # CuPy casts in the operand's order ("K")
    b, trans_b, ldb = _cublas_matrix(b.astype(dtype, copy=False), 1)
    shared = out is not None and (xp.may_share_memory(out, a) or xp.may_share_memory(out, b))
    c = xp.empty(shape, dtype) if out is None or shared or not out.flags.c_contiguous else out
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


def _batched(xp, library, a, b, out, shape):
    """CuPy's ``matmul`` past two dimensions: a vector as a one-row or one-column matrix, leading dimensions of 1
    added to the operand with fewer, both made C-contiguous (float16 as float32, summed in float32 and rounded
    once), then one GEMM per matrix of the broadcast batch, ``C_i^T = B_i^T A_i^T``: a strided-batched GEMM where
    the batches have one shape, else a batched GEMM on arrays of the matrices' addresses."""
    wanted = numpy.promote_types(a.dtype, b.dtype)
    dtype = numpy.dtype(numpy.float32) if wanted == numpy.float16 else wanted
    ndim = max(a.ndim, b.ndim)
    a = a.reshape(1, a.size) if a.ndim == 1 else a
    b = b.reshape(b.size, 1) if b.ndim == 1 else b
    a = xp.ascontiguousarray(a.reshape((1,) * (ndim - a.ndim) + a.shape), dtype)
    b = xp.ascontiguousarray(b.reshape((1,) * (ndim - b.ndim) + b.shape), dtype)
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = numpy.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    ready = out is not None and out.dtype == dtype and out.flags.c_contiguous and not (
        xp.may_share_memory(out, a) or xp.may_share_memory(out, b))
    c = out if ready else xp.empty(shape, dtype)
    matrices = c.reshape(batch + (m, n))  # a view: a vector's dimension back as a matrix's
    compute = COMPUTE_64F if dtype in DOUBLES else COMPUTE_32F
    one, zero = _scalars(compute, dtype)
    if a.shape[:-2] == b.shape[:-2]:
        # CuPy passes the data type (CUDA_R_32F ...) as the compute type, which cuBLAS reads as 32F or 64F: no TF32
        kind = DATA_TYPES[dtype]
        handle = _on_current_stream(library)
        _check(library.cublasGemmStridedBatchedEx(
            handle, OP_N, OP_N, n, m, k, ctypes.addressof(one), b.data.ptr, kind, n, k * n, a.data.ptr, kind, k,
            m * k, ctypes.addressof(zero), matrices.data.ptr, kind, n, m * n, math.prod(batch), compute,
            GEMM_DEFAULT))
    else:
        at_b, at_a, at_c = (_addresses(xp, x, batch) for x in (b, a, matrices))
        handle = _on_current_stream(library)
        _check(getattr(library, POINTER_BATCHED[dtype])(
            handle, OP_N, OP_N, n, m, k, ctypes.addressof(one), at_b.data.ptr, n, at_a.data.ptr, k,
            ctypes.addressof(zero), at_c.data.ptr, n, math.prod(batch)))
    if c is out:
        return out
    if out is None:
        return c if dtype == wanted else c.astype(wanted)
    out[...] = c
    return out


def _addresses(xp, x, batch):
    """CuPy's ``_mat_ptrs``: the device addresses of the matrices of C-contiguous ``x``, one for each matrix of the
    batch ``batch`` (``uint64``, in C order); a dimension of size 1 where ``batch``'s is longer repeats its
    matrices. Computed on the device, so that a capture records it."""
    offsets = None
    for size, length, stride in zip(x.shape[:-2], batch, x.strides[:-2]):
        step = xp.arange(length, dtype=numpy.uint64) * numpy.uint64(stride if size == length else 0)
        offsets = step if offsets is None else (offsets[:, None] + step).ravel()
    return offsets + numpy.uint64(x.data.ptr)


def _on_current_stream(library):
    """CuPy's cuBLAS handle, set to run on the current stream (the capturing one, inside a capture); returned."""
    cupy = backend.cupy
    handle = cupy.cuda.device.get_cublas_handle()
    _check(library.cublasSetStream_v2(handle, cupy.cuda.get_current_stream().ptr))
    return handle
