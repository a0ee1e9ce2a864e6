"""Layers with learnable parameters, PyTorch's way: ``import dlscratch.nn as nn``.

    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    model                                   # the layer tree with parameter counts
    logits = model(images)                  # (N, 1, 28, 28) -> (N, 10)
"""

from . import functional, init, utils
from .activation import LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .container import Sequential
from .conv import Conv2d
from .dropout import Dropout
from .embedding import Embedding
from .flatten import Flatten
from .linear import Linear
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module, Parameter
from .pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from .rnn import LSTM, LSTMCell

__all__ = [
    "AdaptiveAvgPool2d", "AvgPool2d", "BCEWithLogitsLoss", "Conv2d", "CrossEntropyLoss", "Dropout", "Embedding",
    "Flatten", "functional", "init", "Linear", "LogSoftmax", "LSTM", "LSTMCell", "MaxPool2d", "Module", "MSELoss",
    "NLLLoss", "Parameter", "ReLU", "Sequential", "Sigmoid", "Softmax", "Tanh", "utils",
]
