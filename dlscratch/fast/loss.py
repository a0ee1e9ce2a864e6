"""Cross-entropy on the GPU: one kernel and a sum forward, one kernel backward, and no wait for the labels.

The reference (``operations/loss.py``) checks the labels with ``int(labels.min())`` and ``int(labels.max())``, so
the host waits for the GPU in every step, and it takes a launch per array operation. Here one thread per sample
computes its row's log-sum-exp and loss, one per logit writes ``(softmax - one_hot) * gy / n``, and a label
outside ``[0, C)`` makes its loss NaN on the device: the error is raised where the host reads the loss anyway, as
PyTorch's device-side assert does. Float16 logits are computed in float32, as PyTorch's CUDA loss does. NumPy
runs the reference, whose check costs no wait there.
"""

import numpy

from .. import backend
from ..engine.switch import fast_version_of
from ..engine.tensor import Tensor
from ..operations.loss import CrossEntropy as ReferenceCrossEntropy
from ..operations.loss import cross_entropy as reference_cross_entropy

_FORWARD = """
const ptrdiff_t row = i * C;  // sample i's logits are z[row] .. z[row + C - 1]
A top = z[row];
for (ptrdiff_t k = 1; k < C; ++k) top = max(top, (A)z[row + k]);
A total = 0;
for (ptrdiff_t k = 0; k < C; ++k) total += exp((A)z[row + k] - top);
shift = top;
log_total = log(total);
if (label < 0 || label >= C) {
    loss = not_a_number;  // explained on the host when the loss is read
} else {
    loss = -(((A)z[row + label] - top) - log_total) * scale;
}
"""

_BACKWARD = """
const ptrdiff_t n_i = i / C;
const A p = exp(((A)z - shift[n_i]) - log_total[n_i]);
const A upstream = per_sample ? (A)gy[n_i] : (A)gy[0] / divisor;
g = ((i % C) == labels[n_i] ? p - 1 : p) * upstream;
"""


def accumulator_dtype(dtype):
    """The type the kernels compute in: float32 for float16 logits, the logits' own type otherwise."""
    return numpy.dtype(numpy.float32) if dtype == numpy.float16 else dtype


class CrossEntropy(ReferenceCrossEntropy):
    """The reference's ``CrossEntropy`` (and its name) with the kernels above, for GPU arrays."""

    def forward(self, logits, labels):
        self.check_shapes(logits, labels)
        xp = backend.get_array_module(logits)
        n, c = logits.shape
        self.logits, self.labels = logits, labels
        accumulator = accumulator_dtype(logits.dtype)
        self.shift, self.log_total, losses = (xp.empty(n, dtype=accumulator) for _ in range(3))
        scale = 1 / n if self.reduction == "mean" and n else 1
        kernel = backend.elementwise_kernel("raw T z, L label, int32 C, float32 scale, float32 not_a_number",
                                            "A shift, A log_total, A loss", _FORWARD, "dlscratch_cross_entropy")
        kernel(logits, labels, c, scale, float("nan"), self.shift, self.log_total, losses)
        if self.reduction != "none":
            losses = losses.sum()
        return losses if accumulator == logits.dtype else losses.astype(logits.dtype)

    def backward(self, gy):
        xp = backend.get_array_module(gy)
        n, c = self.logits.shape
        kernel = backend.elementwise_kernel("T z, raw A shift, raw A log_total, raw L labels, raw T gy, int32 C, "
                                            "int32 per_sample, int32 divisor", "T g", _BACKWARD,
                                            "dlscratch_cross_entropy_backward")
        g = xp.empty_like(self.logits)
        kernel(self.logits, self.shift, self.log_total, self.labels, gy.reshape(-1), c,
               int(self.reduction == "none"), n if self.reduction == "mean" else 1, g)
        return g, None

    def explain_nonfinite(self):
        """Raise the reference's ValueError for a label outside ``[0, C)``: run when a value read from the loss is
        not finite (``deferred_check``)."""
        self.check_labels(backend.to_cpu(self.labels), self.logits.shape[1])


@fast_version_of(reference_cross_entropy)
def cross_entropy(input, target, weight=None, *, ignore_index=None, reduction="mean", label_smoothing=0.0):
    data, labels = (x.data if isinstance(x, Tensor) else x for x in (input, target))
    on_kernels = backend.is_gpu_array(data) and backend.has_kernels() and data.ndim == 2 and data.size
    plain = weight is None and ignore_index is None and not label_smoothing and on_kernels
    plain = plain and getattr(labels, "shape", None) == data.shape[:1] and labels.dtype.kind in "iu"
    if not plain:  # other shapes and options: the reference, which takes them all
        return reference_cross_entropy.reference(input, target, weight, ignore_index=ignore_index,
                                                 reduction=reduction, label_smoothing=label_smoothing)
    node = CrossEntropy(reduction)
    loss = node(input, target)
    loss.deferred_check = node.explain_nonfinite
    return loss
