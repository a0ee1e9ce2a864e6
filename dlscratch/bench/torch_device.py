"""Where the suites' PyTorch rows run, how they are timed, and the words that say so.

A comparison means something only on one device: dlscratch on the CPU against PyTorch on the CPU,
dlscratch on the GPU against PyTorch on CUDA (cuDNN). ``choose()`` picks PyTorch's device from
dlscratch's and hands the suites everything they need for it:

    pt = torch_device.choose()
    print(pt.header)                        # "compared with PyTorch CUDA (cuDNN 9.19.0; torch 2.11.0), ..."
    if pt.runs:
        x = pt.tensor(numpy_array)          # copied to PyTorch's device here, outside the timing
        variants[f"{pt.label} step"] = pt.timed(step)

CUDA calls return before the GPU has done the work, so on CUDA ``timed(fn)`` ends every call with
``torch.cuda.synchronize()``, as dlscratch's own GPU timings end with ``backend.synchronize()``. When
dlscratch runs on the GPU and PyTorch has no CUDA, there are no PyTorch rows and nothing is judged:
PyTorch on the CPU would be no comparison. PyTorch is never a dependency: without it, no rows either, and the
header says how to install it.
"""

from collections.abc import Callable
from dataclasses import dataclass

from .. import backend
from .timing import torch_available

NOT_IMPORTABLE = "PyTorch is not importable here"
#: what gets the PyTorch rows where it is not importable; README.md's "Benchmarks" says which build to install
INSTALL_HINT = "pip install torch adds them (README.md, Benchmarks)"
NO_CUDA = "PyTorch has no CUDA here"
NOTHING_JUDGED = "nothing judged"


def _nothing():
    """The CPU's synchronize: PyTorch's CPU calls return when their work is done."""


@dataclass(frozen=True)
class TorchDevice:
    """PyTorch's side of a suite's comparison.

    ``device``: ``"cpu"``, ``"cuda"``, or None when PyTorch has no rows (``missing`` says why).
    ``label``: the start of the rows' names, ``"PyTorch CPU"`` or ``"PyTorch CUDA"``.
    ``header``: the line a suite prints under its title. ``synchronize``: waits for PyTorch's queued work.
    ``gpu``: dlscratch runs on the GPU, so targets set for a CPU are not judged in this run.
    """

    device: str | None
    label: str
    header: str
    missing: str = ""
    synchronize: Callable[[], None] = _nothing
    gpu: bool = False

    @property
    def runs(self):
        """True when the suite adds PyTorch rows."""
        return self.device is not None

    def timed(self, fn):
        """``fn`` as it must be timed: each call ends with ``synchronize()`` (on CUDA); with nothing to wait for
        (on the CPU), ``fn`` itself."""
        if self.synchronize is _nothing:
            return fn

        def call_and_wait():
            result = fn()
            self.synchronize()
            return result

        return call_and_wait

    def tensor(self, array):
        """A NumPy array as a PyTorch tensor on ``device`` (on CUDA, a copy: make it before timing)."""
        import torch

        return torch.from_numpy(array).to(self.device)


def on_cpu(version):
    """PyTorch ``version`` on the CPU, beside dlscratch on the CPU."""
    return TorchDevice("cpu", "PyTorch CPU", f"compared with PyTorch CPU (torch {version})")


def on_cuda(version, cudnn, synchronize):
    """PyTorch ``version`` on CUDA, beside dlscratch on the GPU; ``cudnn``: ``torch.backends.cudnn.version()``."""
    header = (f"compared with PyTorch CUDA ({cudnn_words(cudnn)}; torch {version}), synchronised: each timed "
              "PyTorch call ends with torch.cuda.synchronize()")
    return TorchDevice("cuda", "PyTorch CUDA", header, synchronize=synchronize, gpu=True)


def absent(missing, gpu):
    """No PyTorch rows, for the reason ``missing``; ``gpu``: dlscratch runs on the GPU."""
    if missing == NO_CUDA:
        header = f"{NO_CUDA}: {NOTHING_JUDGED} (dlscratch runs on the GPU; PyTorch on the CPU would be no comparison)"
    else:
        header = f"{missing}: no PyTorch rows; {INSTALL_HINT}"
    return TorchDevice(None, "PyTorch", header, missing=missing, gpu=gpu)


def choose():
    """PyTorch's side for dlscratch's current device: CPU beside NumPy, CUDA beside CuPy, or absent."""
    gpu = backend.name() == "cupy"
    if not torch_available():
        return absent(NOT_IMPORTABLE, gpu)
    import torch

    if not gpu:
        return on_cpu(torch.__version__)
    if not torch.cuda.is_available():
        return absent(NO_CUDA, gpu)
    return on_cuda(torch.__version__, torch.backends.cudnn.version(), torch.cuda.synchronize)


def cudnn_words(version):
    """``torch.backends.cudnn.version()`` in words: 91900 -> ``'cuDNN 9.19.0'``, 8902 -> ``'cuDNN 8.9.2'``.

    cuDNN 9 numbers itself ``major*10000 + minor*100 + patch``, earlier ones ``major*1000 + minor*100 + patch``.
    """
    if version is None:
        return "no cuDNN"
    major, rest = divmod(version, 10000 if version >= 90000 else 1000)
    return f"cuDNN {major}.{rest // 100}.{rest % 100}"


def unjudged(pt):
    """The verdict line of a GPU run without PyTorch rows: ``'PyTorch has no CUDA here: nothing judged'``."""
    return f"{pt.missing}: {NOTHING_JUDGED}"
