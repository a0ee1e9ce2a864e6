"""``Embedding``: a learned vector per token id, looked up by integer index (PyTorch's ``nn.Embedding``)."""

import numpy

from .. import backend
from ..engine.tensor import Tensor
from ..operations.embedding import check_padding_idx, embedding
from . import init
from .module import Module, Parameter


class Embedding(Module):
    """``indices`` (integers of any shape, in ``[0, num_embeddings)``) -> ``(*indices.shape, embedding_dim)``,
    the rows of ``weight: (num_embeddings, embedding_dim)``.

    Initialised as PyTorch does: ``N(0, 1)``, with the row ``padding_idx`` (if given; negative counts from the
    end) set to zeros. That row gets no gradient, so it stays zero: the vector of a padding token.
    """

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, *, device=None):
        super().__init__()
        for name, n in (("num_embeddings", num_embeddings), ("embedding_dim", embedding_dim)):
            if not isinstance(n, (int, numpy.integer)) or isinstance(n, bool) or n < 1:
                raise ValueError(f"Embedding: {name} must be a positive integer, got {n!r}")
        self.num_embeddings, self.embedding_dim = int(num_embeddings), int(embedding_dim)
        self.padding_idx = check_padding_idx(padding_idx, self.num_embeddings, "Embedding")
        xp = backend.xp if device is None else backend.module_for(device)
        self.weight = Parameter(xp.empty((self.num_embeddings, self.embedding_dim), dtype=numpy.float32))
        init.normal_(self.weight)
        if self.padding_idx is not None:
            self.weight.data[self.padding_idx] = 0

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None):
        """An Embedding whose weight is ``embeddings: (num_embeddings, embedding_dim)`` (copied), not learned
        when ``freeze`` (PyTorch's default)."""
        table = embeddings.data if isinstance(embeddings, Tensor) else embeddings
        if getattr(table, "ndim", None) != 2 or table.dtype.kind != "f":
            raise ValueError("Embedding.from_pretrained: embeddings must be a 2-D floating-point Tensor, got "
                             f"{getattr(table, 'dtype', type(table).__name__)} of shape {getattr(table, 'shape', '?')}")
        layer = cls(*table.shape, padding_idx=padding_idx, device="gpu" if backend.is_gpu_array(table) else "cpu")
        layer.weight = Parameter(table.astype(numpy.float32, copy=True), requires_grad=not freeze)
        return layer

    def forward(self, input):
        return embedding(input, self.weight, self.padding_idx)

    def extra_repr(self):
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"
