"""``multinomial``: category indices drawn in proportion to a tensor's weights, as PyTorch's ``torch.multinomial``.

With replacement, each draw inverts the row's cumulative distribution at a uniform number. Without replacement,
each category races an exponential clock that rings at rate equal to its weight: the first to ring is category i
with probability w_i / sum(w), and, clocks being memoryless, the next among the rest in proportion to theirs; so
the n earliest rings are n draws without replacement, made at once (Efraimidis and Spirakis, "Weighted random
sampling with a reservoir", Information Processing Letters 97(5), 2006, with keys E / w for E ~ Exp(1))."""

import numbers

import numpy

from . import backend
from .engine.tensor import Tensor
from .random import array_generator


def multinomial(input, num_samples, replacement=False, *, generator=None):  # noqa: A002 (PyTorch's argument name)
    """``num_samples`` category indices from each row of ``input``, weights of shape (C,) or (R, C) that are finite,
    non-negative and not all zero (they need not sum to 1); int64 of shape (num_samples,) or (R, num_samples).
    Without ``replacement`` no index comes twice in a row, so a row needs ``num_samples`` non-zero weights."""
    if not isinstance(input, Tensor):
        raise TypeError(f"multinomial: input must be a tensor of weights, got {type(input).__name__}")
    if input.ndim not in (1, 2):
        raise ValueError(f"multinomial: input must be weights of shape (C,) or (R, C), got shape {tuple(input.shape)}")
    if input.dtype.kind != "f":
        raise TypeError(f"multinomial: the weights must be floating point, got {input.dtype}; convert with .float()")
    if isinstance(num_samples, bool) or not isinstance(num_samples, numbers.Integral) or num_samples <= 0:
        raise ValueError(f"multinomial: num_samples must be a positive integer, got {num_samples!r}")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from {categories} "
                         "categories; draw fewer or pass replacement=True")
    xp = backend.get_array_module(input.data)
    rng = array_generator(generator, xp, "multinomial")
    weights = input.data.reshape(-1, categories).astype(xp.float64)
    if weights.shape[0] == 0:
        indices = xp.zeros((0, num_samples), dtype=xp.int64)
    else:
        _check_weights(weights, num_samples, replacement, xp)
        draw = _with_replacement if replacement else _without_replacement
        indices = draw(weights, int(num_samples), rng, xp)
    return Tensor(indices.reshape(tuple(input.shape[:-1]) + (int(num_samples),)), dtype=numpy.int64)


def _check_weights(weights, num_samples, replacement, xp):
    """Refuse weights (R, C) that no distribution has, or too few non-zero ones to draw without replacement
    (PyTorch's documented rule; its CPU version then draws zero-weight categories instead). One read from the
    device for the three facts."""
    facts = xp.stack([(~xp.isfinite(weights) | (weights < 0)).any(), (weights.sum(axis=1) <= 0).any(),
                      xp.count_nonzero(weights, axis=1).min()])
    invalid, empty_row, fewest = (int(fact) for fact in backend.to_cpu(facts))
    if invalid:
        raise ValueError("multinomial: the weights must be finite and non-negative; they hold inf, nan or a negative")
    if empty_row:
        raise ValueError("multinomial: each row's weights must sum to more than 0; a row of zeros has nothing to draw")
    if not replacement and fewest < num_samples:
        raise ValueError(f"multinomial: cannot draw {num_samples} samples without replacement from a row with only "
                         f"{fewest} non-zero weights; draw at most {fewest}, or pass replacement=True")


def _with_replacement(weights, n, rng, xp):
    """(R, n) draws: the first category whose cumulative share exceeds a uniform u in [0, 1). One sorted search
    serves every row: row r's cumulative shares, in [0, 1], and its draws are both shifted up by r."""
    rows, categories = weights.shape
    cdf = xp.cumsum(weights, axis=1)
    cdf /= cdf[:, -1:]  # x / x is exactly 1, so the last share (and any after trailing zeros) is 1, beyond every u
    shift = xp.arange(rows, dtype=xp.float64)[:, None]
    u = rng.random((rows, n)) + shift
    u = xp.minimum(u, xp.nextafter(shift + 1, shift))  # u + r may round up to r + 1, into the next row
    flat = xp.searchsorted((cdf + shift).ravel(), u.ravel(), side="right")
    return flat.reshape(rows, n) - xp.arange(rows, dtype=xp.int64)[:, None] * categories


def _without_replacement(weights, n, rng, xp):
    """(R, n) draws: the categories of the n earliest exponential clocks, E / w (never, for a zero weight)."""
    positive = weights > 0
    clocks = rng.standard_exponential(weights.shape) / xp.where(positive, weights, 1)
    clocks = xp.where(positive, clocks, xp.inf)
    return xp.argsort(clocks, axis=1)[:, :n]
