"""Entry points: where a later lesson's layer wraps an operation, so that the operation never imports it.

A reference module marks an operation's public function ``@entry_point``; a layer taught later wraps the
calls with ``wrap_calls(operation, wrapper)`` when it is imported. Autocast (lesson 13) is such a layer:
``dlscratch/amp/casting_lists.py`` casts the arguments of the operations on its lists this way, as
``dlscratch/fast/`` registers its fast versions with ``@fast_version_of`` (``paths.py``). An entry point that
no layer wrapped costs one dictionary look-up per call.
"""

import functools

_wrappers = {}  # entry point -> the wrappers registered for it, innermost first
_runs = {}  # entry point -> what its calls run: the operation inside those wrappers


def entry_point(operation):
    """Decorator of an operation's public function: calls run through the wrappers that later layers
    register with ``wrap_calls``, or straight into ``operation`` when none did."""

    @functools.wraps(operation)  # keeps ``.reference`` of a ``@dispatch`` wrapper, for ``fast_version_of``
    def call(*args, **kwargs):
        return _runs.get(call, operation)(*args, **kwargs)

    call.operation = operation
    return call


def wrap_calls(entry, wrapper):
    """Run every call of ``entry`` (an ``@entry_point`` function) through ``wrapper``, a decorator
    ``function -> function``, outside the wrappers registered before; registering it again changes nothing."""
    if not hasattr(entry, "operation"):
        raise TypeError(f"wrap_calls: {getattr(entry, '__name__', entry)!r} is not marked @entry_point")
    wrappers = _wrappers.setdefault(entry, [])
    if wrapper not in wrappers:
        wrappers.append(wrapper)
        _runs[entry] = wrapper(_runs.get(entry, entry.operation))
