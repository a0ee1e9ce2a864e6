"""Fast optimizer updates: the rules of ``optim/``, computed in place, in blocks that fit in a cache.

Written as its formula, an update allocates an array per operation and makes a pass over memory for each. Here
every intermediate goes into a kept work array with ``out=`` and the state and the parameter change in place
(``m *= beta1; m += tmp``), as PyTorch's do: in place moves fewer bytes than writing into another array, and
nothing is allocated after the first step. The rule runs on ``BLOCK_BYTES`` of rows at a time (``in_blocks``), so
a block's arrays stay in cache from its first operation to its last.

A step writes nothing until every update is prepared (``optim/optimizer.py``): an update here makes the first
step's state, takes its work arrays and sets ``staged.apply``, which writes when the step does. On a GPU each rule is
one fused kernel per parameter (``optim_kernels.py``). When NumPy raises on floating-point errors
(``numpy.seterr``), a CPU step runs the reference rule, because an update computed in place cannot be undone.
``python -m dlscratch.bench mlp`` times an SGD-with-momentum step beside PyTorch's.
"""

import functools
import weakref

from .. import backend
from ..engine.switch import fast_version_of
from ..optim.adadelta import AdaDelta
from ..optim.adam import Adam, bias_corrections, next_count
from ..optim.sgd import SGD
from . import optim_kernels

BLOCK_BYTES = 1 << 18  # 256 KB of each array: the 5 to 7 arrays of a block fit in a 2 MB L2 cache

_work_arrays = weakref.WeakKeyDictionary()  # optimizer -> {key: work arrays}


def in_blocks(optimizer, rule, arrays, n_work, *args):
    """The write of one parameter's update (``staged.apply``): ``rule(*pieces, *work, *args)`` on each block of rows
    of ``arrays`` (the parameter first, then arrays shaped like it), with ``n_work`` work arrays of a block's
    shape kept for ``optimizer``."""
    p = arrays[0]
    plans = _work_arrays.setdefault(optimizer, {})
    key = (p.shape, p.dtype, type(p), n_work)
    if key not in plans:
        plans[key] = _block_plan(p, n_work)
    rows, work = plans[key]
    if p.ndim == 0:
        arrays = [a.reshape(1) for a in arrays]  # a view: writes into it reach the 0-d array
    return functools.partial(_run_in_blocks, rule, arrays, work, rows, args)


