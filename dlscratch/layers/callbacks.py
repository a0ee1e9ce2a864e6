"""Layer: callbacks at the end of a backward pass. ``queue_callback(f)``, called from a hook while backward
runs, calls ``f()`` once backward has reached every leaf (PyTorch's engine has the same);
``DistributedDataParallel`` waits there for its gradient averages. Attached around the core's walk by
``dlscratch.autograd.backward``.
"""

from .. import paths
from ..core import backprop

#: The core's walk, or on the fast path its one-frame version (``fast/one_frame.py``).
walk = paths.dispatch(backprop.backward)

_callbacks = []  # one list per backward pass running, innermost last


def queue_callback(callback):
    """Call ``callback()`` once the backward pass running now has reached every leaf. Outside a backward
    pass this raises RuntimeError."""
    if not _callbacks:
        raise RuntimeError("queue_callback: no backward pass is running; call it from a hook during backward()")
    _callbacks[-1].append(callback)


def backward_with_callbacks(output, grad):
    """The walk back, then the callbacks queued during it, in order."""
    _callbacks.append([])
    try:
        walk(output, grad)
        queued = _callbacks[-1]
        while queued:
            queued.pop(0)()
    finally:
        _callbacks.pop()
