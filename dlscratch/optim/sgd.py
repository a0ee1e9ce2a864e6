"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

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

    def _update(self, staged, grad, state, group):
        lr, momentum = float(group["lr"]), float(group["momentum"])
        dampening, weight_decay = float(group["dampening"]), float(group["weight_decay"])
        g = grad
        if weight_decay:
            g = g + weight_decay * staged.data
        if momentum:
            b = state.get("momentum_buffer")
            # at t = 1, a copy: g may be the array of p.grad, which the buffer must not share
            b = g.copy() if b is None else momentum * b + (1 - dampening) * g
            state["momentum_buffer"] = b
            g = g + momentum * b if group["nesterov"] else b
        staged.delta = lr * g
