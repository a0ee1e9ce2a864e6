"""One direction of one LSTM layer over a whole (packed) sequence, as one graph node.

What makes it fast, compared with calling ``lstm_cell`` once per step:

- the input projection of every step is one GEMM before the time loop: ``X @ W_ih.T`` for all
  ``T·N`` rows at once (cuDNN's "combine the input GEMMs" step);
- the loop then runs only the recurrent GEMM ``h @ W_hh.T`` and the point-wise half per step;
- the backward loop runs only the point-wise backward and ``gz @ W_hh`` per step; the gradients
  of ``X``, ``W_ih``, ``W_hh`` and the biases are each one GEMM (or sum) over all steps after it;
- each step's recurrent product puts the weight matrix first and the batch second, as columns:
  ``z += (W_hh @ h.T).T`` and, in the backward, ``gh = (W_hh_t @ gz.T).T`` with ``W_hh_t``, a
  contiguous copy of ``W_hh.T`` made once (cuDNN's "pre-transposed weights"). The numbers are those of
  ``h @ W_hh.T`` and ``gz @ W_hh``, but OpenBLAS runs this order faster for the few rows of a step
  (``python -m dlscratch.bench lstm`` times the layer at batch 1, 32 and 128).

The rows are packed, as in PyTorch's ``PackedSequence``: step ``t`` owns ``batch_sizes[t]`` rows,
the sequences still running at that step, longest first. A batch of equal lengths is the case
``batch_sizes = [N] * T``. When the batch shrinks, the sequences that ended keep their last state,
which is how every sequence's final state is its own. The reverse direction walks the steps from
last to first; its batch then grows, and a sequence that starts takes its row of ``h0``.
"""

import numpy

from ..backend import get_array_module
from ..engine.function import Function
from ..engine.switch import switched
from .lstm_cell import LSTMCell, check_cell_shapes
from .lstm_pointwise import lstm_pointwise_backward, lstm_pointwise_forward
from .products import gemm


