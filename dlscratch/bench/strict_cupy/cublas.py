"""cuBLAS on the stand-in: the C functions ``dlscratch/cuda/blas.py`` calls through ``ctypes``, on raw pointers.

Three GEMMs: ``cublasGemmEx`` (one product), ``cublasGemmStridedBatchedEx`` (a batch of matrices a fixed stride
apart) and ``cublasSgemmBatched`` with its D, C and Z kins (a batch of matrices anywhere, their addresses listed
in device arrays, which are read when the GEMM runs).

A stand-in array's ``.data.ptr`` is the address of its first element in host memory (``pointer_of``), and the
NumPy array owning that memory is noted, so that a pointer handed to cuBLAS leads back to it (``matrix_at``). A
GEMM here reads and writes the memory its pointers, leading dimensions and strides name, as cuBLAS does, in
column-major order: a wrong leading dimension or transpose gives wrong numbers, a leading dimension shorter than a
column is cuBLAS's ``CUBLAS_STATUS_INVALID_VALUE``, and memory outside every known array is the fault a GPU's
kernel would meet (``cudaErrorIllegalAddress``). Each call is checked against the function's declaration in
cuBLAS's header (``HEADER``, from cublas_api.h of CUDA 12 and 13, alike): the count of its arguments, and each
one's C type.

The product itself is computed as the stand-in's ``matmul`` computes the row-major product the call stands for
(``C^T = B^T A^T``; float16 summed in float32, rounded once), so a product through cuBLAS gives the bits of
CuPy's ``matmul`` here exactly when it does so on a GPU: when the call is the one CuPy makes.

Inside a stream capture the GEMM is a node of the graph, as any kernel (``capture.py``); the launch ledger counts
it as ``ledger.gemm_kernel_names`` says CuPy's GEMM launches.
"""

import ctypes
import weakref

import numpy

from .. import ledger
from . import capture

#: cublas_api.h's declarations of the functions called (the parameters' types; their names as the header's)
HEADER = {
    "cublasSetStream_v2": "cublasHandle_t handle, cudaStream_t streamId",
    "cublasGemmEx": "cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, "
                    "int k, const void* alpha, const void* A, cudaDataType Atype, int lda, const void* B, "
                    "cudaDataType Btype, int ldb, const void* beta, void* C, cudaDataType Ctype, int ldc, "
                    "cublasComputeType_t computeType, cublasGemmAlgo_t algo",
    "cublasGemmStridedBatchedEx": "cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, "
                                  "int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype, "
                                  "int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb, "
                                  "long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc, "
                                  "long long int strideC, int batchCount, cublasComputeType_t computeType, "
                                  "cublasGemmAlgo_t algo",
}
#: C's types as ``ctypes`` passes them: handles and streams are pointers, enums are ints
C_TYPES = {"cublasHandle_t": ctypes.c_void_p, "cudaStream_t": ctypes.c_void_p, "const void*": ctypes.c_void_p,
           "void*": ctypes.c_void_p, "int": ctypes.c_int, "long long int": ctypes.c_longlong,
           "cublasOperation_t": ctypes.c_int, "cudaDataType": ctypes.c_int, "cublasComputeType_t": ctypes.c_int,
           "cublasGemmAlgo_t": ctypes.c_int}
SUCCESS, INVALID_VALUE = 0, 7
OP_N, OP_T = 0, 1
COMPUTE_32F, COMPUTE_32F_FAST_TF32, COMPUTE_64F = 68, 77, 70
DTYPES = {2: numpy.dtype(numpy.float16), 0: numpy.dtype(numpy.float32), 1: numpy.dtype(numpy.float64),  # CUDA_R_*
          4: numpy.dtype(numpy.complex64), 5: numpy.dtype(numpy.complex128)}  # CUDA_C_*
#: the batched GEMMs on arrays of matrix addresses: the C type, dtype and sums of each
POINTER_BATCHED = {"cublasSgemmBatched": ("float", numpy.dtype(numpy.float32), COMPUTE_32F),
                   "cublasDgemmBatched": ("double", numpy.dtype(numpy.float64), COMPUTE_64F),
                   "cublasCgemmBatched": ("cuComplex", numpy.dtype(numpy.complex64), COMPUTE_32F),
                   "cublasZgemmBatched": ("cuDoubleComplex", numpy.dtype(numpy.complex128), COMPUTE_64F)}
