"""Loss functions by PyTorch's names: cross-entropy and negative log-likelihood on class labels, binary
cross-entropy on logits, and mean squared error. Each reduces its per-sample losses by ``reduction``:
``"mean"``, ``"sum"`` or ``"none"`` (no reduction).

Class losses take PyTorch's shapes: ``input (N, C)`` with labels ``(N,)``, one sample ``(C,)`` with a label
``()``, or ``(N, C, d1, ...)`` (a class score per pixel) with labels ``(N, d1, ...)``. The last two are turned
into the first (classes last, samples as rows) by reshapes that the graph records, so the nodes below only
ever see rows.
"""

from ..backend import get_array_module, is_gpu_array
from ..engine.function import Function
from ..engine.switch import switched
from ..engine.tensor import Tensor
from ..engine.wrappable import wrappable
from .shape import permute, reshape
from .softmax import log_softmax, log_softmax_array

_REDUCTIONS = ("mean", "sum", "none")


def _check_reduction(name, reduction):
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}: reduction must be one of {_REDUCTIONS}, got {reduction!r}")


def _reduce(losses, reduction):
    """The per-sample ``losses`` array reduced: their mean, their sum, or themselves."""
    if reduction == "mean":
        return losses.mean()
    return losses.sum() if reduction == "sum" else losses


class CrossEntropy(Function):
    """``-log softmax(logits)[label]`` per sample. ``logits: (N, C)``, ``labels: (N,)`` integers.

    One node for log-softmax and the pick: its backward is ``softmax - one_hot(labels)``.
    """

    integer_inputs = (1,)  # the labels stay integers
    name = "cross_entropy"

    def __init__(self, reduction="mean"):
        _check_reduction("cross_entropy", reduction)
        self.reduction = reduction

    @staticmethod
    def check_shapes(logits, labels):
        if logits.ndim != 2 or labels.shape != (logits.shape[0],):
            raise ValueError(
                f"expected logits of shape (N, C) and labels of shape (N,), got {logits.shape} and {labels.shape}"
            )
        if labels.dtype.kind not in "iu":
            raise ValueError(f"labels must be integer class indices, got dtype {labels.dtype}")

    @staticmethod
    def check_labels(labels, c):
        """Raise ValueError unless every label lies in ``[0, c)`` (reading two numbers from the labels' device)."""
        if labels.size and (int(labels.min()) < 0 or int(labels.max()) >= c):
            low, high = int(labels.min()), int(labels.max())
            skip = " (to skip the samples labelled -100, as PyTorch does, pass ignore_index=-100)" if low < 0 else ""
            raise ValueError(f"labels must lie in [0, {c}), got values from {low} to {high}{skip}")

    def forward(self, logits, labels):
        xp = get_array_module(logits)
        self.check_shapes(logits, labels)
        n, c = logits.shape
        self.check_labels(labels, c)
        self.labels = labels
        self.log_p = log_softmax_array(logits, axis=1)
        losses = -self.log_p[xp.arange(n), labels]
        if self.reduction == "mean":
            return losses.sum() / n if n else losses.mean()  # the same number, without mean()'s own overhead
        return losses.sum() if self.reduction == "sum" else losses

    def backward(self, gy):
        xp = get_array_module(gy)
        n = self.log_p.shape[0]
        g = xp.exp(self.log_p)
        g[xp.arange(n), self.labels] -= 1
        if self.reduction == "mean":
            g *= gy / n
        elif self.reduction == "sum":
            g *= gy
        else:
            g *= gy[:, None]
        return g, None


