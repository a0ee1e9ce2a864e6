"""Calibrate the launch ledger: count the profiled commit's training steps on the stand-in, against CUPTI's counts.

    python tools/calibrate_ledger.py            # the table: workload | category | stand-in | CUPTI | difference %
                                                # (exit status 1 when a count is off)
    python tools/calibrate_ledger.py --sites    # and each workload's top call sites

CUPTI counted the kernels, memsets and copies of five training steps of the library at commit ``COMMIT`` on one
NVIDIA H100 (PyTorch 2.11's profiler; the run is the H100 one in ``docs/gpu.md``, the figures are in
``dlscratch/bench/workloads.py``).
This tool extracts that commit's ``dlscratch/`` into a temporary folder (``git archive``: it needs the
repository's history), lays today's ledger and stand-in over it (``OVERLAY``), and counts the same five
steps there in a fresh Python, on the strict CuPy stand-in. A count is calibrated when it is within 10% of
CUPTI's, or within 1 per step where CUPTI's count is small.

That commit refused CUDA kernels on the stand-in (``has_kernels()`` was False there), while on the GPU it
ran its im2col, col2im and fused LSTM kernels. So before counting, the child process patches the old
backend to run them as a GPU would: ``has_kernels()`` True and ``elementwise_kernel`` making the stand-in's
``ElementwiseKernel``. Nothing else of the old tree is changed.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: the commit whose library CUPTI profiled on the H100 (docs/gpu.md), the one place the tests and tools name it
COMMIT = "8262fe3"
#: today's files laid over the old tree, each where that tree imports it from: the ledger, the stand-in it counts in
#: (the package ``strict_cupy/``: the arrays, CuPy's signatures and API table, the kernel interpreter), and the
#: workloads; the old tree's own stand-in (its loose ``strict_*.py`` and ``cupy_api.py``) is removed first
OVERLAY = {"dlscratch/bench/ledger.py": "dlscratch", "dlscratch/bench/strict_cupy/*.py": "dlscratch/strict_cupy",
           "dlscratch/bench/workloads.py": "dlscratch/bench"}
#: the categories held to CUPTI's counts; host waits are printed but CUPTI saw them only as syncs
CALIBRATED = ["kernels", "memsets", "copies_device", "copies_to_host", "copies_to_device"]
SHOWN = CALIBRATED + ["waits"]
RELATIVE_TOLERANCE, ABSOLUTE_TOLERANCE = 0.10, 1.0
#: steps counted after the warm-up step: from then on every step launches the same (the launches suite counts
#: three and gets the same figures), and the Keras CNN's step takes seconds on the stand-in
STEPS = 1
HEADERS = ["workload", "category", "stand-in", "CUPTI", "difference %", "within"]


def has_commit(commit=COMMIT, repo=REPO):
    """True when the repository's history holds ``commit`` (a shallow clone may not)."""
    found = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True)
    return found.returncode == 0


