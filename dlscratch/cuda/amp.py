"""PyTorch's older spellings, ``torch.cuda.amp.autocast`` and ``torch.cuda.amp.GradScaler``: the CUDA
``amp.autocast("cuda", ...)`` and ``amp.GradScaler("cuda", ...)`` under their earlier signatures, with the
FutureWarning PyTorch gives for them, so that older tutorials run and say what to write instead."""

import warnings

import numpy

from .. import amp


def _deprecated(name, instead):
    warnings.warn(f"dlscratch.cuda.amp.{name}(args...) is deprecated, as torch.cuda.amp.{name} is: use "
                  f"{instead} instead", FutureWarning, stacklevel=3)


class autocast(amp.autocast):  # noqa: N801  (PyTorch's name)
    """``amp.autocast("cuda", dtype, enabled, cache_enabled)``."""

    def __init__(self, enabled=True, dtype=numpy.float16, cache_enabled=True):
        _deprecated("autocast", "dlscratch.amp.autocast('cuda', args...)")
        super().__init__("cuda", dtype, enabled, cache_enabled)


class GradScaler(amp.GradScaler):
    """``amp.GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)``."""

    def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 enabled=True):
        _deprecated("GradScaler", "dlscratch.amp.GradScaler('cuda', args...)")
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
