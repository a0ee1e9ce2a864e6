"""Backpropagation, as the library runs it. ``backward`` picks the walk here: on the reference path the core's
(``core/backprop.py``), which calls each function's ``Function.run_backward`` with its layers; on the fast path
the same walk in one frame (``one_frame.backward``). Then it runs the callbacks that hooks queued during the walk
(``layers/callbacks.py``)."""

from . import one_frame
from .core import backprop
from .core.backprop import reachable_functions
from .layers import callbacks
from .layers.callbacks import queue_callback
from .paths import _state as _path

__all__ = ["backward", "queue_callback", "reachable_functions"]


def backward(output, grad):
    """Propagate array ``grad`` (shaped like tensor ``output``) to every tensor ``output`` depends on, then call
    what hooks queued with ``queue_callback``."""
    walk = one_frame.backward if _path.fast else backprop.backward
    callbacks.run_then_callbacks(walk, output, grad)
