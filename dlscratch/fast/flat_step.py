"""The optimizer's step on a GPU: one fused launch over the flat storage of all its parameters.

Per parameter, a step of the fused kernels (``optim_kernels.py``) is one launch: 4 for an MLP of two
Linear layers, 8 for the Keras CNN, each 10-25 µs of host time. Over flat storage (``flat.py``) one
launch updates every parameter whose gradient is in its slot, whatever their number (the idea of
Apex's and PyTorch's multi-tensor and fused optimizers; they pass lists of pointers to one kernel, which
an ``ElementwiseKernel`` cannot take, so the arrays are made contiguous instead).

One launch covers one *run*: consecutive parameters of the flat order that share their group's
hyperparameters and their step (Adam's ``t``, or the first step that finds no state). A parameter whose
``.grad`` is None is skipped, as PyTorch skips it: its state and values do not change, and the run ends
there. So a step is one launch in the usual case, and one per run when some parameters have no gradient,
belong to other groups or were added later (``add_param_group``); never more launches than parameters.

Before the launches, at the step's writes, two kinds of copy: a gradient not in its slot (``flat.py`` says
when) and a state array that is not its flat view (after ``load_state_dict``, or once the storage was laid
out again) are copied in, one copy each; the usual step has none. The state is updated in place: its
arrays are the flat views, which the optimizer's ``state`` dicts hold from one step to the next.

The step is still whole or nothing (``optim/optimizer.py``): everything above is prepared first, and the
first parameter's ``Staged.apply`` makes the copies and the launches of all.

The storage is laid out at the first step, and again when the optimizer's parameters change
(``add_param_group``) or one of them no longer lives in its view (``to()``, ``half()``, ``prune.remove``).
Only stock SGD, Adam and AdaDelta with every parameter on a GPU step this way; any other optimizer takes
the per-parameter updates of ``optim.py``.
"""

import weakref
from collections.abc import Callable
from typing import NamedTuple

from ..optim.adadelta import AdaDelta
from ..optim.adam import Adam
from ..optim.optimizer import Optimizer, Staged
from ..optim.sgd import SGD
from ..paths import fast_version_of
from . import optim_kernels
from .flat import FlatParams

_storage = weakref.WeakKeyDictionary()  # optimizer -> its FlatParams, one per dtype


# Each rule's launch over one run: ``g`` and ``p`` ranges of the flat gradient and parameter buffers, ``arrays`` the
# same range of each of its state buffers (in the order of its state names), ``first`` and ``t`` the run's step.
def _sgd(group, g, p, arrays, first, t):
    buf = arrays[0] if arrays else None
    optim_kernels.sgd(g, p, buf, float(group["lr"]), float(group["momentum"]), float(group["dampening"]),
                      float(group["weight_decay"]), group["nesterov"], first)


def _adam(group, g, p, arrays, first, t):
    beta1, beta2 = (float(b) for b in group["betas"])
    optim_kernels.adam(g, p, *arrays, float(group["lr"]), beta1, beta2, float(group["eps"]),
                       float(group["weight_decay"]), t)


def _adadelta(group, g, p, arrays, first, t):
    optim_kernels.adadelta(g, p, *arrays, *(float(group[k]) for k in ("lr", "rho", "eps", "weight_decay")), first)


class Rule(NamedTuple):
    """What the flat step needs of an update rule."""

    state_names: Callable  # group -> the names of the state arrays it keeps
    launch: Callable  # (group, g, p, state arrays, first, t): the fused kernel over a run
    counts_steps: bool = False  # keeps a step count ("step", Adam's t)


RULES = {
    SGD._update: Rule(lambda group: ("momentum_buffer",) if group["momentum"] else (), _sgd),
    Adam._update: Rule(lambda group: Adam.array_state, _adam, counts_steps=True),
    AdaDelta._update: Rule(lambda group: AdaDelta.array_state, _adadelta),
}


@fast_version_of(Optimizer._prepare_step)
def prepare_step(self):
    rule = RULES.get(type(self)._update)
    params = self._params()
    if rule is None or not all(optim_kernels.runs_on_kernels(p.data) for p in params):
        return Optimizer._prepare_step(self)
    group_of = {id(p): (i, group) for i, group in enumerate(self.param_groups) for p in group["params"]}
    staged = []
    for flat in storage(self, params):
        staged += prepare_flat(self, flat, rule, group_of)
    return staged


def storage(optimizer, params):
    """``optimizer``'s FlatParams, one per dtype, laid out anew when its parameters changed or one of them left
    its view."""
    flats = _storage.get(optimizer)
    if flats is not None:
        laid_out = {id(p) for flat in flats for p in flat.params}
        if len(laid_out) == len(params) and laid_out == {id(p) for p in params}:
            if all(flat.is_current() for flat in flats):
                return flats
    by_dtype = {}
    for p in params:
        by_dtype.setdefault(p.dtype, []).append(p)
    flats = _storage[optimizer] = [FlatParams(same) for same in by_dtype.values()]
    return flats


def prepare_flat(optimizer, flat, rule, group_of):
    """The ``Staged`` updates of ``flat``'s parameters that have a gradient, the first carrying the writes of all."""
    if any(_slot_held_elsewhere(flat, k) for k in range(len(flat.params))):
        flat.new_grad_buffer()
    staged, copies, runs = [], [], []
    for k, p in enumerate(flat.params):
        if p.grad is None:
            continue
        i, group = group_of[id(p)]
        new = Staged(p, dict(optimizer.state.get(p, ())))
        names = rule.state_names(group)
        first = bool(names) and names[0] not in new.state
        for name in names:
            view = flat.state_views(name)[k]
            old = new.state.get(name)
            if old is not None and old is not view:
                copies.append((view, old))
            new.state[name] = view
        if rule.counts_steps:
            new.state["step"] = new.state.get("step", 0) + 1
        if p.grad.data is not flat.held(k):
            copies.append((flat.grad[slice(*flat.bounds[k])].reshape(p.shape), p.grad.data))
        key = (i, first, new.state.get("step"))
        if runs and runs[-1][0] == key and runs[-1][2] == k:
            runs[-1][2] = k + 1
        else:
            runs.append([key, k, k + 1, group, names])
        new.apply = _written
        staged.append(new)
    if staged:
        staged[0].apply = lambda: _write(flat, copies, runs, rule.launch)
    return staged


def _slot_held_elsewhere(flat, k):
    """True when parameter ``k``'s gradient is not in its slot while something else holds the slot's last view:
    copying into the slot would change what that holds."""
    grad, held = flat.params[k].grad, flat.held(k)
    return grad is not None and held is not None and grad.data is not held


def _write(flat, copies, runs, launch):
    for target, source in copies:
        target[...] = source
    for (_, first, t), start, stop, group, names in runs:
        lo, hi = flat.bounds[start][0], flat.bounds[stop - 1][1]
        if hi > lo:
            arrays = [flat.state[name][0][lo:hi] for name in names]
            launch(group, flat.grad[lo:hi], flat.data[lo:hi], arrays, first, t)


def _written():
    """Nothing: the first parameter's ``apply`` wrote this one's update with the others'."""
