"""The launch ledger (dlscratch/bench/ledger.py) counts on the strict stand-in what CuPy makes a GPU do."""

import inspect
import sys
import types

import numpy as np
import pytest

import dlscratch
from dlscratch import backend as B
from dlscratch.bench import ledger as ledger_module


@pytest.fixture
def xp(monkeypatch):
    """The stand-in playing the GPU for one test; the backend as it was afterwards."""
    for name in ("cupy", "cupyx", "_gpu_status", "xp"):
        monkeypatch.setattr(B, name, getattr(B, name))
    B.use_strict_stand_in()
    try:
        yield B.use("gpu")
    finally:
        B.use("numpy")


def counts(book):
    """{(category, what): count}, sites left out."""
    totals = {}
    for _, category, what, n in book.by_site():
        totals[category, what] = totals.get((category, what), 0) + n
    return totals


def test_an_addition_is_one_kernel_and_one_allocation(xp):
    a, b = xp.ones(3, dtype=xp.float32), xp.ones(3, dtype=xp.float32)
    with B.ledger() as book:
        a + b
    assert counts(book) == {("kernel", "add"): 1, ("allocation", "add"): 1}
    assert (book.kernels, book.allocations, book.launches, book.waits) == (1, 1, 1, 0)


def test_an_in_place_operator_allocates_nothing(xp):
    a = xp.ones(3, dtype=xp.float32)
    with B.ledger() as book:
        a *= 2
    assert counts(book) == {("kernel", "multiply"): 1}


def test_zeros_is_a_memset_and_an_allocation(xp):
    with B.ledger() as book:
        xp.zeros((2, 3), dtype=xp.float32)
    assert (book.memsets, book.allocations, book.kernels, book.launches) == (1, 1, 0, 1)


def test_a_scalar_read_back_is_a_reduction_a_copy_to_host_and_a_wait(xp):
    a = xp.ones(100, dtype=xp.float32)
    with B.ledger() as book:
        float(a.sum())
    assert counts(book) == {("kernel", "cub reduce (sum)"): 1, ("allocation", "sum"): 1,
                            ("allocation", "cub workspace"): 1, ("copy_to_host", "float"): 1, ("wait", "float"): 1}
    assert (book.copies_to_host, book.waits, book.launches) == (1, 1, 2)


def test_a_large_reduction_takes_two_cub_kernels_and_an_axis_one_kernel(xp):
    a = xp.ones((ledger_module.CUB_SINGLE_TILE + 1,), dtype=xp.float32)
    m = xp.ones((4, 3), dtype=xp.float32)
    with B.ledger() as book:
        a.max()
        m.sum(axis=0)
    assert counts(book)["kernel", "cub reduce (max)"] == 2
    assert counts(book)["kernel", "sum"] == 1  # axis 0 of a C array: CuPy's own reduction kernel, cupy_sum


def test_fancy_indexing_with_one_and_with_two_index_arrays(xp):
    x = xp.ones((4, 3), dtype=xp.float32)
    rows = xp.asarray(np.array([0, 2, 1]))
    with B.ledger() as one:
        x[rows]
    assert counts(one) == {("kernel", "take"): 1, ("allocation", "take"): 1}
    columns = xp.asarray(np.array([2, 0, 1]))
    with B.ledger() as two:
        x[rows, columns]
    assert counts(two) == {("allocation", "reduced_idx"): 1, ("memset", "reduced_idx fill(0)"): 1,
                           ("kernel", "prepare_array_indexing"): 2, ("kernel", "take"): 1, ("allocation", "take"): 1}


def test_a_host_index_list_is_copied_to_the_device(xp):
    x = xp.ones((4, 3), dtype=xp.float32)
    with B.ledger() as book:
        x[[0, 1]]
    assert book.copies_to_device == 1 and book.kernels == 1


def test_matmul_is_one_gemm_and_splits_k_when_k_is_long(xp):
    a, w = xp.ones((8, 16), dtype=xp.float32), xp.ones((16, 4), dtype=xp.float32)
    with B.ledger() as book:
        a @ w
    assert counts(book) == {("kernel", "gemm"): 1, ("allocation", "matmul"): 1}
    long_k = xp.ones((2, 256), dtype=xp.float32)
    with B.ledger() as split:
        xp.dot(long_k, xp.ones((256, 2), dtype=xp.float32))
    assert counts(split)["kernel", "gemm"] == 1 and counts(split)["kernel", "splitKreduce"] == 1
    assert ledger_module.gemm_kernels(128, 10, 1000) == 2 and ledger_module.gemm_kernels(128, 1000, 784) == 1
    assert ledger_module.gemm_kernels(2000, 32, 500) == 2 and ledger_module.gemm_kernels(32, 2000, 500) == 1


