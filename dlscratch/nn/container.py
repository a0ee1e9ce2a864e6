"""``Sequential``: modules applied one after another."""

from collections import OrderedDict

from ..engine.switch import switched
from .module import Module


class Sequential(Module):
    """``Sequential(m0, m1, ...)`` computes ``m1(m0(x))``...; sub-modules are named "0", "1", ...
    (or by the keys of one ``OrderedDict`` argument). Supports ``len``, iteration, indexing
    (a slice gives a new ``Sequential`` sharing the modules) and ``append``. On a GPU, the fast path
    runs a Linear's or Conv2d's bias and the ReLU after it as one kernel where nothing observable changes
    (``apply_in_turn``)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, module in modules[0].items():
                self._add(name, module)
        else:
            for i, module in enumerate(modules):
                self._add(str(i), module)

    def _add(self, name, module):
        if not isinstance(module, Module):
            raise TypeError(f"Sequential: item {name} is a {type(module).__name__}, not a Module")
        self.add_module(name, module)

    def append(self, module):
        self._add(str(len(self)), module)
        return self

    def forward(self, x):
        return apply_in_turn(self._modules.values(), x)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, index):
        modules = list(self._modules.values())
        if isinstance(index, slice):
            return Sequential(*modules[index])
        try:
            return modules[index]
        except IndexError:
            raise IndexError(f"Sequential index {index} is out of range for {len(modules)} modules") from None


@switched
def apply_in_turn(modules, x):
    """``x`` through each of ``modules`` in turn. On a GPU, the fast path computes a Linear's or a Conv2d's bias
    and the ReLU right after it in one kernel (``fast/bias_relu.py``), only for the library's own classes as
    they are (no subclass, hook, or ``forward`` of an instance's own) and one floating dtype; every other module
    runs as here. The modules stay as they are."""
    for module in modules:
        x = module(x)
    return x
