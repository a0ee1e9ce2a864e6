"""The array-module shim: the one place where NumPy or CuPy is chosen.

Everything else in dlscratch reaches array functions through this module, so that one code
path runs on the CPU (NumPy) and on an NVIDIA GPU (CuPy). It is the only module that imports
``cupy`` or ``cupyx``, and it imports them lazily: a CPU-only user never pays for the import.

    from dlscratch import backend
    backend.use("auto")            # CuPy when a GPU is really usable, else NumPy
    xp = backend.xp                # the current array module
    x = backend.to_gpu(numpy_array)
    backend.synchronize()          # wait for queued GPU work (a no-op on NumPy)

With ``DLSCRATCH_STRICT_GPU=1`` (or after ``use_strict_stand_in()``) a strict stand-in for CuPy
(``bench/strict_cupy/``: NumPy underneath, refusing to mix with NumPy arrays as CuPy does) plays the GPU,
so that "runs on the GPU too" is tested on a machine without one.

The environment variable ``DLSCRATCH_DEVICE`` (``cpu``, ``gpu`` or ``auto``, or any other name
``use`` accepts: ``numpy``, ``cupy``, ``cuda``) sets the backend at import time; without it
dlscratch starts on the CPU, as PyTorch does.
"""

import contextlib
import os
import platform
import sys

import numpy

#: The current array module: ``numpy`` or ``cupy``. Read it as ``backend.xp`` (not
#: ``from dlscratch.backend import xp``, which would freeze the value at import time).
xp = numpy

#: The ``cupy`` module once imported (by ``use``, a probe, or a GPU array seen), else None.
cupy = None
cupyx = None  # cupyx, imported with cupy
_gpu_status = None  # (usable: bool, reason: str), probed once

_NAMES = {"numpy": "numpy", "cpu": "numpy", "cupy": "cupy", "gpu": "cupy", "cuda": "cupy", "auto": "auto"}


def _import_cupy():
    """Import CuPy once; return the module, or None with the reason recorded."""
    global cupy, cupyx, _gpu_status
    if cupy is None and _gpu_status is None and os.environ.get("DLSCRATCH_STRICT_GPU", "") not in ("", "0"):
        return use_strict_stand_in()
    if cupy is None and _gpu_status is None:
        try:
            import cupy as cupy_module
            import cupyx as cupyx_module
        except Exception as exc:  # ImportError, or a CUDA library that fails to load
            _gpu_status = (False, f"CuPy cannot be imported ({type(exc).__name__}: {exc})")
            return None
        cupy, cupyx = cupy_module, cupyx_module
    return cupy


def use_strict_stand_in():
    """Let the strict CuPy stand-in (``bench/strict_cupy/``) play the GPU from now on; return it.

    ``use("gpu")``, ``to_gpu`` and the tests' "cupy" runs then use it. It computes with NumPy on the
    CPU but refuses NumPy arrays where CuPy would, so mixing host and device arrays fails loudly.
    """
    global cupy, cupyx, _gpu_status
    from .bench import strict_cupy
    from .bench.strict_cupy import nvrtc

    def real_cupy_for_compiling():  # CuPy's kernel writer and NVRTC, for bench/strict_cupy/nvrtc.py; no GPU needed
        try:
            import cupy as cupy_module
        except Exception:  # not installed, or a CUDA library that fails to load
            return None
        return cupy_module

    cupy, cupyx, _gpu_status = strict_cupy, strict_cupy.cupyx, (True, "")
    nvrtc.use_cupy_from(real_cupy_for_compiling)
    return cupy


@contextlib.contextmanager
def on_the_stand_in():
    """Inside, the strict CuPy stand-in plays the GPU and is the current device (``xp``), whether or not a
    real GPU is there; afterwards the backend is as it was. For counting with ``ledger()`` what CuPy would
    launch, on any machine: arrays made inside are the stand-in's, so move what you bring in with ``to_gpu``.
    """
    global cupy, cupyx, _gpu_status, xp
    saved = cupy, cupyx, _gpu_status, xp
    try:
        use_strict_stand_in()
        use("gpu")
        yield cupy
    finally:
        cupy, cupyx, _gpu_status, xp = saved


