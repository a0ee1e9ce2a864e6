"""A flag on the device that stops the fused optimizer kernels from writing (``fast/optim_kernels.py``).

``fit`` on a GPU checks each step's loss and gradients on the device and sets the flag there, instead of
waiting for the host to read them (``fast/fit_steps.py``); every kernel of an optimizer step reads
it and writes nothing while ``halt[0]`` is not 0. Outside ``halting_on`` the kernels read an array of
zeros. It lives in a module of its own, so that the two share it without importing each other.
"""

import contextlib
import contextvars

import numpy

from .. import backend
from .kept_arrays import keep

_halt = contextvars.ContextVar("halt", default=None)
_never = {}  # array type -> its zeros, made once


@contextlib.contextmanager
def halting_on(flag):
    """Inside, the fused kernels update nothing while ``flag[0]`` (a float64 device array of 2) is not 0."""
    token = _halt.set(flag)
    try:
        yield flag
    finally:
        _halt.reset(token)


def halt_flag(like):
    """The flag that a kernel updating ``like`` (a device array) reads now."""
    flag = _halt.get()
    if flag is not None:
        return flag
    never = _never.get(type(like))
    if never is None:  # kept as the backward's seed is, so that one made inside a CUDA graph capture is not kept
        never = keep(_never, type(like), backend.get_array_module(like).zeros(2, dtype=numpy.float64))
    return never
