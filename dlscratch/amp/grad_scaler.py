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

The scale that multiplies the loss lives on the loss's device, a 0-d float32 array that ``update`` overwrites in
place (PyTorch's scale is a device tensor too): so a backward captured in a CUDA graph reads the current scale at
every replay. ``unscale_`` divides the gradients in place, so a ``.grad`` that a graph writes, or a view of it, keeps
its memory. ``step`` reads one answer from the device (was a gradient inf or NaN?): it stays outside a capture, as
in PyTorch.
"""

import math
import numbers
import warnings

import numpy

from .. import backend
from ..engine.tensor import Tensor

_FLOAT32_MAX = float(numpy.finfo(numpy.float32).max)

STATE_KEYS = ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")


def _is_real(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _check_settings(operation, scale_name, scale, growth_factor, backoff_factor, growth_interval):
    """Refuse a scale or a rule that would stall or break the scale sequence (the constructor's and
    ``load_state_dict``'s checks); a NaN or infinite scale, for one, would skip every step."""
    if not (_is_real(scale) and 0 < scale < math.inf):
        raise ValueError(f"{operation}: {scale_name} must be a positive finite number, got {scale!r}")
    if not (_is_real(growth_factor) and 1 < growth_factor < math.inf):
        raise ValueError(f"{operation}: growth_factor must be a finite number above 1, got {growth_factor!r}")
    if not (_is_real(backoff_factor) and 0 < backoff_factor < 1):
        raise ValueError(f"{operation}: backoff_factor must be between 0 and 1, got {backoff_factor!r}")
    if not (_is_int(growth_interval) and growth_interval >= 1):
        raise ValueError(f"{operation}: growth_interval must be a positive int, got {growth_interval!r}")


class GradScaler:
    """Dynamic loss scaling for the optimizers of ``dlscratch.optim``; ``enabled=False`` makes every method a
    pass-through, so one training loop serves float32 and float16."""

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        if not isinstance(device, str):
            raise TypeError(f"GradScaler: device must be a device type, 'cuda' or 'cpu', got {device!r}")
        self._device = "cuda" if backend.device_name(device) == "gpu" else "cpu"  # refuses other names
        _check_settings("GradScaler", "init_scale", init_scale, growth_factor, backoff_factor, growth_interval)
        if enabled and self._device == "cuda" and not backend.gpu_available():
            warnings.warn(f"GradScaler('cuda') is enabled, but there is no usable GPU "
                          f"({backend.gpu_unavailable_reason()}): disabled, as PyTorch does; GradScaler('cpu') scales "
                          "on the CPU", UserWarning, stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)
        self._scale = float(init_scale)  # the host's copy, which update() computes
        self._on_devices = {}  # "cpu" or "cuda" -> the 0-d float32 array that scale() multiplies by
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
        return outputs * Tensor(self._scale_on(backend.get_array_module(outputs.data)))

    def _scale_on(self, xp):
        """The 0-d float32 array of the scale on ``xp``'s device, made at its first use there."""
        device = "cpu" if xp is numpy else "cuda"  # a name, not the module: a scaler stays copyable and picklable
        scale = self._on_devices.get(device)
        if scale is None:
            if backend.capturing():  # made in the capture, it would hold the scale only after a replay
                raise RuntimeError("GradScaler.scale: first used on this device inside a CUDA graph capture; call "
                                   "it once in the warm-up before capturing, where it makes its scale on the device")
            scale = self._on_devices[device] = xp.full((), self._scale, dtype=numpy.float32)
        return scale

    def _set_scale(self, value):
        """The new scale, on the host and written in place into every device's array."""
        if value != self._scale:
            for scale in self._on_devices.values():
                scale.fill(value)
        self._scale = value

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
                xp.multiply(grad, grad.dtype.type(inverse), out=grad)  # in place: the .grad keeps its memory
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
        ``growth_interval`` clean steps (never past float32's largest finite number); or set it to ``new_scale``."""
        if not self._enabled:
            return
        if new_scale is not None:
            if not float(new_scale) > 0:
                raise ValueError(f"GradScaler.update: new_scale must be positive, got {new_scale}")
            self._set_scale(float(new_scale))
        else:
            if not self._stepped:
                raise RuntimeError("GradScaler.update: no scaler.step(optimizer) since the last update()")
            overflowed = any(found is not None and bool(found) for found in self._unscaled.values())
            if overflowed:
                self._set_scale(self._scale * self._backoff_factor)
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    grown = self._scale * self._growth_factor
                    if grown <= _FLOAT32_MAX:  # PyTorch keeps the scale finite in float32, where the loss is scaled
                        self._set_scale(grown)
                    self._growth_tracker = 0
        self._unscaled, self._stepped = {}, False

    def state_dict(self):
        """The scale and the rules that change it, for checkpoints (empty when disabled, as PyTorch's)."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict):
        """Take a ``state_dict()``'s scale and rules, checked as the constructor checks them; a refused one changes
        nothing."""
        if not self._enabled:
            return
        operation = "GradScaler.load_state_dict"
        if not isinstance(state_dict, dict):
            raise TypeError(f"{operation}: expected the dict of a GradScaler.state_dict(), "
                            f"got {type(state_dict).__name__}")
        if not state_dict:
            raise ValueError(f"{operation}: the state_dict is empty (saved from a GradScaler with enabled=False); "
                             "load one saved from an enabled GradScaler")
        missing = [key for key in STATE_KEYS if key not in state_dict]
        unknown = sorted(map(str, set(state_dict) - set(STATE_KEYS)))
        if missing or unknown:
            raise ValueError(f"{operation} needs the keys {list(STATE_KEYS)} of a state_dict(); missing {missing}, "
                             f"unknown {unknown}")
        scale, growth, backoff, interval, tracker = (state_dict[key] for key in STATE_KEYS)
        _check_settings(operation, "scale", scale, growth, backoff, interval)
        if not (_is_int(tracker) and 0 <= tracker < interval):
            raise ValueError(f"{operation}: _growth_tracker must be an int in [0, growth_interval) = [0, {interval}), "
                             f"got {tracker!r}")
        self._set_scale(float(scale))
        self._growth_factor, self._backoff_factor = float(growth), float(backoff)
        self._growth_interval, self._growth_tracker = int(interval), int(tracker)
