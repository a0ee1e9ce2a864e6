"""The engine on one screen: tensors, functions, backpropagation and no-grad mode.

Read ``tensor.py`` (an array that remembers its creator), ``function.py`` (forward, then record),
``backprop.py`` (the walk back), ``arithmetic.py``, ``grad_mode.py``. It runs alone, on NumPy or CuPy::

    x = Tensor(numpy.array([[1.0, 2.0]]), requires_grad=True)
    w = Tensor(numpy.array([[3.0], [4.0]]), requires_grad=True)
    (x @ w * x).sum().backward()         # x.grad: [[20, 23]], w.grad: [[3], [6]]

The library (``dlscratch``) is this core plus extensions: its ``Tensor`` and ``Function`` subclass these
and attach ``dlscratch/engine/extensions/`` at the extension points of ``function.py``; nothing here knows them.
"""

from .backprop import reachable_functions, walk
from .function import Function
from .grad_mode import no_grad
from .tensor import Tensor

__all__ = ["Function", "Tensor", "no_grad", "reachable_functions", "walk"]
