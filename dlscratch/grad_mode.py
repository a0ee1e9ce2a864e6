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


@contextlib.contextmanager
def set_grad_enabled(mode):
    """Context manager that records graphs when ``mode`` is true and not otherwise."""
    previous = _state.enabled
    _state.enabled = bool(mode)
    try:
        yield
    finally:
        _state.enabled = previous


def no_grad():
    """Context manager in which no graph is recorded (evaluation, optimizer updates)."""
    return set_grad_enabled(False)


def enable_grad():
    """Context manager that records graphs again inside a ``no_grad`` block."""
    return set_grad_enabled(True)
