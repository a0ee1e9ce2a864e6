"""Each lesson's exercise proof (``tools/prove_exercises.py``), run once per test session and device, with the
notebooks it executed kept for the session (the solutions' run, and the stubs' outputs at every check)."""

import atexit
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from repo_tools import TOOLS

DEVICES = ("numpy", "strict-cupy-stand-in")
PROGRAM = ("import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import prove_exercises; "
           "print(json.dumps(prove_exercises.prove(Path(sys.argv[2]), executed=Path(sys.argv[3]))))")


@dataclass(frozen=True)
class Proof:
    """One lesson's proof on one device: its rows, the cells that failed, and the notebooks it executed."""

    rows: list
    broken: list
    solution: Path  # the lesson as executed with the solutions
    stub: Path  # the lesson with the stubs in its solution cells, and the outputs the stubs gave their checks


@functools.cache
def _folder():
    folder = Path(tempfile.mkdtemp(prefix="dlscratch-proofs-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


@functools.cache
def proof(lesson, device):
    """Prove ``lesson`` (a path in notebooks/) on ``device`` ("numpy" or "strict-cupy-stand-in"), once a session."""
    if device not in DEVICES:
        raise ValueError(f"device {device!r}: choose one of {DEVICES}")
    env = dict(os.environ, DLSCRATCH_DEVICE="cpu" if device == "numpy" else "gpu")
    env.pop("DLSCRATCH_STRICT_GPU", None)
    if device != "numpy":
        env["DLSCRATCH_STRICT_GPU"] = "1"
    executed = _folder() / device
    executed.mkdir(exist_ok=True)
    # A process of its own: the kernels, ZeroMQ and asyncio machinery stay out of the test process.
    run = subprocess.run([sys.executable, "-c", PROGRAM, str(TOOLS), str(lesson), str(executed)], env=env,
                         capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        raise RuntimeError(f"the proof of {lesson.name} on {device} stopped:\n{run.stderr[-4000:]}")
    rows, broken = json.loads(run.stdout.strip().splitlines()[-1])
    return Proof(rows, broken, executed / f"{lesson.stem}.solution.ipynb", executed / f"{lesson.stem}.stub.ipynb")
