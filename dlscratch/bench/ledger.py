"""The launch ledger: what a piece of code makes the GPU do, counted by call site.

    with backend.ledger() as book:
        train_step()
    print(book.summary())
    print(book.table())

Eight categories of event: "kernel" (ufuncs, reductions, GEMMs, indexing and custom kernels), "memset",
"copy_device", "copy_to_host", "copy_to_device", "graph" (one launch of a captured CUDA graph, whatever its nodes),
"wait" (the host waits for the device) and "allocation" (a new device array, not a view). While a stream captures,
nothing is launched: the stand-in counts the capture's events in a ledger of its own, which names the graph's nodes
when it is launched (``strict_cupy/capture.py``). Each event is charged to the first stack frame outside the
stand-in, this module, the backend, NumPy and CuPy: ``"dlscratch/operations/loss.py:37 in forward"``.

On the strict CuPy stand-in (``DLSCRATCH_STRICT_GPU=1``) the stand-in's hooks count every operation as
CuPy would run it on a GPU: the rules are in the section "The model" below, each citing CuPy's source.
On a real GPU those hooks do not exist; there kernels, copies, memsets and waits come from CUPTI
through ``torch.profiler`` (no call sites: CUPTI sees the whole process), and allocations from CuPy's
``MemoryHook`` (with call sites). Without PyTorch a real-GPU ledger cannot count launches and refuses.

Outside any ledger the hooks cost one check of ``open_ledgers``.
"""

import contextlib
import math
import os
import sys
import threading

import numpy

CATEGORIES = ("kernel", "memset", "copy_device", "copy_to_host", "copy_to_device", "graph", "wait", "allocation")
open_ledgers = ()  # the ledgers now open, in every thread: a tuple, replaced whole, so readers need no lock
_lock = threading.Lock()


def record(category, what, count=1):
    """Count ``count`` events of ``category`` (one of ``CATEGORIES``) named ``what``, at the caller's site, in
    every active ledger."""
    if not open_ledgers:
        return
    if category not in CATEGORIES:
        raise ValueError(f"ledger.record: unknown category {category!r}; choose one of {', '.join(CATEGORIES)}")
    site = call_site()
    for book in open_ledgers:
        book.add(site, category, what, count)


def record_all(events):
    """Count ``[(category, what, count)]`` at the caller's site, in every active ledger."""
    if not open_ledgers:
        return
    site = call_site()
    for category, what, count in events:
        if count:
            for book in open_ledgers:
                book.add(site, category, what, count)


# --- call sites ---------------------------------------------------------------------------------------------

_PACKAGE = os.path.dirname(os.path.abspath(sys.modules[__name__.split(".")[0]].__file__))  # dlscratch/
_HERE = os.path.dirname(os.path.abspath(__file__))  # the ledger and the stand-in beside it (an older tree too)
_SKIPPED_FILES = {os.path.abspath(__file__), os.path.join(_PACKAGE, "backend.py")}
_SKIPPED_DIRS = (os.path.dirname(numpy.__file__) + os.sep, os.path.join(_HERE, "strict_cupy") + os.sep,
                 f"{os.sep}cupy{os.sep}", f"{os.sep}cupy_backends{os.sep}", f"{os.sep}contextlib.py")
_site_names = {}  # code object -> its file's name in a site, or None for a skipped file


def _site_name(code):
    if code not in _site_names:
        path = os.path.abspath(code.co_filename)
        if path in _SKIPPED_FILES or any(part in path for part in _SKIPPED_DIRS):
            _site_names[code] = None
        elif path.startswith(_PACKAGE + os.sep):
            _site_names[code] = os.path.relpath(path, os.path.dirname(_PACKAGE)).replace(os.sep, "/")
        else:
            _site_names[code] = os.path.basename(path)
    return _site_names[code]


