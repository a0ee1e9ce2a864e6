"""Optimizer updates on the GPU: one fused CUDA kernel per parameter (CuPy only).

Even written with ``out=`` (``optim.py``), Adam is a dozen array operations per parameter, and on a GPU each is a
launch that costs the host more than its arithmetic costs the device. Here each rule is one ``ElementwiseKernel``
that updates the state and the parameter in place, in the parameter's own arrays. ``python -m dlscratch.bench
launches`` counts the Qiita CNN's Adam step.

The arithmetic is the NumPy fast path's, operation for operation, in the parameter's dtype (the hyperparameters
arrive as ``T``, as a Python float takes the array's dtype in NumPy's arithmetic), compiled with ``--fmad=false``
(a fused multiply-add rounds once where NumPy rounds twice), so both paths give the same bits. Every kernel also reads
``halt``, a device array that ``fit`` (``fast/fit_steps.py``) sets when the loss or a gradient is not
finite: while ``halt[0]`` is not 0 the kernel writes nothing, and the host never waits for the check.
"""

import functools

import numpy

from .. import backend
from .optim_halt import halt_flag as _halt_flag


def _unless_halted(body):
    return "if (halt[0] == 0) {\n" + body + "}\n"


# if/else rather than ``?:``: for float16 the branches would be float16 and float, which NVRTC rejects as ambiguous
_SGD = _unless_halted("""
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
if (first) {
    buf = grad;
} else {
    buf = buf * momentum;
    if (dampening == 0) buf = buf + grad;
    else buf = buf + grad * one_minus_dampening;
}
if (nesterov) grad = grad + buf * momentum;
else grad = buf;
const T delta = grad * lr;
p = p - delta;
""")

_SGD_PLAIN = _unless_halted("""
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
const T delta = grad * lr;
p = p - delta;
""")

# the new moments in locals first: m and v are read after they are computed
_ADAM_BODY = """
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
T m_new = grad * one_minus_beta1;
if (!first) m_new += m * beta1;
T v_new = grad * one_minus_beta2 * grad;
if (!first) v_new += v * beta2;
m = m_new;
v = v_new;
const T root = sqrt(v_new);  // rounded to T before it is divided, as NumPy's float16 arithmetic rounds
const T denom = root / sqrt_correction2 + eps;
const T delta = m_new / denom * lr_corrected;
p = p - delta;
"""
_ADAM = _unless_halted(_ADAM_BODY)

# a capturable Adam's bias corrections from its step count t on the device, in float32 as optim/adam.py computes them
_ADAM_CAPTURABLE = _unless_halted("""
const T lr_corrected = (T)(lr32 / (1 - pow(beta1_32, t)));
const T sqrt_correction2 = (T)sqrt(1 - pow(beta2_32, t));
""" + _ADAM_BODY)

_ADADELTA = _unless_halted("""
T grad = g;
if (weight_decay != 0) grad = grad + p * weight_decay;
T v_new = grad * one_minus_rho * grad;
if (!first) v_new += v * rho;
T step = sqrt((first ? (T)0 : u) + eps);
const T root = sqrt(v_new + eps);  // rounded to T before it divides, as NumPy's float16 arithmetic rounds
step = step / root * grad;
T u_new = step * one_minus_rho * step;
if (!first) u_new += u * rho;
v = v_new;
u = u_new;
const T delta = step * lr;
p = p - delta;
""")


def _scalars(names):
    return ", ".join(f"T {name}" for name in names)


def _kernel(inputs, outputs, body, name, twin):
    inputs = "raw float64 halt, " + inputs
    return backend.elementwise_kernel(inputs, outputs, body, name, twin=_halting(twin), options=("--fmad=false",))


@functools.cache  # one twin per rule: the kernel cache's key holds it
def _halting(twin):
    def halting_twin(halt, *args):
        if halt[0] == 0:
            twin(*args)
    return halting_twin


def sgd(g, p, buf, lr, momentum, dampening, weight_decay, nesterov, first):
    """SGD's step, subtracted from ``p`` in place; with momentum ``buf``, the momentum buffer, is updated in
    place (``first``: it holds nothing yet)."""
    decay = (float(weight_decay),)
    if not momentum:
        kernel = _kernel(f"T g, {_scalars(['weight_decay', 'lr'])}", "T p", _SGD_PLAIN, "dlscratch_sgd",
                         _sgd_plain_twin)
        kernel(_halt_flag(p), g, *decay, float(lr), p)
        return
    names = ["weight_decay", "momentum", "dampening", "one_minus_dampening", "lr"]
    kernel = _kernel(f"T g, {_scalars(names)}, int32 first, int32 nesterov", "T buf, T p",
                     _SGD, "dlscratch_sgd_momentum", _sgd_twin)
    kernel(_halt_flag(p), g, *decay, float(momentum), float(dampening), 1 - float(dampening), float(lr),
           int(first), int(bool(nesterov)), buf, p)


