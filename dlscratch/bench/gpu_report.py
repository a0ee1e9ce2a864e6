"""``python -m dlscratch.bench gpu-report``: everything a GPU run of the project measures, in one report.

    python -m dlscratch.bench gpu-report                   # into gpu-report-<date>/ in the current folder
    python -m dlscratch.bench gpu-report --out DIR --budget 900 --only tests,suites
    python -m dlscratch.bench gpu-report --short           # minutes, not tens of minutes: a smoke test

Run from a clone of the repository (the tests and the lessons are not part of the installed package). Parts,
in this order, each a fresh Python with its own log and time limit:

1. the machine: GPU, driver, CUDA, Python, NumPy, CuPy, PyTorch, the commit;
2. the library's tests, each test that takes ``backend`` once on NumPy and once on CuPy (``tests/conftest.py``);
3. every lesson in quick mode through nbval, on the GPU (correctness before measurements);
4. the launch ledger on the GPU (CUPTI's count, through PyTorch's profiler) and on the stand-in (its model);
5. the bench suites, against PyTorch on CUDA where PyTorch is importable.

``report.md`` gathers the machine, a table of the parts, the tests' and lessons' failures, and every suite's
table; the logs lie beside it. It is rewritten after every part, so a run cut short still leaves a report.
Without a usable GPU every part runs on the strict CuPy stand-in, and the report says in its first line that no
GPU time was measured: the tables are then the CPU's times and the stand-in's launch counts.
"""

import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import backend
from .machine import logical_cpus

REPO = Path(__file__).resolve().parents[2]
SUITES = ["launches", "graphs", "mlp", "cnn", "conv", "pool", "lstm", "convmethods", "precision"]
#: seconds each kind of part may take, before the run's budget caps it
LIMITS = {"tests": 600, "suite": 300, "lessons": 1500}
WRITE_FRAMEWORK_THEN_PYTEST = ("import sys; sys.path.insert(0, 'tools'); from prove_exercises import write_framework; "
                               "write_framework('notebooks'); import pytest; sys.exit(pytest.main(sys.argv[1:]))")


@dataclass
class Part:
    """One step of the report: a command, where its output goes, and how it ended."""
    name: str
    kind: str  # "tests", "suite" or "lessons"
    argv: list
    env: dict = field(default_factory=dict)
    status: str = "not run"
    seconds: float = 0.0
    output: str = ""

    @property
    def log(self):
        """The name of this part's log file in the report's folder."""
        return self.name.replace(" ", "-") + ".log"


def parse_args(argv):
    parser = argparse.ArgumentParser(prog="python -m dlscratch.bench gpu-report", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="the report's folder (default: gpu-report-<date>)")
    parser.add_argument("--short", action="store_true",
                        help="the suites in quick mode, the GPU kernels' tests only, lesson 01 only")
    parser.add_argument("--budget", type=float, default=3600.0,
                        help="seconds for the whole report; parts that no longer fit are not run (default 3600)")
    parser.add_argument("--only", default="tests,lessons,suites",
                        help="comma-separated kinds of part to run (default: tests,lessons,suites)")
    parser.add_argument("--suites", help=f"comma-separated suites (default: {','.join(SUITES)})")
    parser.add_argument("--suite-seconds", type=float, default=LIMITS["suite"],
                        help=f"seconds each suite may take (default {LIMITS['suite']})")
    parser.add_argument("--tests", nargs="*", help="test files or folders (default: tests/)")
    parser.add_argument("--lessons", nargs="*", help="lesson notebooks (default: every lesson)")
    parser.add_argument("--test-workers", type=int, default=0,
                        help="pytest-xdist workers for the tests (default: up to 8 where xdist is installed)")
    args = parser.parse_args(argv)
    if args.budget <= 0:
        parser.error(f"--budget must be positive, got {args.budget}")
    unknown = set(args.only.split(",")) - {"tests", "lessons", "suites"}
    if unknown:
        parser.error(f"--only takes tests, lessons and suites, not {', '.join(sorted(unknown))}")
    if args.test_workers < 0:
        parser.error(f"--test-workers must be 0 (as many as suit the machine) or more, got {args.test_workers}")
    return args


