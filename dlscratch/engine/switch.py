"""Two paths through one library: the reference implementations, and the fast ones behind a switch.

Every operation has a **reference implementation**: the plainest correct forward and backward,
vectorised but without tricks, the version a lesson derives (``operations/``). Some operations
also have a **fast implementation** in ``dlscratch/fast/``: the same signature, the same numbers,
and a docstring that says what makes it faster and why (``python -m dlscratch.bench`` measures by how
much). The fast path is the default; the reference path runs everything on the reference implementations:

    with dlscratch.reference():          # the reference path inside the block
        loss = F.cross_entropy(model(x), y)

    DLSCRATCH_REFERENCE=1 python train.py    # the reference path for a whole run

A reference module marks its public functions with ``@switched``; a fast module registers its
version with ``@fast_version_of(reference_function)``. The operations, ``nn`` and ``optim`` never import from
``dlscratch.fast`` (a test checks it), so reading them never leads into the tricks.

The engine's own fast path is no operation's fast version and has no entry here: recording an operation and
walking back in one frame each (``dlscratch/fast/graph.py``). The switch picks it where a reader looks, in
``Function.__call__`` (``dlscratch/engine/function.py``) and ``dlscratch.autograd.propagate``.
"""

import contextlib
import functools
import threading

from .settings import env_flag


class _PathState(threading.local):
    fast = not env_flag("DLSCRATCH_REFERENCE", default=False)
    left_out = frozenset()  # reference functions whose fast versions do not run (``fast_path_without``)


_state = _PathState()
_fast_versions = {}  # reference function -> its fast version


def fast_path_enabled():
    """True when operations run their fast implementations (the default)."""
    return _state.fast


def reference():
    """Run everything inside the ``with`` block (or the decorated function) on the reference path."""
    return _on_path(fast=False)


def fast_path():
    """Run the ``with`` block on the fast path (the default; for fast-only variants inside a
    ``reference()`` block, or a whole run with ``DLSCRATCH_REFERENCE=1``)."""
    return _on_path(fast=True)


@contextlib.contextmanager
def fast_path_without(*functions):
    """Run the ``with`` block on the fast path, but for ``functions`` (reference functions, or their ``@switched``
    wrappers), which run their reference versions: what one trick changes (lessons 05 and 08 count the launches
    that each fusion removes)."""
    left_out = frozenset(getattr(f, "reference", f) for f in functions)
    unknown = [f for f in left_out if f not in _fast_versions]
    if unknown:
        raise ValueError(f"fast_path_without: {', '.join(map(repr, unknown))} has no fast version to leave out")
    previous = _state.fast, _state.left_out
    _state.fast, _state.left_out = True, previous[1] | left_out
    try:
        yield
    finally:
        _state.fast, _state.left_out = previous


@contextlib.contextmanager
def _on_path(fast):
    previous, _state.fast = _state.fast, fast
    try:
        yield
    finally:
        _state.fast = previous


def switched(reference_function):
    """Decorator for a reference module's public function: calls run its fast version, when one
    is registered and the fast path is on, and the reference function itself otherwise."""

    @functools.wraps(reference_function)
    def call(*args, **kwargs):
        if _state.fast and reference_function not in _state.left_out:  # ``implementation``, written inline
            return _fast_versions.get(reference_function, reference_function)(*args, **kwargs)
        return reference_function(*args, **kwargs)

    call.reference = reference_function
    return call


def fast_version_of(function):
    """Decorator for a fast module: register the decorated function as the fast version of
    ``function`` (a reference function, or its ``@switched`` wrapper)."""
    reference_function = getattr(function, "reference", function)

    def register(fast):
        _fast_versions[reference_function] = fast
        return fast

    return register


def implementation(function):
    """What the current path runs for ``function`` (a reference function, or its ``@switched`` wrapper)."""
    reference_function = getattr(function, "reference", function)
    if _state.fast and reference_function not in _state.left_out:
        return _fast_versions.get(reference_function, reference_function)
    return reference_function


def fast_versions():
    """``{reference function: fast version}`` of everything registered (for tests and benchmarks)."""
    return dict(_fast_versions)
