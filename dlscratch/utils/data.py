"""PyTorch's ``torch.utils.data``: the datasets and the loader of ``dlscratch.data``, under PyTorch's path, so
that ``from dlscratch.utils.data import DataLoader, Dataset`` reads as PyTorch code does."""

from ..data import DataLoader, Dataset, Subset, TensorDataset, random_split

__all__ = ["DataLoader", "Dataset", "Subset", "TensorDataset", "random_split"]