def call_site():
    """``"path:line in function"`` of the first frame outside the stand-in, the ledger, the backend and NumPy."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        name = _site_name(frame.f_code)
        if name is not None:
            return f"{name}:{frame.f_lineno} in {frame.f_code.co_name}"
        frame = frame.f_back
    return "<unknown>"


# --- the ledger ---------------------------------------------------------------------------------------------


class Ledger:
    """Counts by (site, category, what). ``kernels``... ``allocations``: totals; ``launches``: what the GPU
    queues (kernels, memsets, copies and graphs)."""

    def __init__(self, counts=None):
        self._counts = dict(counts or {})

    def add(self, site, category, what, count=1):
        key = (site, category, what)
        with _lock:
            self._counts[key] = self._counts.get(key, 0) + count

    def total(self, category):
        """The number of events of ``category``."""
        return sum(n for (_, c, _), n in list(self._counts.items()) if c == category)

    kernels = property(lambda self: self.total("kernel"))
    memsets = property(lambda self: self.total("memset"))
    copies_device = property(lambda self: self.total("copy_device"))
    copies_to_host = property(lambda self: self.total("copy_to_host"))
    copies_to_device = property(lambda self: self.total("copy_to_device"))
    graphs = property(lambda self: self.total("graph"))
    waits = property(lambda self: self.total("wait"))
    allocations = property(lambda self: self.total("allocation"))

    @property
    def launches(self):
        return (self.kernels + self.memsets + self.copies_device + self.copies_to_host + self.copies_to_device
                + self.graphs)

    def by_site(self, category=None):
        """``[(site, category, what, count)]``, the largest count first; only ``category``'s if given."""
        rows = [(s, c, w, n) for (s, c, w), n in list(self._counts.items()) if category in (None, c)]
        return sorted(rows, key=lambda row: (-row[3], row[0], row[1], row[2]))

    def by_name(self):
        """``[(category, what, count)]`` of what the GPU queues (not waits or allocations), summed over the sites,
        the largest count first."""
        totals = {}
        for (_, category, what), n in list(self._counts.items()):
            if category not in ("wait", "allocation"):
                totals[category, what] = totals.get((category, what), 0) + n
        return sorted(((c, w, n) for (c, w), n in totals.items()), key=lambda row: (-row[2], row[0], row[1]))

    def per(self, steps):
        """A copy with every count divided by ``steps`` (counts per step)."""
        return Ledger({key: n / steps for key, n in self._counts.items()})

    def reset(self):
        with _lock:
            self._counts.clear()

    def summary(self):
        """One line: launches, kernels, memsets, copies, graphs (where any), waits, allocations."""
        graphs = f", {_number(self.graphs)} CUDA graphs" if self.graphs else ""
        return (f"{_number(self.launches)} launches: {_number(self.kernels)} kernels, {_number(self.memsets)} memsets, "
                f"copies {_number(self.copies_device)} device-to-device, {_number(self.copies_to_host)} to host, "
                f"{_number(self.copies_to_device)} to device{graphs}; {_number(self.waits)} host waits; "
                f"{_number(self.allocations)} allocations")

    def table(self, top=20):
        """A text table by site, the busiest ``top`` sites first: one column per category, then what ran there."""
        columns = ("kernel", "memset", "copy_device", "copy_to_host", "copy_to_device", "graph", "wait", "allocation")
        headers = ("kernels", "memsets", "d2d", "d2h", "h2d", "graphs", "waits", "allocs")
        if not self.graphs:  # the column only where a graph was launched
            columns, headers = columns[:5] + columns[6:], headers[:5] + headers[6:]
        sites = {}
        for (site, category, what), n in list(self._counts.items()):
            row = sites.setdefault(site, {"whats": {}})
            row[category] = row.get(category, 0) + n
            if category not in ("allocation", "wait"):
                row["whats"][what] = row["whats"].get(what, 0) + n
        busiest = sorted(sites.items(), key=lambda item: -sum(item[1].get(c, 0) for c in columns))[:top]
        width = max([len("site")] + [len(site) for site, _ in busiest])
        lines = ["site".ljust(width) + "".join(h.rjust(9) for h in headers) + "  what"]
        for site, row in busiest:
            whats = sorted(row["whats"].items(), key=lambda item: -item[1])
            lines.append(site.ljust(width) + "".join(_number(row.get(c, 0)).rjust(9) for c in columns)
                         + "  " + ", ".join(f"{w} x{_number(n)}" for w, n in whats[:4]))
        lines.append(self.summary())
        return "\n".join(lines)

    def __repr__(self):
        return f"<Ledger: {self.summary()}>"


def _number(n):
    return str(int(n)) if float(n).is_integer() else f"{n:.2f}"


@contextlib.contextmanager
def counting(real_cupy=None):
    """Open a ledger and yield it. ``real_cupy``: the CuPy module when a real GPU runs the code (then the
    counts come from CUPTI and CuPy's memory hook); None on the stand-in or NumPy (the stand-in's hooks)."""
    global open_ledgers
    book = Ledger()
    with _lock:
        open_ledgers = open_ledgers + (book,)
    try:
        if real_cupy is None:
            yield book
        else:
            with _on_real_gpu(real_cupy, book):
                yield book
    finally:
        with _lock:
            open_ledgers = tuple(b for b in open_ledgers if b is not book)


