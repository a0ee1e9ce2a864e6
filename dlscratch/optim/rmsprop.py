"""RMSprop (Hinton's lecture notes, 2012): each element's step divided by a running RMS of its gradients."""

from ..backend import get_array_module
from .adam import check_capturable, next_count
from .optimizer import Optimizer


class RMSprop(Optimizer):
    """PyTorch's RMSprop. With gradient ``g`` of parameter ``p``::

        g = g + weight_decay * p                      (L2 penalty, when weight_decay > 0)
        v = alpha * v + (1 - alpha) * g**2            (square_avg, starts at 0)
        centered:  m = alpha * m + (1 - alpha) * g    (grad_avg, starts at 0)
                   v_hat = v - m**2                   (the variance: g's mean taken out)
        otherwise: v_hat = v
        u = g / (sqrt(v_hat) + eps)
        b = momentum * b + u,  u = b                  (momentum_buffer, starts at 0; when momentum > 0)
        p = p - lr * u

    Dividing by the RMS gives every element a step of about ``lr``, whatever its gradient's scale.
    ``momentum_buffer`` exists only with momentum and ``grad_avg`` only when centered, as in PyTorch.
    ``capturable=True`` keeps the step count on the device, so that a step captured in a CUDA graph advances it
    (the rule does not read it; a checkpoint does).
    """

    array_state = ("square_avg", "momentum_buffer", "grad_avg")
    optional_state = ("momentum_buffer", "grad_avg")
    scalar_state = ("step",)

    def __init__(self, params, lr=0.01, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False,
                 capturable=False):
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _validate(self, group):
        for key in ("lr", "alpha", "eps", "weight_decay", "momentum"):
            self._check(group, key, 0)
        if not isinstance(group["centered"], bool):
            raise ValueError(f"RMSprop: centered must be True or False, got {group['centered']!r}")
        check_capturable(self, group)

    def _update(self, staged, grad, state, group):
        xp = get_array_module(staged.data)
        lr, alpha, eps = float(group["lr"]), float(group["alpha"]), float(group["eps"])
        weight_decay, momentum = float(group["weight_decay"]), float(group["momentum"])
        g = grad
        if weight_decay:
            g = g + weight_decay * staged.data
        if not state:
            state.update(square_avg=xp.zeros_like(staged.data))
        state["step"] = next_count(state.get("step"), staged.data, group["capturable"])
        v = state["square_avg"] = alpha * state["square_avg"] + (1 - alpha) * g * g
        if group["centered"]:  # grad_avg starts at 0: its first value is (1 - alpha) * g
            m = state.get("grad_avg")
            m = state["grad_avg"] = (1 - alpha) * g if m is None else alpha * m + (1 - alpha) * g
            v = v - m * m
        u = g / (xp.sqrt(v) + eps)
        if momentum:  # momentum_buffer starts at 0: its first value is u
            b = state.get("momentum_buffer")
            u = state["momentum_buffer"] = u if b is None else momentum * b + u
        staged.delta = lr * u
