"""``signals_deferred``: hold back the signals that Python handles until a block has run;
``float_errors_deferred``: the same for NumPy's floating-point errors.

A signal handler written in Python (Ctrl-C's, which raises ``KeyboardInterrupt``; a ``SIGALRM``
timeout's) runs between any two bytecodes of the main thread, so an exception it raises can land
between two writes that belong together. ``Optimizer.step`` writes its update inside this block,
and ``fit`` the update and its record, so that such an exception arrives after the last write.

An operation that overflows, divides by zero or makes a NaN raises IEEE 754's flag for it, which
NumPy turns into a warning or, after ``numpy.seterr(all="raise")``, into ``FloatingPointError``,
or into an error when warnings are turned into errors: an exception, again, between two writes of
an update that computes as it writes (``fast/optim.py``).
"""

import _signal  # signal's functions without its enum conversions, which cost microseconds per call
import contextlib
import contextvars
import signal
import threading

import numpy

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


# For each kind of floating-point error, as NumPy's error callback names it: an operation on float32
# numbers that raises that error alone.
_FLOAT_ERRORS = {
    "divide by zero": (numpy.divide, 1.0, 0.0),
    "overflow": (numpy.multiply, 3e38, 10.0),
    "underflow": (numpy.multiply, 1e-30, 1e-30),
    "invalid value": (numpy.subtract, numpy.inf, numpy.inf),
}


_modes_outside = contextvars.ContextVar("modes_outside", default=None)  # NumPy's modes around the deferring block


def float_errors_raise():
    """True when NumPy raises on a floating-point error (``numpy.seterr``'s "raise", or "call" to a function
    that may), as set outside ``float_errors_deferred``: an update must then be computed before anything is
    written, or an error would split the step."""
    modes = _modes_outside.get() or numpy.geterr()
    return not {"raise", "call"}.isdisjoint(modes.values())


@contextlib.contextmanager
def float_errors_deferred():
    """Run the block with NumPy's floating-point errors noted instead of handled, then raise each kind
    noted again, once, for NumPy to handle as its settings outside the block say (a warning by default,
    ``FloatingPointError`` after ``numpy.seterr(all="raise")``). Use it inside ``signals_deferred``, so
    that no signal interrupts ``numpy.errstate`` between setting its modes and putting them back."""
    noted = {}
    token = _modes_outside.set(_modes_outside.get() or numpy.geterr())
    try:
        with numpy.errstate(all="call", call=noted.setdefault):  # the callback gets (kind, flag)
            yield
    finally:
        _modes_outside.reset(token)
    for kind in noted:
        operation, a, b = _FLOAT_ERRORS[kind]
        operation(numpy.float32(a), numpy.float32(b))
