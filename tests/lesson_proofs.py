"""Each lesson's exercise proof (``tools/prove_exercises.py``) on one device, run in a process of its own."""

import json
import os
import subprocess
import sys
from dataclasses import dataclass

from repo_tools import TOOLS

DEVICES = ("numpy", "strict-cupy-stand-in")
PROGRAM = ("import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import prove_exercises; "
           "print(json.dumps(prove_exercises.prove(Path(sys.argv[2]))))")


@dataclass(frozen=True)
class Proof:
    """One lesson's proof on one device: its rows and the cells (not exercises) that failed."""

    rows: list
    broken: list


def proof(lesson, device):
    """Prove ``lesson`` (a path in notebooks/) on ``device`` ("numpy" or "strict-cupy-stand-in")."""
    if device not in DEVICES:
        raise ValueError(f"device {device!r}: choose one of {DEVICES}")
    env = dict(os.environ, DLSCRATCH_DEVICE="cpu" if device == "numpy" else "gpu")
    env.pop("DLSCRATCH_STRICT_GPU", None)
    if device != "numpy":
        env["DLSCRATCH_STRICT_GPU"] = "1"
    # A process of its own: the kernels, ZeroMQ and asyncio machinery stay out of the test process.
    run = subprocess.run([sys.executable, "-c", PROGRAM, str(TOOLS), str(lesson)], env=env,
                         capture_output=True, text=True, timeout=1800)
    if run.returncode != 0:
        raise RuntimeError(f"the proof of {lesson.name} on {device} stopped:\n{run.stderr[-4000:]}")
    return Proof(*json.loads(run.stdout.strip().splitlines()[-1]))