def _block_plan(p, n_work):
    """``(rows, work)``: how many rows make a block of ``p`` (all of them on a GPU), and ``n_work`` uninitialised
    arrays of a block's shape."""
    p = p.reshape(1) if p.ndim == 0 else p
    row_bytes = max(1, p.nbytes // max(1, len(p)))
    rows = len(p) if backend.is_gpu_array(p) else max(1, BLOCK_BYTES // row_bytes)
    xp = backend.get_array_module(p)
    return rows, [xp.empty_like(p[:rows]) for _ in range(n_work)]


def _run_in_blocks(rule, arrays, work, rows, args):
    n = len(arrays[0])
    if n <= rows:
        rule(*arrays, *work, *args)
        return
    for start in range(0, n, rows):
        pieces = [a[start:start + rows] for a in arrays]
        size = len(pieces[0])
        rule(*pieces, *[w[:size] for w in work], *args)


def sgd_block(p, g, tmp, lr, weight_decay):
    """SGD without momentum on a block, in place."""
    xp = backend.get_array_module(p)
    if weight_decay:
        g = xp.add(g, xp.multiply(p, weight_decay, out=tmp), out=tmp)
    p -= xp.multiply(g, lr, out=tmp)


def sgd_momentum_block(p, g, buf, tmp, tmp2, lr, momentum, dampening, weight_decay, nesterov, first):
    """SGD with momentum on a block, in place; ``first``: ``buf`` holds no buffer yet."""
    xp = backend.get_array_module(p)
    if weight_decay:
        g = xp.add(g, xp.multiply(p, weight_decay, out=tmp), out=tmp)
    if first:
        xp.copyto(buf, g)
    else:
        buf *= momentum
        buf += g if dampening == 0 else xp.multiply(g, 1 - dampening, out=tmp2)
    g = xp.add(g, xp.multiply(buf, momentum, out=tmp2), out=tmp) if nesterov else buf
    p -= xp.multiply(g, lr, out=tmp)


def adam_block(p, g, m, v, tmp, tmp2, beta1, beta2, eps, weight_decay, lr_corrected, sqrt_correction2, first):
    """Adam on a block, in place; ``first``: ``m`` and ``v`` hold no moments yet (they start at 0)."""
    xp = backend.get_array_module(p)
    if weight_decay:
        g = xp.add(g, xp.multiply(p, weight_decay, out=tmp), out=tmp2)
    if first:
        xp.multiply(g, 1 - beta1, out=m)
        xp.multiply(xp.multiply(g, 1 - beta2, out=v), g, out=v)
    else:
        m *= beta1
        m += xp.multiply(g, 1 - beta1, out=tmp)
        v *= beta2
        v += xp.multiply(xp.multiply(g, 1 - beta2, out=tmp), g, out=tmp)
    # sqrt(v_hat) + eps = sqrt(v) / sqrt(1 - beta2**t) + eps; Python floats keep it float32
    denom = xp.sqrt(v, out=tmp)
    denom /= sqrt_correction2
    denom += eps
    step = xp.divide(m, denom, out=tmp)
    step *= lr_corrected
    p -= step


def adadelta_block(p, g, v, u, tmp, tmp2, delta, rho, eps, weight_decay, lr, first):
    """AdaDelta on a block, in place; ``first``: ``v`` and ``u`` hold no averages yet (they start at 0)."""
    xp = backend.get_array_module(p)
    if weight_decay:
        g = xp.add(g, xp.multiply(p, weight_decay, out=tmp), out=tmp2)
    if first:
        xp.multiply(xp.multiply(g, 1 - rho, out=v), g, out=v)
        delta.fill(eps)  # the reference's sqrt(0 + eps), in the parameter's dtype
        xp.sqrt(delta, out=delta)
    else:
        v *= rho
        v += xp.multiply(xp.multiply(g, 1 - rho, out=tmp), g, out=tmp)
        xp.sqrt(xp.add(u, eps, out=delta), out=delta)
    delta /= xp.sqrt(xp.add(v, eps, out=tmp), out=tmp)
    delta *= g
    if first:
        xp.multiply(xp.multiply(delta, 1 - rho, out=u), delta, out=u)
    else:
        u *= rho
        u += xp.multiply(xp.multiply(delta, 1 - rho, out=tmp), delta, out=tmp)
    delta *= lr
    p -= delta


def first_state(state, names, like):
    """True at a parameter's first step, after adding to ``state`` (the step's copy) an uninitialised array
    shaped like ``like`` under each of ``names``."""
    if names[0] in state:
        return False
    xp = backend.get_array_module(like)
    state.update({name: xp.empty_like(like) for name in names})
    return True


def _on_kernels(array):
    """True when ``array``'s update can run as a fused kernel (``optim_kernels.py``): a GPU array, and kernels run."""
    return backend.is_gpu_array(array) and backend.has_kernels()


def computes_in_place(staged):
    """True when the update of ``p`` (a ``Staged``) may be computed in place: on a GPU (one kernel), or where
    NumPy's floating-point errors do not raise (``staged.may_write``)."""
    return staged.may_write or _on_kernels(staged.data)


@fast_version_of(SGD._update)
def sgd_update(self, staged, grad, state, group):
    if not computes_in_place(staged):
        return SGD._update(self, staged, grad, state, group)
    lr, momentum, weight_decay = float(group["lr"]), float(group["momentum"]), float(group["weight_decay"])
    if _on_kernels(staged.data):
        first = bool(momentum) and first_state(state, ["momentum_buffer"], staged.data)
        buf = state["momentum_buffer"] if momentum else None
        staged.apply = functools.partial(optim_kernels.sgd, grad, staged.data, buf, lr, momentum,
                                         float(group["dampening"]), weight_decay, group["nesterov"], first)
        return
    if not momentum:
        staged.apply = in_blocks(self, sgd_block, [staged.data, grad], 1, lr, weight_decay)
        return
    first = first_state(state, ["momentum_buffer"], staged.data)
    staged.apply = in_blocks(self, sgd_momentum_block, [staged.data, grad, state["momentum_buffer"]], 2, lr, momentum,
                             float(group["dampening"]), weight_decay, group["nesterov"], first)


@fast_version_of(Adam._update)
def adam_update(self, staged, grad, state, group):
    if not computes_in_place(staged):
        return Adam._update(self, staged, grad, state, group)
    beta1, beta2 = (float(b) for b in group["betas"])
    lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
    count = state.get("step")
    t = state["step"] = next_count(count, staged.data, group["capturable"])
    first = first_state(state, ["exp_avg", "exp_avg_sq"], staged.data)
    if _on_kernels(staged.data) and hasattr(t, "shape"):  # a count on the device, advanced in place, not when halted
        update = functools.partial(optim_kernels.adam_capturable, grad, staged.data, state["exp_avg"],
                                   state["exp_avg_sq"], lr, beta1, beta2, eps, weight_decay, t, first)
        if count is None:
            staged.apply = update
        else:
            state["step"] = count
            staged.apply = functools.partial(_then, update, optim_kernels.copy_unless_halted, t, count)
        return
    lr_corrected, sqrt_correction2 = bias_corrections(t, lr, beta1, beta2, staged.data.dtype)
    if _on_kernels(staged.data):
        staged.apply = functools.partial(optim_kernels.adam, grad, staged.data, state["exp_avg"], state["exp_avg_sq"],
                                         beta1, beta2, eps, weight_decay, lr_corrected, sqrt_correction2, first)
        return
    staged.apply = in_blocks(self, adam_block, [staged.data, grad, state["exp_avg"], state["exp_avg_sq"]], 2, beta1,
                             beta2, eps, weight_decay, lr_corrected, sqrt_correction2, first)


def _then(first, second, *args):
    first()
    second(*args)


@fast_version_of(AdaDelta._update)
def adadelta_update(self, staged, grad, state, group):
    if not computes_in_place(staged):
        return AdaDelta._update(self, staged, grad, state, group)
    lr, rho, eps, weight_decay = (float(group[k]) for k in ("lr", "rho", "eps", "weight_decay"))
    first = first_state(state, ["square_avg", "acc_delta"], staged.data)
    if _on_kernels(staged.data):
        staged.apply = functools.partial(optim_kernels.adadelta, grad, staged.data, state["square_avg"],
                                         state["acc_delta"], lr, rho, eps, weight_decay, first)
        return
    staged.apply = in_blocks(self, adadelta_block, [staged.data, grad, state["square_avg"], state["acc_delta"]], 3,
                             rho, eps, weight_decay, lr, first)
