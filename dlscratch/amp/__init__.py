"""Mixed precision (P. Micikevicius et al., "Mixed Precision Training", ICLR 2018): float16 arithmetic with
float32 master weights, and dynamic loss scaling so that small gradients survive float16. PyTorch's names."""

from . import casting_lists  # noqa: F401  (importing registers the casting lists)
from .autocast import autocast, get_autocast_dtype, is_autocast_cache_enabled, is_autocast_enabled
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_cache_enabled", "is_autocast_enabled"]
