"""Autocast's casting lists (PyTorch's ``torch.amp`` keeps the same two): which operations run in float16 inside
``autocast``, and which in float32. Importing this module wraps them (``engine/wrappable.py``), so
the operations themselves (``operations/``) know nothing of autocast.
"""

from ..engine.wrappable import wrap_calls
from ..operations.conv import conv2d
from ..operations.loss import cross_entropy, mse_loss
from ..operations.matmul import linear, matmul
from ..operations.reduction import mean, sum
from ..operations.softmax import log_softmax, softmax
from .autocast import casts_to_float32, casts_to_low_precision

# the matrix products: float16 (tensor cores on a GPU)
LOW_PRECISION = (matmul, linear, conv2d)
# exponentials and long sums, which overflow or lose their small terms in float16
FLOAT32 = (softmax, log_softmax, cross_entropy, mse_loss, sum, mean)

for operation in LOW_PRECISION:
    wrap_calls(operation, casts_to_low_precision)
for operation in FLOAT32:
    wrap_calls(operation, casts_to_float32)
