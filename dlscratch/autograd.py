"""Backpropagation, as the library runs it. ``backward`` picks the walk here: on the reference path the core's
(``core/backprop.py``), which calls each function's ``Function.run_backward`` with its layers; on the fast path
the same walk in one frame (``one_frame.backward``). Where a leaf has post-accumulate-grad hooks, they run once its
gradient is whole (``layers/leaf_hooks.py``); once some ``.data`` was given another shape, a leaf's ``.grad`` of the
wrong shape is refused before the walk (``layers/errors.py``). Then it runs the callbacks that hooks queued during
the walk (``layers/callbacks.py``)."""

import functools

from . import one_frame
from .core import backprop
from .core.backprop import reachable_functions
from .layers import callbacks, errors, leaf_hooks
from .layers.callbacks import queue_callback
from .paths import _state as _path

__all__ = ["backward", "queue_callback", "reachable_functions"]


def backward(output, grad):
    """Propagate array ``grad`` (shaped like tensor ``output``) to every tensor ``output`` depends on, then call
    what hooks queued with ``queue_callback``."""
    if errors.reshaped_data[0]:
        errors.check_leaf_grads(output, reachable_functions)
    walk = one_frame.backward if _path.fast else backprop.backward
    if leaf_hooks.registered[0]:
        walk = functools.partial(leaf_hooks.walk_calling_hooks_once, walk)
    callbacks.run_then_callbacks(walk, output, grad)
