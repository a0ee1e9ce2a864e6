"""Flat storage: parameters, their gradients and an optimizer's state as views of one buffer each.

A fused optimizer kernel (``optim_kernels.py``) runs over arrays; given one parameter's, it updates one
parameter per launch. Here the parameters of one dtype and device are laid out one after the other in a
single 1-D buffer, and each parameter's ``.data`` becomes a view of its range (as in Apex's and
DeepSpeed's flattened parameters); the gradients get a second buffer of the same layout, and each array
of the optimizer's state a third. One launch over the buffers then updates every parameter
(``flat_step.py``).

The gradients are the hard part. Backward makes each leaf's gradient as a new array (a GEMM's product, a
reduction's output), and copying each into the buffer would cost a launch per parameter, as many as were
saved. So the operations that produce a leaf's gradient ask for its **slot** first (``grad_slot``) and
write there with ``out=``: a Linear's and a convolution's weight and bias (``matmul.py``, ``conv.py``). A
leaf offers its slot while its ``.grad`` is None (after ``zero_grad``, which sets it to None and launches
nothing) and nothing holds the array it offered last (a weak reference tells): a gradient kept by the user,
as a Tensor or as its array, keeps its values. A gradient made elsewhere (a pruned weight's, one
accumulated over two backward passes, one assigned by hand) is copied into its slot at the step: correct,
one launch more.

A parameter leaves its view when something gives it a new array (``to()``, ``half()``, ``prune.remove``);
the optimizer then lays out its storage again at its next step (``flat_step.py``).

``DistributedDataParallel`` all-reduces a bucket of gradients that lie side by side here in place, without
packing them into one array first (``bucket_gradients``).
"""

import weakref

from .. import backend
from ..distributed import ddp
from ..paths import fast_version_of

_slots = {}  # id(parameter) -> (weak reference to it, weak reference to its FlatParams, its position)


class FlatParams:
    """``params`` (one dtype, one device) as views of ``data``, their gradient slots views of ``grad`` at the
    same offsets, and the optimizer's state arrays ``state[name]`` likewise. ``data, grad: (total,)``.
    Making it copies each parameter's values into its view (one copy each, once)."""

    def __init__(self, params):
        xp = backend.get_array_module(params[0].data)
        self.params = list(params)
        self.bounds, start = [], 0
        for p in self.params:
            self.bounds.append((start, start + p.data.size))
            start += p.data.size
        self.data = xp.empty(start, dtype=params[0].dtype)
        self.state = {}
        self.views = self._views(self.data)
        self.new_grad_buffer()
        _drop_gone()
        for k, (p, view) in enumerate(zip(self.params, self.views)):
            view[...] = p.data
            p.data = view
            _slots[id(p)] = (weakref.ref(p), weakref.ref(self), k)

    def _views(self, flat):
        return [flat[a:b].reshape(p.shape) for p, (a, b) in zip(self.params, self.bounds)]

    def new_grad_buffer(self):
        """Give the gradients a new buffer (uninitialised: each slot is written before it is read), leaving the old
        one to whatever still holds a slot of it."""
        self.grad = backend.get_array_module(self.data).empty_like(self.data)
        self.offered = [None] * len(self.params)  # per slot: a weak reference to the view of it offered last

    def held(self, k):
        """The view of slot ``k`` offered last, while something holds it; else None."""
        ref = self.offered[k]
        return None if ref is None else ref()

    def offer(self, k):
        """A new view of slot ``k``, shaped like its parameter, remembered as the one offered last."""
        (a, b), p = self.bounds[k], self.params[k]
        view = self.grad[a:b].reshape(p.shape)
        self.offered[k] = weakref.ref(view)
        return view

    def is_current(self):
        """True while every parameter's ``.data`` is still its view."""
        return all(p._data is view for p, view in zip(self.params, self.views))

    def state_views(self, name):
        """The views of state array ``name``, made (zeros) at its first use."""
        if name not in self.state:
            flat = backend.get_array_module(self.data).zeros_like(self.data)
            self.state[name] = (flat, self._views(flat))
        return self.state[name][1]


def _drop_gone():
    """Drop the entries of parameters that are gone. Done at each layout rather than by a weak reference's
    callback, which the garbage collector would run inside whatever code runs then (a lesson's check of a
    learner's answer counts it as the answer's call). Until then a gone parameter's entry is harmless: its id may
    name a new tensor, and ``grad_slot`` checks that its entry's parameter is that tensor."""
    for key in [key for key, entry in _slots.items() if entry[0]() is None]:
        del _slots[key]


def grad_slot(x, dtype):
    """The array that leaf ``x``'s gradient (of ``dtype``) may be written into: its slot in the flat gradient
    buffer, shaped like ``x``; None when it has none to offer (see the module docstring)."""
    entry = _slots.get(id(x))
    if entry is None or x._grad is not None:
        return None
    param, flat, k = entry[0](), entry[1](), entry[2]
    if param is not x or flat is None or x._data is not flat.views[k] or flat.grad.dtype != dtype:
        return None
    return None if flat.held(k) is not None else flat.offer(k)


def matmul_into_slot(x, a, b):
    """``a @ b`` (2-D, shaped like leaf ``x`` or its 2-D reshape) written into ``x``'s gradient slot, returned
    shaped like ``x``; None when ``x`` has no slot to offer."""
    slot = grad_slot(x, a.dtype) if a.dtype == b.dtype else None
    if slot is None:
        return None
    backend.get_array_module(a).matmul(a, b, out=slot.reshape(a.shape[0], b.shape[1]))
    return slot


def sum_into_slot(x, g, axis):
    """``g.sum(axis)`` written into leaf ``x``'s gradient slot when it has one, else a new array."""
    slot = grad_slot(x, g.dtype)
    return g.sum(axis=axis) if slot is None else g.sum(axis=axis, out=slot)


@fast_version_of(ddp.bucket_gradients)
def bucket_gradients(bucket):
    """DDP's bucket as one range of a flat gradient buffer: when every parameter's gradient is its slot's view
    and the slots lie side by side (in any order: a bucket lists its parameters backwards)."""
    flats, ranges = set(), []
    for p in bucket:
        entry = _slots.get(id(p))
        if entry is None or entry[0]() is not p or entry[1]() is None or p.grad is None:
            return None
        flat, k = entry[1](), entry[2]
        if p.grad.data is not flat.held(k):
            return None
        flats.add(flat)
        ranges.append(flat.bounds[k])
    ranges.sort()
    if len(flats) != 1 or any(end != start for (_, end), (start, _) in zip(ranges, ranges[1:])):
        return None
    return flats.pop().grad[ranges[0][0]:ranges[-1][1]]
