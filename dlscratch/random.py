"""Where random numbers come from: the global generators that ``manual_seed`` seeds, and ``Generator``,
a stream of one's own (PyTorch's ``torch.Generator``) for the ``generator=`` argument of the random functions.

    g = dlscratch.Generator().manual_seed(42)
    x = dlscratch.randn(3, generator=g)      # the same numbers after every manual_seed(42) on g,
    y = dlscratch.randn(3)                   # whatever the global generators do, and vice versa

Each generator wraps its array module's own: ``numpy.random.Generator`` on the CPU, ``cupy.random.Generator``
on a GPU, so the numbers are drawn where the tensor lives. They are not PyTorch's numbers for the same seed."""

import json
import os

import numpy

from . import backend
from .device import device as device_type
from .engine.tensor import Tensor

_generators = {}  # one global random generator per array module, all seeded by manual_seed
_seed = [None]

#: The seed of a new ``Generator`` (PyTorch's default), so that two new generators draw the same numbers.
DEFAULT_SEED = 67280421310721


def _checked_seed(seed, where):
    """``seed`` as an integer in [0, 2**64), a negative one taken modulo 2**64 as PyTorch does."""
    if isinstance(seed, bool) or not isinstance(seed, (int, numpy.integer)):
        raise TypeError(f"{where}: the seed must be an integer, got {type(seed).__name__} {seed!r}")
    seed = int(seed)
    if not -(2**63) <= seed <= 2**64 - 1:
        raise ValueError(f"{where}: the seed must be in [-2**63, 2**64 - 1], got {seed}; reduce it, e.g. seed % 2**64")
    return seed % 2**64


def manual_seed(seed):
    """Seed dlscratch's global random generators (NumPy's and, when used, CuPy's) and NumPy's global one.

    ``seed``: an integer in [-2**63, 2**64 - 1], as in PyTorch; a negative seed is taken modulo
    2**64 (as PyTorch does), so ``manual_seed(-1)`` is ``manual_seed(2**64 - 1)``. Anything else
    raises before any generator changes. A ``Generator`` of one's own is not touched."""
    seed = _checked_seed(seed, "manual_seed")
    # NumPy's global generator takes 32-bit seeds; larger ones go in as two 32-bit words
    numpy.random.seed(seed if seed < 2**32 else [seed % 2**32, seed // 2**32])
    _seed[0] = seed
    _generators.clear()


def generator(xp=None):
    """The global random ``Generator`` of array module ``xp`` (default: the current backend)."""
    xp = xp or backend.xp
    if xp not in _generators:
        _generators[xp] = xp.random.default_rng(_seed[0])
    return _generators[xp]


class Generator:
    """A random-number generator of one's own on ``device`` (``"cpu"``, or ``"cuda"``/``"gpu"``), as PyTorch's
    ``torch.Generator``: pass it as ``generator=`` to ``randn``, ``rand``, ``randint``, ``randperm``,
    ``multinomial``... It starts from ``DEFAULT_SEED``; ``manual_seed(n)`` restarts it (and returns it)."""

    def __init__(self, device="cpu"):
        self.device = device_type(device)
        self._xp = backend.module_for(self.device)
        self.manual_seed(DEFAULT_SEED)

    def manual_seed(self, seed):
        """Restart from ``seed`` (an integer, as for ``dlscratch.manual_seed``); return the generator itself."""
        self._seed = _checked_seed(seed, "Generator.manual_seed")
        self._rng = self._xp.random.default_rng(self._seed)
        return self

    def seed(self):
        """Restart from a seed taken from the operating system's entropy; return that seed."""
        seed = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(seed)
        return seed

    def initial_seed(self):
        """The seed this generator was last started from."""
        return self._seed

    def get_state(self):
        """The generator's state as a uint8 tensor, for ``set_state`` (CPU generators only: CuPy keeps its
        generators' states on the GPU and offers no way to read them)."""
        state = json.dumps({"seed": self._seed, "state": self._numpy_rng("get_state").bit_generator.state})
        return Tensor(numpy.frombuffer(state.encode(), dtype=numpy.uint8).copy(), dtype=numpy.uint8, device="cpu")

    def set_state(self, new_state):
        """Go back to a state that ``get_state`` returned; return the generator itself."""
        rng = self._numpy_rng("set_state")
        if not isinstance(new_state, Tensor) or new_state.dtype != numpy.uint8:
            raise TypeError(f"Generator.set_state: expected the uint8 tensor that get_state returns, got {new_state!r}")
        try:
            saved = json.loads(backend.to_cpu(new_state.data).tobytes().decode())
            seed, rng.bit_generator.state = _checked_seed(saved["seed"], "Generator.set_state"), saved["state"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError("Generator.set_state: this tensor is not a state that Generator.get_state returned "
                             f"({type(exc).__name__}: {exc})") from None
        self._seed = seed
        return self

    def _numpy_rng(self, where):
        if self._xp is not numpy:
            raise NotImplementedError(f"Generator.{where}: only a CPU generator's state can be read or set (CuPy "
                                      "keeps a GPU generator's state on the device); restart it with manual_seed")
        return self._rng

    def __repr__(self):
        return f"Generator(device={str(self.device)!r}, initial_seed={self._seed})"


def array_generator(chosen, xp, where):
    """The array module's random generator to draw with: ``chosen``'s (a ``Generator`` on ``xp``'s device, as
    the random functions' ``generator=`` gives it), or the global one when ``chosen`` is None. ``where`` names
    the caller in errors."""
    if chosen is None:
        return generator(xp)
    if not isinstance(chosen, Generator):
        raise TypeError(f"{where}: generator must be a dlscratch.Generator, got {type(chosen).__name__}")
    if chosen._xp is not xp:
        on = "cpu" if xp is numpy else "cuda"
        raise ValueError(f"{where}: the generator is on {chosen.device.type!r} but the result is made on {on!r}; "
                         f"use a Generator(device={on!r}) or make the result on the generator's device")
    return chosen._rng