def adam(g, p, m, v, beta1, beta2, eps, weight_decay, lr_corrected, sqrt_correction2, first):
    """Adam's step, subtracted from ``p`` in place, the moments ``m, v`` updated in place (``first``: they hold
    nothing yet), with the bias corrections of ``optim/adam.py`` as Python floats."""
    names = ["weight_decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "sqrt_correction2", "eps",
             "lr_corrected"]
    kernel = _kernel(f"T g, {_scalars(names)}, int32 first", "T m, T v, T p", _ADAM, "dlscratch_adam", _adam_twin)
    kernel(_halt_flag(p), g, float(weight_decay), beta1, 1 - beta1, beta2, 1 - beta2, sqrt_correction2,
           float(eps), lr_corrected, int(first), m, v, p)


def adam_capturable(g, p, m, v, lr, beta1, beta2, eps, weight_decay, t, first):
    """``adam`` for a capturable Adam: the bias corrections computed in the kernel from ``t``, the step count (a 0-d
    float32 device array), which a graph replays; ``optim/adam.py``'s ``bias_corrections`` would be eight
    launches per parameter."""
    names = ["weight_decay", "beta1", "one_minus_beta1", "beta2", "one_minus_beta2", "eps"]
    kernel = _kernel(f"T g, {_scalars(names)}, float32 lr32, float32 beta1_32, float32 beta2_32, float32 t, "
                     "int32 first", "T m, T v, T p", _ADAM_CAPTURABLE, "dlscratch_adam_capturable",
                     _adam_capturable_twin)
    kernel(_halt_flag(p), g, float(weight_decay), beta1, 1 - beta1, beta2, 1 - beta2, float(eps), float(lr), beta1,
           beta2, t, int(first), m, v, p)


def adadelta(g, p, v, u, lr, rho, eps, weight_decay, first):
    """AdaDelta's step, subtracted from ``p`` in place, the averages ``v, u`` updated in place (``first``: they
    hold nothing yet)."""
    names = ["weight_decay", "rho", "one_minus_rho", "eps", "lr"]
    kernel = _kernel(f"T g, {_scalars(names)}, int32 first", "T v, T u, T p", _ADADELTA, "dlscratch_adadelta",
                     _adadelta_twin)
    kernel(_halt_flag(p), g, float(weight_decay), rho, 1 - rho, eps, float(lr), int(first), v, u, p)


def copy_unless_halted(source, target):
    """``target[...] = source`` unless ``halt`` is set: a capturable Adam's step count, which a halted step must not
    advance either (``optim/adam.py``)."""
    kernel = _kernel("T source", "T target", _unless_halted("target = source;\n"), "dlscratch_copy_unless_halted",
                     _copy_twin)
    kernel(_halt_flag(target), source, target)


# The NumPy twins of the kernels, the same arithmetic in the same order (``bench/strict_cupy/kernels.py`` checks them).
def _decayed(g, p, weight_decay):
    return g + p * weight_decay if weight_decay != 0 else g


def _sgd_plain_twin(g, weight_decay, lr, p):
    p -= _decayed(g, p, weight_decay) * lr


def _sgd_twin(g, weight_decay, momentum, dampening, one_minus_dampening, lr, first, nesterov, buf, p):
    grad = _decayed(g, p, weight_decay)
    if first:
        buf[...] = grad
    else:
        buf[...] = buf * momentum + (grad if dampening == 0 else grad * one_minus_dampening)
    p -= (grad + buf * momentum if nesterov else buf) * lr


def _adam_twin(g, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_correction2, eps,
               lr_corrected, first, m, v, p):
    grad = _decayed(g, p, weight_decay)
    m[...] = grad * one_minus_beta1 + (0 if first else m * beta1)
    v[...] = grad * one_minus_beta2 * grad + (0 if first else v * beta2)
    p -= m / (numpy.sqrt(v) / sqrt_correction2 + eps) * lr_corrected


def _adam_capturable_twin(g, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, lr32, beta1_32,
                          beta2_32, t, first, m, v, p):
    lr_corrected = numpy.asarray(lr32 / (1 - beta1_32**t)).astype(p.dtype)
    sqrt_correction2 = numpy.sqrt(1 - beta2_32**t).astype(p.dtype)
    _adam_twin(g, weight_decay, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_correction2, eps, lr_corrected,
               first, m, v, p)


def _adadelta_twin(g, weight_decay, rho, one_minus_rho, eps, lr, first, v, u, p):
    grad = _decayed(g, p, weight_decay)
    v[...] = grad * one_minus_rho * grad + (0 if first else v * rho)
    step = numpy.sqrt((numpy.zeros_like(u) if first else u) + eps) / numpy.sqrt(v + eps) * grad
    u[...] = step * one_minus_rho * step + (0 if first else u * rho)
    p -= step * lr


def _copy_twin(source, target):
    target[...] = source
