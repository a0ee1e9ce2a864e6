"""The "launches" suite: the ledger of each profiled training step per step, beside PyTorch's counts.

Made-up steps and a fake ledger check the suite's own logic (the warm-up step is not counted, counts are per
step, the ratio, the worst workload's call sites, the switch to the stand-in on the CPU); one quick run counts
the real workloads with the real ledger on the strict CuPy stand-in.
"""

import contextlib

import pytest

from dlscratch import backend as dl_backend
from dlscratch.bench import SUITES, launches, load_suite, workloads
from dlscratch.bench.workloads import CATEGORIES, Workload


@pytest.fixture
def restore_backend(monkeypatch):
    """Whatever the suite does to the backend (it switches to the stand-in on the CPU) is undone after the test."""
    for name in ("cupy", "cupyx", "_gpu_status", "xp"):
        monkeypatch.setattr(dl_backend, name, getattr(dl_backend, name))


class FakeLedger:
    """What ``backend.ledger()`` yields, reduced to its counts; ``table`` names the ledger it was asked of."""

    def __init__(self, **counts):
        for category in CATEGORIES + ["allocations"]:
            setattr(self, category, counts.get(category, 0))

    @property
    def launches(self):
        return self.kernels + self.memsets + self.copies_device + self.copies_to_host + self.copies_to_device

    def per(self, steps):
        return FakeLedger(**{c: getattr(self, c) / steps for c in CATEGORIES + ["allocations"]})

    def table(self, top=20):
        return f"FAKE TABLE top={top} kernels={self.kernels:g}"

    def by_name(self):
        return [("kernel", "fake kernel", self.kernels)]


@pytest.fixture
def fake_ledger(monkeypatch):
    """``backend.ledger()`` replaced by a fake that counts what ``launching`` steps record; the open ledgers."""
    open_ledgers = []

    @contextlib.contextmanager
    def ledger():
        open_ledgers.append(FakeLedger())
        try:
            yield open_ledgers[-1]
        finally:
            open_ledgers.pop()

    monkeypatch.setattr(dl_backend, "ledger", ledger, raising=False)
    return open_ledgers


def launching(open_ledgers, first_step_kernels=0, **counts):
    """A workload builder whose step records ``counts`` in the open ledgers (its first step more kernels)."""
    def build(quick=False):
        calls = []

        def step():
            for ledger in open_ledgers:
                ledger.kernels += first_step_kernels if not calls else 0
                for category, count in counts.items():
                    setattr(ledger, category, getattr(ledger, category) + count)
            calls.append(quick)

        return step

    return build


@pytest.fixture
def made_up_workloads(monkeypatch, fake_ledger):
    fake = [
        Workload("small", launching(fake_ledger, first_step_kernels=100, kernels=30, memsets=2, copies_to_host=2,
                                    waits=2, allocations=7), 3, {"kernels": 10, "memsets": 1}, {}),
        Workload("sequence", launching(fake_ledger, kernels=70, copies_device=40, memsets=10), 1,
                 {"kernels": 30, "copies_device": 1}, {}, pytorch_note="a note on PyTorch's count"),
    ]
    monkeypatch.setattr(launches, "WORKLOADS", fake)


def test_the_suite_is_registered():
    assert SUITES["launches"] == launches.__name__
    assert load_suite("launches") is launches


def test_on_the_cpu_the_suite_counts_on_the_stand_in_per_step_without_the_warm_up(
        restore_backend, made_up_workloads, capsys):
    dl_backend.use("numpy")
    headers, rows = launches.run()
    out = capsys.readouterr().out
    assert dl_backend.strict_stand_in() and dl_backend.device() == "gpu"
    assert out.startswith("launches: per training step, counted by backend.ledger() on the strict CuPy stand-in")
    assert headers == launches.HEADERS
    assert rows == [
        ["small", "30", "2", "0/2/0", "2", "7", "34", "10/1/0", "3.09"],
        ["sequence", "70", "10", "40/0/0", "0", "0", "120", "30/0/1", "3.87"],
    ]
    assert "a note on PyTorch's count" in out and "quick mode" not in out
    assert "where the launches of sequence come from (3.9x PyTorch's), per step:\nFAKE TABLE top=10 kernels=70" in out
    assert "by name, per step:\nsmall:\n      30  kernel          fake kernel\nsequence:\n      70  kernel" in out


def test_a_kernels_name_loses_cs_template_arguments_and_parameters_only():
    cub = ("void cub::detail::reduce::DeviceReduceKernel<cub::policy_hub<float, unsigned int>::Policy1000, float*>"
           "(float*, float*, unsigned int, cuda::std::plus<void>)")
    assert launches.short_name(cub) == "cub::detail::reduce::DeviceReduceKernel"
    xmma = "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x32x8_stage3_execute_split_k_kernel__5x_cublas"
    assert launches.short_name(xmma) == xmma
    assert launches.short_name("Memcpy DtoH (Device -> Pageable)") == "Memcpy DtoH (Device -> Pageable)"


def test_quick_mode_says_so_and_gives_no_ratio_to_pytorch(restore_backend, made_up_workloads, capsys):
    rows = launches.run(quick=True)[1]
    out = capsys.readouterr().out
    assert "quick mode: tiny sizes" in out and "where the launches of sequence come from, per step:" in out
    assert [row[-1] for row in rows] == ["-", "-"]


def test_counts_per_step_are_whole_or_one_decimal():
    assert [launches.number(n) for n in (3, 3.0, 7 / 3, 0)] == ["3", "3", "2.3", "0"]


def test_every_workload_has_pytorch_and_cupti_counts():
    assert [w.counted_steps for w in workloads.WORKLOADS] == [3, 3, 3, 1, 3]
    assert [workloads.cupti_launches(w.pytorch) for w in workloads.WORKLOADS] == [23, 52, 33, 416, 15]
    assert [w.cupti_profiled["kernels"] for w in workloads.WORKLOADS] == [58, 98, 143, 738, 20]
    assert all(set(w.pytorch) | set(w.cupti_profiled) <= set(CATEGORIES) for w in workloads.WORKLOADS)


def test_a_quick_run_counts_every_workload_with_the_real_ledger(restore_backend, capsys):
    headers, rows = launches.run(quick=True)
    out = capsys.readouterr().out
    assert [row[0] for row in rows] == [w.name for w in workloads.WORKLOADS]
    kernels, launched = headers.index("kernels"), headers.index("launches")
    assert all(float(row[kernels]) > 0 and float(row[launched]) >= float(row[kernels]) for row in rows)
    assert "where the launches of " in out
