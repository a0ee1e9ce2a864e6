"""``gemm(a, b)``: the matrix product behind every operation, with one rule for float16 on a CPU.

NumPy has no float16 GEMM: its own loop runs hundreds of times slower than float32's BLAS. ``gemm`` hands
float16 operands to the float32 BLAS (NumPy converts them as it goes, ``matmul(..., dtype=float32)``) and rounds
the result to float16 once. These are the numbers a GPU's tensor cores produce, float16 operands summed in
float32, and what ``autocast`` needs on a CPU to be slower than float32 by a factor instead of by orders of
magnitude (``python -m dlscratch.bench precision`` prints the factor). On a GPU, CuPy calls cuBLAS's float16
GEMM itself.

Both paths use it for every product (``matmul``, ``linear``, ``conv2d`` by each of its algorithms, the LSTM's,
adaptive pooling's), so that float16 results agree to the last bit: NumPy's loop also sums in float32 but in
another order, and a different float32 sum can round to a different float16.

While a CUDA graph captures, the product goes through ``cuda/blas.matmul``: the cuBLAS call CuPy's ``matmul``
makes, which CuPy itself refuses to make inside a capture.
"""

import numpy

from ..backend import capturing, get_array_module, is_gpu_array


def gemm(a, b, out=None):
    """``a @ b`` (into ``out`` if given); float16 operands on a CPU summed in float32 by BLAS and rounded once."""
    gpu = is_gpu_array(a)
    if gpu and capturing():
        from ..cuda import blas
        return blas.matmul(a, b, out)
    if not gpu and a.dtype == numpy.float16 and b.dtype == numpy.float16:
        product = numpy.matmul(a, b, dtype=numpy.float32)
        with numpy.errstate(over="ignore"):  # a sum past float16's range is inf, as on a GPU; GradScaler sees it
            product = product.astype(numpy.float16)
        if out is None:
            return product
        out[...] = product
        return out
    return a @ b if out is None else get_array_module(a).matmul(a, b, out=out)
