"""Fast LSTM: the point-wise half as one fused CUDA kernel on the GPU, and the cell's weight
gradients at batch size 1 as padded GEMMs (``matmul.py``).

The plain point-wise half (``functions/lstm_pointwise.py``) is a dozen whole-array operations,
each a pass over memory and, on the GPU, a kernel launch of several microseconds; at the sizes
of an LSTM step (a few hundred thousand numbers) the launches, not the arithmetic, set the time.
``lstm_kernels.py`` does the same arithmetic in one ``ElementwiseKernel`` per direction, reading
the four gates as strided views: cuDNN's "fused point-wise operations" rung (NVIDIA's blog
measured 5.5x over a naive LSTM with it, combined with the rungs before it). The kernels are
written and tested against the plain path on a GPU; no GPU was available where this was written,
so no speed-up is quoted yet. On the CPU the fast path runs the plain path.
"""

from .. import backend
from ..functions.lstm_cell import LSTMCell, apply_lstm_cell
from ..functions.lstm_cell import lstm_cell as reference_lstm_cell
from ..functions.lstm_pointwise import backward_buffers, outputs_like, peephole_gradients
from ..functions.lstm_pointwise import lstm_pointwise_backward as reference_backward
from ..functions.lstm_pointwise import lstm_pointwise_forward as reference_forward
from ..paths import fast_version_of
from . import lstm_kernels
from .matmul import outer_or_matmul


def use_kernel(fused, xp):
    """Whether to run the fused kernel: ``fused`` None means "on the GPU"."""
    on_gpu = xp is not backend.numpy
    if fused and not on_gpu:
        raise ValueError("lstm: the fused point-wise kernel runs on the GPU only; use fused=None or False")
    return on_gpu and backend.has_kernels() if fused is None else fused


@fast_version_of(reference_forward)
def lstm_pointwise_forward(z, c_prev, peephole=None, h_out=None, c_out=None, tanh_c_out=None, fused=None):
    if not use_kernel(fused, backend.get_array_module(z)):
        return reference_forward.reference(z, c_prev, peephole, h_out, c_out, tanh_c_out)  # the plain path
    h, c, tanh_c = outputs_like(c_prev, h_out, c_out, tanh_c_out)
    lstm_kernels.forward_kernel(z, c_prev, peephole, h, c, tanh_c)
    return h, c, tanh_c


@fast_version_of(reference_backward)
def lstm_pointwise_backward(gates, c_prev, c, tanh_c, gh, gc, peephole=None, gz_out=None, fused=None):
    if not use_kernel(fused, backend.get_array_module(gates)):
        return reference_backward.reference(gates, c_prev, c, tanh_c, gh, gc, peephole, gz_out)
    gh, gc, gz, gc_prev = backward_buffers(gates, c, gh, gc, gz_out)
    lstm_kernels.backward_kernel(gates, c_prev, tanh_c, gh, gc, peephole, gz, gc_prev)
    return gz, gc_prev, peephole_gradients(gz, c_prev, c, peephole)


class FastLSTMCell(LSTMCell):
    weight_product = staticmethod(outer_or_matmul)


@fast_version_of(reference_lstm_cell)
def lstm_cell(input, hx, weight_ih, weight_hh, bias_ih=None, bias_hh=None, *, peephole=None):
    return apply_lstm_cell(FastLSTMCell, input, hx, weight_ih, weight_hh, bias_ih, bias_hh, peephole)
