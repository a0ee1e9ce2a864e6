"""In-place writes: change a tensor's memory, safely, and count the change.

``t[index] = value``, ``t.copy_(src)``, ``t.fill_(v)``, ``t.zero_()``, ``t.add_(other, alpha)``,
``t.sub_(other, alpha)``, ``t.mul_(other)`` and ``t.div_(other)`` (and ``+=``, ``-=``, ``*=``, ``/=``, which call
them) write into ``t``'s array and add one to its version counter, so that a graph
that saved ``t`` refuses to backward through the stale value (see ``engine/extensions/versions.py``). ``relu_``
(``nn.ReLU(inplace=True)``) is recorded as well; see its docstring.

They are not recorded in the graph, so, as in PyTorch, they are refused while gradients are
being recorded on a tensor that takes part in one: a leaf that requires grad (write to it under
``no_grad()``, as optimizers and initialisers do), a tensor computed in a recorded graph, or a
value that requires grad (no gradient would reach it). On plain data tensors they always work.
"""

import math
import weakref

import numpy

from .. import backend
from ..core.function import clock
from .extensions.versions import bump, counter_of
from .grad_mode import _state


def setitem(t, index, value):
    """``t[index] = value``: NumPy's indexing and broadcasting, cast to ``t``'s dtype."""
    _check_writable(t, "item assignment", value)
    index = _raw_index(index)
    value = _array_like(t, value, "item assignment")
    try:
        t.data[index] = value
    except ValueError as exc:
        raise ValueError(f"item assignment into a tensor of shape {t.shape}: {exc}") from exc
    bump(t)


def copy_(t, src):
    """Copy ``src`` into ``t``: broadcast to ``t``'s shape, cast to its dtype, moved to its device."""
    _check_writable(t, "copy_", src)
    src = _array_like(t, src, "copy_")
    try:
        backend.get_array_module(t.data).copyto(t.data, src, casting="unsafe")
    except ValueError as exc:
        raise ValueError(
            f"copy_: a source of shape {numpy.shape(src)} cannot be broadcast to this tensor's shape {t.shape}"
        ) from exc
    bump(t)
    return t


def fill_(t, value):
    """Set every element to the number ``value``."""
    from .extensions.operands import is_number as _is_number

    _check_writable(t, "fill_", value)
    if not _is_number(value):
        raise TypeError(f"fill_: the value must be a number, not {type(value).__name__} (use copy_ for arrays)")
    value = value.item() if hasattr(value, "item") else value
    if backend.is_gpu_array(t.data) and isinstance(value, float) and value == 0 and math.copysign(1, value) < 0:
        # CuPy's fill writes a zero with a memset, all bits clear: -0.0 comes from a 0-d array that holds it
        from .extensions.operands import scalar_array

        backend.get_array_module(t.data).copyto(t.data, scalar_array(value, t.data), casting="unsafe")
    else:
        t.data.fill(value)
    bump(t)
    return t


def add_(t, other, alpha=1):
    """``t += alpha * other``; ``other`` must broadcast to ``t``'s shape."""
    return _update(t, other, "add_", lambda xp, out, o: xp.add(out, o if alpha == 1 else o * alpha, out=out))


def mul_(t, other):
    """``t *= other``; ``other`` must broadcast to ``t``'s shape."""
    return _update(t, other, "mul_", lambda xp, out, o: xp.multiply(out, o, out=out))


def sub_(t, other, alpha=1):
    """``t -= alpha * other``; ``other`` must broadcast to ``t``'s shape."""
    return _update(t, other, "sub_", lambda xp, out, o: xp.subtract(out, o if alpha == 1 else o * alpha, out=out))


def div_(t, other):
    """``t /= other``, true division; an integer tensor is refused (its result would be floating point)."""
    return _update(t, other, "div_", lambda xp, out, o: xp.true_divide(out, o, out=out))


