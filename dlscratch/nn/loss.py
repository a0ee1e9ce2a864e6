"""Loss modules, PyTorch's ``nn.MSELoss``, ``nn.CrossEntropyLoss``, ``nn.NLLLoss`` and ``nn.BCEWithLogitsLoss``:
each keeps its options and calls its function in ``dlscratch.operations.loss`` with them.

    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)        # the same as F.cross_entropy(model(x), y)

Class and element weights are buffers, so ``criterion.to("gpu")`` moves them with the module.
"""

from ..engine.creation import tensor
from ..engine.tensor import Tensor
from ..operations.loss import binary_cross_entropy_with_logits, cross_entropy, mse_loss, nll_loss
from .module import Module


class _Loss(Module):
    def __init__(self, reduction):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction

    def register_weight(self, name, value):
        """Keep ``value`` (a Tensor, an array or a list; or None) as the buffer ``name``."""
        self.register_buffer(name, value if value is None or isinstance(value, Tensor) else tensor(value))

    def extra_repr(self):
        return "" if self.reduction == "mean" else f"reduction={self.reduction!r}"


class MSELoss(_Loss):
    """The mean (or sum) of ``(input - target) ** 2`` over all elements; input and target of one shape."""

    def __init__(self, *, reduction="mean"):
        super().__init__(reduction)

    def forward(self, input, target):
        return mse_loss(input, target, reduction=self.reduction)


class CrossEntropyLoss(_Loss):
    """``F.cross_entropy`` on logits ``(N, C)`` (or ``(C,)``, ``(N, C, d1, ...)``) and integer class labels ``(N,)``
    (or class probabilities shaped like the logits). ``ignore_index`` is None by default here: see
    ``F.cross_entropy`` for how that differs from PyTorch's -100."""

    def __init__(self, weight=None, *, ignore_index=None, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        self.register_weight("weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return cross_entropy(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction,
                             label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """``F.nll_loss`` on log-probabilities ``(N, C)`` (``LogSoftmax``'s output) and integer class labels ``(N,)``;
    samples labelled ``ignore_index`` (-100) count for nothing."""

    def __init__(self, weight=None, *, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        self.register_weight("weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return nll_loss(input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``F.binary_cross_entropy_with_logits``: a sigmoid and binary cross-entropy in one stable step, on logits
    and targets in [0, 1] of one shape. ``weight`` scales each element, ``pos_weight`` the positive class."""

    def __init__(self, weight=None, *, reduction="mean", pos_weight=None):
        super().__init__(reduction)
        self.register_weight("weight", weight)
        self.register_weight("pos_weight", pos_weight)

    def forward(self, input, target):
        return binary_cross_entropy_with_logits(input, target, self.weight, reduction=self.reduction,
                                                pos_weight=self.pos_weight)
