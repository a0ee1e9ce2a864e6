"""Recurrent layers with PyTorch's names, shapes and parameter names: ``LSTMCell`` and ``LSTM``.

    lstm = nn.LSTM(input_size=700, hidden_size=500, num_layers=2)
    output, (h_n, c_n) = lstm(x)          # x: (T, N, 700) -> output: (T, N, 500), h_n, c_n: (2, N, 500)

Every weight is initialised uniformly on ``[-1/sqrt(hidden_size), 1/sqrt(hidden_size)]``, as PyTorch does.
"""

import math

import numpy

from .. import backend
from ..engine.creation import zeros
from ..engine.tensor import Tensor
from ..operations import concatenate, dropout, stack
from ..operations.dropout import check_probability
from ..operations.lstm_cell import lstm_cell
from ..operations.lstm_layer import lstm_layer
from . import init
from .module import Module, Parameter
from .utils.rnn import PackedSequence


class LSTMCell(Module):
    """One LSTM step: ``(x, (h, c)) -> (h', c')`` with ``x: (N, input_size)`` (or ``(input_size,)``) and
    ``h, c: (N, hidden_size)``; a missing ``(h, c)`` is zeros.

    Parameters: ``weight_ih: (4H, input_size)``, ``weight_hh: (4H, H)``, ``bias_ih, bias_hh: (4H,)``,
    gates in PyTorch's order i, f, g, o, so that the ``state_dict`` loads into ``torch.nn.LSTMCell``
    and back. ``peephole=True`` adds diagonal peephole weights ``weight_ci, weight_cf, weight_co: (H,)``
    from the cell to the input, forget and output gates (Gers and Schmidhuber, 2000).
    """

    def __init__(self, input_size, hidden_size, bias=True, peephole=False, device=None):
        super().__init__()
        self.input_size = _positive("LSTMCell", "input_size", input_size)
        self.hidden_size = H = _positive("LSTMCell", "hidden_size", hidden_size)
        self.peephole = bool(peephole)
        xp = backend.xp if device is None else backend.module_for(device)
        self.weight_ih = Parameter(xp.empty((4 * H, self.input_size), dtype=numpy.float32))
        self.weight_hh = Parameter(xp.empty((4 * H, H), dtype=numpy.float32))
        if bias:
            self.bias_ih = Parameter(xp.empty(4 * H, dtype=numpy.float32))
            self.bias_hh = Parameter(xp.empty(4 * H, dtype=numpy.float32))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        if self.peephole:
            for name in ("weight_ci", "weight_cf", "weight_co"):
                setattr(self, name, Parameter(xp.empty(H, dtype=numpy.float32)))
        _init_uniform(self)

    def forward(self, input, hx=None):
        batched = input.ndim == 2
        if input.ndim not in (1, 2) or input.shape[-1] != self.input_size:
            raise ValueError(
                f"LSTMCell: expected input of shape (batch, {self.input_size}) or ({self.input_size},), "
                f"got {tuple(input.shape)}"
            )
        _check_dtype("LSTMCell", input, self.weight_ih)
        expected = (input.shape[0], self.hidden_size) if batched else (self.hidden_size,)
        if hx is None:
            h = c = zeros(*expected, dtype=input.dtype, device=input.device)
        else:
            h, c = _state_pair("LSTMCell", hx)
            _check_state("LSTMCell", "h", h, expected, input)
            _check_state("LSTMCell", "c", c, expected, input)
        peephole = (self.weight_ci, self.weight_cf, self.weight_co) if self.peephole else None
        return lstm_cell(input, (h, c), self.weight_ih, self.weight_hh, self.bias_ih, self.bias_hh,
                         peephole=peephole)

    def extra_repr(self):
        extra = "" if self.bias_ih is not None else ", bias=False"
        return f"{self.input_size}, {self.hidden_size}{extra}" + (", peephole=True" if self.peephole else "")