def nccl_module():
    """CuPy's NCCL bindings (``cupy.cuda.nccl``) for a real GPU, or None where there are none: no real GPU, or
    a CuPy built without NCCL. ``dlscratch.distributed`` reduces GPU arrays through it."""
    if not real_gpu():
        return None
    try:
        from cupy.cuda import nccl
    except ImportError:
        return None
    return nccl


_cublas = {}  # the library, opened once for each CuPy (the real one, the stand-in): {module name: library or None}


def cublas_library():
    """The cuBLAS library that CuPy loaded, opened with ``ctypes`` (``cuda/blas.py`` declares what it calls), for
    the products a CUDA graph captures; the stand-in's cuBLAS on the stand-in; None without a GPU, on ROCm, or
    where the loaded library cannot be found (outside Linux)."""
    if not gpu_available():
        return None
    if cupy.__name__ not in _cublas:
        _cublas[cupy.__name__] = _open_cublas()
    return _cublas[cupy.__name__]


def _open_cublas():
    if strict_stand_in():
        return cupy.cublas.library
    if cupy.cuda.runtime.is_hip:
        return None
    import ctypes

    from cupy_backends.cuda.libs import cublas  # noqa: F401 (loads libcublas into this process)
    try:  # the copy CuPy loaded (its path, from this process's memory map), not another one on the search path
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "/libcublas.so" in line}
    except OSError:
        return None
    return ctypes.CDLL(sorted(paths)[0]) if paths else None


def strict_stand_in():
    """True when the strict CuPy stand-in plays the GPU (no real GPU is in use)."""
    return cupy is not None and cupy.__name__ == __package__ + ".bench.strict_cupy"


def has_kernels():
    """True when CUDA kernels can run: a real, usable GPU, or the strict stand-in (which translates them)."""
    return gpu_available()


def real_gpu():
    """True on a real, usable GPU: False on NumPy and on the strict stand-in, whose timings mean nothing."""
    return gpu_available() and not strict_stand_in()


def gpu_available():
    """True when CuPy imports and a CUDA device really runs a kernel.

    ``import cupy`` succeeds on machines without a driver or device; CuPy only fails on first
    use (``CUDARuntimeError``). So the probe runs a tiny computation and catches everything.
    """
    return _probe_gpu()[0]


def gpu_unavailable_reason():
    """Why there is no usable GPU ('' when there is one)."""
    return _probe_gpu()[1]


def _probe_gpu():
    global _gpu_status
    if _gpu_status is not None:
        return _gpu_status
    if _import_cupy() is None:
        return _gpu_status
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            _gpu_status = (False, "CuPy is installed but sees no CUDA device")
        else:
            probe = cupy.arange(4, dtype=cupy.float32)
            float((probe * probe).sum())
            _gpu_status = (True, "")
    except Exception as exc:  # CUDARuntimeError, CUDADriverError, missing libraries...
        _gpu_status = (False, f"CuPy is installed but no GPU is usable ({type(exc).__name__}: {exc})")
    return _gpu_status


def use(name):
    """Select the array module: ``"numpy"`` (alias ``"cpu"``), ``"cupy"`` (``"gpu"``) or ``"auto"``.

    Returns the module chosen. Asking for the GPU where there is none raises ``RuntimeError``
    that says why; ``"auto"`` falls back to NumPy silently.
    """
    global xp
    key = _NAMES.get(str(name).lower())
    if key is None:
        raise ValueError(f"backend.use: unknown backend {name!r}; choose 'numpy'/'cpu', 'cupy'/'gpu' or 'auto'")
    if key == "numpy" or (key == "auto" and not gpu_available()):
        xp = numpy
    elif gpu_available():
        xp = cupy
    else:
        raise RuntimeError(
            f"backend.use({name!r}): no usable GPU: {gpu_unavailable_reason()}. "
            "In Colab choose Runtime > Change runtime type > GPU; elsewhere install CuPy "
            "for your CUDA version (pip install cupy-cuda12x), or use 'cpu'."
        )
    return xp


def name():
    """The current backend's name: ``"numpy"`` or ``"cupy"`` (also for the strict stand-in)."""
    return "numpy" if xp is numpy else "cupy"


