"""``Flatten``: merge dimensions, typically images ``(N, C, H, W)`` into rows ``(N, C*H*W)``."""

from ..operations import flatten
from .module import Module


class Flatten(Module):
    """Merge dimensions ``start_dim..end_dim`` (default: all but the batch dimension)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        n = x.ndim
        if not (-n <= self.start_dim < n and -n <= self.end_dim < n) or self.start_dim % n > self.end_dim % n:
            raise ValueError(
                f"Flatten(start_dim={self.start_dim}, end_dim={self.end_dim}) does not fit an input of shape "
                f"{x.shape}: both dims must lie in [-{n}, {n - 1}] with start_dim not after end_dim"
            )
        return flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
