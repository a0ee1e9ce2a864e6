"""What this machine can do, asked of the machine: cores, parallel arithmetic, other processes' load, a GPU.

A timing claim that depends on the hardware ("two ranks on two cores beat one", "the GPU is ahead") must ask
the hardware first. Labels can mislead: a cloud machine's two vCPUs may be two hyperthreads of one core,
which share one core's arithmetic, and a container may be allowed less CPU time than it sees CPUs. So:

- ``logical_cpus()``: the CPUs this process may run on;
- ``physical_cores()``: the distinct cores behind them (Linux's CPU topology; a cgroup quota caps it);
- ``parallel_speedup()``: measured, how much more pure arithmetic two processes get done than one;
- ``watch()`` and ``background_load()``: the share of the machine's CPU time that *other* processes used,
  so a verdict can tell a busy machine from a wrong claim;
- ``real_gpu()``: a real GPU runs (the strict stand-in's timings mean nothing).
"""

import contextlib
import math
import os
import subprocess
import sys
import time
from pathlib import Path

from .. import backend

SYSFS_CPU = Path("/sys/devices/system/cpu")
CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def logical_cpus():
    """How many CPUs this process may run on (its affinity where the system tells it)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS, Windows
        return os.cpu_count() or 1


def physical_cores():
    """How many distinct cores this process may run on: hyperthreads of one core count once, and a cgroup's CPU
    quota caps the count. Where the topology is not readable (not Linux), the logical CPUs."""
    cores = _cores_from_topology()
    count = len(cores) if cores else logical_cpus()
    quota = _cgroup_cpu_quota()
    return max(1, min(count, math.ceil(quota))) if quota else count


def _cores_from_topology():
    """``{(package, core)}`` of the CPUs in this process's affinity, from sysfs; empty where unreadable."""
    try:
        cpus = os.sched_getaffinity(0)
    except AttributeError:
        return set()
    cores = set()
    for cpu in cpus:
        topology = SYSFS_CPU / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return set()
        cores.add((package, core))
    return cores


def _cgroup_cpu_quota():
    """The CPUs' worth of time a cgroup v2 quota allows (``"150000 100000"`` is 1.5), or None without one."""
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


SPIN = """
import sys, time
start, stop = float(sys.argv[1]), float(sys.argv[2])
while time.time() < start:
    pass
count = 0
while time.time() < stop:
    for _ in range(1000):
        count += 1
print(count)
"""


def _arithmetic_done(processes, seconds):
    """Loop iterations done by ``processes`` Python processes spinning together for ``seconds``."""
    start = time.time() + 0.5  # every process has started before any counts
    args = [sys.executable, "-c", SPIN, str(start), str(start + seconds)]
    workers = [subprocess.Popen(args, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    return sum(int(worker.communicate()[0]) for worker in workers)


def parallel_speedup(processes=2, seconds=0.3):
    """How many times more pure arithmetic ``processes`` processes get done together than one alone, measured.

    About 2 for two processes on two idle physical cores; about 1.1-1.3 on two hyperthreads of one core; about
    1 on one core, or where other processes keep the cores busy. Takes about ``2 * seconds + 1`` seconds.
    At most ``processes``: more only means that the machine was busier while one process ran alone (seen: 2.9 for
    two processes, measured beside seven other busy ones on 16 cores)."""
    alone = _arithmetic_done(1, seconds)
    together = _arithmetic_done(processes, seconds)
    return min(together / alone, float(processes))


class Load:
    """The share of the machine's CPU time used by other processes while a ``watch()`` block ran (0 to 1;
    ``None`` where the system does not say: Linux's ``/proc/stat`` is read)."""

    def __init__(self, others=None, seconds=0.0):
        self.others = others
        self.seconds = seconds

    def __str__(self):
        if self.others is None:
            return "other processes' load unknown"
        return f"other processes used {self.others:.0%} of the {logical_cpus()} CPUs"


def _busy_cpu_seconds():
    """CPU-seconds all processes have used since boot (``/proc/stat``), or None where unreadable."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds():
    """CPU-seconds this process (all its threads) has used."""
    times = os.times()
    return times.user + times.system


@contextlib.contextmanager
def watch():
    """Measure other processes' share of the CPUs during the block: ``with watch() as load: ...; load.others``.

    Other processes' CPU time is the machine's busy time less this process's own (child processes count as
    others: watch while they are not running, as ``background_load`` does)."""
    load = Load()
    busy, own, start = _busy_cpu_seconds(), _own_cpu_seconds(), time.perf_counter()
    try:
        yield load
    finally:
        load.seconds = time.perf_counter() - start
        busy_after = _busy_cpu_seconds()
        if busy is not None and busy_after is not None and load.seconds > 0:
            others = (busy_after - busy) - (_own_cpu_seconds() - own)
            load.others = min(1.0, max(0.0, others / (load.seconds * logical_cpus())))


def background_load(seconds=0.2):
    """Other processes' share of the CPUs, sampled while this process sleeps for ``seconds``."""
    with watch() as load:
        time.sleep(seconds)
    return load


def real_gpu():
    """True when a real GPU runs the arrays (not NumPy, not the strict stand-in)."""
    return backend.real_gpu()


def describe():
    """One line about the machine: ``'2 logical CPUs on 2 physical cores, no GPU'``."""
    gpu = "a GPU" if real_gpu() else "no GPU"
    return f"{logical_cpus()} logical CPUs on {physical_cores()} physical cores, {gpu}"
