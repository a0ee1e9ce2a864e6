"""``int8_matmul``: a product of int8 matrices with exact int32 sums, two ways.

- ``"integer"``: the array library's integer matrix product on int32 copies. Exact by construction, and slow on
  a CPU: NumPy's integer products do not go through BLAS.
- ``"float32"``: float32 BLAS on the same numbers, in slices of at most 1024 along the summed axis. Every product
  of two int8 numbers is at most 128 * 128 = 2^14 in size, so a sum of 1024 of them stays within 2^24, where
  float32 holds every integer exactly; each slice's sum is therefore exact whatever order BLAS adds in, and the
  slices are added in int32.
"""

import numpy

from .. import backend
from ..operations.products import gemm

INT8_MATMUL_METHODS = ("integer", "float32")
EXACT_SLICE = 2 ** 24 // 2 ** 14  # 1024 products of int8 numbers sum exactly in float32


def int8_matmul(a, b, method="integer"):
    """``a: (M, K)``, ``b: (K, N)`` int8 arrays -> ``(M, N)`` int32, the exact product."""
    if a.dtype != numpy.int8 or b.dtype != numpy.int8:
        raise TypeError(f"int8_matmul: expected int8 arrays, got {a.dtype} and {b.dtype}")
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"int8_matmul: cannot multiply {a.shape} by {b.shape}")
    xp = backend.get_array_module(a)
    if method == "integer":
        return xp.matmul(a.astype(numpy.int32), b.astype(numpy.int32))
    if method == "float32":
        total = xp.zeros((a.shape[0], b.shape[1]), dtype=numpy.int32)
        for k in range(0, a.shape[1], EXACT_SLICE):
            part = gemm(a[:, k:k + EXACT_SLICE].astype(numpy.float32), b[k:k + EXACT_SLICE].astype(numpy.float32))
            total += part.astype(numpy.int32)
        return total
    raise ValueError(f"int8_matmul: method must be one of {INT8_MATMUL_METHODS}, got {method!r}")
