"""Layer: a check left on the device, run where the host reads the result anyway.

Some fast GPU kernels do not wait to check their input (the GPU cross-entropy's labels, ``fast/loss.py``:
waiting would cost a host-device round trip per step). They write NaN instead, and attach the check to their
output as ``tensor.deferred_check``. ``.item()``, ``float()``, ``.numpy()`` and ``.tolist()`` read the value
to the host; when it holds a NaN or an infinity, the check runs there and raises its error.
"""

import numpy


def read(tensor, value):
    """``value``, just read from ``tensor`` to the host, after its deferred check if it is not finite."""
    if tensor.deferred_check is not None and not finite(value):
        tensor.deferred_check()
    return value


def finite(value):
    """True when a value read to the host (a number or a NumPy array) holds no NaN or infinity."""
    values = numpy.asarray(value)
    return values.dtype.kind not in "fc" or bool(numpy.isfinite(values).all())