class NLLLoss(Function):
    """``-weight[label] * log_p[label]`` per sample: ``log_p: (N, C)`` log-probabilities, ``labels: (N,)``.

    A sample labelled ``ignore_index`` counts for nothing, and ``"mean"`` divides by the summed weights of the
    samples that count (all ignored: NaN, as in PyTorch). ``smoothing`` ε (cross_entropy's label smoothing) takes
    ``(1 - ε)`` of that loss and adds ``ε/C`` of ``-sum_c weight[c] * log_p[c]``: the loss against the target
    ``(1 - ε) one_hot + ε/C``. The gradient is minus those coefficients, at the label and across the row.
    """

    integer_inputs = (1,)  # the labels stay integers
    saves_inputs = False  # backward reads the coefficients kept by forward
    name = "nll_loss"

    def __init__(self, weight=None, ignore_index=-100, reduction="mean", smoothing=0.0):
        _check_reduction("nll_loss", reduction)
        self.weight, self.ignore_index, self.reduction, self.smoothing = weight, ignore_index, reduction, smoothing

    def forward(self, log_p, labels):
        xp = get_array_module(log_p)
        CrossEntropy.check_shapes(log_p, labels)
        n, c = log_p.shape
        counted = xp.ones(n, dtype=bool) if self.ignore_index is None else labels != self.ignore_index
        CrossEntropy.check_labels(labels[counted], c)
        self.labels = xp.where(counted, labels, 0)
        self.class_weight = xp.ones(c, dtype=log_p.dtype) if self.weight is None else self.weight
        self.counted = counted.astype(log_p.dtype)
        self.w = self.class_weight[self.labels] * self.counted  # (N,): 0 where ignored
        picked = xp.where(counted, log_p[xp.arange(n), self.labels], 0)  # no 0 * -inf where ignored
        losses = -self.w * picked
        if self.smoothing:
            spread = -(log_p * self.class_weight).sum(axis=1) * self.counted
            losses = (1 - self.smoothing) * losses + (self.smoothing / c) * spread
        if self.reduction != "mean":
            return losses.sum() if self.reduction == "sum" else losses
        total = self.w.sum()
        self.divisor = xp.where(total == 0, 1, total)  # all ignored: the loss is NaN, the gradient zero
        return xp.where(total == 0, xp.nan, losses.sum() / self.divisor)

    def backward(self, gy):
        xp = get_array_module(gy)
        n, c = self.labels.shape[0], self.class_weight.shape[0]
        g = xp.zeros((n, c), dtype=gy.dtype)
        g[xp.arange(n), self.labels] = -(1 - self.smoothing) * self.w
        if self.smoothing:
            g -= (self.smoothing / c) * self.counted[:, None] * self.class_weight
        if self.reduction == "mean":
            g *= gy / self.divisor
        else:
            g *= gy if self.reduction == "sum" else gy[:, None]
        return g, None


class BCEWithLogits(Function):
    """Binary cross-entropy of ``sigmoid(x)`` against targets ``y`` in [0, 1], computed from the logits ``x``
    without overflow: ``(1 - y) * x + softplus(-x)``, where ``softplus(-x) = log(1 + exp(-x))`` is
    ``max(-x, 0) + log1p(exp(-|x|))``; this is ``max(x, 0) - x*y + log1p(exp(-|x|))``.

    ``pos_weight`` p (broadcast along the last dimension) scales the positive term: ``(1 - y) * x + (1 + (p - 1)
    y) softplus(-x)``; ``weight`` (broadcast to x's shape) scales each element's loss. Both are constants (no
    gradient, as in PyTorch). Gradients: ``(1 + (p - 1) y) sigmoid(x) - p y`` for x (``sigmoid(x) - y`` without
    p) and ``(p - 1) softplus(-x) - x`` for y.
    """

    name = "binary_cross_entropy_with_logits"

    def __init__(self, weight=None, pos_weight=None, reduction="mean"):
        _check_reduction("binary_cross_entropy_with_logits", reduction)
        self.weight, self.pos_weight, self.reduction = weight, pos_weight, reduction

    def forward(self, x, y):
        xp = get_array_module(x)
        if x.shape != y.shape:
            raise ValueError(f"target of shape {y.shape} must have the input's shape {x.shape}")
        self.x, self.y = x, y
        self.softplus = xp.maximum(-x, 0) + xp.log1p(xp.exp(-abs(x)))  # softplus(-x) = -log sigmoid(x)
        p = 1 if self.pos_weight is None else self.pos_weight
        losses = (1 - y) * x + (1 + (p - 1) * y) * self.softplus
        if self.weight is not None:
            losses = losses * self.weight
        return _reduce(losses, self.reduction)

    def backward(self, gy):
        xp = get_array_module(gy)
        x, y = self.x, self.y
        p = 1 if self.pos_weight is None else self.pos_weight
        scale = gy / x.size if self.reduction == "mean" else gy
        if self.weight is not None:
            scale = scale * self.weight
        sigmoid = xp.exp(-self.softplus)
        gx = ((1 + (p - 1) * y) * sigmoid - p * y) * scale
        gt = ((p - 1) * self.softplus - x) * scale
        return gx, gt


