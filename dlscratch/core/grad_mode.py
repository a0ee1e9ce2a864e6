"""Recording off: ``no_grad()`` (PyTorch's name), for evaluation and optimizer updates. The flag is
thread-local: a data-loading thread under ``no_grad`` does not change what training records."""

import contextlib
import threading


class _GradMode(threading.local):
    enabled = True


_state = _GradMode()


class no_grad(contextlib.ContextDecorator):
    """Record nothing inside the ``with`` block (or the decorated function)."""

    mode = False

    def __enter__(self):
        self.previous = _state.enabled
        _state.enabled = self.mode
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self.previous
