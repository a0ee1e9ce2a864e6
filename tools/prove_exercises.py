"""Prove every exercise's check: it passes the solution and fails the stub and every known-wrong answer.

    python tools/prove_exercises.py             # every lesson
    python tools/prove_exercises.py 02 07       # the lessons whose file names start with these
    DLSCRATCH_STRICT_GPU=1 python tools/prove_exercises.py     # the same on the strict CuPy stand-in

Each lesson runs once, top to bottom, in one fresh kernel (as nbval and nbgrader run it). At an exercise's
solution cell the tool runs, each followed by the exercise's check cell: the stub (what the student edition
and nbgrader give learners; the check must fail), every known-wrong answer from ``tools/wrong_answers.py``
(the solution cell must run and the check must fail), and last the solution itself (the check must pass),
so that the lesson goes on from the solution's state. It prints one row per run and exits 1 on any surprise.
"""

import os
import re
import sys
import textwrap
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

sys.path.insert(0, str(Path(__file__).resolve().parent))
from add_nbgrader_metadata import exercise_roles  # noqa: E402
from make_student_edition import LESSONS, stub_solutions  # noqa: E402
from wrong_answers import GPU_ONLY, WRONG  # noqa: E402

FRAMEWORK_CELL = re.compile(r"\A%%writefile (myframework/\w+\.py)\n")
REGION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[ \t]*\n.*?^[ \t]*### END SOLUTION[ \t]*$", re.M | re.S)


def with_bodies(source, bodies):
    """``source`` with its solution regions replaced by ``bodies`` (None keeps that region's solution)."""
    bodies = [bodies] if isinstance(bodies, str) else list(bodies)
    regions = list(REGION.finditer(source))
    if len(bodies) != len(regions):
        raise ValueError(f"{len(bodies)} bodies for {len(regions)} solution regions")
    for match, body in reversed(list(zip(regions, bodies))):
        if body is not None:
            indented = textwrap.indent(textwrap.dedent(body), match.group(1), lambda line: True)
            source = source[: match.start()] + indented.rstrip("\n") + source[match.end():]
    return source


def write_framework(folder):
    """Write the learner's framework (``myframework/``) as the lessons' solutions write it, into ``folder``:
    a lesson that uses pieces of earlier lessons can then be proven (or graded) on its own."""
    for lesson in sorted(LESSONS.glob("[0-9][0-9]_*.ipynb")):
        for cell in nbformat.read(lesson, as_version=4).cells:
            match = FRAMEWORK_CELL.match(cell.source) if cell.cell_type == "code" else None
            if match:
                target = Path(folder) / match.group(1)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(cell.source[match.end():].rstrip("\n") + "\n", encoding="utf-8")


def on_a_gpu():
    return os.environ.get("DLSCRATCH_STRICT_GPU", "") not in ("", "0") or os.environ.get("DLSCRATCH_DEVICE") == "gpu"


def variants(exercise, solution):
    """``(name, source, check must pass)`` for one exercise, the solution last."""
    yield "stub", stub_solutions(solution), False
    for mistake, bodies in WRONG.get(exercise, []):
        yield f"wrong: {mistake}", with_bodies(solution, bodies), (exercise, mistake) in GPU_ONLY and not on_a_gpu()
    yield "solution", solution, True


def _run(client, source, index):
    """None when the cell ran, else ``"ErrorName: message"`` (first line)."""
    try:
        client.execute_cell(nbformat.v4.new_code_cell(source), index, store_history=False)
        return None
    except CellExecutionError as exc:
        return f"{exc.ename}: {str(exc.evalue).splitlines()[0] if exc.evalue else ''}"[:160]


def prove(lesson):
    """Run one lesson; return rows ``(exercise, variant, expected, outcome, surprise)`` and the failed other cells."""
    notebook = nbformat.read(lesson, as_version=4)
    roles = exercise_roles(notebook.cells)
    checks = {exercise: notebook.cells[i].source for i, (role, exercise) in roles.items() if role == "check"}
    rows, broken = [], []
    write_framework(lesson.parent)  # the earlier lessons' pieces, whatever order the lessons are proven in
    client = NotebookClient(notebook, timeout=1200, kernel_name="python3",
                            resources={"metadata": {"path": str(lesson.parent)}})
    with client.setup_kernel():
        for index, cell in enumerate(notebook.cells):
            role, exercise = roles.get(index, (None, None))
            if cell.cell_type != "code" or role == "check":
                continue
            if role != "solution":
                error = _run(client, cell.source, index)
                if error:
                    broken.append((index, error))
                continue
            for name, source, must_pass in variants(exercise, cell.source):
                cell_error = _run(client, source, index)
                check_error = _run(client, checks[exercise], index + 1)
                if must_pass:
                    outcome = cell_error or check_error or "passed"
                    surprise = outcome != "passed"
                else:
                    outcome = f"rejected: {check_error}" if check_error else "check passed"
                    # a wrong answer must run and be caught by the check; a stub may fail where it stands
                    surprise = check_error is None or (name != "stub" and cell_error is not None)
                    if name == "wrong: calls the library" and "LibraryCalled" not in (check_error or ""):
                        surprise = True  # own_work, not a side effect, must catch it
                    if cell_error and name != "stub":
                        outcome = f"the answer itself failed: {cell_error}"
                rows.append((exercise, name, "pass" if must_pass else "fail", outcome, surprise))
    return rows, broken


def main(prefixes):
    surprises = 0
    for lesson in sorted(LESSONS.glob("[0-9][0-9]_*.ipynb")):
        if prefixes and not lesson.name.startswith(tuple(prefixes)):
            continue
        rows, broken = prove(lesson)
        print(f"\n{lesson.name}")
        for exercise, name, expected, outcome, surprise in rows:
            print(f"  {'!!' if surprise else 'ok'} {exercise:5} {name[:52]:52} must {expected:4}  {outcome[:90]}")
        for index, error in broken:
            print(f"  !! cell {index} (not an exercise) failed: {error}")
        sys.stdout.flush()
        surprises += sum(row[-1] for row in rows) + len(broken)
    print(f"\n{surprises} surprise(s)", flush=True)
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