def extract_old_tree(into, commit=COMMIT, repo=REPO):
    """``commit``'s ``dlscratch/`` in folder ``into``, with today's ``OVERLAY`` files laid over it."""
    archive = subprocess.run(["git", "-C", str(repo), "archive", commit, "dlscratch"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    for old in [*Path(into, "dlscratch").glob("strict_*.py"), Path(into, "dlscratch", "cupy_api.py")]:
        old.unlink(missing_ok=True)
    for pattern, folder in OVERLAY.items():
        for path in repo.glob(pattern):
            target = Path(into, folder, path.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)


def count_old_steps(tree, sites=False):
    """Per-step counts of each workload by the library in ``tree``: ``{workload: {category: count}}``, with
    each workload's call-site table under ``"sites"`` when ``sites``. Runs in a fresh Python."""
    env = {k: v for k, v in os.environ.items() if k not in ("DLSCRATCH_REFERENCE", "DLSCRATCH_QUICK")}
    env.update(PYTHONPATH=str(tree), DLSCRATCH_STRICT_GPU="1", DLSCRATCH_DEVICE="gpu")
    command = [sys.executable, str(Path(__file__).resolve()), "--child"] + (["--sites"] if sites else [])
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"counting commit {COMMIT}'s steps failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def within(stand_in, cupti):
    """True when the stand-in's count is within 10% of CUPTI's, or within 1 per step."""
    return abs(stand_in - cupti) <= max(RELATIVE_TOLERANCE * cupti, ABSOLUTE_TOLERANCE)


def compare(counts, workloads):
    """Table rows, one per workload and category of ``SHOWN``; ``counts`` from ``count_old_steps``."""
    rows = []
    for workload in workloads:
        for category in SHOWN:
            ours, theirs = counts[workload.name][category], workload.cupti_profiled.get(category, 0)
            difference = f"{100 * (ours - theirs) / theirs:+.0f}" if theirs else "-"
            verdict = ("yes" if within(ours, theirs) else "NO") if category in CALIBRATED else "(not held)"
            rows.append([workload.name, category, f"{ours:g}", str(theirs), difference, verdict])
    return rows


def calibrate(sites=False):
    """Count the old steps in a temporary tree; return ``(counts, seconds)``."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix=f"dlscratch-{COMMIT}-") as tree:
        extract_old_tree(tree)
        counts = count_old_steps(tree, sites=sites)
    return counts, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", action="store_true", help="also print each workload's top call sites")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.sites)
    from dlscratch.bench.timing import format_table  # imported after the arguments, so that --help is quick
    from dlscratch.bench.workloads import WORKLOADS

    if not has_commit():
        sys.exit(f"commit {COMMIT} is not in this repository's history (a shallow clone?): "
                 "fetch it with `git fetch --unshallow`")
    counts, seconds = calibrate(sites=args.sites)
    print(f"the launch ledger on the strict stand-in, commit {COMMIT}'s library, against CUPTI on an H100 "
          f"(per step; {seconds:.0f} s)")
    rows = compare(counts, WORKLOADS)
    print(format_table(HEADERS, rows))
    for workload in WORKLOADS if args.sites else ():
        print(f"\n{workload.name}, per step:\n{counts[workload.name]['sites']}")
    return 1 if any(row[-1] == "NO" for row in rows) else 0


# ---- the child process: the profiled commit's library, on the stand-in ----

def child(sites):
    """Count each workload's steps with the old library and print the counts as one line of JSON."""
    import dlscratch
    from dlscratch import backend
    from dlscratch.bench.workloads import CATEGORIES, WORKLOADS

    if not dlscratch.__file__.startswith(os.environ["PYTHONPATH"]):
        raise RuntimeError(f"imported the wrong dlscratch: {dlscratch.__file__}")
    run_kernels_on_the_stand_in(backend)
    counts = {}
    for workload in WORKLOADS:
        per_step = count_steps(workload.build(), STEPS)
        counts[workload.name] = {category: getattr(per_step, category) for category in CATEGORIES}
        if sites:
            counts[workload.name]["sites"] = per_step.table(top=15)
    print(json.dumps(counts))


def run_kernels_on_the_stand_in(backend):
    """Patch the old backend so its fast path runs CUDA kernels on the stand-in, as it did on the GPU."""
    kernels = {}

    def elementwise_kernel(in_params, out_params, body, name, preamble=""):
        key = (in_params, out_params, body, name, preamble)
        if key not in kernels:
            kernels[key] = backend.cupy.ElementwiseKernel(in_params, out_params, body, name, preamble=preamble)
        return kernels[key]

    backend.has_kernels = lambda: True
    backend.elementwise_kernel = elementwise_kernel


def count_steps(step, steps):
    """The ledger of ``steps`` calls of ``step`` after one warm-up call, per step."""
    from dlscratch import ledger  # the old tree's place for it (OVERLAY)

    step()
    with ledger.counting() as counted:
        for _ in range(steps):
            step()
    return counted.per(steps)


if __name__ == "__main__":
    sys.exit(main())
