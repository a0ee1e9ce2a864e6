"""A plain float64 NumPy LSTM, written out step by step, that the LSTM tests compare the library with.

Gates in PyTorch's order i, f, g, o; optional peepholes ``(p_i, p_f, p_o)`` as in the MATLAB Answers
model (the output gate's peephole sees the new cell).
"""

import numpy as np


def sigmoid(a):
    return 1 / (1 + np.exp(-a))


def cell(x, h, c, W_ih, W_hh, b_ih=None, b_hh=None, peephole=None):
    """One step: ``x: (N, I)``, ``h, c: (N, H)`` -> ``(h', c')``."""
    z = x @ W_ih.T + h @ W_hh.T
    if b_ih is not None:
        z = z + b_ih + b_hh
    z_i, z_f, z_g, z_o = np.split(z, 4, axis=1)
    p_i, p_f, p_o = peephole if peephole is not None else (0, 0, 0)
    i = sigmoid(z_i + p_i * c)
    f = sigmoid(z_f + p_f * c)
    g = np.tanh(z_g)
    c_next = f * c + i * g
    o = sigmoid(z_o + p_o * c_next)
    return o * np.tanh(c_next), c_next


def sequence(x, h, c, weights, reverse=False):
    """One direction of one layer over ``x: (T, N, I)`` -> ``(y: (T, N, H), h_n, c_n)``."""
    steps = range(x.shape[0])
    y = [None] * x.shape[0]
    for t in reversed(steps) if reverse else steps:
        h, c = cell(x[t], h, c, *weights)
        y[t] = h
    return np.stack(y), h, c


def lstm(x, h0, c0, params, num_layers, bidirectional=False):
    """A stacked (bi)directional LSTM with PyTorch's parameter names in ``params`` (a dict of arrays).
    ``x: (T, N, I)``, ``h0, c0: (layers * D, N, H)``."""
    directions = ["", "_reverse"] if bidirectional else [""]
    h_n, c_n = [], []
    layer_input = x
    for layer in range(num_layers):
        outputs = []
        for d, suffix in enumerate(directions):
            k = layer * len(directions) + d
            names = [f"{n}_l{layer}{suffix}" for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
            weights = [params[n] for n in names if n in params]
            y, h, c = sequence(layer_input, h0[k], c0[k], weights, reverse=d == 1)
            outputs.append(y)
            h_n.append(h)
            c_n.append(c)
        layer_input = np.concatenate(outputs, axis=2)
    return layer_input, np.stack(h_n), np.stack(c_n)
