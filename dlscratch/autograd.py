"""Backpropagation, as the library runs it: the core's walk (``core/backprop.py``), with the callbacks that
hooks queue during it (``layers/callbacks.py``); each function's part of the walk carries the layers of
``Function.run_backward``. The fast path runs the same walk in one frame (``fast/one_frame.py``)."""

from .core.backprop import reachable_functions
from .layers.callbacks import backward_with_callbacks as backward
from .layers.callbacks import queue_callback

__all__ = ["backward", "queue_callback", "reachable_functions"]
