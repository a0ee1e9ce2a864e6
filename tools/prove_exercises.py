"""Prove every exercise's check: it passes the solution and fails the stub and every known-wrong answer.

    python tools/prove_exercises.py             # every lesson
    python tools/prove_exercises.py 02 07       # the lessons whose file names start with these
    DLSCRATCH_STRICT_GPU=1 python tools/prove_exercises.py     # on the strict CuPy stand-in

Each lesson runs once, top to bottom, in one fresh kernel (as nbval and nbgrader run it), in a temporary folder
of its own that holds the earlier lessons' ``myframework/``: what the lesson and its exercises write (the
learner's files, checkpoints) stays there, so that proofs can run side by side (CI runs two at once). At an exercise's
solution cell the tool runs, each followed by the exercise's check cell: the stub (what the student edition
and nbgrader give learners; the check must fail), the known-wrong answers from ``tools/wrong_answers.py``
(the solution cell must run and the check must fail), and last the solution itself (the check must pass),
so that the lesson goes on from the solution's state. It prints one row per run and exits 1 on any surprise.

Which wrong answers run depends on where: on NumPy and on a real GPU, every one; on the strict stand-in, only
those that are wrong only on a GPU (``GPU_ONLY``), since the others compute with NumPy there just as they do
on NumPy (``--every-variant`` runs them all there too). The rest of the lesson runs on the stand-in all the same.

``--executed FOLDER`` also writes the two notebooks the run produced: ``<lesson>.solution.ipynb`` (every cell's
outputs, the solutions' at the exercises) and ``<lesson>.stub.ipynb`` (the stubs in the solution cells, and the
outputs the stubs gave their checks). They are not what nbgrader would grade: each check ran after the stub's and
the wrong answers' code, so a framework exercise's check may warn on reloading the learner's file.
"""

import argparse
import copy
import os
import re
import sys
import tempfile
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


def on_the_stand_in():
    return os.environ.get("DLSCRATCH_STRICT_GPU", "") not in ("", "0")


def on_a_gpu():
    return on_the_stand_in() or os.environ.get("DLSCRATCH_DEVICE") == "gpu"


def variants(exercise, solution, every_variant=False):
    """``(name, source, check must pass)`` for one exercise, the solution last. On the strict stand-in, unless
    ``every_variant``, only the wrong answers that are wrong only on a GPU: the others compute with NumPy there."""
    yield "stub", stub_solutions(solution), False
    for mistake, bodies in WRONG.get(exercise, []):
        gpu_only = (exercise, mistake) in GPU_ONLY
        if gpu_only or every_variant or not on_the_stand_in():
            yield f"wrong: {mistake}", with_bodies(solution, bodies), gpu_only and not on_a_gpu()
    yield "solution", solution, True


def _run(client, source, index):
    """``(error, outputs)``: error None when the cell ran, else ``"ErrorName: message"`` (first line)."""
    cell = nbformat.v4.new_code_cell(source)
    try:
        client.execute_cell(cell, index, store_history=False)
        return None, cell.outputs
    except CellExecutionError as exc:
        return f"{exc.ename}: {str(exc.evalue).splitlines()[0] if exc.evalue else ''}"[:160], cell.outputs


def prove(lesson, every_variant=False, executed=None):
    """Run one lesson; return rows ``(exercise, variant, expected, outcome, surprise)`` and the failed other cells.
    With ``executed`` (a folder), write the notebooks this run made for the solution and for the stubs."""
    notebook = nbformat.read(lesson, as_version=4)
    roles = exercise_roles(notebook.cells)
    checks = {exercise: notebook.cells[i].source for i, (role, exercise) in roles.items() if role == "check"}
    solved, stubbed = copy.deepcopy(notebook), copy.deepcopy(notebook)
    rows, broken = [], []
    with tempfile.TemporaryDirectory(prefix=f"proof-{lesson.stem}-") as folder:
        write_framework(folder)  # the earlier lessons' pieces, whatever order the lessons are proven in
        client = NotebookClient(notebook, timeout=1200, kernel_name="python3", resources={"metadata": {"path": folder}})
        with client.setup_kernel():
            for index, cell in enumerate(notebook.cells):
                role, exercise = roles.get(index, (None, None))
                if cell.cell_type != "code" or role == "check":
                    continue
                if role != "solution":
                    error, solved.cells[index].outputs = _run(client, cell.source, index)
                    stubbed.cells[index].outputs = solved.cells[index].outputs
                    if error:
                        broken.append((index, error))
                    continue
                for name, source, must_pass in variants(exercise, cell.source, every_variant):
                    cell_error, cell_outputs = _run(client, source, index)
                    check_error, check_outputs = _run(client, checks[exercise], index + 1)
                    kept = solved if name == "solution" else stubbed if name == "stub" else None
                    if kept is not None:
                        kept.cells[index].source = source
                        kept.cells[index].outputs, kept.cells[index + 1].outputs = cell_outputs, check_outputs
                    rows.append((exercise, name, "pass" if must_pass else "fail",
                                 *_judge(name, must_pass, cell_error, check_error)))
    if executed is not None:
        nbformat.write(solved, Path(executed) / f"{lesson.stem}.solution.ipynb")
        nbformat.write(stubbed, Path(executed) / f"{lesson.stem}.stub.ipynb")
    return rows, broken


def _judge(name, must_pass, cell_error, check_error):
    """``(outcome, surprise)`` of one variant's run: the solution must pass; a stub or a wrong answer must be
    rejected by its check (a wrong answer must run, and "calls the library" must be caught by own_work)."""
    if must_pass:
        outcome = cell_error or check_error or "passed"
        return outcome, outcome != "passed"
    outcome = f"rejected: {check_error}" if check_error else "check passed"
    surprise = check_error is None or (name != "stub" and cell_error is not None)
    if name == "wrong: calls the library" and "LibraryCalled" not in (check_error or ""):
        surprise = True  # own_work, not a side effect, must catch it
    if cell_error and name != "stub":
        outcome = f"the answer itself failed: {cell_error}"
    return outcome, surprise


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="DLSCRATCH_STRICT_GPU=1 proves on the strict CuPy stand-in; "
                                            "DLSCRATCH_DEVICE=gpu on a real GPU.")
    parser.add_argument("lessons", nargs="*", help="file-name prefixes of the lessons to prove (default: all)")
    parser.add_argument("--every-variant", action="store_true",
                        help="on the strict stand-in, run every known-wrong answer, not only the GPU-only ones")
    parser.add_argument("--executed", metavar="FOLDER", type=Path,
                        help="write each lesson's executed solution and stub notebooks into FOLDER")
    args = parser.parse_args(argv)
    chosen = [p for p in sorted(LESSONS.glob("[0-9][0-9]_*.ipynb")) if not args.lessons or p.name.startswith(
        tuple(args.lessons))]
    if not chosen:
        parser.error(f"no lesson in notebooks/ starts with {', '.join(args.lessons)}")
    if args.executed:
        args.executed.mkdir(parents=True, exist_ok=True)
    surprises = 0
    for lesson in chosen:
        rows, broken = prove(lesson, args.every_variant, args.executed)
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
    sys.exit(main())