HEADER.update({name: f"cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, "
                     f"int k, const {t}* alpha, const {t}* const Aarray[], int lda, const {t}* const Barray[], "
                     f"int ldb, const {t}* beta, {t}* const Carray[], int ldc, int batchCount"
               for name, (t, _, _) in POINTER_BATCHED.items()})
C_TYPES.update({f"{const}{t}*{array}": ctypes.c_void_p for t, _, _ in POINTER_BATCHED.values()
                for const, array in (("const ", ""), ("const ", " const"), ("", " const"))})
#: the compute types each dtype is summed in here (cuBLAS's table of GemmEx is wider: these are what CuPy asks for)
COMPUTES = {"e": (COMPUTE_32F,), "f": (COMPUTE_32F, COMPUTE_32F_FAST_TF32), "d": (COMPUTE_64F,),
            "F": (COMPUTE_32F, COMPUTE_32F_FAST_TF32), "D": (COMPUTE_64F,)}
_LIMITS = {ctypes.c_int: (-2 ** 31, 2 ** 31 - 1), ctypes.c_longlong: (-2 ** 63, 2 ** 63 - 1),
           ctypes.c_void_p: (0, 2 ** 64 - 1)}


def prototype(name):
    """The ``ctypes`` argument types of ``name``, read from its declaration in ``HEADER``."""
    return tuple(C_TYPES[parameter.rsplit(" ", 1)[0]] for parameter in HEADER[name].split(", "))


class _Memory:
    """Start address -> (end address, weak reference to the NumPy array owning those bytes)."""

    def __init__(self):
        self._blocks, self._sweep_at = {}, 1024

    def note(self, owner):
        start = owner.__array_interface__["data"][0]
        self._blocks[start] = (start + owner.nbytes, weakref.ref(owner))
        if len(self._blocks) >= self._sweep_at:
            self._blocks = {s: block for s, block in self._blocks.items() if block[1]() is not None}
            self._sweep_at = max(1024, 2 * len(self._blocks))

    def owner(self, start, end):
        """The live NumPy array whose bytes hold ``[start, end)``, or None. A dead array's entry may linger, its
        memory now another array's; the array starting at ``start`` is tried first."""
        exact = self._blocks.get(start)
        owner = None if exact is None else _holds(start, exact, start, end)
        if owner is not None:
            return owner
        for first, block in self._blocks.items():
            owner = _holds(first, block, start, end)
            if owner is not None:
                return owner
        return None


def _holds(first, block, start, end):
    """The live array of ``block`` (its first address ``first``) if it holds ``[start, end)``, else None."""
    last, ref = block
    owner = ref() if first <= start and end <= last else None
    return owner if owner is not None and owner.__array_interface__["data"][0] == first else None


_memory = _Memory()


def pointer_of(a):
    """The device pointer of NumPy array ``a``'s first element: its host address, its owner noted."""
    owner = a
    while isinstance(owner.base, numpy.ndarray):
        owner = owner.base
    _memory.note(owner)
    return a.__array_interface__["data"][0]


def matrix_at(pointer, dtype, rows, cols, ld, batch=1, stride=0):
    """``(view, owner)``: the column-major ``rows x cols`` matrix at ``pointer`` with leading dimension ``ld``
    (``batch`` of them, ``stride`` elements apart) as a NumPy view ``(batch, rows, cols)``, and the NumPy array
    owning its memory. Memory that is no array's is what a GPU's kernel would fault on: CUDA's error, named."""
    item = dtype.itemsize
    last = (batch - 1) * stride + (cols - 1) * ld + rows if rows and cols else 0
    owner = _memory.owner(pointer, pointer + last * item)
    if owner is None or pointer % item:
        raise capture.CUDARuntimeError(
            f"cudaErrorIllegalAddress: a cuBLAS GEMM would read or write {last * item} bytes from {pointer:#x}, "
            "outside every array (a wrong pointer, leading dimension or stride)")
    offset = pointer - owner.__array_interface__["data"][0]
    view = numpy.ndarray((batch, rows, cols), dtype, buffer=owner, offset=offset,
                         strides=(stride * item, item, ld * item))
    return view, owner