class MSELoss(Function):
    """``(input - target) ** 2`` averaged (or summed) over all elements."""

    saves_inputs = False  # backward does not read the inputs' values
    name = "mse_loss"

    def __init__(self, reduction="mean"):
        _check_reduction("mse_loss", reduction)
        self.reduction = reduction

    def forward(self, x, target):
        if x.shape != target.shape:
            raise ValueError(f"input {x.shape} and target {target.shape} must have the same shape")
        self.diff = x - target
        return _reduce(self.diff * self.diff, self.reduction)

    def backward(self, gy):
        g = 2 * self.diff * gy
        if self.reduction == "mean":
            g = g / self.diff.size
        return g, -g


def _array(x):
    return x.data if isinstance(x, Tensor) else x


def _target(target, input):
    """``target`` as a Tensor or an array (a list of labels becomes an array on the input's device)."""
    if isinstance(target, Tensor) or hasattr(target, "dtype"):
        return target
    return get_array_module(_array(input)).asarray(target)


def _rows(x):
    """Class scores as rows ``(samples, C)``: ``(N, C, d1, ...)`` with the classes moved last, ``(C,)`` as one row."""
    if x.ndim == 2:
        return x
    if x.ndim == 1:
        return reshape(x, 1, -1)
    return reshape(permute(x, 0, *range(2, x.ndim), 1), -1, x.shape[1])


def _sample_shape(input, op):
    """The shape of the per-sample losses: ``(N, d1, ...)`` for ``input (N, C, d1, ...)``, ``()`` for ``(C,)``."""
    if input.ndim == 0:
        raise ValueError(f"{op}: input must be (C,), (N, C) or (N, C, d1, ...) class scores, got a scalar")
    return () if input.ndim == 1 else (input.shape[0], *input.shape[2:])


def _labels(input, target, op):
    """``target`` as a flat array of class labels, one per row of ``_rows(input)``, checked against input."""
    labels, shape = _array(target), _sample_shape(input, op)
    if labels.dtype.kind not in "iu":
        probabilities = " (class probabilities as targets have the input's shape)" if op == "cross_entropy" else ""
        raise ValueError(f"{op}: labels must be integer class indices (int64), got {labels.dtype} of shape "
                         f"{tuple(labels.shape)}{probabilities}")
    if tuple(labels.shape) != shape:
        raise ValueError(f"{op}: expected input (N, C), (C,) or (N, C, d1, ...) with labels (N,), () or (N, d1, ...):"
                         f" input of shape {tuple(input.shape)} needs labels of shape {shape}, got {labels.shape}")
    return labels.reshape(-1)


def _per_sample(loss, reduction, input, op):
    """With ``reduction="none"``, the losses (one per row) in the shape of the samples; else ``loss``."""
    shape = _sample_shape(input, op)
    return reshape(loss, *shape) if reduction == "none" and loss.shape != shape else loss


def _constant(value, input, op, name, shape=None):
    """A weight argument as an array in the input's dtype, checked: a Tensor or array on the input's device, of
    ``shape`` when given (else broadcastable to the input's shape)."""
    if value is None:
        return None
    array = _array(value)
    if not hasattr(array, "dtype") or array.dtype.kind not in "fiu":
        raise TypeError(f"{op}: {name} must be a Tensor of real numbers, got {value!r}; pass reduction= and the "
                        "other options by name")
    data = _array(input)
    if is_gpu_array(array) != is_gpu_array(data):
        where = "gpu" if is_gpu_array(array) else "cpu"
        raise ValueError(f"{op}: {name} is on {where} but the input is not; move it with .to(input.device)")
    fits = tuple(array.shape) == shape if shape is not None else _broadcasts_to(array.shape, data.shape)
    if not fits:
        wanted = f"shape {shape}" if shape is not None else f"a shape that broadcasts to the input's {data.shape}"
        raise ValueError(f"{op}: {name} must have {wanted}, got {tuple(array.shape)}")
    return array.astype(data.dtype, copy=False)


def _broadcasts_to(shape, target):
    return len(shape) <= len(target) and all(a in (1, b) for a, b in zip(shape[::-1], target[::-1]))


def _class_weight(weight, input, op):
    classes = input.shape[0] if input.ndim == 1 else input.shape[1]
    return _constant(weight, input, op, "weight", shape=(classes,))


