"""ReLU's backward on the GPU as one kernel.

The reference's ``gy * (y > 0)`` is two launches on a GPU (a comparison, then a product) and an array of
booleans in between; the kernel computes the same product, ``gy * 1`` or ``gy * 0`` (so a NaN or an infinity in
``gy`` still propagates as in the reference), in one pass.
"""

from .. import backend
from ..functions.elementwise import ReLU
from ..functions.elementwise import relu as reference_relu
from ..paths import fast_version_of

_BACKWARD = "g = gy * (y > 0 ? (T)1 : (T)0)"


class KernelReLU(ReLU):
    name = "relu"  # the reference node's name, in error messages and graphs

    def backward(self, gy):
        if not (backend.is_gpu_array(gy) and backend.has_kernels()) or gy.shape != self.y.shape:
            return super().backward(gy)
        kernel = backend.elementwise_kernel("T gy, T y", "T g", _BACKWARD, "dlscratch_relu_backward")
        return kernel(gy, self.y)


@fast_version_of(reference_relu)
def relu(x):
    return KernelReLU()(x)