# --- a real GPU: CUPTI through torch.profiler, allocations through CuPy's MemoryHook ------------------------

_GPU_SITE = "(whole process, from CUPTI)"
_SYNCHRONIZE_CALLS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")


def _import_profiler():
    """torch.profiler's ``profile`` and ``ProfilerActivity``; RuntimeError saying what to do without them."""
    try:
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        raise RuntimeError(
            "backend.ledger() on a real GPU counts kernels, copies and memsets with CUPTI through torch.profiler, "
            "and PyTorch is not importable here: install torch, or count on the strict CuPy stand-in "
            "(DLSCRATCH_STRICT_GPU=1), which counts them as CuPy launches them"
        ) from None
    return profile, ProfilerActivity


def classify_profiled(name, on_device):
    """The category of a profiler event named ``name`` (None for one the ledger ignores).

    CUPTI names copies "Memcpy DtoH (Device -> Pageable)" and memsets "Memset (Device)"; every other
    event on the device is a kernel. A host wait is a ``cuda*Synchronize`` runtime call (CuPy's ``get``
    copies, then synchronizes the stream: one wait, not two).
    """
    if on_device:
        if name.startswith("Memset"):
            return "memset"
        if name.startswith("Memcpy"):
            return {"DtoH": "copy_to_host", "HtoD": "copy_to_device"}.get(name.split()[1], "copy_device")
        return "kernel"
    return "wait" if name in _SYNCHRONIZE_CALLS else None


@contextlib.contextmanager
def _on_real_gpu(cupy, book):
    """Count on a real GPU: CUPTI's device events (torch.profiler) and CuPy's allocations. Untested here:
    it needs a GPU; ``classify_profiled`` holds its rules."""
    profile, activity = _import_profiler()
    class Allocations(cupy.cuda.MemoryHook):
        name = "dlscratch_ledger"

        def malloc_postprocess(self, **kwargs):
            book.add(call_site(), "allocation", "malloc", 1)

    with profile(activities=[activity.CUDA]) as profiler, Allocations():
        yield
    cupy.cuda.Device().synchronize()
    for event in profiler.events():
        category = classify_profiled(event.name, str(event.device_type).endswith("CUDA"))
        if category is not None:
            book.add(_GPU_SITE, category, event.name, 1)


# --- The model: what CuPy makes the GPU do, per operation ---------------------------------------------------
# Each rule returns [(category, what, count)]; ``what`` is CuPy's kernel name without its "cupy_" prefix and
# dtype suffix (the profile's "cupy_copy__float32_float32" is "copy"). Sources: CuPy's repository, cupy/...

CUB_SINGLE_TILE = 4096  # heuristic: elements cub::DeviceReduce reduces in one block (256 threads x 16 items)
_CUB_REDUCTIONS = {"sum", "prod", "max", "min", "amax", "amin", "argmax", "argmin", "mean"}
_REDUCTIONS = _CUB_REDUCTIONS | {"all", "any", "var", "std", "nansum", "nanmax", "nanmin", "nanmean", "count_nonzero"}
_GEMMS = {"matmul", "dot", "tensordot", "inner", "vdot"}
_TO_HOST = {"item", "tolist", "tobytes", "get", "asnumpy"}
_KERNEL_NAMES = {"astype": "copy", "copy": "copy", "ascontiguousarray": "copy", "reshape": "copy",
                 "ravel": "copy", "flatten": "copy", "ones": "fill", "full": "fill", "ones_like": "fill",
                 "full_like": "fill", "divide": "true_divide", "absolute": "absolute"}


def gemm_kernels(m, n, k):
    """Kernels of one cuBLAS GEMM, ``(m x k) @ (k x n)``: 1, or 2 where cuBLAS splits the work.

    Calibrated against CUPTI's profile of every product of five training steps on an H100 (the project's GPU
    runs), not derived from cuBLAS, whose choice of algorithm is not documented:
    - an output of few tiles (``m * n <= 16384``) with a long ``k`` (``>= 128``): split-K, partial products then
      a ``splitKreduce`` kernel (the LSTM layer's backward product);
    - a tall, thin output (``n <= 32`` columns, ``m >= 1024`` rows): two GEMM kernels (the reference LSTM loop's
      recurrent product ``W_hh @ h.T``, an xmma and a cutlass kernel).
    """
    return len(gemm_kernel_names(m, n, k))


