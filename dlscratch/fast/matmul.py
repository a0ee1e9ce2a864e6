"""Fast matrix products: an outer product (a weight gradient at batch size 1) as a padded GEMM.

At batch size 1 the weight gradient ``gy.T @ x`` is a column times a row. NumPy's matmul skips
BLAS for an inner dimension of 1 and runs a plain loop, about 4x slower than a broadcast multiply.
The broadcast multiply in turn pays a fixed cost for each output row (about 0.25 us measured),
which dominates when rows are short. For many short rows the product goes to BLAS as a GEMM with
inner dimension 2, the second column and row zero: the same numbers (``x * y + 0 * 0``), written
2-3x faster on two cores (784 x 1000: 260 -> 110 us; 2-core AMD EPYC, NumPy 2, OpenBLAS).
``MatMul``, ``Linear`` and ``LSTMCell`` (``fast/lstm.py``) use it for their weight gradients.

Float16 on a CPU: NumPy has no float16 GEMM. Its own loop multiplied (64, 1568) @ (1568, 128) in 165 ms where
float32's BLAS took 0.28 ms (600x). ``gemm`` hands float16 operands to the float32 BLAS (NumPy converts them as it
goes, ``matmul(..., dtype=float32)``) and rounds the result to float16 once: 0.86 ms. These are the numbers a
GPU's tensor cores produce, float16 operands summed in float32, and what ``autocast`` needs on a CPU to be slower
than float32 by a factor instead of by orders of magnitude. On a GPU, CuPy calls cuBLAS's float16 GEMM itself.
"""

import numpy

from ..backend import get_array_module, is_gpu_array
from ..functions.matmul import Linear, MatMul
from ..functions.matmul import linear as reference_linear
from ..functions.matmul import matmul as reference_matmul
from ..paths import fast_version_of
from . import tuning


def gemm(a, b):
    """``a @ b``; float16 operands on a CPU summed in float32 by BLAS, rounded once (see above)."""
    if a.dtype == numpy.float16 and b.dtype == numpy.float16 and not is_gpu_array(a):
        product = get_array_module(a).matmul(a, b, dtype=numpy.float32)
        with numpy.errstate(over="ignore"):  # a sum past float16's range is inf, as on a GPU; GradScaler sees it
            return product.astype(numpy.float16)
    return a @ b


def outer_or_matmul(a, b):
    """``a @ b`` for 2-D arrays, with the fast ways to an outer product (inner dimension 1)."""
    if a.ndim != 2 or a.shape[1] != 1:
        return gemm(a, b)
    rows, row_length = a.shape[0], b.shape[1]
    if is_gpu_array(a) or rows < tuning.PADDED_GEMM_MIN_ROWS or row_length > tuning.PADDED_GEMM_MAX_ROW:
        return a * b
    return _pad_inner(a, axis=1) @ _pad_inner(b, axis=0)


def _pad_inner(v, axis):
    """A column ``(m, 1)`` as ``(m, 2)`` or a row ``(1, n)`` as ``(2, n)``, the new half zero."""
    if axis == 1:
        padded = get_array_module(v).zeros((v.shape[0], 2), dtype=v.dtype)
        padded[:, :1] = v
    else:
        padded = get_array_module(v).zeros((2, v.shape[1]), dtype=v.dtype)
        padded[:1] = v
    return padded


class FastMatMul(MatMul):
    product = staticmethod(gemm)
    weight_product = staticmethod(outer_or_matmul)


class FastLinear(Linear):
    product = staticmethod(gemm)
    weight_product = staticmethod(outer_or_matmul)


@fast_version_of(reference_matmul)
def matmul(a, b):
    return FastMatMul()(a, b)


@fast_version_of(reference_linear)
def linear(x, weight, bias=None):
    return FastLinear()(x, weight) if bias is None else FastLinear()(x, weight, bias)
