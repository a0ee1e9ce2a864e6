"""dlscratch.memory: freed memory stays in the process (glibc only)."""

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

# Allocates, touches and frees a 40 MB array 30 times; prints the page faults this took.
FAULTS_SCRIPT = textwrap.dedent("""
    import resource
    import numpy
    import dlscratch

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    for _ in range(3):
        numpy.ones(10_000_000, dtype=numpy.float32)
    before = faults()
    for _ in range(30):
        numpy.ones(10_000_000, dtype=numpy.float32)
    print(dlscratch.memory.keeps_freed_memory(), faults() - before)
""")


def run_faults_script(keep):
    env = dict(os.environ, DLSCRATCH_KEEP_MEMORY="1" if keep else "0")
    out = subprocess.run([sys.executable, "-c", FAULTS_SCRIPT], env=env, capture_output=True, text=True, check=True)
    applied, faults = out.stdout.split()
    return applied == "True", int(faults)


@glibc_only
def test_import_keeps_freed_memory_and_stops_page_faults():
    applied, faults = run_faults_script(keep=True)
    assert applied
    # kept memory is reused without faulting (opted out, the same loop takes 600 faults or more)
    assert faults < 100


@glibc_only
def test_opting_out_leaves_malloc_alone():
    applied, faults = run_faults_script(keep=False)
    assert not applied
    # glibc unmaps each freed 40 MB block (over its 32 MB ceiling for mmap), so every array is
    # faulted in again: at least once per 2 MB huge page (NumPy asks for them), 20 per array
    assert faults >= 30 * 20
