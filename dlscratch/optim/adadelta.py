"""AdaDelta (Zeiler, 2012): step sizes from running averages of squared gradients and updates."""

from ..backend import get_array_module
from .optimizer import Optimizer


class AdaDelta(Optimizer):
    """PyTorch's Adadelta. With gradient ``g`` of parameter ``p``::

        g = g + weight_decay * p                      (L2 penalty, when weight_decay > 0)
        v = rho * v + (1 - rho) * g**2                (square_avg, starts at 0)
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta**2            (acc_delta, starts at 0)
        p = p - lr * delta

    Zeiler's rule is ``lr = 1``: the ratio of the two running RMS values gives the update the
    units of the parameter, so no learning rate needs tuning. ``lr`` scales it, as in PyTorch.
    """

    array_state = ("square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0.0):
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay))

    def _validate(self, group):
        for key in ("lr", "eps", "weight_decay"):
            self._check(group, key, 0)
        self._check(group, "rho", 0, 1)

    def _update(self, staged, grad, state, group):
        xp = get_array_module(staged.data)
        lr, rho, eps, weight_decay = (float(group[k]) for k in ("lr", "rho", "eps", "weight_decay"))
        g = grad
        if weight_decay:
            g = g + weight_decay * staged.data
        if not state:
            state.update(square_avg=xp.zeros_like(staged.data), acc_delta=xp.zeros_like(staged.data))
        v = state["square_avg"] = rho * state["square_avg"] + (1 - rho) * g * g  # g**2 overflows sooner in float16
        delta = xp.sqrt(state["acc_delta"] + eps) / xp.sqrt(v + eps) * g
        state["acc_delta"] = rho * state["acc_delta"] + (1 - rho) * delta * delta
        staged.delta = lr * delta


Adadelta = AdaDelta  # PyTorch's spelling
