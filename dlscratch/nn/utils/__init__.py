"""Helpers around layers, by PyTorch's names: ``nn.utils.rnn`` packs variable-length sequences,
``nn.utils.prune`` zeroes weights through masks."""

from . import prune, rnn

__all__ = ["prune", "rnn"]
