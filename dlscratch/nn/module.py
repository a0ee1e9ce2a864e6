"""``Module`` and ``Parameter``: layers that own their weights, with PyTorch's conventions.

A module registers a ``Parameter`` or a sub-module simply by assigning it to an attribute;
``parameters()`` then finds every weight of the whole tree, which is what an optimizer needs:

    class MLP(Module):
        def __init__(self):
            super().__init__()
            self.hidden = Linear(784, 256)      # registered as sub-module "hidden"
            self.out = Linear(256, 10)

        def forward(self, x):                   # x: (N, 784) -> (N, 10)
            return self.out(self.hidden(x).relu())

    [name for name, _ in MLP().named_parameters()]
    # ['hidden.weight', 'hidden.bias', 'out.weight', 'out.bias']
"""

from collections import OrderedDict, namedtuple

import numpy

from .. import backend
from ..device import cuda_device
from ..device import device as device_type
from ..engine.grad_mode import no_grad
from ..engine.tensor import Tensor


class Parameter(Tensor):
    """A tensor that a module learns: ``requires_grad=True``, a leaf, float32 by default.

    ``data``: a tensor, array, list or number. A floating-point array or tensor keeps its
    dtype (a float64 copy for a gradient check, say); anything else becomes float32.
    """

    __slots__ = ()

    def __init__(self, data, requires_grad=True):
        array = data.data if isinstance(data, Tensor) else data
        kind = getattr(array, "dtype", numpy.dtype(object)).kind
        super().__init__(array, requires_grad=requires_grad, dtype=array.dtype if kind == "f" else numpy.float32)

    def __repr__(self):
        # Tensor's repr aligns continuation lines under "Tensor("; shift them under "Parameter(".
        return "Parameter" + super().__repr__()[len("Tensor") :].replace("\n       ", "\n          ")


IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Module:
    """Base class of layers and models. Subclasses call ``super().__init__()`` first, assign
    parameters and sub-modules as attributes, and define ``forward``."""

    fixed_dtype_buffers = ()  # names of buffers that a float cast (half(), double(), to(dtype)) leaves alone

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "training", True)

    # ----- registration -----
    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(
                f"cannot assign {name!r} before Module.__init__() has run; call super().__init__() "
                f"first in {type(self).__name__}.__init__"
            )
        if isinstance(value, Parameter):
            self._forget(name)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._forget(name)
            self._modules[name] = value
        elif name in self._parameters:
            if value is not None:
                raise TypeError(
                    f"cannot assign a {type(value).__name__} to parameter {name!r} of {type(self).__name__}; "
                    "wrap it as Parameter(...) or assign None"
                )
            self._parameters[name] = None
        elif name in self._buffers:
            self.register_buffer(name, value)
        elif name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign a {type(value).__name__} to sub-module {name!r}; use a Module or None")
            self._modules[name] = None
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        # Called only when normal lookup fails: the registered names live in the three dicts.
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        if not self._forget(name):
            object.__delattr__(self, name)

    def _forget(self, name):
        """Remove ``name`` from the registries (and the instance dict); True if it was registered."""
        found = False
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                found = True
        self.__dict__.pop(name, None)
        return found

    def register_parameter(self, name, param):
        """Register ``param`` (a ``Parameter``, or None for an absent one such as ``bias=False``)."""
        _check_name(name, self)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter({name!r}): expected a Parameter or None, got {type(param).__name__}")
        self._forget(name)
        self._parameters[name] = param

    def register_buffer(self, name, tensor):
        """Register a tensor that is state but not learned (running statistics, say): it moves
        with ``to()`` and is saved in ``state_dict()``. ``None`` reserves the name."""
        _check_name(name, self)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer({name!r}): expected a Tensor or None, got {type(tensor).__name__}")
        if isinstance(tensor, Parameter):
            raise TypeError(f"register_buffer({name!r}): a Parameter is learned; assign it as an attribute instead")
        self._forget(name)
        self._buffers[name] = tensor

    def add_module(self, name, module):
        """Register ``module`` under ``name`` (for names that are not identifiers, such as ``"0"``)."""
        _check_name(name, self)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module({name!r}): expected a Module or None, got {type(module).__name__}")
        self._forget(name)
        self._modules[name] = module

    # ----- walking the tree -----
    def named_modules(self, prefix=""):
        """``(dotted name, module)`` for this module and every module below it, each once."""
        seen = set()
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{n}" if name else n, m) for n, m in module._modules.items() if m is not None]
            stack.extend(reversed(children))

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        for name, module in self._modules.items():
            if module is not None:
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_tensors(self, table):
        seen = set()
        for prefix, module in self.named_modules():
            for name, t in getattr(module, table).items():
                if t is not None and id(t) not in seen:
                    seen.add(id(t))
                    yield (f"{prefix}.{name}" if prefix else name), t

    def named_parameters(self):
        """``(dotted name, Parameter)`` for every parameter of the tree, shared ones once."""
        return self._named_tensors("_parameters")

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self):
        return self._named_tensors("_buffers")

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def num_parameters(self):
        """The number of learned values (elements of all parameters)."""
        return sum(p.data.size for p in self.parameters())

    def apply(self, fn):
        """Call ``fn(module)`` on every module of the tree (children first); returns self."""
        for module in reversed(list(self.modules())):
            fn(module)
        return self

    # ----- modes, gradients, devices -----
    def train(self, mode=True):
        """Set training mode (``mode=True``) or evaluation mode on the whole tree; returns self."""
        for module in self.modules():
            object.__setattr__(module, "training", bool(mode))
        return self

    def eval(self):
        """Evaluation mode: dropout off (and, later, batch norm uses its running statistics)."""
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        """Forget every parameter's gradient: ``.grad = None``, as PyTorch does by default, or with
        ``set_to_none=False`` fill the gradient arrays with zeros in place."""
        for p in self.parameters():
            p.zero_grad(set_to_none)

    def cuda(self, device=None):
        """PyTorch's ``to("cuda")``, in place; ``device``: None, 0, ``"cuda:0"`` or a ``dlscratch.device`` of the one
        GPU dlscratch uses. Returns self."""
        return self.to(cuda_device(device))

    def cpu(self):
        """``to("cpu")``, in place. Returns self."""
        return self.to("cpu")

    def to(self, target):
        """Move every parameter and buffer to ``"cpu"`` or ``"gpu"`` (or ``"cuda"``, a ``device``), or cast the
        floating-point ones to a dtype, in place: the Parameter objects stay the same, so an optimizer built on
        them keeps working. A cast leaves the buffers a module names in ``fixed_dtype_buffers``
        alone (an int8 layer's float32 scales). Returns self."""
        tensors = list(self.parameters()) + list(self.buffers())
        if isinstance(target, (str, device_type)):
            xp = backend.module_for(target)  # raises for an unknown device or a missing GPU
            convert = backend.to_cpu if xp is numpy else backend.to_gpu
        else:
            dtype = numpy.dtype(target)
            if dtype.kind != "f":
                raise TypeError(f"Module.to: parameters must stay floating point; cannot cast to {dtype}")

            def convert(a):
                return a.astype(dtype, copy=False) if a.dtype.kind == "f" else a

            fixed = {id(m._buffers[name]) for m in self.modules() for name in m.fixed_dtype_buffers}
            tensors = [t for t in tensors if id(t) not in fixed]
        for t in tensors:
            t.data = convert(t.data)
            if t.grad is not None:
                t.grad = Tensor._make(convert(t.grad.data), False)
        for module in self.modules():
            module._recompute_derived()
        return self

    def half(self):
        """Cast the floating-point parameters and buffers to float16, in place (``to(numpy.float16)``). Returns self."""
        return self.to(numpy.float16)

    def float(self):
        """Cast the floating-point parameters and buffers to float32, in place (``to(numpy.float32)``). Returns self."""
        return self.to(numpy.float32)

    def double(self):
        """Cast the floating-point parameters and buffers to float64, in place (``to(numpy.float64)``). Returns self."""
        return self.to(numpy.float64)

    # ----- saving and loading -----
    def state_dict(self):
        """``OrderedDict`` of dotted name -> detached tensor sharing the data, for every
        parameter and buffer (save a copy if the model will keep training)."""
        state = OrderedDict()
        for prefix, module in self.named_modules():
            for table in (module._parameters, module._buffers):
                for name, t in table.items():
                    if t is not None:
                        state[f"{prefix}.{name}" if prefix else name] = t.detach()
        return state

    def load_state_dict(self, state_dict, strict=True):
        """Copy values (Tensors or NumPy/CuPy arrays) into the parameters and buffers, in place and
        on their device. Shapes must match. With ``strict``, the keys must match exactly. Nothing is
        copied unless everything checks; the error lists every problem. Returns
        ``IncompatibleKeys(missing_keys, unexpected_keys)``."""
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        problems, values = [], {}
        for key, value in state_dict.items():
            if key in own:
                values[key] = _loadable(key, value, own[key], problems)
        if strict:
            problems += [f"missing key: {k}" for k in missing] + [f"unexpected key: {k}" for k in unexpected]
        if problems:
            raise RuntimeError(
                f"load_state_dict into {type(self).__name__}: the state does not fit the model:\n  "
                + "\n  ".join(problems)
                + "\n(check that the model is built with the same layers and sizes as the saved one"
                + ("; strict=False skips missing and unexpected keys)" if strict else ")")
            )
        with no_grad():
            for key, value in values.items():
                own[key].copy_(value)
        for module in self.modules():
            module._recompute_derived()
        return IncompatibleKeys(missing, unexpected)

    # ----- calling and printing -----
    def __call__(self, *args, **kwargs):
        for hook in tuple(self._forward_pre_hooks.values()):
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        return self.forward(*args, **kwargs)

    def __getstate__(self):
        # What a hook computes from the parameters (a pruned weight: part of a graph, which cannot be copied or
        # pickled) is left out, and computed again on arrival.
        state = self.__dict__.copy()
        for hook in self._forward_pre_hooks.values():
            for name in getattr(hook, "derived_attributes", ()):
                state.pop(name, None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._recompute_derived()

    def _recompute_derived(self):
        """Run the hooks that derive attributes from the parameters (a pruned ``weight = weight_orig * weight_mask``),
        so that those attributes are current without a forward: after copies, casts, moves, loads."""
        for hook in tuple(self._forward_pre_hooks.values()):
            if getattr(hook, "derived_attributes", ()):
                hook(self, ())

    def register_forward_pre_hook(self, hook):
        """Call ``hook(module, args)`` before every ``forward``; a result other than None replaces the positional
        arguments (a tuple, or one value). Pruning recomputes its masked weight this way. Returns a handle whose
        ``remove()`` takes the hook away."""
        if not callable(hook):
            raise TypeError(f"register_forward_pre_hook: expected a callable, got {type(hook).__name__}")
        return _add_hook(self._forward_pre_hooks, hook)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def extra_repr(self):
        """The settings shown between the parentheses of this module's repr (override it)."""
        return ""

    def __repr__(self):
        return self._repr_lines() + _count(self.num_parameters())

    def _repr_lines(self):
        children = [(n, m) for n, m in self._modules.items() if m is not None]
        if not children:
            return f"{type(self).__name__}({self.extra_repr()})"
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, module in children:
            body = (module._repr_lines() + _count(module.num_parameters())).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        return "\n".join(lines) + "\n)"


class RemovableHandle:
    """What ``register_forward_pre_hook`` returns: ``remove()`` takes the hook away (twice is harmless)."""

    def __init__(self, hooks, key):
        self._hooks, self.id = hooks, key

    def remove(self):
        self._hooks.pop(self.id, None)


_next_hook_id = iter(range(1, 2 ** 62))


def _add_hook(hooks, hook):
    key = next(_next_hook_id)
    hooks[key] = hook
    return RemovableHandle(hooks, key)


def _loadable(key, value, target, problems):
    """``value`` as an array of ``target``'s shape, dtype and device, ready to copy in; or None,
    with the reason appended to ``problems``."""
    value = value.data if isinstance(value, Tensor) else value
    if not backend.is_gpu_array(value):
        try:
            value = numpy.asarray(value)
        except ValueError:  # a ragged list
            problems.append(f"{key}: {type(value).__name__} is not an array of numbers")
            return None
    if value.dtype.kind not in "biuf":
        problems.append(
            f"{key}: a {value.dtype} value cannot be loaded into a {target.dtype} tensor (real numbers only)"
        )
        return None
    if value.shape != target.shape:
        problems.append(f"{key}: checkpoint has shape {value.shape}, the model has {target.shape}")
        return None
    move = backend.to_gpu if target.device == "gpu" else backend.to_cpu
    return move(value).astype(target.dtype, copy=False)


def _count(n):
    return f"  # {n:,} parameters" if n else ""


def _check_name(name, module):
    owner = type(module).__name__
    if not isinstance(name, str) or not name or "." in name:
        raise KeyError(f"{owner}: a registered name must be a non-empty string without '.', got {name!r}")
    if name in module.__dict__:
        raise KeyError(f"{owner}: attribute {name!r} already exists and is not a parameter, buffer or module")
