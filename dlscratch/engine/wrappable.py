"""Wrappable operations: where a later lesson's feature wraps an operation, so that the operation never imports it.

A reference module marks an operation's public function ``@wrappable``; a feature taught later wraps the
calls with ``wrap_calls(operation, wrapper)`` when it is imported. Autocast (lesson 13) is such a feature:
``dlscratch/amp/casting_lists.py`` casts the arguments of the operations on its lists this way, as
``dlscratch/fast/`` registers its fast versions with ``@fast_version_of`` (``engine/switch.py``). A wrappable
function that nothing wrapped costs one dictionary look-up per call.
"""

import functools

_wrappers = {}  # wrappable function -> the wrappers registered for it, innermost first
_runs = {}  # wrappable function -> what its calls run: the operation inside those wrappers


def wrappable(operation):
    """Decorator of an operation's public function: calls run through the wrappers that later features
    register with ``wrap_calls``, or straight into ``operation`` when none did."""

    @functools.wraps(operation)  # keeps ``.reference`` of a ``@switched`` wrapper, for ``fast_version_of``
    def call(*args, **kwargs):
        return _runs.get(call, operation)(*args, **kwargs)

    call.operation = operation
    return call


def wrap_calls(entry, wrapper):
    """Run every call of ``entry`` (an ``@wrappable`` function) through ``wrapper``, a decorator
    ``function -> function``, outside the wrappers registered before; registering it again changes nothing."""
    if not hasattr(entry, "operation"):
        raise TypeError(f"wrap_calls: {getattr(entry, '__name__', entry)!r} is not marked @wrappable")
    wrappers = _wrappers.setdefault(entry, [])
    if wrapper not in wrappers:
        wrappers.append(wrapper)
        _runs[entry] = wrapper(_runs.get(entry, entry.operation))
