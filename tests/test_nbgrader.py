"""Teachers can use the lessons with nbgrader as they are: every exercise carries nbgrader's metadata, and
nbgrader itself (``generate_assignment``, then ``autograde``) gives the solutions full marks, and a generated
student notebook zero on every autograded check, without an error of its own.

The student notebook of one lesson (``STUB_GRADED``) is graded, not every lesson's: that each check fails on its
stub, in every lesson, the exercise proofs show (``tools/prove_exercises.py``); that nbgrader scores a failing
check zero needs one lesson, and grading every stub executed every lesson once more (about 8 minutes of CI).
The nbgrader runs execute the lessons in quick mode; they carry the ``nbgrader`` mark so that a run that
is only about the library (``DLSCRATCH_REFERENCE=1`` in ``.ci/run``) can leave them out. (Grading the notebooks
that the exercise proof executed instead gave the framework exercises' solutions zero: their checks run after the
stub's and the wrong answers' files were loaded, unlike a learner's single run; see the note on issue 37.)
They need nbgrader, which needs Python 3.11+: on 3.10, where requirements.txt leaves it out, they
skip and say why. The metadata tests need only ``tools/add_nbgrader_metadata.py`` and run on every Python.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_tools import load_tool

ROOT = Path(__file__).resolve().parent.parent
nbgrader_tool = load_tool("add_nbgrader_metadata")
prove_tool = load_tool("prove_exercises")
exercise_roles, nbgrader_metadata = nbgrader_tool.exercise_roles, nbgrader_tool.nbgrader_metadata

LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: the lesson whose student notebook nbgrader grades too: it has a framework exercise and hidden tests
STUB_GRADED = "07_lstm_cell"
needs_nbgrader = pytest.mark.skipif(
    sys.version_info < (3, 11),
    reason="nbgrader>=0.9.6 requires Python >= 3.11, so requirements.txt does not install it on this Python")


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_exercise_cell_carries_nbgrader_metadata(path):
    cells = _cells(path)
    roles = exercise_roles(cells)
    assert any(role == "check" for role, _ in roles.values()), f"{path.name}: no checked exercise"
    for index, (role, exercise) in roles.items():
        stored = cells[index]["metadata"].get("nbgrader")
        assert stored == nbgrader_metadata(role, f"exercise-{exercise}-{role}"), (
            f"{path.name}, cell {index}: missing or stale nbgrader metadata; run python tools/add_nbgrader_metadata.py")
    for index, cell in enumerate(cells):
        if "nbgrader" in cell["metadata"]:
            assert index in roles, f"{path.name}, cell {index}: nbgrader metadata on a cell that is no exercise's"


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_every_solution_is_followed_by_its_check(path):
    roles = exercise_roles(_cells(path))
    for index, (role, exercise) in roles.items():
        if role == "solution":
            assert roles.get(index + 1) == ("check", exercise), (
                f"{path.name}, cell {index}: Exercise {exercise}'s solution must be followed by its check cell")


def test_hidden_tests_sit_in_checks_that_keep_a_visible_part():
    hidden = []
    for path in LESSONS:
        for index, (role, exercise) in exercise_roles(_cells(path)).items():
            source = "".join(_cells(path)[index]["source"])
            if "### BEGIN HIDDEN TESTS" not in source:
                continue
            assert role == "check", f"{path.name}, cell {index}: hidden tests belong in a check cell"
            before, _, rest = source.partition("### BEGIN HIDDEN TESTS\n")
            assert "### END HIDDEN TESTS\n" in rest, f"{path.name}, cell {index}: hidden tests without their end"
            assert "assert " in before, f"Exercise {exercise}: the learner must still see a check before the hidden one"
            hidden.append(exercise)
    # the checks whose expected value is a formula would give the answer away: their formula is hidden
    assert {"00-2", "07-4"} <= set(hidden), hidden


def test_grade_ids_are_unique_across_the_course():
    ids = [cell["metadata"]["nbgrader"]["grade_id"] for path in LESSONS for cell in _cells(path)
           if "nbgrader" in cell["metadata"]]
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})


def _nbgrader(course, *args):
    env = dict(os.environ, DLSCRATCH_DEVICE="cpu", DLSCRATCH_QUICK="1", MPLBACKEND="Agg")
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args, "--force"], cwd=course, env=env,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result


@pytest.mark.nbgrader
@needs_nbgrader
@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.stem)
def test_nbgrader_grades_solutions_full_and_a_stub_zero(path, tmp_path):
    from nbgrader.api import Gradebook

    assignment = path.stem
    (tmp_path / "nbgrader_config.py").write_text(
        f"c = get_config()\nc.CourseDirectory.root = {str(tmp_path)!r}\nc.ExecutePreprocessor.timeout = 1200\n"
    )
    source = tmp_path / "source" / assignment
    source.mkdir(parents=True)
    shutil.copy(path, source)
    _nbgrader(tmp_path, "generate_assignment", assignment)
    student_version = tmp_path / "release" / assignment / path.name
    assert "### BEGIN SOLUTION" not in student_version.read_text(encoding="utf-8")
    students = {"solution": (path, "full")}
    if assignment == STUB_GRADED:
        students["stub"] = (student_version, "zero")
    for student, (notebook, _) in students.items():
        folder = tmp_path / "submitted" / student / assignment
        folder.mkdir(parents=True)
        shutil.copy(notebook, folder / path.name)
        if student == "solution":  # a learner hands in a lesson with the myframework/ of the lessons before it
            prove_tool.write_framework(folder)
    _nbgrader(tmp_path, "autograde", assignment, "--create")

    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}") as gradebook:
        for student, (_, expected) in students.items():
            submission = gradebook.find_submission(assignment, student)
            checks = [g for nb in submission.notebooks for g in nb.grades if g.name.endswith("-check")]
            assert checks, f"{assignment}: nbgrader found no autograded check"
            for grade in checks:
                wanted = grade.max_score if expected == "full" else 0
                assert grade.auto_score == wanted, (
                    f"{assignment}, {student}: {grade.name} scored {grade.auto_score} of {grade.max_score}")
