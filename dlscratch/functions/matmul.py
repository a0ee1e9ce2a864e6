"""Matrix products: ``matmul`` (1-D, 2-D and batched, as ``numpy.matmul``) and ``linear``."""

from ..backend import get_array_module, is_gpu_array
from ..function import Function
from .broadcast import sum_to

# A column times a row, where the product is written as a zero-padded GEMM (see below).
PADDED_GEMM_MIN_ROWS = 128
PADDED_GEMM_MAX_ROW = 1024


def _outer_or_matmul(a, b):
    """``a @ b`` for 2-D arrays, with fast paths for an inner dimension of 1: an outer product,
    such as a weight gradient at batch size 1.

    NumPy's matmul skips BLAS for a column times a row and runs a plain loop, about 4x slower
    than a broadcast multiply. The broadcast multiply in turn pays a fixed cost for each output
    row (about 0.25 us measured), which dominates when rows are short. For many short rows the
    product goes to BLAS as a GEMM with inner dimension 2, the second column and row zero: the
    same numbers (``x * y + 0 * 0``), written 2-3x faster on two cores (784 x 1000: 260 -> 110 us).
    """
    if a.ndim != 2 or a.shape[1] != 1:
        return a @ b
    rows, row_length = a.shape[0], b.shape[1]
    if is_gpu_array(a) or rows < PADDED_GEMM_MIN_ROWS or row_length > PADDED_GEMM_MAX_ROW:
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


class MatMul(Function):
    fresh_grads = True

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError("matmul needs tensors of at least one dimension; use * for scalars")
        k_a = a.shape[-1]
        k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if k_a != k_b:
            raise ValueError(
                f"shapes {a.shape} and {b.shape} do not match: the last dimension of the first "
                f"({k_a}) must equal the {'first' if b.ndim == 1 else 'second-to-last'} of the second ({k_b})"
            )
        self.a, self.b = a, b
        return a @ b

    def backward(self, gy):
        a, b = self.a, self.b
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if b.ndim == 1:  # first, so that a 1-D @ 1-D scalar gradient becomes (1, 1)
            gy = gy[..., None]
        if a.ndim == 1:
            gy = gy[..., None, :]
        ga = gb = None
        if self.inputs[0].requires_grad:
            ga = sum_to(gy @ b2.swapaxes(-1, -2), a2.shape).reshape(a.shape)
        if self.inputs[1].requires_grad:
            gb = sum_to(_outer_or_matmul(a2.swapaxes(-1, -2), gy), b2.shape).reshape(b.shape)
        return ga, gb


class Linear(Function):
    """``x @ W.T + b`` in one node. ``x: (*, in)``, ``W: (out, in)``, ``b: (out,)`` or absent;
    output ``(*, out)``. Leading dimensions are flattened into one GEMM."""

    fresh_grads = True

    def forward(self, x, W, b=None):
        if x.ndim < 1 or W.ndim != 2 or x.shape[-1] != W.shape[1]:
            raise ValueError(
                f"expected x of shape (*, in_features) and weight (out_features, in_features), "
                f"got x {x.shape} and weight {W.shape}"
            )
        if b is not None and b.shape != (W.shape[0],):
            raise ValueError(f"bias of shape {b.shape} does not match weight {W.shape}; expected ({W.shape[0]},)")
        self.x_shape = x.shape
        self.x2, self.W = x.reshape(-1, x.shape[-1]), W
        y = self.x2 @ W.T
        if b is not None:
            y += b
        return y.reshape(x.shape[:-1] + (W.shape[0],))

    def backward(self, gy):
        gy = gy.reshape(-1, gy.shape[-1])
        grads = [
            (gy @ self.W).reshape(self.x_shape) if self.inputs[0].requires_grad else None,
            _outer_or_matmul(gy.T, self.x2) if self.inputs[1].requires_grad else None,
        ]
        if len(self.inputs) == 3:
            grads.append(gy.sum(axis=0))
        return tuple(grads)


def matmul(a, b):
    return MatMul()(a, b)


def linear(x, weight, bias=None):
    if bias is None:
        return Linear()(x, weight)
    return Linear()(x, weight, bias)
