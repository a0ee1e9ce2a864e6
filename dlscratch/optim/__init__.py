"""Optimizers: update rules that change parameters in place from their gradients.

    optimizer = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for x, y in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer.step()

Build the optimizer after moving the model to its device: the state it creates lives there.
``optim.lr_scheduler`` changes the learning rate from epoch to epoch (``StepLR``, ``MultiStepLR``,
``ExponentialLR``, ``LambdaLR``).
"""

from . import lr_scheduler
from .adadelta import AdaDelta, Adadelta
from .adam import Adam
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["AdaDelta", "Adadelta", "Adam", "Optimizer", "RMSprop", "SGD", "lr_scheduler"]
