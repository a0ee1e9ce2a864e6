"""Optimizer updates on the GPU: one fused CUDA kernel per parameter (CuPy only).

Written with ``out=`` (``optim.py``), Adam's update is still about a dozen array operations per
parameter, and on a GPU each is a kernel launch of 10-25 µs of host time: 130 of the 143 kernels of a
small CNN's Adam step (``../shared/gpu-runs/2026-11-25/profile-dlscratch.log``). Here each rule is one
``ElementwiseKernel``: every thread reads one element of the gradient, the parameter and the old state,
and writes that element of the new state and of the step ``delta``; the optimizer then subtracts the
steps (``optim/optimizer.py``: every update is computed before any is written). Two launches per
parameter, whatever the rule.

The arithmetic is the NumPy fast path's, operation for operation, in float32: the hyperparameters
arrive as float32 scalars, as NumPy turns a Python float into the array's type, so both paths give the
same bits (sqrt and division are correctly rounded in both). ``first`` marks a parameter's first step,
when the old state does not exist yet (the gradient is passed in its place and not read).
"""

import math

import numpy

from .. import backend

_SGD = """
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
if (first) {
    buf_new = grad;
} else {
    buf_new = buf * momentum;
    buf_new += dampening == 0 ? grad : grad * one_minus_dampening;
}
grad = nesterov ? grad + buf_new * momentum : buf_new;
delta = grad * lr;
"""

_SGD_PLAIN = """
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
delta = grad * lr;
"""

_ADAM = """
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
m_new = grad * one_minus_beta1;
if (!first) m_new += m * beta1;
v_new = grad * one_minus_beta2 * grad;
if (!first) v_new += v * beta2;
const T denom = sqrt(v_new) / sqrt_correction2 + eps;
delta = m_new / denom * lr_corrected;
"""

_ADADELTA = """
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
v_new = grad * one_minus_rho * grad;
if (!first) v_new += v * rho;
T step = first ? sqrt_eps : sqrt(u + eps);
step = step / sqrt(v_new + eps) * grad;
u_new = step * one_minus_rho * step;
if (!first) u_new += u * rho;
delta = step * lr;
"""


def _scalars(names):
    return ", ".join(f"float32 {name}" for name in names)


def _kernel(inputs, outputs, body, name, twin):
    return backend.elementwise_kernel(inputs, outputs, body, name, twin=twin)


def runs_on_kernels(array):
    """True when ``array``'s update can run as a fused kernel: a GPU array, and kernels run."""
    return backend.is_gpu_array(array) and backend.has_kernels()


def sgd(g, p, buf, delta, buf_new, lr, momentum, dampening, weight_decay, nesterov):
    """SGD's step into ``delta`` (and with momentum the new buffer into ``buf_new``); ``buf`` None at the first step."""
    decay = (float(weight_decay),)
    if not momentum:
        kernel = _kernel(f"T g, T p, {_scalars(['weight_decay', 'lr'])}", "T delta", _SGD_PLAIN,
                         "dlscratch_sgd", _sgd_plain_twin)
        kernel(g, p, *decay, float(lr), delta)
        return
    names = ["weight_decay", "momentum", "dampening", "one_minus_dampening", "lr"]
    kernel = _kernel(f"T g, T p, T buf, {_scalars(names)}, int32 first, int32 nesterov", "T buf_new, T delta",
                     _SGD, "dlscratch_sgd_momentum", _sgd_twin)
    kernel(g, p, g if buf is None else buf, *decay, float(momentum), float(dampening), 1 - float(dampening),
           float(lr), int(buf is None), int(bool(nesterov)), buf_new, delta)


def adam(g, p, m, v, delta, m_new, v_new, lr, beta1, beta2, eps, weight_decay, t):
    """Adam's step ``t`` into ``delta``, the new moments into ``m_new, v_new``; ``m, v`` None at the first step."""
    names = ["weight_decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "sqrt_correction2", "eps",
             "lr_corrected"]
    kernel = _kernel(f"T g, T p, T m, T v, {_scalars(names)}, int32 first", "T m_new, T v_new, T delta", _ADAM,
                     "dlscratch_adam", _adam_twin)
    first = m is None
    kernel(g, p, g if first else m, g if first else v, float(weight_decay), beta1, 1 - beta1, beta2, 1 - beta2,
           math.sqrt(1 - beta2**t), float(eps), lr / (1 - beta1**t), int(first), m_new, v_new, delta)


def adadelta(g, p, v, u, delta, v_new, u_new, lr, rho, eps, weight_decay):
    """AdaDelta's step into ``delta``, the new averages into ``v_new, u_new``; ``v, u`` None at the first step."""
    names = ["weight_decay", "rho", "one_minus_rho", "eps", "sqrt_eps", "lr"]
    kernel = _kernel(f"T g, T p, T v, T u, {_scalars(names)}, int32 first", "T v_new, T u_new, T delta",
                     _ADADELTA, "dlscratch_adadelta", _adadelta_twin)
    first = v is None
    kernel(g, p, g if first else v, g if first else u, float(weight_decay), rho, 1 - rho, eps, math.sqrt(eps),
           float(lr), int(first), v_new, u_new, delta)


# The NumPy twins of the kernels, the same arithmetic in the same order: the strict CuPy stand-in runs a large
# launch's C body on a sample of its threads and checks it against the twin, which computes the rest.
def _decayed(g, p, weight_decay):
    return g + p * weight_decay if weight_decay != 0 else g


def _sgd_plain_twin(g, p, weight_decay, lr, delta):
    delta[...] = _decayed(g, p, weight_decay) * lr


def _sgd_twin(g, p, buf, weight_decay, momentum, dampening, one_minus_dampening, lr, first, nesterov, buf_new, delta):
    grad = _decayed(g, p, weight_decay)
    if first:
        buf_new[...] = grad
    else:
        buf_new[...] = buf * momentum + (grad if dampening == 0 else grad * one_minus_dampening)
    delta[...] = (grad + buf_new * momentum if nesterov else buf_new) * lr


def _adam_twin(g, p, m, v, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_correction2, eps,
               lr_corrected, first, m_new, v_new, delta):
    grad = _decayed(g, p, weight_decay)
    m_new[...] = grad * one_minus_beta1 + (0 if first else m * beta1)
    v_new[...] = grad * one_minus_beta2 * grad + (0 if first else v * beta2)
    delta[...] = m_new / (numpy.sqrt(v_new) / sqrt_correction2 + eps) * lr_corrected


def _adadelta_twin(g, p, v, u, weight_decay, rho, one_minus_rho, eps, sqrt_eps, lr, first, v_new, u_new, delta):
    grad = _decayed(g, p, weight_decay)
    v_new[...] = grad * one_minus_rho * grad + (0 if first else v * rho)
    step = (sqrt_eps if first else numpy.sqrt(u + eps)) / numpy.sqrt(v_new + eps) * grad
    u_new[...] = step * one_minus_rho * step + (0 if first else u * rho)
    delta[...] = step * lr
