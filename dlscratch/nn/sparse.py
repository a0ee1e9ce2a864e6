"""``SparseLinear``: a pruned ``Linear`` for inference, its weight stored as compressed sparse rows (CSR).

CSR keeps only the nonzero weights (``data``), their column numbers (``indices``) and where each row starts
(``indptr``): at float32 values and int32 columns, ``8 nnz + 4 (rows + 1)`` bytes against ``4 rows cols``. The
product visits only the nonzeros, but indirectly (a gather per weight), where a dense product streams memory in
order through a tuned GEMM; so sparse pays only when few weights are left. Lesson 13 measures where. On the CPU the
matrix is SciPy's (``scipy.sparse``), on a GPU cuSPARSE's through ``cupyx.scipy.sparse``.
"""

from .. import backend
from ..engine.tensor import Tensor
from .binary import _Binary
from .linear import Linear
from .module import Module


def _sparse_module(array):
    """``scipy.sparse`` for a NumPy array, ``cupyx.scipy.sparse`` for a GPU array."""
    if backend.is_gpu_array(array):
        return backend.cupyx.scipy.sparse
    try:
        import scipy.sparse
    except ImportError as exc:
        raise ImportError("SparseLinear needs SciPy on the CPU: pip install scipy") from exc
    return scipy.sparse


class SparseLinear(Module):
    """From a ``Linear`` (pruned, with ``prune.remove`` done, or any): ``x: (N, in) -> (N, out)``, computed as
    ``(W_csr @ x.T).T + b``. Inference only: it records no graph.

    The three CSR arrays are buffers (``weight_data``, ``weight_indices``, ``weight_indptr``), so ``state_dict``,
    ``load_state_dict`` and ``to()`` carry them like any other; ``weight`` is the CSR matrix built on them."""

    def __init__(self, linear):
        super().__init__()
        if not isinstance(linear, Linear):
            raise TypeError(f"SparseLinear: expected a Linear, got {type(linear).__name__}")
        if isinstance(linear, _Binary):  # its shadow weight is not what it computes with, and signs are never 0
            raise TypeError("SparseLinear: BinaryLinear computes with sign(weight), which has no zeros to skip; store "
                            "its signs with nn.binary.packed_signs")
        linear._recompute_derived()  # a pruned weight as its weight_orig is now, not as the last forward saw it
        csr = _sparse_module(linear.weight.data).csr_matrix(linear.weight.data)
        self.register_buffer("weight_data", Tensor(csr.data))
        self.register_buffer("weight_indices", Tensor(csr.indices))
        self.register_buffer("weight_indptr", Tensor(csr.indptr))
        self.register_buffer("bias", None if linear.bias is None else Tensor(linear.bias.data.copy()))
        self.in_features, self.out_features = linear.in_features, linear.out_features

    @property
    def weight(self):
        """The ``(out_features, in_features)`` CSR matrix on the buffers (no copy)."""
        data = self.weight_data.data
        if data.dtype.kind == "f" and data.dtype.itemsize < 4:
            raise TypeError(f"SparseLinear: sparse products have no {data.dtype}; keep this layer float32 (.float())")
        arrays = (data, self.weight_indices.data, self.weight_indptr.data)
        return _sparse_module(data).csr_matrix(arrays, shape=(self.out_features, self.in_features))

    def forward(self, x):
        if not isinstance(x, Tensor):
            raise TypeError(f"SparseLinear: expected a Tensor, got {type(x).__name__}")
        if x.shape[-1] != self.in_features:
            raise ValueError(f"SparseLinear: input of {x.shape[-1]} features, expected {self.in_features}")
        rows = x.data.reshape(-1, self.in_features)
        y = (self.weight @ rows.T).T
        if self.bias is not None:
            y = y + self.bias.data
        y = backend.get_array_module(rows).ascontiguousarray(y)
        return Tensor(y.reshape(x.shape[:-1] + (self.out_features,)))

    def stored_bytes(self):
        """The CSR arrays' bytes, and the bias's."""
        return sum(int(b.data.nbytes) for _, b in self.named_buffers())

    def extra_repr(self):
        density = self.weight_data.numel() / (self.in_features * self.out_features)
        return f"in_features={self.in_features}, out_features={self.out_features}, density={density:.3f}"


def dense_bytes(linear):
    """What the ``Linear`` stores: four bytes per weight and bias."""
    return sum(int(p.data.nbytes) for p in linear.parameters())
