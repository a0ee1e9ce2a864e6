"""ReLU on the GPU: the output in the input's layout, and the backward as one kernel.

The reference's ``gy * (y > 0)`` is two launches and a boolean array; the kernel computes ``gy * 1`` or ``gy * 0``
in one pass, so a NaN in ``gy`` still propagates. ``bias_relu.py``'s fused node is a ``ReLU`` of this module too.
"""

from .. import backend
from ..engine.switch import fast_version_of
from ..operations.elementwise import ReLU as ReferenceReLU
from ..operations.elementwise import relu as reference_relu
from .layout import new_array

_BACKWARD = "g = gy * (y > 0 ? (T)1 : (T)0)"


class ReLU(ReferenceReLU):  # the reference's class name and name: a graph's node names the operation, not the path
    name = "relu"

    def forward(self, x):
        if not (backend.is_gpu_array(x) and backend.has_kernels()):
            return super().forward(x)
        # in x's layout: CuPy would write it C-ordered, and the layers around would pay transposing copies
        self.y = backend.get_array_module(x).maximum(x, 0, out=new_array(x.shape, x, x.dtype))
        return self.y

    def backward(self, gy):
        if (not (backend.is_gpu_array(gy) and backend.has_kernels()) or gy.shape != self.y.shape
                or gy.dtype != self.y.dtype):  # another dtype (a float64 layer after): the reference promotes
            return super().backward(gy)
        kernel = backend.elementwise_kernel("T gy, T y", "T g", _BACKWARD, "dlscratch_relu_backward")
        g = new_array(self.y.shape, self.y, self.y.dtype)  # in y's layout (a convolution's: batch-last)
        kernel(gy, self.y, g)
        return g


@fast_version_of(reference_relu)
def relu(x, inplace=False):
    return x.relu_() if inplace else ReLU()(x)
