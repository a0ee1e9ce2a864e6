"""The strict CuPy stand-in: CuPy's API on the CPU, with CuPy's refusals, and CUDA kernels read, typed, run and
checked without a GPU. ``DLSCRATCH_STRICT_GPU=1`` (or ``dlscratch.backend.use_strict_stand_in()``) makes this
package the ``cupy`` that the library and the lessons use; CI runs every test's GPU variant on it.

Arrays (``arrays.py``): a stand-in ``ndarray`` wraps a NumPy array and keeps CuPy's rules (no mixing with NumPy
arrays, no implicit conversion to the host, 0-d arrays from reductions); every name and every argument is checked
against CuPy's own API (``signatures.py``, reading the table ``cupy_api.py`` that ``tools/cupy_api.py`` writes from
an installed CuPy). Each operation is reported to the launch ledger (``dlscratch/bench/ledger.py``), which stays beside
the backend: on a real GPU it counts with CUPTI instead, and the stand-in is then its model of CuPy.

Kernels: ``ElementwiseKernel(in_params, out_params, body, name)`` goes through four steps.

1. **Read** (``kernel_parser.py``): the body's C, a subset (declarations, C's integer and float arithmetic,
   ``if``, ``for``, ``?:``, raw-array indexing, CUDA's math functions, ``__device__`` helpers), becomes a tree;
   anything else is refused by name (``UnsupportedKernelCode``).
2. **Typed** at the first launch, when the arguments' dtypes are known, with C's conversions and CUDA's overloads:
   what NVRTC would reject as ambiguous (a ``?:`` of float16 and float, ``max`` of ``long long`` and ``long``)
   raises ``AmbiguousForCuda``.
3. **Compiled** (``nvrtc.py``), where NVRTC is installed: the launch's source, as CuPy writes it for these dtypes
   and layouts, is compiled for ``DLSCRATCH_NVRTC_ARCHS``, and a source CUDA rejects raises ``CudaCompileError``
   with the compiler's message before anything runs.
4. **Run** (``kernels.py``, ``kernel_threads.py``): every thread at once, a block of lanes per NumPy operation,
   with float32 rounding after every operation; a thread that reads outside an array, divides an integer by zero
   or races another raises ``KernelFault`` naming it. A large launch of a kernel with a NumPy twin runs its C on
   a sample of threads, checked against the twin.

Timings on the stand-in mean nothing; ``backend.real_gpu()`` says whether a real GPU runs.
"""

# The package is the ``cupy`` module: arrays.py's names are its names, with CuPy's ElementwiseKernel and the errors
# a kernel can raise.
from . import arrays, cublas  # noqa: F401 (cublas: the library that dlscratch/cuda/blas.py calls, as ``cublas.library``)
from .arrays import *  # noqa: F403
from .kernel_parser import UnsupportedKernelCode  # noqa: F401
from .kernel_threads import AmbiguousForCuda, KernelFault  # noqa: F401
from .kernels import ElementwiseKernel  # noqa: F401
from .nvrtc import CudaCompileError  # noqa: F401

__getattr__ = arrays.__getattr__  # CuPy's other functions, checked and run on NumPy when first asked for
