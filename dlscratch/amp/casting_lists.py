"""Autocast's casting lists (PyTorch's ``torch.amp`` keeps the same two): which operations run in float16 inside
``autocast``, and which in float32. Importing this module wraps their entry points (``entry_points.py``), so
the operations themselves (``functions/``) know nothing of autocast.
"""

from ..entry_points import wrap_calls
from ..functions.conv import conv2d
from ..functions.loss import cross_entropy, mse_loss
from ..functions.matmul import linear, matmul
from ..functions.reduction import mean, sum
from ..functions.softmax import log_softmax, softmax
from .autocast import casts_to_float32, casts_to_low_precision

# the matrix products: float16 (tensor cores on a GPU)
LOW_PRECISION = (matmul, linear, conv2d)
# exponentials and long sums, which overflow or lose their small terms in float16
FLOAT32 = (softmax, log_softmax, cross_entropy, mse_loss, sum, mean)

for operation in LOW_PRECISION:
    wrap_calls(operation, casts_to_low_precision)
for operation in FLOAT32:
    wrap_calls(operation, casts_to_float32)
