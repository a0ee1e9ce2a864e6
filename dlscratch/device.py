"""PyTorch's ``torch.device``, and the default device that factory functions use.

    dev = dlscratch.device("cuda" if dlscratch.cuda.is_available() else "cpu")
    x = dlscratch.zeros(3, device=dev)           # wherever a device is taken: "cpu", "gpu", "cuda", "cuda:0"
    model.to(dev)

dlscratch calls its devices ``"cpu"`` and ``"gpu"`` (``Tensor.device`` answers one of the two); a ``device``
carries PyTorch's spelling, ``type`` "cpu" or "cuda", and is taken wherever a name is
(``backend.device_name``). The default device is the backend's: ``set_default_device("cuda")`` is
``backend.use("gpu")``, after which new tensors live on the GPU.
"""

from . import backend


class device:  # noqa: N801 (PyTorch's name)
    """A device: ``device("cpu")``, ``device("cuda")``, ``device("cuda:0")``, ``device("cuda", 0)``."""

    def __init__(self, type, index=None):  # noqa: A002 (PyTorch's argument name)
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        name = str(type) if index is None else f"{type}:{index}"
        kind = backend.device_name(name)  # refuses unknown names and other GPUs
        self.type = "cpu" if kind == "cpu" else "cuda"
        colon_index = str(type).partition(":")[2]
        self.index = index if index is not None else (int(colon_index) if colon_index else None)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type={self.type!r}{index})"

    def __eq__(self, other):
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))


def cuda_device(which=None):
    """The GPU that ``which`` names, as a ``device``: None, ``0``, ``"cuda"``, ``"cuda:0"`` or a ``device``
    (``Tensor.cuda(which)``, ``Module.cuda(which)``, ``cuda.Stream(which)``); any other device is refused."""
    named = device("cuda") if which is None else device("cuda", which) if isinstance(which, int) else device(which)
    if named.type != "cuda":
        raise ValueError(f"expected a GPU (None, 0, 'cuda' or 'cuda:0'), got {which!r}")
    return named


def set_default_device(target):
    """Where new tensors are made: ``"cpu"`` or a GPU (``"cuda"``, ``"gpu"``); the backend's array module."""
    backend.use(backend.device_name(target))


def get_default_device():
    """The device where new tensors are made, as a ``device``."""
    return device("cpu" if backend.device() == "cpu" else "cuda")