def gemm_kernel_names(m, n, k):
    """The kernels ``gemm_kernels`` counts, by the names a profile shows."""
    if m * n <= 16384 and k >= 128:
        return ["gemm", "splitKreduce"]
    if n <= 32 and m >= 1024:
        return ["gemm", "gemm (second kernel)"]
    return ["gemm"]


def full_reduction_kernels(size):
    """Kernels of cub::DeviceReduce over ``size`` elements (cupy/cuda/cub.pyx ``device_reduce``): one
    single-tile kernel when the input fits one block, else a per-block pass and a single-tile pass."""
    return 1 if size <= CUB_SINGLE_TILE else 2


def reduction(name, a, axis, dtype=None):
    """A reduction of ``a`` over ``axis`` (None: all axes).

    CuPy's default accelerator is CUB (cupy/_core/_accelerator.pyx: CUPY_ACCELERATORS defaults to "cub").
    _routines_math.pyx / _routines_statistics.pyx call cub.cub_reduction (cupy/cuda/cub.pyx) first:
    - all axes of a contiguous array, no dtype: ``device_reduce``, cub::DeviceReduce, which also allocates
      its output and a workspace; ``mean`` then divides the sum in place (true_divide);
    - the trailing axes of a C-contiguous array: ``device_segmented_reduce``, one kernel, output + workspace;
    - otherwise CuPy's own reduction kernel (cupy/_core/_reduction.pyx), "cupy_sum" and so on: one kernel.
    ``var``/``std`` run ``mean`` and then their own reduction (std adds a sqrt).
    """
    axes = tuple(range(a.ndim)) if axis is None else tuple(sorted(x % max(a.ndim, 1) for x in numpy.atleast_1d(axis)))
    contiguous = a.flags.c_contiguous or a.flags.f_contiguous
    if name in ("var", "std"):
        extra = [("kernel", name, 1)] + ([("kernel", "sqrt", 1)] if name == "std" else [])
        return reduction("mean", a, axis) + extra
    if name in _CUB_REDUCTIONS and dtype is None and contiguous and a.size:
        if len(axes) == a.ndim:
            events = [("kernel", f"cub reduce ({name})", full_reduction_kernels(a.size)),
                      ("allocation", "cub workspace", 1)]
            return events + ([("kernel", "true_divide", 1)] if name == "mean" else [])
        trailing = a.flags.c_contiguous and axes == tuple(range(a.ndim - len(axes), a.ndim))
        if trailing and name not in ("argmax", "argmin", "mean"):
            return [("kernel", f"cub segmented reduce ({name})", 1), ("allocation", "cub workspace", 1)]
    return [("kernel", name, 1)]


def gemm(a, b, out_size):
    """matmul/dot/tensordot (cupy/_core/_routines_linalg.pyx). ``dot`` (operands of one or two dimensions, a
    vector as a one-row or one-column matrix) calls one cuBLAS GEMM (``gemmEx``/``sgemmEx``), after copying an
    operand that is neither C- nor F-contiguous (``_internal_ascontiguousarray``; a transposed view is F-contiguous
    and is not copied); a product of one number is summed instead, by an elementwise product and a reduction.
    ``matmul`` past two dimensions: ``batched_gemm``."""
    if a.ndim > 2 or b.ndim > 2:
        return batched_gemm(a, b)
    if out_size == 1:
        product = numpy.empty(a.size, numpy.result_type(a, b))
        return [("kernel", "multiply", 1), ("allocation", "multiply", 1)] + reduction("sum", product, None)
    copies = sum(not (x.flags.c_contiguous or x.flags.f_contiguous) for x in (a, b))
    k = round(math.sqrt(a.size * b.size / max(out_size, 1))) or 1  # a: M*K, b: K*N, out: M*N
    m, n = a.size // k, b.size // k
    return ([("kernel", "copy", copies), ("allocation", "copy", copies)]
            + [("kernel", name, 1) for name in gemm_kernel_names(m, n, k)])


