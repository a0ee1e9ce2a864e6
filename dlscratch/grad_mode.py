"""Switching graph recording on and off: ``no_grad()`` and friends (PyTorch's names).

The flag is thread-local, so a data-loading thread under ``no_grad`` does not change what the
training thread records.
"""

import contextlib
import threading


class _GradMode(threading.local):
    enabled = True


_state = _GradMode()


def is_grad_enabled():
    """True when operations on tensors that require grad are recorded into a graph."""
    return _state.enabled


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


class _Mode(contextlib.ContextDecorator):
    """A ``with`` block (or a decorated function) run with recording set to ``self.mode``."""

    mode = True

    def __enter__(self):
        self.previous = _state.enabled
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self.previous


class no_grad(_Mode):
    """Context manager in which no graph is recorded (evaluation, optimizer updates)."""

    mode = False


class enable_grad(_Mode):
    """Context manager that records graphs again inside a ``no_grad`` block."""

    mode = True
