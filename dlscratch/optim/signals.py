"""``signals_deferred``: hold back the signals that Python handles until a block has run.

A signal handler written in Python (Ctrl-C's, which raises ``KeyboardInterrupt``; a ``SIGALRM``
timeout's) runs between any two bytecodes of the main thread, so an exception it raises can land
between two writes that belong together. ``Optimizer.step`` writes its update inside this block,
and ``fit`` the update and its record, so that such an exception arrives after the last write.
"""

import _signal  # signal's functions without its enum conversions, which cost microseconds per call
import contextlib
import signal
import threading

_SIGNALS = tuple(sorted(signal.valid_signals()))


@contextlib.contextmanager
def signals_deferred():
    """Run the block with every signal that has a Python handler held back, then deliver each one
    received to that handler (which may raise). Signals that are ignored, left to their default
    action or handled outside Python are left alone; only the main thread runs signal handlers,
    so elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received, holding = [], [True]
    previous = {signum: handler for signum in _SIGNALS if callable(handler := _signal.getsignal(signum))}

    def hold(signum, frame):
        if holding[0]:
            received.append(signum)
        else:  # the block is over: a holder not yet put back passes the signal on
            previous[signum](signum, frame)

    try:
        for signum in previous:
            _signal.signal(signum, hold)
        yield
    finally:
        holding[0] = False
        for signum, handler in previous.items():
            _signal.signal(signum, handler)
    for signum in dict.fromkeys(received):
        signal.raise_signal(signum)
