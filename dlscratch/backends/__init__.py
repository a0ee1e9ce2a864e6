"""PyTorch's ``torch.backends``: questions about hardware back ends that PyTorch has and dlscratch has not.
(The array-module shim, NumPy or CuPy, is ``dlscratch.backend``.)"""

from . import mps

__all__ = ["mps"]
