"""An LSTM layer's time loop on the GPU with no copies or memsets in it: two launches per step each way.

On a GPU a small step takes as long as its launches, and the reference loop (``operations/lstm_layer.py``) spends
some on copying its running state into the saved arrays and on adding the recurrent product to the gates. Here,
for sequences of one length (``batch_sizes = [N] * T``):

- the hidden states are one ``(T + 1) * N``-row array with ``h0`` at one end: each step reads its previous state
  as a view and writes its output in place, so ``y``, the saved states and the final state are views of it
  (the cell states likewise);
- the recurrent product ``h @ W_hh.T`` goes into a kept buffer and is added, with the biases, inside the point-wise
  kernel (``lstm_kernels.forward_recurrent_kernel``);
- backward, the kernel adds the output's gradient to the state's and writes ``gc`` in place, and each step
  multiplies by ``[W_hh | W_ih]`` to get ``[gh | gx]`` in one wide GEMM when the input needs a gradient.

Packed sequences of different lengths, and the CPU, take the reference loop. ``python -m dlscratch.bench launches``
counts the layer's launches beside cuDNN's (the ``nn.LSTM`` row).
"""

from .. import backend
from ..engine.switch import fast_version_of
from ..operations.lstm_layer import LSTMLayer as ReferenceLSTMLayer
from ..operations.lstm_layer import apply_lstm_layer
from ..operations.lstm_layer import lstm_layer as reference_lstm_layer
from ..operations.products import gemm
from . import lstm_kernels
from .lstm import bias_gradients, one_dtype


class LSTMLayer(ReferenceLSTMLayer):
    """The reference's ``LSTMLayer`` (same name, inputs, outputs and saved arrays), looped as above."""

    bias_gradients = staticmethod(bias_gradients)  # one reduction for both biases on the GPU (fast/lstm.py)

    looped = False  # forward ran the loop below (not the reference's, for mixed dtypes)

    def forward(self, x, h0, c0, W_ih, W_hh, b_ih=None, b_hh=None):
        if not one_dtype(x, h0, c0, W_ih, W_hh, b_ih, b_hh):
            return super().forward(x, h0, c0, W_ih, W_hh, b_ih, b_hh)  # the kernels take one dtype; the dtype rule
        self.looped = True
        self.check(x, h0, c0, W_ih, W_hh, b_ih, b_hh)
        xp = backend.get_array_module(x)
        R, N, H = x.shape[0], self.batch_sizes[0], W_hh.shape[1]
        z_all = gemm(x, W_ih.T)  # every step's input projection in one GEMM: (R, 4H); the kernel adds the biases
        hs, cs = xp.empty((2, R + N, H), dtype=x.dtype)  # [h0, y] (forward) or [y, h0] (reverse), and the cells
        start_ends = self.steps[0][0] > self.steps[-1][0]  # reverse: the first step processed is the last one
        mine, before = (slice(0, R), slice(N, R + N)) if start_ends else (slice(N, R + N), slice(0, R))
        initial = slice(R, R + N) if start_ends else slice(0, N)
        hs[initial], cs[initial] = h0, c0
        y, h_prev_all, c_all, c_prev_all = hs[mine], hs[before], cs[mine], cs[before]
        tanh_c_all = xp.empty((R, H), dtype=x.dtype)
        r = xp.empty((N, 4 * H), dtype=x.dtype)
        b_ih, b_hh = (b_ih, b_hh) if self.bias else (0, 0)
        for start, n in self.steps:
            rows = slice(start, start + n)
            gemm(h_prev_all[rows], W_hh.T, out=r)
            lstm_kernels.forward_recurrent_kernel(z_all[rows], b_ih, b_hh, r, c_prev_all[rows], y[rows],
                                                  c_all[rows], tanh_c_all[rows])
        last = slice(*((0, N) if start_ends else (R - N, R)))
        self.saved = (x, W_ih, W_hh, z_all, h_prev_all, c_prev_all, c_all, tanh_c_all)
        return y, y[last].copy(), c_all[last].copy()

    def backward(self, gy, gh_n, gc_n):
        if not self.looped:
            return super().backward(gy, gh_n, gc_n)
        x, W_ih, W_hh, gates, h_prev_all, c_prev_all, c_all, tanh_c_all = self.saved
        xp = backend.get_array_module(x)
        # the kernels take the layer's dtype (a float64 head may follow a float32 layer)
        gy, gh_n, gc_n = (None if g is None else g.astype(x.dtype, copy=False) for g in (gy, gh_n, gc_n))
        R, N, H = x.shape[0], self.batch_sizes[0], W_hh.shape[1]
        need_x = self.needs_input_grad[0]
        W = xp.concatenate((W_hh, W_ih), axis=1) if need_x else W_hh  # (4H, H + I): gz @ W is [gh | gx]
        products = xp.empty((R if need_x else N, W.shape[1]), dtype=x.dtype)  # every step's gx is kept
        gz_all = xp.empty_like(gates)
        gc = xp.empty_like(c_all[:N])
        gh_read, gc_read = 0 if gh_n is None else gh_n, 0 if gc_n is None else gc_n  # the first step's
        for start, n in reversed(self.steps):
            rows = slice(start, start + n)
            lstm_kernels.backward_recurrent_kernel(gates[rows], c_prev_all[rows], tanh_c_all[rows], gh_read,
                                                   0 if gy is None else gy[rows], gc_read, gz_all[rows], gc)
            product = products[rows] if need_x else products
            gemm(gz_all[rows], W, out=product)
            gh_read, gc_read = product[:, :H], gc
        return self.gradients(gz_all, gh_read, gc, gx=products[:, H:] if need_x else None)


def runs_the_loop(x, batch_sizes):
    """True when this module's ``LSTMLayer`` applies: a GPU array, kernels, and sequences of one length."""
    return backend.is_gpu_array(x) and backend.has_kernels() and len(set(batch_sizes)) == 1


class _FastestLayer:
    """Makes the node for ``lstm_layer``'s call: this module's ``LSTMLayer`` where it applies, else the reference's."""

    def __init__(self, x):
        self.x = getattr(x, "data", x)

    def __call__(self, batch_sizes, reverse, bias):
        layer = LSTMLayer if runs_the_loop(self.x, batch_sizes) else ReferenceLSTMLayer
        return layer(batch_sizes, reverse=reverse, bias=bias)


@fast_version_of(reference_lstm_layer)
def lstm_layer(x, h0, c0, weight_ih, weight_hh, bias_ih=None, bias_hh=None, batch_sizes=None, reverse=False):
    return apply_lstm_layer(_FastestLayer(x), x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh, batch_sizes,
                            reverse)
