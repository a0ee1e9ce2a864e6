"""Adam (Kingma & Ba, 2015): per-element step sizes from running moments of the gradient."""

import math

from ..backend import get_array_module
from .optimizer import Optimizer, as_count


class Adam(Optimizer):
    """PyTorch's Adam. With gradient ``g`` of parameter ``p``, at step ``t = 1, 2, ...``::

        g = g + weight_decay * p                      (L2 penalty, when weight_decay > 0)
        m = beta1 * m + (1 - beta1) * g               (exp_avg, starts at 0)
        v = beta2 * v + (1 - beta2) * g**2            (exp_avg_sq, starts at 0)
        m_hat = m / (1 - beta1**t),   v_hat = v / (1 - beta2**t)      (bias correction)
        p = p - lr * m_hat / (sqrt(v_hat) + eps)

    The bias correction undoes the pull towards 0 of the zero-initialised moments: at ``t = 1``,
    ``m_hat = g`` and ``v_hat = g**2``, so the first step is ``lr * g / (|g| + eps)``.

    The code computes the same in PyTorch's order, ``(lr / (1 - beta1**t)) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps)``
    with ``(1 - beta2) * g * g``: in float16, ``g**2`` and ``v_hat`` overflow for gradients past 256 where this order
    stays finite, and the fast path's in-place update computes in this order too.

    ``capturable=True`` (PyTorch's name) keeps ``t`` on the parameter's device as a 0-d float32 array and computes
    the bias corrections there, in float32, so that a step captured in a CUDA graph advances ``t`` at each replay.
    Without it, ``t`` is a Python integer and the corrections are computed in float64 on the host: the two differ in
    the last bits, and a capture refuses the host's count.
    """

    array_state = ("exp_avg", "exp_avg_sq")
    scalar_state = ("step",)

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, capturable=False):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, capturable=capturable))

    def _validate(self, group):
        for key in ("lr", "eps", "weight_decay"):
            self._check(group, key, 0)
        check_capturable(self, group)
        betas = group["betas"]
        if not isinstance(betas, tuple) or len(betas) != 2:
            raise ValueError(f"Adam: betas must be two numbers in [0, 1), got {betas!r}")
        for i, beta in enumerate(betas):
            self._check({"beta": beta}, "beta", 0, 1, high_open=True, label=f"beta parameter at index {i}")

    def _update(self, staged, grad, state, group):
        xp = get_array_module(staged.data)
        beta1, beta2 = (float(b) for b in group["betas"])
        lr, eps, weight_decay = float(group["lr"]), float(group["eps"]), float(group["weight_decay"])
        g = grad
        if weight_decay:
            g = g + weight_decay * staged.data
        if not state:
            state.update(exp_avg=xp.zeros_like(staged.data), exp_avg_sq=xp.zeros_like(staged.data))
        t = state["step"] = next_count(state.get("step"), staged.data, group["capturable"])
        lr_corrected, sqrt_correction2 = bias_corrections(t, lr, beta1, beta2, staged.data.dtype)
        m = state["exp_avg"] = beta1 * state["exp_avg"] + (1 - beta1) * g
        v = state["exp_avg_sq"] = beta2 * state["exp_avg_sq"] + (1 - beta2) * g * g
        denom = xp.sqrt(v) / sqrt_correction2 + eps  # sqrt(v_hat) + eps
        staged.delta = m / denom * lr_corrected  # lr * m_hat / denom


def bias_corrections(t, lr, beta1, beta2, dtype):
    """``(lr / (1 - beta1**t), sqrt(1 - beta2**t))`` for step count ``t``: Python floats for an integer ``t``;
    for a capturable optimizer's 0-d float32 array, computed in float32 on its device and given the parameter's
    ``dtype``, as a Python float takes it in the update's arithmetic."""
    if isinstance(t, int):
        return lr / (1 - beta1**t), math.sqrt(1 - beta2**t)
    xp = get_array_module(t)
    return xp.asarray(lr / (1 - beta1**t)).astype(dtype), xp.sqrt(1 - beta2**t).astype(dtype)


def next_count(count, like, capturable):
    """The step count after ``count`` (None before the first step), as a new value: written into nothing, so that a
    prepared step changes nothing until it is written (``optimizer.py``)."""
    if count is None:
        return as_count(1, like, capturable)
    return count + 1 if isinstance(count, int) else get_array_module(count).asarray(count + 1)


def check_capturable(optimizer, group):
    if not isinstance(group["capturable"], bool):
        raise ValueError(f"{type(optimizer).__name__}: capturable must be True or False, got {group['capturable']!r}")
