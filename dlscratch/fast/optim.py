"""Fast optimizer updates: the rules of ``optim/``, computed without temporaries.

Written as its formula, an update makes a new array for every operation: ``beta1 * m + (1 -
beta1) * g`` allocates three parameter-sized arrays, fills each in one pass over memory, and
frees them again. Adam's rule makes about a dozen per parameter per step. The versions here
write each intermediate result into a work array with ``out=`` (``xp.multiply(g, 1 - beta1,
out=tmp)``) and change the state and the parameter in place (``m *= beta1; m += tmp``): nothing
is allocated after the first step, and fewer arrays pass through the cache.

The work arrays are kept per optimizer (``work_array``), one set per parameter shape, shared by
the parameters of that shape: their values last only until the next parameter's update.

Measured on a 2-core AMD EPYC, NumPy 2.4, OpenBLAS: ``step()`` on the parameters of
``nn.Linear(1200, 1000)`` (1.2M float32, 4.8 MB), median of 30 steps, three runs:

    Adam                 reference 2.2 ms   fast 1.3 ms    (1.5-1.8x)
    SGD(momentum=0.9)    reference 0.46 ms  fast 0.29 ms   (1.6x)
    AdaDelta             reference 2.6 ms   fast 2.1 ms    (1.2x)
"""

import math
import weakref

from .. import backend
from ..optim.adadelta import AdaDelta
from ..optim.adam import Adam
from ..optim.sgd import SGD
from ..paths import fast_version_of

_work_arrays = weakref.WeakKeyDictionary()  # optimizer -> {(which, shape, dtype, array type): array}


def work_array(optimizer, p, which=0):
    """An uninitialised array shaped like ``p``, kept for ``optimizer`` from step to step; ``which``
    picks one of several. Its values last only until the next parameter's update."""
    arrays = _work_arrays.setdefault(optimizer, {})
    key = (which, p.data.shape, p.data.dtype, type(p.data))
    if key not in arrays:
        arrays[key] = backend.get_array_module(p.data).empty_like(p.data)
    return arrays[key]


@fast_version_of(SGD._update)
def sgd_update(self, p, grad, state, group):
    xp = backend.get_array_module(p.data)
    lr, momentum, weight_decay = float(group["lr"]), float(group["momentum"]), float(group["weight_decay"])
    tmp = work_array(self, p)
    if weight_decay:
        grad = xp.add(grad, xp.multiply(p.data, weight_decay, out=tmp), out=tmp)
    if momentum:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = state["momentum_buffer"] = grad.copy()
        else:
            buf *= momentum
            dampening = float(group["dampening"])
            buf += grad if dampening == 0 else xp.multiply(grad, 1 - dampening, out=work_array(self, p, 1))
        if group["nesterov"]:
            grad = xp.add(grad, xp.multiply(buf, momentum, out=work_array(self, p, 1)), out=tmp)
        else:
            grad = buf
    p.data -= xp.multiply(grad, lr, out=tmp)


@fast_version_of(Adam._update)
def adam_update(self, p, grad, state, group):
    xp = backend.get_array_module(p.data)
    beta1, beta2 = (float(b) for b in group["betas"])
    lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
    tmp = work_array(self, p)
    if weight_decay:
        grad = xp.add(grad, xp.multiply(p.data, weight_decay, out=tmp), out=work_array(self, p, 1))
    if not state:
        state.update(step=0, exp_avg=xp.zeros_like(p.data), exp_avg_sq=xp.zeros_like(p.data))
    state["step"] += 1
    t, m, v = state["step"], state["exp_avg"], state["exp_avg_sq"]
    m *= beta1
    m += xp.multiply(grad, 1 - beta1, out=tmp)
    v *= beta2
    v += xp.multiply(xp.multiply(grad, 1 - beta2, out=tmp), grad, out=tmp)
    # sqrt(v_hat) + eps = sqrt(v) / sqrt(1 - beta2**t) + eps; Python floats keep it float32
    denom = xp.sqrt(v, out=tmp)
    denom /= math.sqrt(1 - beta2**t)
    denom += eps
    step = xp.divide(m, denom, out=tmp)
    step *= lr / (1 - beta1**t)
    p.data -= step


@fast_version_of(AdaDelta._update)
def adadelta_update(self, p, grad, state, group):
    xp = backend.get_array_module(p.data)
    lr, rho, eps, weight_decay = (float(group[k]) for k in ("lr", "rho", "eps", "weight_decay"))
    tmp, delta = work_array(self, p), work_array(self, p, 1)
    if weight_decay:
        grad = xp.add(grad, xp.multiply(p.data, weight_decay, out=tmp), out=work_array(self, p, 2))
    if not state:
        state.update(square_avg=xp.zeros_like(p.data), acc_delta=xp.zeros_like(p.data))
    v, u = state["square_avg"], state["acc_delta"]
    v *= rho
    v += xp.multiply(xp.multiply(grad, 1 - rho, out=tmp), grad, out=tmp)
    xp.sqrt(xp.add(u, eps, out=delta), out=delta)
    delta /= xp.sqrt(xp.add(v, eps, out=tmp), out=tmp)
    delta *= grad
    u *= rho
    u += xp.multiply(xp.multiply(delta, 1 - rho, out=tmp), delta, out=tmp)
    p.data -= xp.multiply(delta, lr, out=tmp)
