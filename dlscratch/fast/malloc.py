"""Keep freed memory in the process, so the next training step does not fault it in again.

glibc's ``malloc`` hands a freed block back to the operating system when it is large (an
``mmap`` of its own, or free space at the top of the heap beyond a trim threshold). The next
array of that size then arrives as fresh pages, which the kernel maps and zero-fills one 4 KB
page at a time, on first touch. A training step frees and reallocates the same large arrays
every time, so without the setting below it spends a large share of each step in page faults:
compare ``DLSCRATCH_KEEP_MEMORY=0 python -m dlscratch.bench cnn`` with ``python -m dlscratch.bench cnn``.

``keep_freed_memory()`` raises both thresholds with ``mallopt``: arrays up to 256 MB come from
the heap, and up to 1 GB of freed heap stays with the process for reuse. The cost is that the
process keeps its peak memory instead of returning it. The setting holds for the whole process,
so ``import dlscratch`` does not make it: whoever trains does, explicitly. ``fit()``, the
benchmark suites (``python -m dlscratch.bench``) and the first cell of every lesson call
``keep_freed_memory()``; call it before your own training loop to get the same speed.

The environment variable ``DLSCRATCH_KEEP_MEMORY`` overrides the calls: off (``0``, ``false``,
``no``, ``off``) makes ``keep_freed_memory()`` leave glibc alone everywhere; on (``1``, ``true``,
``yes``, ``on``) makes ``import dlscratch`` call it, for whole runs of code that does not; any case;
anything else is an error. PyTorch's and CuPy's GPU memory pools exist for the same reason
(``cudaMalloc`` is slower still).
"""

import ctypes
import platform

from ..engine.settings import env_flag

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters, from glibc's <malloc.h>
MMAP_THRESHOLD = 2**28  # blocks up to this size come from the heap, not from mmap
TRIM_THRESHOLD = 2**30  # free space at the top of the heap kept before giving any back

_applied = False



def keep_freed_memory():
    """Set glibc's thresholds for this process (see the module docstring); True when they are in
    force. Does nothing where ``DLSCRATCH_KEEP_MEMORY`` is off, or where malloc is not glibc's."""
    global _applied
    if not _applied and _allowed and platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        try:
            libc = ctypes.CDLL("libc.so.6")
        except OSError:
            return False
        _applied = bool(libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
            libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
        )
    return _applied


def keeps_freed_memory():
    """True when ``keep_freed_memory()`` has set the thresholds in this process."""
    return _applied


_choice = env_flag("DLSCRATCH_KEEP_MEMORY", default=None)  # None: unset, the calls decide
_allowed = _choice is not False
if _choice:
    keep_freed_memory()
