"""Helpers around layers, by PyTorch's names: ``nn.utils.rnn`` packs variable-length sequences."""

from . import rnn

__all__ = ["rnn"]
