"""The launch ledger reproduces CUPTI's counts (tools/calibrate_ledger.py): the profiled commit's library
(``calibration.COMMIT``), counted on the strict CuPy stand-in, launches what it launched on an H100, within 10% (or 1
per step where the count is small).

The calibration needs the repository's history (``git archive`` of that commit): a shallow clone skips it, saying so.
"""

import pytest
from repo_tools import load_tool

from dlscratch.bench.workloads import WORKLOADS

calibration = load_tool("calibrate_ledger")


def test_within_is_ten_percent_or_one_per_step():
    assert calibration.within(63, 58) and not calibration.within(64, 58)  # 10% of 58 is 5.8
    assert calibration.within(665, 738) and not calibration.within(664, 738)
    assert calibration.within(1, 0) and calibration.within(4, 3) and not calibration.within(2, 0)


def test_the_table_gives_each_category_and_holds_only_the_device_counts():
    counts = {w.name: dict.fromkeys(calibration.SHOWN, 0) for w in WORKLOADS}
    counts[WORKLOADS[0].name].update(kernels=60, memsets=3, copies_to_host=2, waits=5)
    rows = calibration.compare(counts, WORKLOADS[:1])
    assert rows == [
        [WORKLOADS[0].name, "kernels", "60", "58", "+3", "yes"],
        [WORKLOADS[0].name, "memsets", "3", "3", "+0", "yes"],
        [WORKLOADS[0].name, "copies_device", "0", "0", "-", "yes"],
        [WORKLOADS[0].name, "copies_to_host", "2", "2", "+0", "yes"],
        [WORKLOADS[0].name, "copies_to_device", "0", "0", "-", "yes"],
        [WORKLOADS[0].name, "waits", "5", "2", "+150", "(not held)"],
    ]


@pytest.fixture(scope="module")
def old_counts():
    """Per-step counts of the five workloads by the profiled commit's library, on the stand-in."""
    if not calibration.has_commit():
        pytest.skip(f"commit {calibration.COMMIT} is not in this clone's history (shallow clone): "
                    "the calibration needs `git fetch --unshallow`")
    return calibration.calibrate()[0]


@pytest.mark.slow
@pytest.mark.parametrize("workload", WORKLOADS, ids=[w.name.split(",")[0] for w in WORKLOADS])
def test_the_ledger_counts_what_cupti_counted_at_the_profiled_commit(old_counts, workload):
    counted = old_counts[workload.name]
    wrong = {category: (counted[category], workload.cupti_profiled.get(category, 0))
             for category in calibration.CALIBRATED
             if not calibration.within(counted[category], workload.cupti_profiled.get(category, 0))}
    assert not wrong, f"{workload.name}: (stand-in, CUPTI) per step, off by more than 10% or 1: {wrong}"
