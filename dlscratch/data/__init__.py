"""Data: datasets, the DataLoader, MNIST and small synthetic datasets.

    from dlscratch.data import MNIST, DataLoader

    train_loader = DataLoader(MNIST(train=True), batch_size=128, shuffle=True, seed=0)
    for images, labels in train_loader:   # (128, 1, 28, 28) float32, (128,) int64, on the current device
        ...

    train, val = random_split(MNIST(train=True), [55000, 5000], seed=0)   # two disjoint Subsets
"""

from .dataset import Dataset, Subset, TensorDataset, random_split
from .download import ChecksumError, DownloadError, download
from .idx import IDXError, read_idx
from .loader import DataLoader
from .mnist import MNIST, load_mnist
from .synthetic import blobs, sine_waves, spiral

__all__ = [
    "MNIST", "ChecksumError", "DataLoader", "Dataset", "DownloadError", "IDXError", "Subset", "TensorDataset",
    "blobs", "download", "load_mnist", "random_split", "read_idx", "sine_waves", "spiral",
]
