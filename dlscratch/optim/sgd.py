"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

from ..backend import get_array_module
from .optimizer import Optimizer


class SGD(Optimizer):
    """PyTorch's SGD. With gradient ``g`` of parameter ``p`` at step ``t``::

        g = g + weight_decay * p                      (L2 penalty, when weight_decay > 0)
        b = g            at t = 1, else  b = momentum * b + (1 - dampening) * g
        g = g + momentum * b   with nesterov, else  g = b   (when momentum > 0)
        p = p - lr * g

    ``b`` is the ``momentum_buffer`` state.
    """

    array_state = ("momentum_buffer",)

    def __init__(self, params, lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)
        super().__init__(params, defaults)

    def _validate(self, group):
        for key in ("lr", "momentum", "dampening", "weight_decay"):
            self._check(group, key, 0)
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: nesterov=True needs momentum > 0 and dampening = 0")

    def _update(self, p, grad, state, group):
        xp = get_array_module(p.data)
        lr, momentum, weight_decay = float(group["lr"]), float(group["momentum"]), float(group["weight_decay"])
        tmp = self.scratch(p)
        if weight_decay:
            grad = xp.add(grad, xp.multiply(p.data, weight_decay, out=tmp), out=tmp)
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.copy()
            else:
                buf *= momentum
                dampening = float(group["dampening"])
                buf += grad if dampening == 0 else xp.multiply(grad, 1 - dampening, out=self.scratch(p, 1))
            if group["nesterov"]:
                grad = xp.add(grad, xp.multiply(buf, momentum, out=self.scratch(p, 1)), out=tmp)
            else:
                grad = buf
        p.data -= xp.multiply(grad, lr, out=tmp)