def test_a_batched_matmul_counts_cupys_copies_address_arrays_and_batched_gemm(xp):
    """Batches of one shape: one strided-batched GEMM. Broadcast batches: ``_mat_ptrs``, one kernel per batch
    dimension for each of the three operands, before the GEMM. float16: both operands copied to float32, and the
    float32 result copied back into a float16 array. A product of one number: an elementwise product and a sum."""
    a, w = xp.ones((2, 3, 8, 16), dtype=xp.float32), xp.ones((16, 4), dtype=xp.float32)
    ws = xp.ones((2, 3, 16, 4), dtype=xp.float32)
    a_half, ws_half, v = a.astype(xp.float16), ws.astype(xp.float16), xp.ones(300, dtype=xp.float32)
    with B.ledger() as same:
        a @ ws
    assert counts(same) == {("kernel", "gemm (batched)"): 1, ("allocation", "matmul"): 1}
    with B.ledger() as broadcast:
        a @ w
    assert counts(broadcast) == {("kernel", "mat_ptrs"): 6, ("allocation", "mat_ptrs"): 6,
                                 ("kernel", "gemm (batched)"): 1, ("allocation", "matmul"): 1}
    with B.ledger() as half:
        a_half @ ws_half
    assert counts(half)["kernel", "copy"] == 2 + 1 and counts(half)["allocation", "copy"] == 2 + 1
    with B.ledger() as one_number:
        v @ v
    assert counts(one_number)["kernel", "multiply"] == 1 and ("kernel", "gemm") not in counts(one_number)


def test_copies_and_assignments_follow_cupy(xp):
    a, b = xp.ones((4, 3), dtype=xp.float32), xp.ones((4, 3), dtype=xp.float32)
    with B.ledger() as book:
        a.T.copy()  # elementwise_copy: a kernel
        a[:] = b  # same shape, strides and dtype: cudaMemcpy
        a[:] = 0  # fill(0) on a contiguous array: memset
        a.fill(2)  # cupy_fill
        a.reshape(-1)  # a view
    assert counts(book) == {("kernel", "copy"): 1, ("allocation", "copy"): 1, ("copy_device", "setitem"): 1,
                            ("memset", "fill(0)"): 1, ("kernel", "fill"): 1}


def test_transfers_and_synchronize_are_waits(xp):
    a = xp.asarray(np.ones(3, dtype=np.float32))
    with B.ledger() as book:
        xp.asarray(np.ones(3))
        B.to_cpu(a)
        a[0].item()
        repr(a)
        B.synchronize()
    assert (book.copies_to_device, book.copies_to_host, book.waits) == (1, 3, 4)


def test_a_numpy_ledger_counts_nothing():
    B.use("numpy")
    with B.ledger() as book:
        x = np.ones((4, 3)) @ np.ones((3, 2))
        float(x.sum())
    assert book.by_site() == [] and book.launches == 0


def test_events_are_charged_to_this_file_and_line(xp):
    a = xp.ones(3, dtype=xp.float32)
    with B.ledger() as book:
        line = inspect.currentframe().f_lineno + 1
        a + 1
    site = f"test_ledger.py:{line} in test_events_are_charged_to_this_file_and_line"
    assert {site for site, *_ in book.by_site()} == {site}
    assert f"test_ledger.py:{line}" in book.table()


def test_nested_ledgers_each_count_everything_inside_them(xp):
    a = xp.ones(3, dtype=xp.float32)
    with B.ledger() as outer:
        a + 1
        with B.ledger() as inner:
            a * 2
    assert (outer.kernels, inner.kernels) == (2, 1)


def test_per_divides_and_reset_empties(xp):
    a = xp.ones(3, dtype=xp.float32)
    with B.ledger() as book:
        for _ in range(4):
            a + 1
    per_step = book.per(4)
    assert per_step.kernels == 1.0 and book.kernels == 4
    assert "1 kernels" in per_step.summary()
    book.reset()
    assert book.launches == 0


def test_outside_a_ledger_nothing_is_recorded_and_no_stack_is_walked(xp, monkeypatch):
    monkeypatch.setattr(ledger_module, "call_site", lambda: pytest.fail("walked the stack outside a ledger"))
    a = xp.ones(3, dtype=xp.float32)
    assert ledger_module.open_ledgers == ()
    float((a + 1).sum())
    ledger_module.record("kernel", "ElementwiseKernel k")