def device():
    """The current device: ``"cpu"`` or ``"gpu"``."""
    return "cpu" if xp is numpy else "gpu"


def device_name(device):
    """``"cpu"`` or ``"gpu"``, for a device as dlscratch or PyTorch names it: ``"cpu"``, ``"gpu"``, ``"cuda"``,
    ``"cuda:0"`` or a ``dlscratch.device``. dlscratch uses one GPU, CuPy's current one: another index is refused."""
    name = str(device).lower()
    kind, colon, index = name.partition(":")
    if kind in ("cpu", "gpu", "cuda") and (not colon or index == "0"):
        return "cpu" if kind == "cpu" else "gpu"
    if kind in ("gpu", "cuda") and index.isdigit():
        raise ValueError(f"device {str(device)!r}: dlscratch uses one GPU, the current one; use 'cuda' or 'cuda:0'")
    raise ValueError(f"unknown device {str(device)!r}; use 'cpu' or 'gpu' (PyTorch's 'cuda' and 'cuda:0' work too)")


def module_for(device):
    """The array module for ``"cpu"`` (NumPy) or ``"gpu"`` (CuPy; PyTorch's ``"cuda"`` too, see ``device_name``)."""
    if device_name(device) == "cpu":
        return numpy
    if not gpu_available():
        raise RuntimeError(f"no usable GPU: {gpu_unavailable_reason()}")
    return cupy


def cupy_loaded():
    """True once CuPy has been imported (by dlscratch or by the user)."""
    return cupy is not None or "cupy" in sys.modules


def is_gpu_array(a):
    """True for a CuPy array (or a strict stand-in's array)."""
    if isinstance(a, numpy.ndarray):
        return False
    return type(a).__module__.partition(".")[0] == "cupy" or (cupy is not None and isinstance(a, cupy.ndarray))


def get_array_module(*arrays):
    """The module (``numpy`` or ``cupy``) of the given arrays; NumPy for scalars and lists."""
    if cupy is None and "cupy" not in sys.modules:
        return numpy
    for a in arrays:
        if is_gpu_array(a):
            return _import_cupy()
    return numpy


def to_gpu(x):
    """Copy an array (or scalar, or list) to the GPU; CuPy arrays are returned as they are."""
    if is_gpu_array(x):
        return x
    if not gpu_available():
        raise RuntimeError(f"to_gpu: no usable GPU: {gpu_unavailable_reason()}")
    if numpy.ndim(x) == 0 and numpy.asarray(x).dtype.kind in "fc":  # CuPy writes a 0-d zero with a memset:
        return cupy.asarray(numpy.asarray(x).reshape(1)).reshape(())  # copied as 1-d, -0.0 keeps its sign
    return cupy.asarray(x)


def to_cpu(x):
    """Copy an array to host memory as a NumPy array; NumPy arrays are returned as they are."""
    if is_gpu_array(x):
        return x.get()
    return numpy.asarray(x)


asnumpy = to_cpu


def capturing():
    """Whether the current CUDA stream is capturing a graph (``dlscratch.cuda.graph``); never on the CPU."""
    return cupy is not None and _gpu_status is not None and _gpu_status[0] and \
        cupy.cuda.get_current_stream().is_capturing()


def synchronize():
    """Wait until all queued GPU work is done. Every GPU timing must end with this."""
    if cupy is not None and _gpu_status is not None and _gpu_status[0]:
        cupy.cuda.get_current_stream().synchronize()


@contextlib.contextmanager
def blas_threads(count):
    """Run NumPy's matrix products (BLAS) on at most ``count`` threads inside the ``with`` block.

    BLAS splits a large product over every core, and each product waits for its slowest part: on a
    machine that other programs share (Colab's CPUs, a laptop), that part is slow whenever a core is
    taken, while one-thread work is not. Timing BLAS-heavy work against one-thread work on one thread
    each compares them in the same conditions. The GPU's products (cuBLAS) are not affected.
    """
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"blas_threads: count must be a whole number >= 1, got {count!r}")
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=count, user_api="blas"):
        yield


