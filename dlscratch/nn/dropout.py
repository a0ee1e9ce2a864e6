"""``Dropout``: zero random activations while training, do nothing in evaluation."""

from ..operations.dropout import check_probability, dropout
from .module import Module


class Dropout(Module):
    """Inverted dropout (Srivastava et al., 2014): in training mode each element is zeroed with
    probability ``p`` and the survivors are scaled by ``1 / (1 - p)``, so the expected output
    equals the input and evaluation (``model.eval()``) needs no rescaling: it is the identity."""

    def __init__(self, p=0.5):
        super().__init__()
        self.p = check_probability(p)

    def forward(self, x):
        return dropout(x, self.p, self.training)

    def extra_repr(self):
        return f"p={self.p}"