class LSTM(Module):
    """A multi-layer LSTM over whole sequences, PyTorch's ``nn.LSTM``.

    ``output, (h_n, c_n) = lstm(input, (h_0, c_0))``:
    ``input: (T, N, input_size)`` (``(N, T, input_size)`` with ``batch_first``, ``(T, input_size)``
    unbatched) or a ``PackedSequence``; ``h_0, c_0: (num_layers * D, N, hidden_size)``, zeros when
    missing; ``output: (T, N, D * hidden_size)`` (packed when the input was), the last layer's
    hidden state at every step; ``h_n, c_n`` like ``h_0``: each sequence's state after its own last
    step. ``D`` is 2 with ``bidirectional`` (the reverse direction's outputs follow the forward's).
    ``dropout`` drops the outputs of every layer but the last, in training mode only.

    Parameters per layer ``k``: ``weight_ih_lk: (4H, input)``, ``weight_hh_lk: (4H, H)``,
    ``bias_ih_lk, bias_hh_lk: (4H,)``, and the same with ``_reverse`` for the backward direction.
    Each direction of each layer runs as one graph node (``operations/lstm_layer.py``): the input
    GEMM for all steps before its time loop, the weight gradients in one GEMM each after it.
    """

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None):
        super().__init__()
        self.input_size = _positive("LSTM", "input_size", input_size)
        self.hidden_size = H = _positive("LSTM", "hidden_size", hidden_size)
        self.num_layers = _positive("LSTM", "num_layers", num_layers)
        self.bias, self.batch_first, self.bidirectional = bool(bias), bool(batch_first), bool(bidirectional)
        self.dropout = check_probability(dropout)
        xp = backend.xp if device is None else backend.module_for(device)
        for layer in range(self.num_layers):
            layer_input = self.input_size if layer == 0 else H * self.num_directions
            for suffix in self._suffixes(layer):
                self.register_parameter(f"weight_ih{suffix}", Parameter(xp.empty((4 * H, layer_input), numpy.float32)))
                self.register_parameter(f"weight_hh{suffix}", Parameter(xp.empty((4 * H, H), numpy.float32)))
                if self.bias:
                    self.register_parameter(f"bias_ih{suffix}", Parameter(xp.empty(4 * H, numpy.float32)))
                    self.register_parameter(f"bias_hh{suffix}", Parameter(xp.empty(4 * H, numpy.float32)))
        _init_uniform(self)

    @property
    def num_directions(self):
        return 2 if self.bidirectional else 1

    def _suffixes(self, layer):
        return [f"_l{layer}", f"_l{layer}_reverse"][: self.num_directions]

    def forward(self, input, hx=None):
        packed = isinstance(input, PackedSequence)
        if packed:
            data, batch_sizes, sorted_indices, unsorted_indices = input
            batch, batched = int(batch_sizes[0]), True
        else:
            data, batch_sizes, batched = self._as_packed(input)
            sorted_indices = unsorted_indices = None
            batch = batch_sizes[0]
        if data.ndim != 2 or data.shape[1] != self.input_size:
            raise ValueError(f"LSTM: expected packed data of shape (rows, {self.input_size}), got {tuple(data.shape)}")
        _check_dtype("LSTM", data, self.weight_ih_l0)
        h0, c0 = self._initial_state(hx, batch, data, batched)
        if sorted_indices is not None:  # the states follow the batch into the packing's order
            h0, c0 = h0[:, sorted_indices], c0[:, sorted_indices]
        h_n, c_n = [], []
        layer_input = data
        for layer in range(self.num_layers):
            outputs = []
            for direction, suffix in enumerate(self._suffixes(layer)):
                k = layer * self.num_directions + direction
                weights = [getattr(self, f"{name}{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")
                           if self.bias or name.startswith("weight")]
                y, h, c = lstm_layer(layer_input, h0[k], c0[k], *weights, batch_sizes=batch_sizes,
                                     reverse=direction == 1)
                outputs.append(y)
                h_n.append(h)
                c_n.append(c)
            layer_input = outputs[0] if len(outputs) == 1 else concatenate(outputs, 1)
            if layer < self.num_layers - 1:
                layer_input = dropout(layer_input, self.dropout, self.training)
        # one layer, one direction: a view with a new first axis, where stack() would copy each state
        h_n, c_n = (h_n[0].unsqueeze(0), c_n[0].unsqueeze(0)) if len(h_n) == 1 else (stack(h_n), stack(c_n))
        if unsorted_indices is not None:
            h_n, c_n = h_n[:, unsorted_indices], c_n[:, unsorted_indices]
        if packed:
            return input._replace(data=layer_input), (h_n, c_n)
        return self._unpack(layer_input, input, batched), (h_n if batched else h_n[:, 0], c_n if batched else c_n[:, 0])

    def _as_packed(self, input):
        """A padded input as packed rows of equal-length sequences: ``(rows, batch_sizes, batched)``."""
        if not isinstance(input, Tensor):
            raise TypeError(f"LSTM: expected a Tensor or a PackedSequence, got {type(input).__name__}")
        layout = "(batch, seq, input_size)" if self.batch_first else "(seq, batch, input_size)"
        if input.ndim not in (2, 3) or input.shape[-1] != self.input_size:
            raise ValueError(
                f"LSTM: expected input of shape {layout} or (seq, input_size) with input_size={self.input_size}, "
                f"got {tuple(input.shape)}"
            )
        batched = input.ndim == 3
        x = input if not batched else input.transpose(0, 1) if self.batch_first else input
        if not batched:
            x = x.unsqueeze(1)
        T, N = x.shape[0], x.shape[1]
        if T == 0 or N == 0:
            raise ValueError(f"LSTM: the input {tuple(input.shape)} has no steps or no sequences")
        return x.reshape(T * N, self.input_size), [N] * T, batched

    def _unpack(self, rows, input, batched):
        """Rows of equal-length sequences back into the input's layout."""
        T = input.shape[1] if batched and self.batch_first else input.shape[0]
        out = rows.reshape(T, -1, rows.shape[-1])
        if not batched:
            return out[:, 0]
        return out.transpose(0, 1) if self.batch_first else out

    def _initial_state(self, hx, batch, data, batched):
        layers = self.num_layers * self.num_directions
        shape = (layers, batch, self.hidden_size)
        if hx is None:
            h0 = zeros(*shape, dtype=data.dtype, device=data.device)
            return h0, h0
        h0, c0 = _state_pair("LSTM", hx)
        expected = shape if batched else (layers, self.hidden_size)
        _check_state("LSTM", "h_0", h0, expected, data)
        _check_state("LSTM", "c_0", c0, expected, data)
        if not batched:
            h0, c0 = h0.unsqueeze(1), c0.unsqueeze(1)
        return h0, c0

    def extra_repr(self):
        options = [f"{self.input_size}, {self.hidden_size}"]
        defaults = {"num_layers": 1, "bias": True, "batch_first": False, "dropout": 0.0, "bidirectional": False}
        options += [f"{k}={getattr(self, k)}" for k, v in defaults.items() if getattr(self, k) != v]
        return ", ".join(options)


