"""dlscratch.fast.malloc: freed memory stays in the process (glibc only)."""

import os
import platform
import subprocess
import sys
import textwrap

import pytest

glibc_only = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
    reason="mallopt thresholds exist only in glibc's malloc",
)

# Allocates, touches and frees a 40 MB array 30 times; prints the page faults this took. CALL is
# replaced by a call of keep_freed_memory() or by nothing.
FAULTS_SCRIPT = textwrap.dedent("""
    import resource
    import numpy
    import dlscratch

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    CALL
    for _ in range(3):
        numpy.ones(10_000_000, dtype=numpy.float32)
    before = faults()
    for _ in range(30):
        numpy.ones(10_000_000, dtype=numpy.float32)
    print(dlscratch.fast.malloc.keeps_freed_memory(), faults() - before)
""")
KEPT_FAULTS = 100  # kept memory is reused without faulting (given back, the loop takes 600 or more)
# glibc unmaps each freed 40 MB block (over its 32 MB ceiling for mmap), so every array is faulted
# in again: at least once per 2 MB huge page (NumPy asks for them), 20 per array
GIVEN_BACK_FAULTS = 30 * 20


def run_faults_script(env_value, call):
    env = dict(os.environ)
    env.pop("DLSCRATCH_KEEP_MEMORY", None)
    if env_value is not None:
        env["DLSCRATCH_KEEP_MEMORY"] = env_value
    script = FAULTS_SCRIPT.replace("CALL", "dlscratch.fast.malloc.keep_freed_memory()" if call else "")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    applied, faults = out.stdout.split()
    return applied == "True", int(faults)


@glibc_only
def test_import_alone_leaves_malloc_alone():
    applied, faults = run_faults_script(env_value=None, call=False)
    assert not applied
    assert faults >= GIVEN_BACK_FAULTS


@glibc_only
def test_keep_freed_memory_stops_page_faults():
    applied, faults = run_faults_script(env_value=None, call=True)
    assert applied
    assert faults < KEPT_FAULTS


@glibc_only
def test_the_variable_on_keeps_freed_memory_from_import():
    applied, faults = run_faults_script(env_value="1", call=False)
    assert applied
    assert faults < KEPT_FAULTS


@glibc_only
def test_the_variable_off_makes_the_call_leave_malloc_alone():
    applied, faults = run_faults_script(env_value="0", call=True)
    assert not applied
    assert faults >= GIVEN_BACK_FAULTS


FIT_SCRIPT = textwrap.dedent("""
    import numpy
    import dlscratch
    import dlscratch.functional as F
    from dlscratch import nn, optim
    from dlscratch.data import DataLoader, TensorDataset

    before = dlscratch.fast.malloc.keeps_freed_memory()
    x = numpy.random.default_rng(0).random((8, 3), dtype=numpy.float32)
    data = DataLoader(TensorDataset(x, numpy.arange(8) % 2), batch_size=4)
    model = nn.Linear(3, 2)
    dlscratch.training.fit(model, F.cross_entropy, optim.SGD(model.parameters(), lr=0.1), data, 1, progress=False)
    print(before, dlscratch.fast.malloc.keeps_freed_memory())
""")


@glibc_only
@pytest.mark.parametrize("env_value, expected", [(None, "False True"), ("0", "False False")])
def test_fit_keeps_freed_memory_unless_the_variable_is_off(env_value, expected):
    env = dict(os.environ)
    env.pop("DLSCRATCH_KEEP_MEMORY", None)
    if env_value is not None:
        env["DLSCRATCH_KEEP_MEMORY"] = env_value
    out = subprocess.run([sys.executable, "-c", FIT_SCRIPT], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == expected.split()
