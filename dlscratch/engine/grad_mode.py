"""Switching graph recording on and off: ``no_grad()``, ``enable_grad()`` and ``set_grad_enabled`` (PyTorch's
names), each a ``with`` block or a decorator.

The core's ``no_grad`` (``core/grad_mode.py``) is the idea; these add PyTorch's rules for decorators. A decorated
function switches the mode with an instance of its own at each call (one instance saving the mode for every call
would let a recursive call overwrite what the outer one restores), and a decorated generator function has the
mode inside the generator, each time it resumes, and not in the code that drives it.
"""

import functools
import inspect

from ..core.grad_mode import _state
from ..core.grad_mode import no_grad as core_no_grad

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]


def is_grad_enabled():
    """True when operations on tensors that require grad are recorded into a graph."""
    return _state.enabled


class _Switch:
    """What the three share: used as a decorator, each call runs under a fresh switch (``_fresh``)."""

    def _fresh(self):
        return type(self)()

    def __call__(self, func):
        if inspect.isgeneratorfunction(func):
            return self._decorate_generator(func)

        @functools.wraps(func)
        def switched(*args, **kwargs):
            with self._fresh():
                return func(*args, **kwargs)

        return switched

    def _decorate_generator(self, func):
        @functools.wraps(func)
        def switched(*args, **kwargs):
            generator = func(*args, **kwargs)
            resume = functools.partial(generator.send, None)
            while True:
                try:
                    with self._fresh():
                        value = resume()
                except StopIteration as stop:
                    return stop.value
                try:
                    resume = functools.partial(generator.send, (yield value))
                except GeneratorExit:
                    with self._fresh():
                        generator.close()
                    raise
                except BaseException as exc:  # thrown in by the caller: into the generator, under the mode
                    resume = functools.partial(generator.throw, exc)

        return switched


class no_grad(_Switch, core_no_grad):
    """Record nothing inside the ``with`` block, the decorated function or the decorated generator."""


class enable_grad(no_grad):
    """Record graphs again inside a ``no_grad`` block (a ``with`` block, a decorated function or generator)."""

    mode = True


class set_grad_enabled(_Switch):
    """Record graphs when ``mode`` is True and not when it is False, as PyTorch's does.

    Called as a function, it takes effect at once and lasts until changed; used in a ``with`` block, it also
    restores the previous mode when the block ends (even by an exception); as a decorator, it switches the mode
    only while the function runs. ``mode`` must be a bool (PyTorch's rule): anything else is refused with the
    mode unchanged.
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(mode): mode must be a bool, got {type(mode).__name__} {mode!r}")
        self.mode, self.previous = mode, _state.enabled
        _state.enabled = mode

    def _fresh(self):
        return set_grad_enabled(self.mode)

    def __call__(self, func):
        _state.enabled = self.previous  # a decorator switches only while the function runs
        return super().__call__(func)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        _state.enabled = self.previous