class LSTMLayer(Function):
    """Inputs ``x: (R, I)`` (R packed rows), ``h0, c0: (N, H)`` with ``N = batch_sizes[0]``,
    ``W_ih: (4H, I)``, ``W_hh: (4H, H)`` and, if ``bias``, ``b_ih, b_hh: (4H,)``.
    Outputs ``y: (R, H)`` (the hidden state at every packed row), ``h_n, c_n: (N, H)``."""

    saves_outputs = True  # backward reads the output too


    name = "lstm"
    returns_unshared_grads = True

    def __init__(self, batch_sizes, reverse=False, bias=True):
        self.batch_sizes = [int(b) for b in batch_sizes]
        starts = numpy.concatenate([[0], numpy.cumsum(self.batch_sizes)[:-1]]).tolist()
        self.steps = list(zip(starts, self.batch_sizes))  # (first row, rows) of each step
        if reverse:
            self.steps.reverse()
        self.bias = bias

    def check(self, x, h0, c0, W_ih, W_hh, b_ih, b_hh):
        """Raise ValueError for inputs whose shapes do not fit the batch sizes or each other."""
        if x.ndim != 2 or x.shape[0] != sum(self.batch_sizes):
            raise ValueError(f"expected packed input of shape ({sum(self.batch_sizes)}, input_size) for batch sizes "
                             f"summing to {sum(self.batch_sizes)}, got {x.shape}")
        check_cell_shapes(x[: self.batch_sizes[0]], h0, c0, W_ih, W_hh, (b_ih, b_hh) if self.bias else ())

    def forward(self, x, h0, c0, W_ih, W_hh, b_ih=None, b_hh=None):
        self.check(x, h0, c0, W_ih, W_hh, b_ih, b_hh)
        xp = get_array_module(x)
        z_all = gemm(x, W_ih.T)  # every step's input projection in one GEMM: (R, 4H)
        if self.bias:
            z_all += b_ih + b_hh
        y, c_all, tanh_c_all = xp.empty((3, x.shape[0], W_hh.shape[1]), dtype=x.dtype)
        h_prev_all, c_prev_all = xp.empty((2, x.shape[0], W_hh.shape[1]), dtype=x.dtype)
        h, c = h0.copy(), c0.copy()  # the running state; rows of ended sequences keep their last one
        for start, n in self.steps:
            rows = slice(start, start + n)
            h_prev_all[rows], c_prev_all[rows] = h[:n], c[:n]
            z = z_all[rows]
            z += gemm(W_hh, h_prev_all[rows].T).T
            lstm_pointwise_forward(z, c_prev_all[rows], h_out=y[rows], c_out=c_all[rows], tanh_c_out=tanh_c_all[rows])
            h[:n], c[:n] = y[rows], c_all[rows]
        self.saved = (x, W_ih, W_hh, z_all, h_prev_all, c_prev_all, c_all, tanh_c_all)
        return y, h, c

    def backward(self, gy, gh_n, gc_n):
        x, W_ih, W_hh, gates, h_prev_all, c_prev_all, c_all, tanh_c_all = self.saved
        xp = get_array_module(x)
        W_hh_t = xp.ascontiguousarray(W_hh.T)
        gh, gc, gz_all = self.backward_buffers(gh_n, gc_n)
        for start, n in reversed(self.steps):
            rows = slice(start, start + n)
            gh_t = gh[:n] if gy is None else gh[:n] + gy[rows]
            _, gc[:n], _ = lstm_pointwise_backward(gates[rows], c_prev_all[rows], c_all[rows], tanh_c_all[rows],
                                                   gh_t, gc[:n], gz_out=gz_all[rows])
            gh[:n] = gemm(W_hh_t, gz_all[rows].T).T
        return self.gradients(gz_all, gh, gc)

    def backward_buffers(self, gh_n, gc_n):
        """The running gradients of the state, ``gh, gc: (N, H)`` (from the final state's, or zeros), and an
        uninitialised ``gz_all`` shaped like the saved gates."""
        x, gates, W_hh = self.saved[0], self.saved[3], self.saved[2]
        xp = get_array_module(x)
        state_shape = (self.batch_sizes[0], W_hh.shape[1])
        gh = xp.zeros(state_shape, dtype=x.dtype) if gh_n is None else gh_n.copy()
        gc = xp.zeros(state_shape, dtype=x.dtype) if gc_n is None else gc_n.copy()
        return gh, gc, xp.empty_like(gates)

    bias_gradients = staticmethod(LSTMCell.bias_gradients)  # both biases get the same gradient

    def gradients(self, gz_all, gh, gc, gx=None):
        """The inputs' gradients from the pre-activations' ``gz_all: (R, 4H)`` and the initial state's ``gh, gc``;
        ``gx: (R, I)``, the input sequence's, where the caller has it already (the fast loop makes it step by step)."""
        x, W_ih, _, _, h_prev_all, _, _, _ = self.saved
        need = self.needs_input_grad
        if gx is None and need[0]:  # the input sequence: usually data, which needs none
            gx = gemm(gz_all, W_ih)
        grads = [
            gx,
            gh,
            gc,
            gemm(gz_all.T, x) if need[3] else None,  # every step's weight gradient in one GEMM
            gemm(gz_all.T, h_prev_all) if need[4] else None,
        ]
        if self.bias:
            grads += self.bias_gradients(gz_all)
        return tuple(grads)


@switched
def lstm_layer(x, h0, c0, weight_ih, weight_hh, bias_ih=None, bias_hh=None, batch_sizes=None, reverse=False):
    """One direction of one LSTM layer: see ``LSTMLayer``. ``batch_sizes=None``: ``x`` is ``(T, N, I)``
    padded to equal lengths, and ``y`` comes back as ``(T, N, H)``."""
    return apply_lstm_layer(LSTMLayer, x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh, batch_sizes, reverse)


def apply_lstm_layer(layer_class, x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh, batch_sizes, reverse):
    """``lstm_layer`` with the node ``layer_class`` (``LSTMLayer`` or a fast version of it)."""
    if batch_sizes is None:
        T, N = x.shape[0], x.shape[1]
        y, h_n, c_n = apply_lstm_layer(layer_class, x.reshape(T * N, x.shape[2]), h0, c0, weight_ih, weight_hh,
                                       bias_ih, bias_hh, [N] * T, reverse)
        return y.reshape(T, N, y.shape[1]), h_n, c_n
    inputs = [x, h0, c0, weight_ih, weight_hh] + ([bias_ih, bias_hh] if bias_ih is not None else [])
    return layer_class(batch_sizes, reverse=reverse, bias=bias_ih is not None)(*inputs)
