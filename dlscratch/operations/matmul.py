"""Matrix products: ``matmul`` (1-D, 2-D and batched, as ``numpy.matmul``) and ``linear``."""

from ..engine.function import Function
from ..engine.switch import switched
from ..engine.wrappable import wrappable
from .broadcast import sum_to
from .products import gemm
from .sums import sum_over


class MatMul(Function):
    name = "matmul"
    returns_unshared_grads = True
    #: ``a.T @ gy``, the product behind a weight gradient; the fast path writes outer products faster
    weight_product = staticmethod(gemm)

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
        return gemm(a, b)

    def backward(self, gy):
        a, b = self.a, self.b
        a2 = a[None, :] if a.ndim == 1 else a
        b2 = b[:, None] if b.ndim == 1 else b
        if b.ndim == 1:  # first, so that a 1-D @ 1-D scalar gradient becomes (1, 1)
            gy = gy[..., None]
        if a.ndim == 1:
            gy = gy[..., None, :]
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = sum_to(gemm(gy, b2.swapaxes(-1, -2)), a2.shape).reshape(a.shape)
        if self.needs_input_grad[1]:
            gb = sum_to(self.weight_product(a2.swapaxes(-1, -2), gy), b2.shape).reshape(b.shape)
        return ga, gb


class Linear(Function):
    """``x @ W.T + b`` in one node. ``x: (*, in)``, ``W: (out, in)``, ``b: (out,)`` or absent;
    output ``(*, out)``. Leading dimensions are flattened into one GEMM."""

    name = "linear"
    returns_unshared_grads = True
    weight_product = staticmethod(gemm)  # gy.T @ x; see MatMul

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
        y = gemm(self.x2, W.T)
        if b is not None:
            y += b
        return y.reshape(x.shape[:-1] + (W.shape[0],))

    def backward(self, gy):
        gy = gy.reshape(-1, gy.shape[-1])
        grads = [
            gemm(gy, self.W).reshape(self.x_shape) if self.needs_input_grad[0] else None,
            self.weight_product(gy.T, self.x2) if self.needs_input_grad[1] else None,
        ]
        if len(self.inputs) == 3:
            grads.append(self.bias_gradient(gy))
        return tuple(grads)

    def bias_gradient(self, gy):
        """The bias's gradient ``(out,)``: ``gy: (M, out)`` summed over its rows."""
        return sum_over(gy, 0)


@wrappable
@switched
def matmul(a, b):
    return MatMul()(a, b)


@wrappable
@switched
def linear(x, weight, bias=None):
    return Linear()(x, weight) if bias is None else Linear()(x, weight, bias)
