"""Gradient checking: backward against float64 central differences.

For a function ``fn`` of tensors, pick a fixed random weighting ``w`` of its output and compare,
for every element of every floating-point input, the gradient that backward gives for
``sum(w * fn(...))`` with the central difference ``(L(x + eps) - L(x - eps)) / (2 eps)``.
Checking a random weighting instead of each output element checks the whole vector-Jacobian
product that backward computes, at the cost of one backward pass.
"""

from dataclasses import dataclass

import numpy

from . import backend
from .engine.grad_mode import no_grad
from .engine.tensor import Tensor


class GradcheckError(AssertionError):
    """Raised by ``gradcheck`` when backward disagrees with the numerical gradient."""


@dataclass
class GradcheckReport:
    """The worst element found: which input, where, both gradients and how far apart."""

    ok: bool
    input_index: int
    element: tuple
    analytic: float
    numeric: float
    abs_error: float
    tolerance: float
    checked: int

    def __bool__(self):
        return self.ok

    def __str__(self):
        verdict = "passed" if self.ok else "FAILED"
        return (
            f"gradcheck {verdict}: {self.checked} elements checked; worst at input {self.input_index}, "
            f"element {self.element}: backward {self.analytic:.6g}, numerical {self.numeric:.6g}, "
            f"|difference| {self.abs_error:.3g} (allowed {self.tolerance:.3g})"
        )


def _outputs(fn, inputs):
    out = fn(*inputs)
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _weighted_sum(outputs, weights):
    total = 0.0
    for out, w in zip(outputs, weights):
        total = total + (out * w).sum()
    return total


def gradcheck(fn, *inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, seed=0):
    """Compare ``fn``'s backward with float64 central differences; return a ``GradcheckReport``.

    ``inputs``: passed separately, ``gradcheck(fn, x, w)``, or as one tuple or list, PyTorch's
    ``gradcheck(fn, (x, w))``. Floating-point tensors and arrays are copied to float64 and checked, but
    where some tensor requires grad, only the tensors that do (and arrays) are checked, as in PyTorch: a
    target ``t`` beside ``x`` is passed in float64 and not differentiated. Anything else (integer labels,
    a Python float, None) is passed through unchanged.
    An element passes when ``|analytic - numeric| <= atol + rtol * |numeric|``. Raises
    ``GradcheckError`` on failure unless ``raise_exception=False``.
    """
    if len(inputs) == 1 and isinstance(inputs[0], (tuple, list)):
        inputs = tuple(inputs[0])
    only_requiring_grad = any(isinstance(x, Tensor) and x.requires_grad for x in inputs)
    xs = [_as_float64(x, only_requiring_grad) for x in inputs]
    checked = [i for i, x in enumerate(xs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        got = ", ".join(_describe(x) for x in inputs)
        raise ValueError(f"gradcheck: no floating-point input to check among ({got}); pass floating-point "
                         "tensors or arrays as gradcheck(fn, x, w) or gradcheck(fn, (x, w))")
    outputs = _outputs(fn, xs)
    rng = numpy.random.default_rng(seed)
    weights = [
        backend.get_array_module(o.data).asarray(rng.standard_normal(o.shape)) for o in outputs
    ]
    _weighted_sum(outputs, weights).backward()

    worst = None
    for i in checked:
        x = xs[i]
        analytic = backend.to_cpu(x.grad.data) if x.grad is not None else numpy.zeros(x.shape)
        numeric = _numerical_gradient(fn, xs, i, weights, eps)
        error = numpy.abs(analytic - numeric)
        tolerance = atol + rtol * numpy.abs(numeric)
        excess = error - tolerance
        k = numpy.unravel_index(numpy.argmax(excess), x.shape) if x.data.size else ()
        if x.data.size and (worst is None or excess[k] > worst[0]):
            worst = (excess[k], i, k, analytic[k], numeric[k], error[k], tolerance[k])
    count = sum(xs[i].data.size for i in checked)
    if worst is None:
        return GradcheckReport(True, checked[0], (), 0.0, 0.0, 0.0, atol, 0)
    excess, i, k, a, n, e, tol = worst
    report = GradcheckReport(
        bool(excess <= 0), i, tuple(int(j) for j in k), float(a), float(n), float(e), float(tol), count
    )
    if not report.ok and raise_exception:
        raise GradcheckError(str(report))
    return report


def _describe(x):
    """``x``'s type, with its dtype when it has one: ``ndarray of int64``."""
    return f"{type(x).__name__} of {x.dtype}" if hasattr(x, "dtype") else type(x).__name__


def _as_float64(x, only_requiring_grad):
    if isinstance(x, Tensor):
        data, checked = x.data, x.requires_grad or not only_requiring_grad
    elif hasattr(x, "dtype"):
        data, checked = x, True
    else:
        return x
    if data.dtype.kind != "f" or not checked:
        return Tensor(data.astype(numpy.float64), dtype=numpy.float64) if data.dtype.kind == "f" else Tensor(data)
    # A C-contiguous copy, whatever the input's memory order: ``_numerical_gradient`` perturbs it
    # through ``reshape(-1)``, which is a view (not a copy) only of a C-contiguous array.
    copy = data.astype(numpy.float64, order="C", copy=True)
    return Tensor(copy, requires_grad=True, dtype=numpy.float64)


def _numerical_gradient(fn, xs, i, weights, eps):
    """Central differences of ``sum(w * fn(xs))`` with respect to every element of ``xs[i]``."""
    data = xs[i].data
    flat = data.reshape(-1)
    grad = numpy.zeros(data.size)
    with no_grad():
        for j in range(data.size):
            original = float(flat[j])
            flat[j] = original + eps
            plus = _weighted_sum(_outputs(fn, xs), weights).item()
            flat[j] = original - eps
            minus = _weighted_sum(_outputs(fn, xs), weights).item()
            flat[j] = original
            grad[j] = (plus - minus) / (2 * eps)
    return grad.reshape(data.shape)