def test_record_counts_custom_kernels_and_refuses_unknown_categories(xp):
    with B.ledger() as book:
        ledger_module.record("kernel", "ElementwiseKernel im2col")
        with pytest.raises(ValueError, match="unknown category"):
            ledger_module.record("kernels", "oops")
    assert counts(book) == {("kernel", "ElementwiseKernel im2col"): 1}


def mlp_step_ledger(xp):
    model = dlscratch.nn.Sequential(dlscratch.nn.Linear(8, 16), dlscratch.nn.ReLU(), dlscratch.nn.Linear(16, 3))
    model.to("gpu")
    optimizer = dlscratch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = dlscratch.tensor(xp.asarray(np.random.default_rng(0).standard_normal((5, 8), dtype=np.float32)))
    labels = dlscratch.tensor(xp.asarray(np.array([0, 1, 2, 1, 0])))
    with B.ledger() as book:
        optimizer.zero_grad()
        loss = dlscratch.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
    return book


def test_the_reference_cross_entropy_waits_twice_for_its_label_check(xp):
    with dlscratch.reference():
        book = mlp_step_ledger(xp)
    waits = book.by_site("wait")
    assert waits and all(site.startswith("dlscratch/operations/loss.py:") and "check_labels" in site
                         for site, *_ in waits), book.table()
    assert book.waits == 2 and book.copies_to_host == 2  # int(labels.min()), int(labels.max())
    assert book.kernels > 10 and book.allocations > 10


def test_the_fast_training_step_never_waits_for_the_device(xp, fast_path):
    book = mlp_step_ledger(xp)
    assert book.waits == 0 and book.copies_to_host == 0, book.table()
    launched = {what for _, _, what, _ in book.by_site("kernel")}
    assert {"ElementwiseKernel dlscratch_cross_entropy", "ElementwiseKernel dlscratch_cross_entropy_backward",
            "ElementwiseKernel dlscratch_sgd_momentum"} <= launched


def test_a_real_gpu_without_pytorch_is_refused_with_the_way_out(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setitem(sys.modules, "torch.profiler", None)
    with pytest.raises(RuntimeError, match="DLSCRATCH_STRICT_GPU=1"):
        with ledger_module.counting(real_cupy=types.SimpleNamespace()):
            pass
    assert ledger_module.open_ledgers == ()


def test_cupti_events_are_sorted_into_categories():
    classify = ledger_module.classify_profiled
    assert classify("Memcpy DtoH (Device -> Pageable)", True) == "copy_to_host"
    assert classify("Memcpy HtoD (Pageable -> Device)", True) == "copy_to_device"
    assert classify("Memcpy DtoD (Device -> Device)", True) == "copy_device"
    assert classify("Memset (Device)", True) == "memset"
    assert classify("cupy_take", True) == "kernel"
    assert classify("cudaStreamSynchronize", False) == "wait"
    assert classify("cudaLaunchKernel", False) is None


def test_on_the_stand_in_counts_what_cupy_would_launch_and_puts_the_backend_back():
    B.gpu_available()  # settles a backend chosen lazily (DLSCRATCH_STRICT_GPU) before it is recorded
    before = (B.xp, B.cupy, B.gpu_available(), B.gpu_unavailable_reason())
    with B.on_the_stand_in():
        assert B.strict_stand_in() and B.device() == "gpu" and B.has_kernels()
        a = B.to_gpu(np.ones((4, 3), dtype=np.float32))
        with B.ledger() as book:
            (a + a).sum()
        assert book.kernels >= 2 and book.waits == 0
    assert (B.xp, B.cupy, B.gpu_available(), B.gpu_unavailable_reason()) == before


def test_a_function_of_an_array_counts_as_the_method(stand_in):
    """``cupy.sum(a, 0)`` is ``a.sum(0)`` to CuPy, and to the ledger (the function form used to read the array as
    the axis and fail)."""
    a, indices = stand_in.ones((4, 5), dtype="float32"), stand_in.asarray([0, 2])
    for function, method in [(lambda: stand_in.sum(a, 0), lambda: a.sum(0)),
                             (lambda: stand_in.sum(a, axis=(0, 1)), lambda: a.sum(axis=(0, 1))),
                             (lambda: stand_in.take(a, indices), lambda: a.take(indices))]:
        with B.ledger() as as_function:
            function()
        with B.ledger() as as_method:
            method()
        assert as_function.by_site() != [] and [row[1:] for row in as_function.by_site()] == [
            row[1:] for row in as_method.by_site()]