def _checked(name, args):
    """Refuse a call that does not match its C prototype: the wrong count, or a value its C type cannot hold."""
    argtypes = prototype(name)
    if len(args) != len(argtypes):
        raise TypeError(f"{name}: {len(argtypes)} arguments in its C prototype, {len(args)} given")
    for position, (value, ctype) in enumerate(zip(args, argtypes)):
        low, high = _LIMITS[ctype]
        if type(value) is not int or not low <= value <= high:
            raise TypeError(f"{name}: argument {position} is {value!r}, not a C {ctype.__name__}")


def _scalar(address, compute, dtype):
    """The host scalar (alpha or beta) at ``address``: of the compute type's precision, a (real, imaginary) pair
    for a complex product."""
    real = ctypes.c_double if compute == COMPUTE_64F else ctypes.c_float
    if dtype.kind == "c":
        pair = (real * 2).from_address(address)
        return complex(pair[0], pair[1])
    return real.from_address(address).value


def _shapes(transa, transb, m, n, k):
    """The column-major shapes of A, B and C in ``C = op(A) op(B)``: ``op(A): m x k``, ``op(B): k x n``."""
    return ((k, m) if transa == OP_T else (m, k)), ((n, k) if transb == OP_T else (k, n)), (m, n)


def _invalid(transa, transb, m, n, k, batch, leading, shapes):
    """cuBLAS's checks of its arguments: an operation, a size, a leading dimension shorter than a column."""
    return bool({transa, transb} - {OP_N, OP_T}) or min(m, n, k, batch) < 0 or any(
        ld < max(1, shape[0]) for ld, shape in zip(leading, shapes))


def _computes(one_dtype, alpha, beta, compute, dtype):
    """Refuse, by name, what the stand-in does not compute."""
    if not one_dtype or compute not in COMPUTES[dtype.char] or (
            _scalar(alpha, compute, dtype), _scalar(beta, compute, dtype)) != (1, 0):
        raise NotImplementedError("the stand-in's cuBLAS computes C = op(A) op(B) (alpha 1, beta 0) of one float "
                                  "or complex dtype in float32 or float64 sums, what dlscratch/cuda/blas.py asks for")


def _product(transa, transb, A, B, C, dtype, two_d):  # noqa: N803
    """Write into ``C`` (``(batch, m, n)``, column-major views) the row-major product the call stands for,
    ``C^T = op(B)^T op(A)^T``, as the stand-in's ``matmul`` computes it: from operands laid out as the caller's
    (``two_d``: 2-D ones as 2-D, NumPy treats a vector apart)."""
    left = B if transb == OP_T else B.transpose(0, 2, 1)
    right = A if transa == OP_T else A.transpose(0, 2, 1)
    out = C.transpose(0, 2, 1)
    if two_d:
        left, right, out = left[0], right[0], out[0]
    with numpy.errstate(over="ignore"):  # a float16 sum past its range is inf, as on a GPU
        out[...] = numpy.matmul(left, right, dtype=numpy.float32 if dtype == numpy.float16 else None)