def relu_(t):
    """``max(t, 0)`` written into ``t``'s memory and returned: PyTorch's ``relu_`` (``nn.ReLU(inplace=True)``,
    ``F.relu(x, inplace=True)``).

    Unlike the writes above, it is recorded where ``t`` was computed in a graph: ``t`` becomes the output of a
    ReLU whose input is ``t``'s value before, as in PyTorch, and the write counts, so a function that saved that
    value (a sigmoid's output, say) refuses its backward. It is refused on a leaf that requires grad, on a view,
    and on a tensor that another recorded operation used since it was computed (the graph holds that use of the
    value before, which the write would change); ``relu()`` computes a new tensor in those cases.
    """
    if not (_state.enabled and t.requires_grad):
        _check_writable(t, "relu_", None)
        backend.get_array_module(t.data).maximum(t.data, 0, out=t.data)
        bump(t)
        return t
    view = t.creator is not None and t._version_counter is not None and any(
        x._version_counter is t._version_counter for x in t.creator.inputs)  # it shares an input's memory
    if t.creator is None or view or next(clock) != t.creator.seq + 1:
        what = ("is a leaf that requires grad" if t.creator is None else "is a view of another tensor" if view
                else "was used by another recorded operation since it was computed")
        raise RuntimeError(f"relu_ (an in-place ReLU): this tensor (shape {t.shape}) {what}, and writing into it "
                           "would change a value the graph holds; use relu(), which computes a new tensor")
    from .. import operations  # the package: its elementwise module imports the engine, which imports this one
    from .tensor import Tensor

    before = Tensor._make(t._data, True, counter_of(t))  # t's value until the write, in t's place in the graph
    before.creator = creator = t.creator
    creator.outputs = tuple(weakref.ref(before) if ref() is t else ref for ref in creator.outputs)
    bump(t)  # counted before the ReLU is recorded: what saved the value before sees the write, the ReLU does not
    relu = operations.elementwise.InPlaceReLU()
    relu(before)
    t.creator, relu.outputs, relu.output_counters = relu, (weakref.ref(t),), [(counter_of(t), t.shape)]
    return t


def _update(t, other, op, apply):
    _check_writable(t, op, other)
    other = _array_like(t, other, op, cast=False)
    try:
        apply(backend.get_array_module(t.data), t.data, other)
    except ValueError as exc:
        raise ValueError(
            f"{op}: an operand of shape {numpy.shape(other)} cannot be broadcast to this tensor's shape {t.shape}"
        ) from exc
    except TypeError as exc:  # NumPy's casting error: a float into an integer tensor, say
        raise TypeError(f"{op}: {exc}") from exc
    bump(t)
    return t


def _check_writable(t, op, value):
    if not _state.enabled:
        return
    from .tensor import Tensor

    if t.requires_grad and t.creator is None:
        raise RuntimeError(
            f"{op}: this tensor (shape {t.shape}) is a leaf that requires grad, and an in-place change while "
            "gradients are recorded would not be in the graph. Change it under `with dlscratch.no_grad():`, "
            "as optimizers and initialisers do."
        )
    if t.creator is not None:
        raise RuntimeError(
            f"{op}: this tensor (shape {t.shape}) was computed by {t.creator.name} in a recorded graph, and "
            "in-place changes are not recorded, so gradients through it would be wrong. Compute a new tensor "
            "instead, or change it under no_grad() if no gradient will flow through it."
        )
    if isinstance(value, Tensor) and value.requires_grad:
        raise RuntimeError(
            f"{op}: the value requires grad, but in-place writes are not recorded, so no gradient would reach "
            "it. Build the result out of place (e.g. with concatenate, stack or a mask), or pass value.detach()."
        )


def _array_like(t, value, op, cast=True):
    """``value`` as an array (or number) on ``t``'s device; arrays cast to ``t``'s dtype if ``cast``.
    None, strings, objects and arrays of them are refused (NumPy would write NaN for None)."""
    from .extensions.operands import NUMERIC_KINDS
    from .extensions.operands import is_scalar as _is_scalar
    from .tensor import Tensor

    if isinstance(value, Tensor):
        value = value.data
    elif _is_scalar(value):
        return value
    values = value if backend.is_gpu_array(value) else numpy.asarray(value)
    if values.dtype.kind not in NUMERIC_KINDS:
        raise TypeError(f"{op}: the value must be a number, an array of numbers or a tensor, not "
                        f"{type(value).__name__} (NumPy dtype {values.dtype})")
    value = values
    on_gpu = backend.is_gpu_array(t.data)
    if on_gpu != backend.is_gpu_array(value):
        value = backend.to_gpu(value) if on_gpu else backend.to_cpu(value)
    value = backend.get_array_module(t.data).asarray(value)
    return value.astype(t.dtype, copy=False) if cast else value


def _raw_index(index):
    """Tensors inside an index (masks, integer positions) as their arrays."""
    from .tensor import Tensor

    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(i.data if isinstance(i, Tensor) else i for i in index)
    return index
