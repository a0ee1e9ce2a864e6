"""Fast dropout: the mask drawn in the input's memory layout.

The reference draws its mask in C order, so on a batch-last activation (``layout.py``) ``x * mask`` mixes two
layouts, which NumPy loops over slowly. Drawn in ``x``'s layout, the product keeps it; for a C-ordered input both
paths draw the same numbers from one seed. On a GPU, forward and backward are one kernel each.
``python -m dlscratch.bench cnn`` times a step with two dropouts on both paths.
"""

from .. import backend
from ..backend import get_array_module
from ..engine.creation import generator
from ..engine.function import Function
from ..engine.switch import fast_version_of
from ..operations.dropout import apply_dropout
from ..operations.dropout import dropout as reference_dropout
from .layout import in_layout_of, memory_order, multiply_in_layout, new_array

# the reference's numbers: the mask (u >= p) / (1 - p) in x's type, then x * mask
_FORWARD = """
const T m = (u >= p ? (T)1 : (T)0) / one_minus_p;
mask = m;
y = x * m;
"""


class Dropout(Function):
    """The reference's ``y = x * mask``, with the mask in ``x``'s memory order."""

    saves_inputs = False  # backward does not read the inputs' values

    def __init__(self, p):
        self.p = p

    def forward(self, x):
        xp = get_array_module(x)
        order = memory_order(x)
        uniform = generator(xp).random(
            tuple(x.shape[axis] for axis in order), dtype=x.dtype if x.dtype == xp.float64 else xp.float32
        )
        logical = [order.index(axis) for axis in range(x.ndim)]
        if backend.is_gpu_array(x) and backend.has_kernels():
            kernel = backend.elementwise_kernel("U u, T x, float32 p, float32 one_minus_p", "T mask, T y", _FORWARD,
                                                "dlscratch_dropout")
            self.mask, y = new_array(x.shape, x, x.dtype), new_array(x.shape, x, x.dtype)
            kernel(uniform.transpose(logical), x, self.p, 1 - self.p, self.mask, y)
            return y
        mask = xp.greater_equal(uniform, self.p, out=uniform.astype(x.dtype, copy=False))  # 0/1 in place
        mask /= 1 - self.p  # as the reference computes it: the same numbers
        self.mask = mask.transpose(logical)
        return multiply_in_layout(x, self.mask, self.mask)

    def backward(self, gy):
        if backend.is_gpu_array(gy) and backend.has_kernels():
            g = new_array(gy.shape, self.mask, self.mask.dtype)
            backend.elementwise_kernel("T gy, T mask", "T g", "g = gy * mask", "dlscratch_dropout_backward")(
                gy, self.mask, g)
            return g
        # a C-ordered gy (from Flatten) is copied into the mask's layout: faster than a mixed-layout product
        return multiply_in_layout(in_layout_of(gy, self.mask), self.mask, self.mask)


@fast_version_of(reference_dropout)
def dropout(x, p=0.5, training=True):
    return apply_dropout(Dropout, x, p, training)