def scatter_add(a, indices, values):
    """In place ``a[indices] += values`` where repeated indices all add up (NumPy's ``add.at``)."""
    if is_gpu_array(a):
        cupyx.scatter_add(a, indices, values)
    else:
        numpy.add.at(a, indices, values)


_kernels = {}  # compiled elementwise kernels, by their source


def elementwise_kernel(in_params, out_params, body, name, preamble="", twin=None, options=()):
    """A ``cupy.ElementwiseKernel`` (made once per source, then cached; CUDA compiles it on first call).

    The kernel runs one thread per output element; ``i`` is that element's index. ``preamble``:
    CUDA code placed before the kernel (helper functions). Only CuPy has kernels: on a machine
    without a usable GPU this raises ``RuntimeError`` saying why. The strict stand-in runs them on the
    CPU, translating the C body (``bench/strict_cupy/kernels.py``), so CI tests the kernels a GPU runs. ``twin``: a
    NumPy function that computes the same outputs from the same arguments; the stand-in then runs the C
    body of a launch of more than ``strict_cupy.kernels.FULL_RUN_THREADS`` threads on a sample of them and
    checks the sample against the twin (a real GPU ignores it). ``options``: NVRTC's compile options, such as
    ``("--fmad=false",)`` where the results must be NumPy's to the bit (the stand-in computes them so anyway).
    """
    if not gpu_available():
        raise RuntimeError(
            f"elementwise_kernel {name!r} needs CuPy and a GPU: {gpu_unavailable_reason()}; "
            "on NumPy use a method that does not need a kernel"
        )
    # the stand-in's kernels apart from CuPy's (on_the_stand_in)
    key = (cupy.__name__, in_params, out_params, body, name, preamble, twin, tuple(options))
    if key not in _kernels:
        extra = {"twin": twin} if strict_stand_in() else {}
        _kernels[key] = cupy.ElementwiseKernel(in_params, out_params, body, name, preamble=preamble,
                                               options=tuple(options), **extra)
    return _kernels[key]


@contextlib.contextmanager
def ledger():
    """Count what the code inside makes the GPU do, by call site; yield the ``Ledger`` (``bench/ledger.py``).

        with backend.ledger() as book:
            step()
        print(book.table())

    On the strict stand-in (``DLSCRATCH_STRICT_GPU=1``) it counts as CuPy would launch; on a real GPU it
    asks CUPTI through torch.profiler; on NumPy it counts nothing. Ledgers may nest.
    """
    from .bench import ledger as launches

    real_gpu = xp is not numpy and not strict_stand_in()
    with launches.counting(cupy if real_gpu else None) as book:
        yield book


def describe():
    """One line naming the backend, the device and the library versions."""
    python = platform.python_version()
    if xp is numpy:
        cores = os.cpu_count() or 1
        return f"backend: numpy {numpy.__version__} on CPU ({platform.machine()}, {cores} cores), Python {python}"
    if strict_stand_in():
        return f"backend: strict CuPy stand-in (numpy {numpy.__version__} on the CPU, no real GPU), Python {python}"
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    gpu = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    cuda = cupy.cuda.runtime.runtimeGetVersion()
    return (
        f"backend: cupy {cupy.__version__} on GPU ({gpu}, CUDA runtime {cuda // 1000}.{cuda % 1000 // 10}), "
        f"numpy {numpy.__version__}, Python {python}"
    )


def _from_environment():
    """Select the backend named by ``DLSCRATCH_DEVICE``: any name ``use`` accepts (default ``cpu``)."""
    choice = os.environ.get("DLSCRATCH_DEVICE", "cpu").strip().lower() or "cpu"
    if choice not in _NAMES:
        accepted = ", ".join(repr(n) for n in _NAMES)
        raise ValueError(f"DLSCRATCH_DEVICE={choice!r} is not one of {accepted}; unset it or pick one of these")
    try:
        use(choice)
    except RuntimeError as exc:
        raise RuntimeError(
            f"DLSCRATCH_DEVICE={choice!r} asks for the GPU, but there is no usable GPU: {gpu_unavailable_reason()}. "
            "Set DLSCRATCH_DEVICE=cpu (or auto, which falls back to the CPU), or unset it"
        ) from exc


_from_environment()