def on_a_gpu():
    """True when CuPy can run on a real GPU here (the stand-in is not one)."""
    return backend.gpu_available() and not backend.strict_stand_in()


def xdist_args(workers):
    """``-n N`` for pytest-xdist, or nothing when it is not installed or one worker is asked for."""
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", str(workers)] if workers > 1 else []


def plan(args, gpu):
    """The parts to run, in order."""
    python = [sys.executable]
    env = {"DLSCRATCH_DEVICE": "gpu", "MPLBACKEND": "Agg", "PYTHONUNBUFFERED": "1"}
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # Open MPI's mpiexec refuses root (Colab, containers) unless told
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if not gpu:
        env["DLSCRATCH_STRICT_GPU"] = "1"
    tests = args.tests or (["tests/test_optim_kernels.py", "tests/test_layer_kernels.py"] if args.short else ["tests"])
    test_workers = args.test_workers or min(8, logical_cpus() // 2)
    marks = "not exercises and not nbgrader and not site"  # the website's test needs no GPU, and a Chromium
    parts = [Part("tests", "tests", python + ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", marks,
                                              *xdist_args(test_workers), *tests],
                  {k: v for k, v in env.items() if k != "DLSCRATCH_DEVICE"})]
    every = sorted(str(p.relative_to(REPO)) for p in (REPO / "notebooks").glob("[0-9]*.ipynb"))
    lessons = args.lessons or (["notebooks/01_computation_graph.ipynb"] if args.short else every)
    # One lesson at a time, in order: lesson 10 reads the myframework/ files that the exercises of 03-07 write, and
    # lessons run side by side would share the GPU and the CPU that their timing claims compare. Some of the
    # lessons only: the earlier lessons' files are written first, as their solutions write them.
    pytest_args = ["-q", "-p", "no:cacheprovider", *lessons]
    start = ["-m", "pytest"] if lessons == every else ["-c", WRITE_FRAMEWORK_THEN_PYTEST]
    parts.append(Part("lessons", "lessons", python + start + pytest_args, {**env, "DLSCRATCH_QUICK": "1"}))
    suites = [s for s in args.suites.split(",") if s] if args.suites is not None else SUITES
    quick = ["--quick"] if args.short else []
    for suite in suites:
        parts.append(Part(f"suite {suite}", "suite", python + ["-m", "dlscratch.bench", suite, *quick], env))
        if suite == "launches" and gpu:  # the stand-in's model of the same steps, to hold against CUPTI's count
            parts.append(Part("suite launches on the stand-in", "suite",
                              python + ["-m", "dlscratch.bench", suite, *quick], {**env, "DLSCRATCH_STRICT_GPU": "1"}))
    kinds = {"suite" if kind == "suites" else kind for kind in args.only.split(",")}
    return [part for part in parts if part.kind in kinds]


def run_part(part, out, seconds_left, limits=LIMITS):
    """Run ``part`` with at most ``seconds_left`` seconds, its output into ``out/<name>.log``."""
    limit = min(limits[part.kind], seconds_left)
    if limit < 10:
        part.status = "not run: the budget was spent"
        return
    log = out / part.log
    start = time.perf_counter()
    with open(log, "w") as sink:
        env = {**os.environ, **part.env, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                                                     os.environ.get("PYTHONPATH")]))}
        try:
            code = subprocess.run(part.argv, cwd=REPO, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                  timeout=limit).returncode
            part.status = "passed" if code == 0 else f"FAILED (exit status {code})"
        except subprocess.TimeoutExpired:
            part.status = f"STOPPED after its limit of {limit:.0f} s"
    part.seconds = time.perf_counter() - start
    part.output = log.read_text(errors="replace")


def command_output(argv):
    """What ``argv`` prints, or why it could not run."""
    if shutil.which(argv[0]) is None:
        return f"({argv[0]} is not installed)"
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"({' '.join(argv)} failed: {exc})"


