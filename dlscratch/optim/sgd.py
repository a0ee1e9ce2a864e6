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
        self._check_non_negative(group, "lr", "momentum", "weight_decay")
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError("SGD: nesterov=True needs momentum > 0 and dampening = 0")

    def _update(self, p, grad, state, group):
        lr, momentum, weight_decay = float(group["lr"]), float(group["momentum"]), float(group["weight_decay"])
        if weight_decay:
            grad = grad + weight_decay * p.data
        if momentum:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = grad.copy()
            else:
                buf *= momentum
                dampening = float(group["dampening"])
                buf += grad if dampening == 0 else (1 - dampening) * grad
            grad = grad + momentum * buf if group["nesterov"] else buf
        p.data -= lr * grad