def batched_gemm(a, b):
    """CuPy's ``matmul`` past two dimensions (``_routines_linalg.pyx``): each operand made C-contiguous in the
    dtype summed in (``ascontiguousarray``: a copy of one that is not, or of another dtype; float16 is summed as
    float32, and the result cast back by one more copy into one more array); then one strided-batched GEMM where the
    batches have one shape, and where they broadcast, ``_mat_ptrs`` first, one kernel and array per batch
    dimension for each of the three operands (their matrices' addresses), and a batched GEMM on those."""
    wanted = numpy.promote_types(a.dtype, b.dtype)
    dtype = numpy.dtype(numpy.float32) if wanted == numpy.float16 else wanted
    copies = sum(not x.flags.c_contiguous or x.dtype != dtype for x in (a, b))
    events = [("kernel", "copy", copies), ("allocation", "copy", copies)]
    batch_a = a.shape[:-2] if a.ndim > 1 else ()
    batch_b = b.shape[:-2] if b.ndim > 1 else ()
    dims = max(len(batch_a), len(batch_b))
    batch_a, batch_b = (1,) * (dims - len(batch_a)) + batch_a, (1,) * (dims - len(batch_b)) + batch_b
    if batch_a != batch_b:
        events += [("kernel", "mat_ptrs", 3 * dims), ("allocation", "mat_ptrs", 3 * dims)]
    events.append(("kernel", "gemm (batched)", 1))
    if dtype != wanted:
        events += [("allocation", "copy", 1), ("kernel", "copy", 1)]
    return events


def fill(target, value):
    """``fill`` (cupy/_core/core.pyx ``fill``): ``memset_async`` when the value is 0 and the array
    C-contiguous, else the ``cupy_fill`` kernel."""
    if target.size == 0:
        return []
    if numpy.ndim(value) == 0 and value == 0 and target.flags.c_contiguous:
        return [("memset", "fill(0)", 1)]
    return [("kernel", "fill", 1)]


def host_indices(key):
    """CuPy turns an index given as a list or NumPy array into a device array (``_prepare_slice_list``)."""
    return [("copy_to_device", "index", 1), ("allocation", "index", 1)] if _is_index_array(key) else []


def _is_index_array(k):
    return isinstance(k, list) or (isinstance(k, numpy.ndarray) and k.ndim > 0)


def advanced_indices(key):
    """The index arrays in a ``[]`` key (None when it is a basic index: slices, ints, None, ...)."""
    parts = key if isinstance(key, tuple) else (key,)
    arrays = [k for k in parts if _is_index_array(k) or hasattr(k, "_a")]
    return arrays or None


def index_kernels(arrays, operation):
    """Kernels that resolve advanced indices (cupy/_core/_routines_indexing.pyx), then ``operation``:
    - one boolean mask: ``_prepare_mask_indexing_single`` scans it and reads the count back with
      ``int(mask_scanned[-1])`` (a copy to host and a wait), then one mask kernel;
    - one integer array: ``take``/scatter, one kernel (``cupy_take``);
    - several: ``_prepare_multiple_array_indexing`` allocates ``reduced_idx``, ``fill(0)``s it (memset),
      runs ``cupy_prepare_array_indexing`` per index array, then one ``cupy_take``/scatter kernel."""
    plain = [numpy.asarray(getattr(k, "_a", k)) for k in arrays]
    events = [event for k in arrays if not hasattr(k, "_a") for event in host_indices(k)]
    if len(plain) == 1 and plain[0].dtype == bool:
        return events + [("kernel", "scan", 1), ("allocation", "scan", 1), ("copy_to_host", "mask count", 1),
                         ("wait", "mask count", 1), ("kernel", f"{operation} (mask)", 1)]
    if len(plain) > 1:
        events += [("allocation", "reduced_idx", 1), ("memset", "reduced_idx fill(0)", 1),
                   ("kernel", "prepare_array_indexing", len(plain))]
    return events + [("kernel", operation, 1)]


def assignment(target, value, on_host):
    """``view[...] = value`` on a basic view (cupy/_core/_routines_indexing.pyx ``_scatter_op``, "update"): a
    scalar fills; an array of the same shape, strides and dtype into a C-contiguous view is a
    ``copy_from_device_async`` (cudaMemcpy); anything else is ``elementwise_copy`` (``cupy_copy``).
    ``value``: a NumPy array or scalar; ``on_host``: True when it is a host array (copied to the device)."""
    if not isinstance(value, numpy.ndarray) or on_host and value.ndim == 0:
        return fill(target, value)
    if on_host:
        return [("copy_to_device", "setitem", 1)] if value.size else []
    if _same_memory(value, target):  # ``a[s] += b`` writes a[s] back onto itself, which _scatter_op skips
        return []
    if (value.shape == target.shape and value.strides == target.strides and value.dtype == target.dtype
            and target.flags.c_contiguous):
        return [("copy_device", "setitem", 1)] if value.size else []
    return [("kernel", "copy", 1)] if target.size else []


