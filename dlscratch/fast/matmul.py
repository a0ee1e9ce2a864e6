"""Fast matrix products: an outer product (a weight gradient at batch size 1) as a padded GEMM.

NumPy's matmul skips BLAS for an inner dimension of 1, and a broadcast multiply pays a fixed cost per output row.
So for many short rows (``tuning.PADDED_GEMM_*``) the product goes to BLAS with inner dimension 2, the new column
and row zero: the same numbers, on every core. ``python -m dlscratch.bench mlp`` times a batch-1 step on both paths.
"""

from ..backend import get_array_module, is_gpu_array
from ..engine.switch import fast_version_of
from ..operations.matmul import Linear as ReferenceLinear
from ..operations.matmul import MatMul as ReferenceMatMul
from ..operations.matmul import linear as reference_linear
from ..operations.matmul import matmul as reference_matmul
from ..operations.products import gemm
from . import tuning


def outer_or_matmul(a, b):
    """``a @ b`` for 2-D arrays, with the fast ways to an outer product (inner dimension 1)."""
    if a.ndim != 2 or a.shape[1] != 1:
        return gemm(a, b)
    rows, row_length = a.shape[0], b.shape[1]
    if is_gpu_array(a) or rows < tuning.PADDED_GEMM_MIN_ROWS or row_length > tuning.PADDED_GEMM_MAX_ROW:
        return a * b
    return gemm(_pad_inner(a, axis=1), _pad_inner(b, axis=0))


def _pad_inner(v, axis):
    """A column ``(m, 1)`` as ``(m, 2)`` or a row ``(1, n)`` as ``(2, n)``, the new half zero."""
    if axis == 1:
        padded = get_array_module(v).zeros((v.shape[0], 2), dtype=v.dtype)
        padded[:, :1] = v
    else:
        padded = get_array_module(v).zeros((2, v.shape[1]), dtype=v.dtype)
        padded[:1] = v
    return padded


# the reference's names: a graph's nodes name the operation, not the path
class MatMul(ReferenceMatMul):
    weight_product = staticmethod(outer_or_matmul)


class Linear(ReferenceLinear):
    weight_product = staticmethod(outer_or_matmul)


@fast_version_of(reference_matmul)
def matmul(a, b):
    return MatMul()(a, b)


@fast_version_of(reference_linear)
def linear(x, weight, bias=None):
    return Linear()(x, weight) if bias is None else Linear()(x, weight, bias)