class Library:
    """The stand-in's libcublas: each handle's stream, and the GEMMs."""

    def __init__(self):
        self._streams = {}  # handle -> the stream pointer its work goes to

    def cublasSetStream_v2(self, handle, stream):  # noqa: N802 (cuBLAS's name)
        _checked("cublasSetStream_v2", (handle, stream))
        self._streams[handle] = stream
        return SUCCESS

    def cublasGemmEx(self, handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C,  # noqa: N802, N803
                     Ctype, ldc, computeType, algo):  # noqa: N803
        args = (handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype, ldc,
                computeType, algo)
        _checked("cublasGemmEx", args)
        return self._gemm(handle, transa, transb, m, n, k, alpha, (A, Atype, lda, 0), (B, Btype, ldb, 0), beta,
                          (C, Ctype, ldc, 0), 1, computeType, "gemm")

    def cublasGemmStridedBatchedEx(self, handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,  # noqa: N802, N803
                                   Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType,  # noqa: N803
                                   algo):
        args = (handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C,
                Ctype, ldc, strideC, batchCount, computeType, algo)
        _checked("cublasGemmStridedBatchedEx", args)
        return self._gemm(handle, transa, transb, m, n, k, alpha, (A, Atype, lda, strideA), (B, Btype, ldb, strideB),
                          beta, (C, Ctype, ldc, strideC), batchCount, computeType, "gemm (batched)")

    def _gemm(self, handle, transa, transb, m, n, k, alpha, a, b, beta, c, batch, compute, name):
        """``C = alpha op(A) op(B) + beta C``, column-major, ``op(A): m x k``, ``op(B): k x n``, ``batch`` times."""
        shapes = _shapes(transa, transb, m, n, k)
        dtype = DTYPES.get(c[1])
        if _invalid(transa, transb, m, n, k, batch, (a[2], b[2], c[2]), shapes):
            return INVALID_VALUE
        _computes(dtype is not None and a[1] == c[1] and b[1] == c[1], alpha, beta, compute, dtype)
        found = [matrix_at(pointer, dtype, *shape, ld, batch, stride)
                 for (pointer, _, ld, stride), shape in zip((a, b, c), shapes)]
        (A, _), (B, _), (C, _) = found  # noqa: N806

        def product():
            _product(transa, transb, A, B, C, dtype, two_d=name == "gemm")

        self._launch(handle, product, [owner for _, owner in found])
        if ledger.open_ledgers:
            names = ["gemm (batched)"] if batch > 1 or name != "gemm" else ledger.gemm_kernel_names(n, m, k)
            ledger.record_all([("kernel", kernel, 1) for kernel in names])
        return SUCCESS

    def cublasSgemmBatched(self, *args):  # noqa: N802 (cuBLAS's names)
        return self._pointer_batched("cublasSgemmBatched", *args)

    def cublasDgemmBatched(self, *args):  # noqa: N802
        return self._pointer_batched("cublasDgemmBatched", *args)

    def cublasCgemmBatched(self, *args):  # noqa: N802
        return self._pointer_batched("cublasCgemmBatched", *args)

    def cublasZgemmBatched(self, *args):  # noqa: N802
        return self._pointer_batched("cublasZgemmBatched", *args)

    def _pointer_batched(self, name, handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta,  # noqa: N803
                         Carray, ldc, batchCount):  # noqa: N803
        """``C[i] = alpha op(A[i]) op(B[i]) + beta C[i]`` for the matrices whose device addresses the arrays
        ``Aarray``, ``Barray``, ``Carray`` hold (read from the device when the GEMM runs, as cuBLAS reads them)."""
        args = (handle, transa, transb, m, n, k, alpha, Aarray, lda, Barray, ldb, beta, Carray, ldc, batchCount)
        _checked(name, args)
        shapes = _shapes(transa, transb, m, n, k)
        if _invalid(transa, transb, m, n, k, batchCount, (lda, ldb, ldc), shapes):
            return INVALID_VALUE
        _, dtype, compute = POINTER_BATCHED[name]
        _computes(True, alpha, beta, compute, dtype)

        def matrices():
            """``[(A_i, B_i, C_i) views], [their owners and the address arrays']``, as the device holds them now."""
            found, owners = [], []
            for addresses, ld, shape in zip((Aarray, Barray, Carray), (lda, ldb, ldc), shapes):
                listed, owner = matrix_at(addresses, numpy.dtype(numpy.uint64), batchCount, 1, batchCount)
                views = [matrix_at(int(address), dtype, *shape, ld) for address in listed.ravel()]
                found.append([view for view, _ in views])
                owners += [owner] + [owner for _, owner in views]
            return list(zip(*found)), owners

        def product():
            for A, B, C in matrices()[0]:  # noqa: N806
                _product(transa, transb, A, B, C, dtype, two_d=False)

        self._launch(handle, product, matrices()[1])
        if ledger.open_ledgers:
            ledger.record("kernel", "gemm (batched)")
        return SUCCESS

    def _launch(self, handle, work, arrays):
        """Run ``work`` on the handle's stream: now, or as a node of the capture in progress."""
        if capture.active is None:
            work()
            return
        if self._streams.get(handle, 0) != capture.active.stream.ptr:
            capture.refuse_other_stream(self._streams.get(handle, 0), "a GEMM")
        capture.run(work, arrays, capture.active.stream)
        capture.record(work, [], arrays)


library = Library()
