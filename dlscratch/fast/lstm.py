"""Fast LSTM cell: the point-wise half as one fused CUDA kernel each way, and batch-1 weight gradients as padded
GEMMs (``matmul.py``).

The plain point-wise half (``operations/lstm_pointwise.py``) is a dozen whole-array operations; on a GPU, at an LSTM
step's sizes, their launches set the time. ``lstm_kernels.py`` does the same arithmetic in one ``ElementwiseKernel``,
reading the four gates as strided views: the "fused point-wise operations" of J. Appleyard's "Optimizing Recurrent
Neural Networks in cuDNN 5" (NVIDIA Developer Blog, 2016). On the GPU the cell also adds its recurrent product and
biases inside that kernel. The CPU runs the plain path. ``python -m dlscratch.bench launches`` counts a cell step's
launches (the ``nn.LSTMCell`` row).
"""

from .. import backend
from ..engine.switch import fast_version_of
from ..operations.lstm_cell import LSTMCell as ReferenceLSTMCell
from ..operations.lstm_cell import apply_lstm_cell, check_cell_shapes
from ..operations.lstm_cell import lstm_cell as reference_lstm_cell
from ..operations.lstm_pointwise import backward_buffers, outputs_like, peephole_gradients
from ..operations.lstm_pointwise import lstm_pointwise_backward as reference_backward
from ..operations.lstm_pointwise import lstm_pointwise_forward as reference_forward
from ..operations.products import gemm
from . import lstm_kernels
from .matmul import outer_or_matmul


def use_kernel(fused, xp):
    """Whether to run the fused kernel: ``fused`` None means "on the GPU"."""
    on_gpu = xp is not backend.numpy
    if fused and not on_gpu:
        raise ValueError("lstm: the fused point-wise kernel runs on the GPU only; use fused=None or False")
    return on_gpu and backend.has_kernels() if fused is None else fused


def one_dtype(first, *others):
    """True when every array among ``others`` (None and numbers left out) has ``first``'s dtype, as the kernels
    need; mixed dtypes take the reference's promotions."""
    return all(getattr(a, "dtype", first.dtype) == first.dtype for a in others if a is not None)


@fast_version_of(reference_forward)
def lstm_pointwise_forward(z, c_prev, peephole=None, h_out=None, c_out=None, tanh_c_out=None, fused=None):
    mixed = fused is None and not one_dtype(z, c_prev, *(peephole or ()))
    if mixed or not use_kernel(fused, backend.get_array_module(z)):
        return reference_forward.reference(z, c_prev, peephole, h_out, c_out, tanh_c_out)  # the plain path
    h, c, tanh_c = outputs_like(c_prev, h_out, c_out, tanh_c_out)
    lstm_kernels.forward_kernel(z, c_prev, peephole, h, c, tanh_c)
    return h, c, tanh_c


@fast_version_of(reference_backward)
def lstm_pointwise_backward(gates, c_prev, c, tanh_c, gh, gc, peephole=None, gz_out=None, fused=None):
    mixed = fused is None and not one_dtype(gates, c_prev, c, tanh_c, gh, gc, *(peephole or ()))
    if mixed or not use_kernel(fused, backend.get_array_module(gates)):
        return reference_backward.reference(gates, c_prev, c, tanh_c, gh, gc, peephole, gz_out)
    gh, gc, gz, gc_prev = backward_buffers(gates, c, gh, gc, gz_out)
    lstm_kernels.backward_kernel(gates, c_prev, tanh_c, gh, gc, peephole, gz, gc_prev)
    return gz, gc_prev, peephole_gradients(gz, c_prev, c, peephole)


def bias_gradients(gz):
    """``[gb_ih, gb_hh]``: ``gz: (R, 4H)`` summed over its rows, as two arrays ``(4H,)`` that leaves adopt.

    On the GPU one reduction over ``gz`` seen twice makes both in one launch; on NumPy the reference's sum and copy.
    """
    xp = backend.get_array_module(gz)
    if xp is backend.numpy:
        return ReferenceLSTMCell.bias_gradients(gz)
    gb = xp.broadcast_to(gz, (2, *gz.shape)).sum(axis=1)
    return [gb[0], gb[1]]


class LSTMCell(ReferenceLSTMCell):  # the reference's name, as a graph's node shows it
    """The reference cell with outer products for its batch-1 weight gradients and, on the GPU, one kernel for all
    that follows its two products."""

    weight_product = staticmethod(outer_or_matmul)
    bias_gradients = staticmethod(bias_gradients)

    def forward(self, x, h, c, W_ih, W_hh, *rest):
        if not one_dtype(x, h, c, W_ih, W_hh, *rest) or not use_kernel(None, backend.get_array_module(x)):
            return super().forward(x, h, c, W_ih, W_hh, *rest)
        check_cell_shapes(x, h, c, W_ih, W_hh, rest[:2] if self.bias else ())
        z = gemm(x, W_ih.T)
        r = gemm(h, W_hh.T)
        b_ih, b_hh = rest[:2] if self.bias else (0, 0)
        peephole = rest[-3:] if self.peephole else None
        h_next, c_next, tanh_c = outputs_like(c, None, None, None)
        lstm_kernels.forward_cell_kernel(z, r, b_ih, b_hh, c, peephole, h_next, c_next, tanh_c)
        self.saved = (x, h, c, W_ih, W_hh, z, c_next, tanh_c, peephole)
        return h_next, c_next


@fast_version_of(reference_lstm_cell)
def lstm_cell(input, hx, weight_ih, weight_hh, bias_ih=None, bias_hh=None, *, peephole=None):
    return apply_lstm_cell(LSTMCell, input, hx, weight_ih, weight_hh, bias_ih, bias_hh, peephole)
