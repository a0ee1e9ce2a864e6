"""Embedding lookup: rows of a weight table picked by integer indices, PyTorch's ``F.embedding``."""

from .. import backend
from ..engine.function import Function
from ..engine.tensor import Tensor


class Embedding(Function):
    """``weight: (num_embeddings, dim)`` and integer ``indices`` of any shape -> ``(*indices.shape, dim)``,
    the rows ``weight[indices]``.

    An index may appear many times in a batch, so backward adds every output row's gradient into its weight
    row (the shim's ``scatter_add``, never an assignment, which would keep only one of them). The row
    ``padding_idx`` gets no gradient: it stays what it is (zeros, as ``nn.Embedding`` makes it).
    """

    saves_inputs = False  # backward reads the indices, kept by the node
    name = "embedding"

    def __init__(self, indices, padding_idx=None):
        self.indices, self.padding_idx = indices, padding_idx

    def forward(self, weight):
        self.num_embeddings = weight.shape[0]
        return weight[self.indices]

    def backward(self, gy):
        xp = backend.get_array_module(gy)
        dim = gy.shape[-1]
        gw = xp.zeros((self.num_embeddings, dim), dtype=gy.dtype)
        backend.scatter_add(gw, self.indices.reshape(-1), gy.reshape(-1, dim))
        if self.padding_idx is not None:
            gw[self.padding_idx] = 0
        return gw


def check_padding_idx(padding_idx, num_embeddings, op):
    """``padding_idx`` as a row number in ``[0, num_embeddings)`` (a negative one counts from the end, as in
    PyTorch), or None."""
    if padding_idx is None:
        return None
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, int):
        raise TypeError(f"{op}: padding_idx must be an int or None, got {padding_idx!r}")
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise ValueError(f"{op}: padding_idx {padding_idx} must lie within the {num_embeddings} embeddings "
                         f"({-num_embeddings} to {num_embeddings - 1})")
    return padding_idx % num_embeddings


def embedding(input, weight, padding_idx=None):
    """The rows of ``weight: (num_embeddings, dim)`` at the integer indices ``input`` (a Tensor or array of any
    shape): ``(*input.shape, dim)``. Float indices and indices outside ``[0, num_embeddings)`` are refused."""
    indices = input.data if isinstance(input, Tensor) else input
    table = weight.data if isinstance(weight, Tensor) else weight
    if table.ndim != 2:
        raise ValueError(f"embedding: weight must be (num_embeddings, embedding_dim), got shape {table.shape}")
    if getattr(indices, "dtype", None) is None or indices.dtype.kind not in "iu":
        got = indices.dtype if hasattr(indices, "dtype") else type(input).__name__
        raise TypeError(f"embedding: indices must be integers (int64), got {got}; round them and convert with "
                        ".long(), or build them with dtype=int64")
    if backend.is_gpu_array(indices) != backend.is_gpu_array(table):
        raise ValueError("embedding: the indices and the weight are on different devices; move the indices with "
                         ".to(weight.device)")
    n = table.shape[0]
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
        bad = int(indices.min()) if int(indices.min()) < 0 else int(indices.max())
        raise IndexError(f"embedding: index {bad} is out of range for {n} embeddings (0 to {n - 1})")
    return Embedding(indices, check_padding_idx(padding_idx, n, "embedding"))(weight)