def _same_memory(a, b):
    return (a.__array_interface__["data"][0] == b.__array_interface__["data"][0] and a.shape == b.shape
            and a.strides == b.strides and a.dtype == b.dtype)


def concatenate(arrays, axis_size_equal):
    """concatenate/stack (cupy/_core/_routines_manipulation.pyx ``_concatenate``): more than 8 arrays of
    one dtype and under 2 MiB each on average take one kernel after copying their pointers to the device
    (``core.array(ptrs)``; two more small arrays when the pieces differ in shape); otherwise one
    ``elementwise_copy`` per array."""
    arrays = [a for a in arrays if isinstance(a, numpy.ndarray)]
    total = sum(a.nbytes for a in arrays)
    if len(arrays) > 8 and len({a.dtype for a in arrays}) == 1 and total < 2 * 1024 * 1024 * len(arrays):
        uploads = 1 if axis_size_equal else 3
        return [("copy_to_device", "concatenate pointers", uploads), ("allocation", "concatenate pointers", uploads),
                ("kernel", "concatenate", 1)]
    return [("kernel", "copy", sum(a.size > 0 for a in arrays))]


def call(name, inputs, args, kwargs, results):
    """Events of CuPy's ``name`` (a function or method) on ``inputs`` (its array arguments, the array first
    for a method) returning ``results``, its new arrays (not views). The table of rules."""
    a = inputs[0] if inputs and isinstance(inputs[0], numpy.ndarray) else None
    new_arrays = len(results or ())
    allocations = [("allocation", name, new_arrays)]
    if name in ("zeros", "zeros_like"):  # cupy/_creation/basic.py: empty, then memset_async
        return allocations + [("memset", name, new_arrays)]
    if name in ("empty", "empty_like"):  # cupy/_creation/basic.py: allocates only
        return allocations
    if name in _TO_HOST:  # core.pyx: item, tolist, tobytes are self.get()...; get copies, then synchronizes
        return [("copy_to_host", name, 1), ("wait", name, 1)]
    if name == "fill" and a is not None:
        return fill(a, args[0] if args else kwargs.get("value"))
    if name in _REDUCTIONS and a is not None:
        axis = args[0] if args else kwargs.get("axis")
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 and name in ("sum", "prod", "mean") else None)
        return allocations + reduction(name, a, axis, dtype)
    if name in _GEMMS and len(inputs) >= 2:
        return allocations + gemm(inputs[0], inputs[1], results[0].size if results else kwargs["out"].size)
    if name == "take":  # _routines_indexing.pyx _take: one cupy_take kernel
        indices = args[0] if args else kwargs.get("indices")
        return allocations + host_indices(indices) + [("kernel", "take", 1)]
    if name in ("concatenate", "stack", "hstack", "vstack"):
        pieces = args[0] if args else kwargs.get("arrays", ())
        pieces = [p for p in pieces if isinstance(p, numpy.ndarray)]
        return allocations + concatenate(pieces, len({p.shape for p in pieces}) == 1)
    if name == "copyto" and len(inputs) >= 2:  # cupy/_manipulation/basic.py copyto: memcpy when it can, else a kernel
        return assignment(inputs[0], inputs[1], on_host=False)
    # any other function or method: one kernel per new array (CuPy's elementwise or copy kernel), one for an
    # in-place method (it returned None); views cost nothing
    return allocations + [("kernel", _KERNEL_NAMES.get(name, name), 1 if results is None else new_arrays)]


def ufunc(name, method, inputs, out_given, results):
    """A ufunc call or operator: one elementwise kernel (CuPy's "cupy_<name>"), one new array per output
    unless ``out=`` is given (cupy/_core/_kernel.pyx ``ufunc.__call__``); ``matmul`` is a GEMM;
    ``ufunc.reduce`` is a reduction; ``ufunc.at`` is one scatter kernel. ``results``: the output arrays."""
    name = _KERNEL_NAMES.get(name, name)
    allocations = [] if out_given else [("allocation", name, len(results))]
    arrays = [x for x in inputs if isinstance(x, numpy.ndarray)]
    if method == "reduce" and arrays:
        reduced = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min"}.get(name, name)
        return allocations + reduction(reduced, arrays[0], 0)
    if name == "matmul" and len(arrays) == 2 and results:
        return allocations + gemm(arrays[0], arrays[1], results[0].size)
    return allocations + [("kernel", name if method == "__call__" else f"{name}.{method}", 1)]
