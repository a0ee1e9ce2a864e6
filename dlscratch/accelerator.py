"""PyTorch's ``torch.accelerator`` (its tutorials start with it): the one accelerator dlscratch knows is a
CUDA GPU through CuPy.

    device = dlscratch.accelerator.current_accelerator().type if dlscratch.accelerator.is_available() else "cpu"
"""

from . import cuda
from .device import device


def is_available():
    return cuda.is_available()


def current_accelerator():
    """``device("cuda")`` where a GPU is available, else None."""
    return device("cuda") if is_available() else None


def device_count():
    return cuda.device_count()
