"""Layer: callbacks at the end of a backward pass. ``queue_callback(f)``, called from a hook while backward
runs, calls ``f()`` once backward has reached every leaf (PyTorch's engine has the same);
``DistributedDataParallel`` waits there for its gradient averages. Attached around the walk that
``dlscratch.autograd.backward`` picks.
"""

_callbacks = []  # one list per backward pass running, innermost last


def queue_callback(callback):
    """Call ``callback()`` once the backward pass running now has reached every leaf. Outside a backward
    pass this raises RuntimeError."""
    if not _callbacks:
        raise RuntimeError("queue_callback: no backward pass is running; call it from a hook during backward()")
    _callbacks[-1].append(callback)


def run_then_callbacks(walk, output, grad):
    """``walk(output, grad)``, the walk back, then the callbacks queued during it, in order."""
    _callbacks.append([])
    try:
        walk(output, grad)
        queued = _callbacks[-1]
        while queued:
            queued.pop(0)()
    finally:
        _callbacks.pop()
