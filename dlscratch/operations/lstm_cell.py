"""One LSTM step as one graph node: ``F.lstm_cell`` (PyTorch's ``lstm_cell``, optionally with peepholes).

The four gates come from two GEMMs, one for the input and one for the recurrent state, each
4H wide, rather than eight per-gate products (the MATLAB Answers model):

    z = x @ W_ih.T + h @ W_hh.T + b_ih + b_hh          # (N, 4H), gates in order i, f, g, o

followed by the point-wise half (``lstm_pointwise.py``). The backward is the same in reverse:
the point-wise backward gives ``gz: (N, 4H)``, and four GEMMs give the rest.
"""

from ..engine.function import Function
from ..engine.switch import switched
from .lstm_pointwise import lstm_pointwise_backward, lstm_pointwise_forward
from .products import gemm
from .sums import sum_over


class LSTMCell(Function):
    """Inputs ``x: (N, I)``, ``h, c: (N, H)``, ``W_ih: (4H, I)``, ``W_hh: (4H, H)``, then the biases
    ``b_ih, b_hh: (4H,)`` if ``bias`` and the peepholes ``p_i, p_f, p_o: (H,)`` if ``peephole``.
    Outputs ``(h', c')``, each ``(N, H)``."""

    saves_outputs = True  # backward reads the output too
    name = "lstm_cell"
    returns_unshared_grads = True
    weight_product = staticmethod(gemm)  # gz.T @ x; the fast path writes outer products faster

    @staticmethod
    def bias_gradients(gz):
        """``[gb, gb]``: both biases get the same gradient, ``gz: (N, 4H)`` summed over the batch."""
        gb = sum_over(gz, 0)
        return [gb, gb]

    def __init__(self, bias=True, peephole=False):
        self.bias, self.peephole = bias, peephole

    def forward(self, x, h, c, W_ih, W_hh, *rest):
        check_cell_shapes(x, h, c, W_ih, W_hh, rest[:2] if self.bias else ())
        z = gemm(x, W_ih.T)
        z += gemm(h, W_hh.T)
        if self.bias:
            z += rest[0]
            z += rest[1]
        peephole = rest[-3:] if self.peephole else None
        h_next, c_next, tanh_c = lstm_pointwise_forward(z, c, peephole)
        self.saved = (x, h, c, W_ih, W_hh, z, c_next, tanh_c, peephole)
        return h_next, c_next

    def backward(self, gh, gc):
        x, h, c, W_ih, W_hh, gates, c_next, tanh_c, peephole = self.saved
        gz, gc_prev, gpeephole = lstm_pointwise_backward(gates, c, c_next, tanh_c, gh, gc, peephole)
        gz_t = gz.T
        need = self.needs_input_grad
        grads = [
            gemm(gz, W_ih) if need[0] else None,
            gemm(gz, W_hh) if need[1] else None,
            gc_prev,
            self.weight_product(gz_t, x) if need[3] else None,
            self.weight_product(gz_t, h) if need[4] else None,
        ]
        if self.bias:
            grads += self.bias_gradients(gz)
        if self.peephole:
            grads += list(gpeephole)
        return tuple(grads)


def check_cell_shapes(x, h, c, W_ih, W_hh, biases=()):
    """Raise ValueError naming every shape when the arrays do not fit one LSTM step (the calling
    ``Function`` adds its name)."""
    if W_ih.ndim != 2 or W_hh.ndim != 2 or W_ih.shape[0] % 4 or W_hh.shape != (W_ih.shape[0], W_ih.shape[0] // 4):
        raise ValueError(
            f"expected weight_ih (4*hidden_size, input_size) and weight_hh (4*hidden_size, hidden_size), "
            f"got {W_ih.shape} and {W_hh.shape}"
        )
    H, I = W_hh.shape[1], W_ih.shape[1]
    if x.ndim != 2 or x.shape[1] != I:
        raise ValueError(f"expected input of shape (batch, {I}), got {x.shape}")
    for name, state in (("h", h), ("c", c)):
        if state.shape != (x.shape[0], H):
            raise ValueError(f"expected {name} of shape ({x.shape[0]}, {H}) for input {x.shape}, "
                             f"got {state.shape}")
    for name, b in zip(("bias_ih", "bias_hh"), biases):
        if b.shape != (4 * H,):
            raise ValueError(f"expected {name} of shape ({4 * H},), got {b.shape}")


@switched
def lstm_cell(input, hx, weight_ih, weight_hh, bias_ih=None, bias_hh=None, *, peephole=None):
    """One LSTM step, PyTorch's ``lstm_cell``: ``input: (N, I)`` or ``(I,)``, ``hx = (h, c)``, each
    ``(N, H)`` (or ``(H,)``), ``weight_ih: (4H, I)``, ``weight_hh: (4H, H)``, ``bias_ih, bias_hh: (4H,)``
    (both or neither). ``peephole``: ``(p_i, p_f, p_o)``, each ``(H,)``, or None. Returns ``(h', c')``.
    """
    return apply_lstm_cell(LSTMCell, input, hx, weight_ih, weight_hh, bias_ih, bias_hh, peephole)


def apply_lstm_cell(node, input, hx, weight_ih, weight_hh, bias_ih, bias_hh, peephole):
    """``lstm_cell``'s checks and unbatched input, around ``node`` (an LSTMCell class): shared by both paths."""
    h, c = _pair(hx)
    if (bias_ih is None) != (bias_hh is None):
        raise ValueError("lstm_cell: give both bias_ih and bias_hh, or neither")
    if input.ndim == 1:  # one sample without a batch dimension, as PyTorch allows
        h_next, c_next = apply_lstm_cell(node, input.reshape(1, -1), (h.reshape(1, -1), c.reshape(1, -1)),
                                         weight_ih, weight_hh, bias_ih, bias_hh, peephole)
        return h_next.reshape(-1), c_next.reshape(-1)
    inputs = [input, h, c, weight_ih, weight_hh]
    if bias_ih is not None:
        inputs += [bias_ih, bias_hh]
    if peephole is not None:
        H = weight_hh.shape[-1]
        if len(peephole) != 3 or any(tuple(p.shape) != (H,) for p in peephole):
            raise ValueError(f"lstm_cell: peephole must be three weights (p_i, p_f, p_o) of shape ({H},), got "
                             f"{[tuple(getattr(p, 'shape', ())) for p in peephole]}")
        inputs += list(peephole)
    return node(bias=bias_ih is not None, peephole=peephole is not None)(*inputs)


def _pair(hx):
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"lstm_cell: hx must be a pair (h, c), got {type(hx).__name__}")
    return hx


