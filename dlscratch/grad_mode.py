"""Switching graph recording on and off: the core's ``no_grad()`` (``core/grad_mode.py``), ``enable_grad()`` and
``set_grad_enabled`` (PyTorch's names)."""

from .core.grad_mode import _state, no_grad

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]


def is_grad_enabled():
    """True when operations on tensors that require grad are recorded into a graph."""
    return _state.enabled


class enable_grad(no_grad):
    """Record graphs again inside a ``no_grad`` block (a ``with`` block or a decorated function)."""

    mode = True


class set_grad_enabled:
    """Record graphs when ``mode`` is true and not otherwise, as PyTorch's does.

    Called as a function, it takes effect at once and lasts until changed; used in a ``with``
    block, it also restores the previous mode when the block ends (even by an exception).
    """

    def __init__(self, mode):
        self.previous = _state.enabled
        _state.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self.previous