def versions(gpu):
    """``(what, version)`` rows for the machine table."""
    commit = command_output(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"]) or "(not a clone)"
    if command_output(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"]):
        commit += " (with uncommitted changes)"
    rows = [("date", datetime.datetime.now().strftime("%Y-%m-%d %H:%M")), ("commit", commit),
            ("Python", platform.python_version()), ("platform", platform.platform()),
            ("CPUs", str(logical_cpus())), ("dlscratch backend", _gpu_backend() if gpu else backend.describe())]
    for module in ["numpy", "cupy", "torch"]:
        try:
            imported = __import__(module)
            rows.append((module, imported.__version__))
        except ImportError:
            rows.append((module, "not installed"))
    try:
        import torch
        if torch.cuda.is_available():
            rows.append(("torch CUDA / cuDNN", f"{torch.version.cuda} / {torch.backends.cudnn.version()}"))
    except ImportError:
        pass
    gpus = command_output(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    rows.append(("nvidia-smi", gpus))
    return rows


def _gpu_backend():
    """``backend.describe()`` of the GPU backend: the GPU's name, CUDA's version, CuPy's."""
    backend.use("gpu")
    try:
        return backend.describe()
    finally:
        backend.use("numpy")


def summary_line(output):
    """pytest's last line (``N passed, M failed in S s``), or the last line printed."""
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1].strip("= ") if lines else "(no output)"


def failures(output):
    """pytest's ``FAILED ...`` and ``ERROR ...`` lines."""
    return [line for line in output.splitlines() if line.startswith(("FAILED ", "ERROR "))]


def write_report(out, gpu, machine, parts):
    """``out/report.md`` from what has run so far."""
    lines = ["# dlscratch on " + ("a GPU" if gpu else "no GPU"), ""]
    if gpu:
        lines.append("Every part ran with CuPy on the GPU named below; PyTorch's rows (where PyTorch has CUDA) ran on "
                     "the same GPU.")
    else:
        lines.append(f"**No GPU time was measured**: no GPU was usable here ({backend.gpu_unavailable_reason()}). "
                     "Every part ran on the strict CuPy stand-in, so the times are the CPU's and the launch counts "
                     "are what CuPy would launch.")
    lines += ["", "## The machine", "", "| what | value |", "| --- | --- |"]
    lines += [f"| {what} | {value.replace('|', '/')} |" for what, value in machine]
    lines += ["", "## The parts", "", "| part | ended | seconds | log | summary |", "| --- | --- | --- | --- | --- |"]
    for part in parts:
        log = part.log if part.output else ""
        summary = summary_line(part.output) if part.kind != "suite" and part.output else ""
        lines.append(f"| {part.name} | {part.status} | {part.seconds:.0f} | {log} | {summary} |")
    for part in parts:
        if part.kind != "suite" and failures(part.output):
            lines += ["", f"## What failed in {part.name}", "", "```", *failures(part.output), "```"]
    for part in parts:
        if part.kind == "suite" and part.output:
            lines += ["", f"## {part.name}", "", "```", part.output.rstrip(), "```"]
    (out / "report.md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    args = parse_args(argv)
    if not (REPO / "tests").is_dir() or not (REPO / "notebooks").is_dir():
        sys.exit("gpu-report runs from a clone of the repository: "
                 f"no tests/ and notebooks/ beside {REPO / 'dlscratch'}")
    gpu = on_a_gpu()
    out = args.out or Path(f"gpu-report-{datetime.date.today().isoformat()}")
    out.mkdir(parents=True, exist_ok=True)
    machine, parts = versions(gpu), plan(args, gpu)
    print(f"gpu-report: {'on a GPU' if gpu else 'NO GPU: on the strict CuPy stand-in'}; "
          f"{len(parts)} parts into {out}/ within {args.budget:.0f} s", flush=True)
    start = time.perf_counter()
    for part in parts:
        run_part(part, out, args.budget - (time.perf_counter() - start), {**LIMITS, "suite": args.suite_seconds})
        print(f"  {part.name}: {part.status}, {part.seconds:.0f} s", flush=True)
        write_report(out, gpu, machine, parts)
    print(f"report: {out / 'report.md'}")
    return 0 if all(part.status == "passed" for part in parts) else 1
