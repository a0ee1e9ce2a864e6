"""PyTorch's ``torch.utils``: its ``data`` module, by PyTorch's path."""

from . import data

__all__ = ["data"]
