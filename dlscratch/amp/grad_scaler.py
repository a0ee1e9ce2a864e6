"""``GradScaler``: dynamic loss scaling (PyTorch's ``torch.amp.GradScaler`` is the anchor).

Float16 keeps numbers down to about 6e-8 (its smallest subnormal); many gradients of a network are smaller and
become zero. Multiplying the loss by a scale ``S`` multiplies every gradient by ``S`` (backward is linear in its
seed), lifting them into range; the float32 master gradients are divided by ``S`` before the update. Too large a
scale overflows to inf: then the step is skipped and the scale halved. After ``growth_interval`` steps without
overflow the scale doubles, so it stays near the largest that works. A training step::

    optimizer.zero_grad()
    loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)           # unscales, then steps only if every gradient is finite
    scaler.update()                  # halves the scale after an overflow, doubles it after a clean run

Powers of two as scale and factors make scaling and unscaling exact in floating point.
"""

import numbers

from .. import backend
from ..tensor import Tensor


class GradScaler:
    """Dynamic loss scaling for the optimizers of ``dlscratch.optim``; ``enabled=False`` makes every method a
    pass-through, so one training loop serves float32 and float16."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        if not init_scale > 0:
            raise ValueError(f"GradScaler: init_scale must be positive, got {init_scale}")
        if not growth_factor > 1:
            raise ValueError(f"GradScaler: growth_factor must be above 1, got {growth_factor}")
        if not 0 < backoff_factor < 1:
            raise ValueError(f"GradScaler: backoff_factor must be between 0 and 1, got {backoff_factor}")
        if not (isinstance(growth_interval, numbers.Integral) and not isinstance(growth_interval, bool)
                and growth_interval >= 1):
            raise ValueError(f"GradScaler: growth_interval must be a positive int, got {growth_interval!r}")
        self._enabled = bool(enabled)
        self._scale = float(init_scale)
        self._growth_factor, self._backoff_factor = float(growth_factor), float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0  # steps since the last overflow or growth
        self._unscaled = {}  # id(optimizer) -> an array, nonzero when a gradient was inf or NaN
        self._stepped = False

    def is_enabled(self):
        return self._enabled

    def get_scale(self):
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """``outputs`` (a Tensor, or a list or tuple of them) times the scale, in the graph."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(output) for output in outputs)
        if not isinstance(outputs, Tensor):
            raise TypeError(f"GradScaler.scale: expected a Tensor (the loss), got {type(outputs).__name__}")
        return outputs * self._scale

    def unscale_(self, optimizer):
        """Divide ``optimizer``'s gradients by the scale, in place, and note whether any is inf or NaN. Once per
        optimizer between updates; call it before clipping gradients, as ``step`` then skips it."""
        if not self._enabled:
            return
        if id(optimizer) in self._unscaled:
            raise RuntimeError("GradScaler.unscale_: already called on this optimizer since the last update()")
        inverse, found = 1.0 / self._scale, None
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.dtype.itemsize < 4:
                    raise ValueError(f"GradScaler: a gradient is {p.grad.dtype}; keep the parameters (master weights) "
                                     "in float32 and cast to float16 in the forward")
                grad = p.grad.data
                xp = backend.get_array_module(grad)
                bad = ~xp.isfinite(grad).all()  # a device scalar: no wait for the GPU here
                found = bad if found is None else found | bad
                p.grad.data = grad * grad.dtype.type(inverse)
        self._unscaled[id(optimizer)] = found

    def step(self, optimizer):
        """Unscale (unless ``unscale_`` did) and call ``optimizer.step()`` only if every gradient is finite; the
        one wait for the device is here, reading that answer. Returns True when the step was taken."""
        if not self._enabled:
            optimizer.step()
            return True
        if id(optimizer) not in self._unscaled:
            self.unscale_(optimizer)
        found = self._unscaled[id(optimizer)]
        self._stepped = True
        if found is not None and bool(found):
            return False
        optimizer.step()
        return True

    def update(self, new_scale=None):
        """After every optimizer's ``step``: halve the scale if any gradient overflowed, double it after
        ``growth_interval`` clean steps; or set it to ``new_scale``."""
        if not self._enabled:
            return
        if new_scale is not None:
            if not float(new_scale) > 0:
                raise ValueError(f"GradScaler.update: new_scale must be positive, got {new_scale}")
            self._scale = float(new_scale)
        else:
            if not self._stepped:
                raise RuntimeError("GradScaler.update: no scaler.step(optimizer) since the last update()")
            overflowed = any(found is not None and bool(found) for found in self._unscaled.values())
            if overflowed:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._unscaled, self._stepped = {}, False

    def state_dict(self):
        """The scale and the rules that change it, for checkpoints (empty when disabled, as PyTorch's)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        needed = {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
        if not isinstance(state_dict, dict) or not needed <= set(state_dict):
            raise ValueError(f"GradScaler.load_state_dict needs the keys {sorted(needed)} of a state_dict()")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