@wrappable
@switched
def cross_entropy(input, target, weight=None, *, ignore_index=None, reduction="mean", label_smoothing=0.0):
    """Cross-entropy between ``softmax(input)`` over the classes and the target: ``-log softmax(input)[label]``
    per sample, PyTorch's ``F.cross_entropy``.

    input: logits ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``. target: integer class labels ``(N,)``, ``()`` or
    ``(N, d1, ...)``; or class probabilities shaped like ``input`` (``-sum_c target_c log softmax(input)_c``).
    weight: ``(C,)`` per-class weights; "mean" then divides by the summed weights of the samples' labels.
    ignore_index: a label whose samples count for nothing. None (the default) counts every label; PyTorch's
    default is -100, which skips samples labelled -100: pass ``ignore_index=-100`` for that.
    label_smoothing: ε in [0, 1]; the target becomes ``(1 - ε) one_hot + ε/C``.
    Without weight, ignore_index and label_smoothing, one fused node (``CrossEntropy``); with them, log-softmax
    then ``NLLLoss``.
    """
    _check_reduction("cross_entropy", reduction)
    target = _target(target, input)
    if not (isinstance(label_smoothing, (int, float)) and 0 <= label_smoothing <= 1):
        raise ValueError(f"cross_entropy: label_smoothing must be a number in [0, 1], got {label_smoothing!r}")
    if _array(target).dtype.kind == "f" and tuple(target.shape) == tuple(input.shape):
        return _soft_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)
    labels = _labels(input, target, "cross_entropy")
    if weight is None and ignore_index is None and not label_smoothing:
        loss = CrossEntropy(reduction)(_rows(input), labels)
    else:
        weight = _class_weight(weight, input, "cross_entropy")
        loss = NLLLoss(weight, ignore_index, reduction, label_smoothing)(log_softmax(_rows(input), dim=1), labels)
    return _per_sample(loss, reduction, input, "cross_entropy")


def _soft_cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing):
    """Class probabilities as the target: ``-sum_c weight_c target_c log softmax(input)_c`` per sample, and
    "mean" divides by the number of samples."""
    if ignore_index is not None:
        raise ValueError("cross_entropy: ignore_index is for class-label targets, not class probabilities")
    probabilities = _rows(target)
    if label_smoothing:
        probabilities = probabilities * (1 - label_smoothing) + label_smoothing / probabilities.shape[1]
    weight = _class_weight(weight, input, "cross_entropy")
    if weight is not None:
        probabilities = probabilities * weight
    losses = -(log_softmax(_rows(input), dim=1) * probabilities).sum(dim=1)
    if reduction != "none":
        return losses.mean() if reduction == "mean" else losses.sum()
    return _per_sample(losses, reduction, input, "cross_entropy")


@wrappable
def nll_loss(input, target, weight=None, *, ignore_index=-100, reduction="mean"):
    """Negative log-likelihood, PyTorch's ``F.nll_loss``: ``-weight[label] * input[label]`` per sample, where
    ``input`` holds log-probabilities (``log_softmax``'s output) of shape ``(N, C)``, ``(C,)`` or
    ``(N, C, d1, ...)`` and ``target`` integer class labels ``(N,)``, ``()`` or ``(N, d1, ...)``.

    Samples labelled ``ignore_index`` (-100 by default, as in PyTorch) count for nothing; "mean" divides by the
    summed weights (1 each without ``weight``) of the samples that count.
    """
    _check_reduction("nll_loss", reduction)
    labels = _labels(input, _target(target, input), "nll_loss")
    weight = _class_weight(weight, input, "nll_loss")
    loss = NLLLoss(weight, ignore_index, reduction)(_rows(input), labels)
    return _per_sample(loss, reduction, input, "nll_loss")


@wrappable
def binary_cross_entropy_with_logits(input, target, weight=None, *, reduction="mean", pos_weight=None):
    """Binary cross-entropy of ``sigmoid(input)`` against ``target`` (probabilities in [0, 1], input's shape),
    from the logits, stably (``BCEWithLogits``); PyTorch's ``F.binary_cross_entropy_with_logits``.

    weight: scales each element's loss (broadcast to input's shape). pos_weight: scales the loss of the positive
    class, one value per class along the last dimension (``pos_weight > 1`` favours recall).
    """
    op = "binary_cross_entropy_with_logits"
    _check_reduction(op, reduction)
    weight = _constant(weight, input, op, "weight")
    pos_weight = _constant(pos_weight, input, op, "pos_weight")
    return BCEWithLogits(weight, pos_weight, reduction)(input, target)


@wrappable
def mse_loss(input, target, reduction="mean"):
    """The mean (``reduction="sum"``: the sum; ``"none"``: each) of ``(input - target) ** 2``, over all elements of
    two tensors of one shape (PyTorch would broadcast them, with a warning; here that is refused)."""
    return MSELoss(reduction)(input, target)
