"""Every exercise's check is proven (tools/prove_exercises.py): the solution passes, the stub and every known-wrong
answer (tools/wrong_answers.py) fail; on NumPy, and on the strict CuPy stand-in, where the mistakes that only a
GPU exposes must fail too. Slow: each lesson runs once in a kernel of its own (marked ``exercises``)."""

import json
import os
import subprocess
import sys

import pytest
from repo_tools import TOOLS, load_tool

prove = load_tool("prove_exercises")
wrong = load_tool("wrong_answers")
LESSONS = sorted(prove.LESSONS.glob("[0-9][0-9]_*.ipynb"))


def test_every_exercise_has_known_wrong_answers_that_fit_its_solution_cell():
    solutions = {}
    for lesson in LESSONS:
        cells = prove.nbformat.read(lesson, as_version=4).cells
        for index, (role, exercise) in prove.exercise_roles(cells).items():
            if role == "solution":
                solutions[exercise] = cells[index].source
    assert set(wrong.WRONG) == set(solutions), "every exercise needs known-wrong answers, and only exercises"
    for exercise, answers in wrong.WRONG.items():
        assert len(answers) >= 2, f"exercise {exercise}: at least two known-wrong answers"
        for mistake, bodies in answers:
            source = prove.with_bodies(solutions[exercise], bodies)
            assert source != solutions[exercise], f"{exercise} '{mistake}' changes nothing"
            module = prove.FRAMEWORK_CELL.sub("", source)  # a %%writefile cell: its file is Python
            compile(module, f"{exercise}: {mistake}", "exec")
    assert {mistake for _, mistake in wrong.GPU_ONLY} <= {m for answers in wrong.WRONG.values() for m, _ in answers}


def test_bodies_replace_regions_at_their_indentation():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\n\ndef g():\n" \
             "    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION\n"
    kept = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\n\n"
    expected = kept + "def g():\n    a = 2\n    return a\n"
    assert prove.with_bodies(source, [None, "a = 2\nreturn a"]) == expected
    with pytest.raises(ValueError, match="1 bodies for 2 solution regions"):
        prove.with_bodies(source, "return 0")


# Cells that state what a real GPU does (timings, CUDA kernels): the stand-in computes with NumPy, so they fail on it.
NEEDS_A_REAL_GPU = {
    "00_backends": {"c15", "c20"},  # synchronize() matters; a GPU's large products are far faster
    "07_lstm_cell": {"cc45b2c7"},  # at large batches the GPU is ahead
}


@pytest.mark.exercises
@pytest.mark.parametrize("device", ["numpy", "strict-cupy-stand-in"])
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_checks_pass_the_solution_and_fail_the_stub_and_the_wrong_answers(lesson, device):
    env = dict(os.environ, DLSCRATCH_DEVICE="cpu" if device == "numpy" else "gpu")
    env.pop("DLSCRATCH_STRICT_GPU", None)
    if device != "numpy":
        env["DLSCRATCH_STRICT_GPU"] = "1"
    # A process of its own: the kernels, ZeroMQ and asyncio machinery stay out of the test process.
    program = ("import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); import prove_exercises; "
               "print(json.dumps(prove_exercises.prove(Path(sys.argv[2]))))")
    run = subprocess.run([sys.executable, "-c", program, str(TOOLS), str(lesson)], env=env, capture_output=True,
                         text=True, timeout=1800)
    assert run.returncode == 0, run.stderr[-4000:]
    rows, broken = json.loads(run.stdout.strip().splitlines()[-1])
    surprises = [row for row in rows if row[-1]]
    cells = prove.nbformat.read(lesson, as_version=4).cells
    expected = NEEDS_A_REAL_GPU.get(lesson.stem, set()) if device != "numpy" else set()
    broken = [(cells[index].id, error) for index, error in broken if cells[index].id not in expected]
    assert not surprises and not broken, f"surprises: {surprises}; cells that failed: {broken}"
    assert [row[1] for row in rows].count("solution") == len({row[0] for row in rows})