def _init_uniform(module):
    bound = 1 / math.sqrt(module.hidden_size)
    for p in module.parameters():
        init.uniform_(p, -bound, bound)


def _positive(layer, name, n):
    if not isinstance(n, (int, numpy.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"{layer}: {name} must be a positive integer, got {n!r}")
    return int(n)


def _state_pair(layer, hx):
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"{layer}: the state must be a pair (h, c) of tensors, got {type(hx).__name__}")
    return hx


def _check_dtype(layer, input, weight):
    if input.dtype != weight.dtype:
        raise TypeError(
            f"{layer}: the input is {input.dtype} but the weights are {weight.dtype}; convert the input "
            f"(x.to(dlscratch.{weight.dtype})) or the layer (.to(dlscratch.{input.dtype}) for floating-point input)"
        )


def _check_state(layer, name, state, expected, like):
    if not isinstance(state, Tensor):
        raise TypeError(f"{layer}: {name} must be a Tensor, got {type(state).__name__}")
    if tuple(state.shape) != tuple(expected):
        raise ValueError(
            f"{layer}: expected {name} of shape {tuple(expected)} for input {tuple(like.shape)}, "
            f"got {tuple(state.shape)}"
        )
    if state.device != like.device:
        raise RuntimeError(
            f"{layer}: {name} is on {state.device} but the input is on {like.device}; "
            f"move it with {name}.to('{like.device}')"
        )
    if state.dtype != like.dtype:
        raise TypeError(f"{layer}: {name} is {state.dtype} but the input is {like.dtype}; use one dtype")
