"""CuPy's API, checked: which names CuPy has and which arguments its calls take (for ``arrays.py``).

NumPy accepts more than CuPy does: ``numpy.indices(shape, sparse=True)`` works, ``cupy.indices`` has no
``sparse`` and raises ``TypeError``; ``numpy.add(a, b, where=m)`` works, a CuPy ufunc answers ``TypeError:
Wrong arguments``; ``numpy.random.Generator`` has ``permutation``, CuPy's has not. The strict stand-in computes
with NumPy, so it asks this module first. The signatures come from CuPy itself: ``cupy_api.py``, a table that
``tools/cupy_api.py`` writes from an installed CuPy (and CI checks against one).
"""

import ast

import numpy

from .cupy_api import API, CUPY_VERSION


class _Signature:
    """What a call may pass: positional parameters, keyword names, ``*args``/``**kwargs``, literal defaults."""

    def __init__(self, text):
        arguments = ast.parse(f"def f{text}: pass").body[0].args
        self.positional = [a.arg for a in arguments.posonlyargs + arguments.args]
        self.keywords = {a.arg for a in arguments.args + arguments.kwonlyargs}
        self.any_positional = arguments.vararg is not None
        self.any_keyword = arguments.kwarg is not None
        named = arguments.args[len(arguments.args) - len(arguments.defaults):] + arguments.kwonlyargs
        given = list(arguments.defaults) + list(arguments.kw_defaults)
        self.defaults = {a.arg: d.value for a, d in zip(named, given)
                         if isinstance(d, ast.Constant) and d.value is not ...}  # ``...``: CuPy's is no literal

    def value(self, name, args, kwargs):
        """The value the call gives parameter ``name`` (passed or default)."""
        if name in kwargs:
            return kwargs[name]
        if name in self.positional and self.positional.index(name) < len(args):
            return args[self.positional.index(name)]
        return self.defaults.get(name)


_parsed = {}


def signature(namespace, name):
    """CuPy's signature of ``namespace.name`` (``"cupy"``, ``"cupy.ndarray"``...), or None when not callable.

    Raises ``AttributeError`` as CuPy does when CuPy has no such name.
    """
    key = (namespace, name)
    if key not in _parsed:
        entries = API[namespace]
        if name not in entries:
            owner = f"'{namespace}' object" if namespace in ("cupy.ndarray", "cupy.random.Generator") else \
                f"module '{namespace}'"
            raise AttributeError(f"{owner} has no attribute {name!r} (CuPy {CUPY_VERSION} has none; the strict "
                                 "CuPy stand-in refuses it as CuPy would)")
        text = entries[name]
        _parsed[key] = None if text is None else _Signature(text)
    return _parsed[key]


def has(namespace, name):
    """True when CuPy has ``namespace.name``."""
    return name in API[namespace]


def check_call(namespace, name, args, kwargs, ufunc=False):
    """Raise ``TypeError`` as CuPy would for a call that CuPy's ``namespace.name`` does not take; return its
    signature. A ufunc (``ufunc=True``) words it as CuPy's ufuncs do: ``Wrong arguments {...}``."""
    spec = signature(namespace, name)
    if spec is None:
        raise TypeError(f"'{namespace}.{name}' is not callable in CuPy")
    unknown = {k: v for k, v in kwargs.items() if k not in spec.keywords}
    if unknown and not spec.any_keyword:
        if ufunc:
            raise TypeError(f"Wrong arguments {unknown} (the strict CuPy stand-in refuses {name}'s keyword "
                            f"arguments that CuPy's ufuncs do not take)")
        raise TypeError(f"{name}() got an unexpected keyword argument {next(iter(unknown))!r} (CuPy "
                        f"{CUPY_VERSION}'s {namespace}.{name}{API[namespace][name]} has no such parameter)")
    if len(args) > len(spec.positional) and not spec.any_positional:
        raise TypeError(f"{name}() takes at most {len(spec.positional)} positional arguments "
                        f"({len(args)} given) in CuPy {CUPY_VERSION}: {namespace}.{name}{API[namespace][name]}")
    check_values(namespace, name, spec, args, kwargs)
    return spec


def lays_out_as_numpy(spec):
    """True when a call's result is laid out as NumPy lays it out: CuPy's function takes an ``order`` (``astype``,
    ``empty_like``, ``copy``...) and follows it as NumPy does. Every other new array CuPy makes is C-contiguous:
    ufuncs, reductions, ``where``, ``clip``, advanced indexing."""
    return spec is not None and "order" in spec.keywords


def _float_dtype_only(method):
    def rule(spec, args, kwargs):
        dtype = spec.value("dtype", args, kwargs)
        if dtype is not None and numpy.dtype(dtype).char not in "fd":
            raise TypeError(f"Unsupported dtype {dtype!r} for {method} (CuPy's Generator draws float32 or float64)")
    return rule


def _no_subok(name):
    def rule(spec, args, kwargs):
        if spec.value("subok", args, kwargs) is not None:
            raise TypeError(f"{name}: subok is not supported yet (CuPy's words)")
    return rule


def _pad_mode(spec, args, kwargs):
    mode = spec.value("mode", args, kwargs) or "constant"
    if not isinstance(mode, str) or mode == "median":
        raise ValueError(f"mode '{mode}' is not supported (CuPy's pad has no 'median' and no callable modes)")


#: Argument values that CuPy refuses though NumPy takes them, each as CuPy's source checks it
#: (cupy/random/_generator_api.pyx, cupy/_creation/basic.py, cupy/_padding/pad.py).
VALUE_RULES = {
    ("cupy.random.Generator", "random"): _float_dtype_only("random"),
    ("cupy.random.Generator", "standard_normal"): _float_dtype_only("standard_normal"),
    ("cupy.random.Generator", "standard_exponential"): _float_dtype_only("standard_exponential"),
    ("cupy", "empty_like"): _no_subok("empty_like"),
    ("cupy", "zeros_like"): _no_subok("zeros_like"),
    ("cupy", "ones_like"): _no_subok("ones_like"),
    ("cupy", "full_like"): _no_subok("full_like"),
    ("cupy", "pad"): _pad_mode,
}


def check_values(namespace, name, spec, args, kwargs):
    """Raise CuPy's error for an argument value that CuPy refuses (``VALUE_RULES``)."""
    rule = VALUE_RULES.get((namespace, name))
    if rule is not None:
        rule(spec, args, kwargs)
