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

A written exercise's answer cell holds, in the lessons, a model answer and its rubric inside one solution region
(markdown). nbgrader's ``ClearSolutions`` replaces a markdown cell's region by its text stub, "YOUR ANSWER HERE";
autograding then scores an unchanged stub 0 (its checksum is the released cell's) and leaves any other answer,
the model answer included, to be graded by hand. That needs no lesson run: the test that checks it applies
nbgrader's own preprocessors to every lesson with a written exercise and carries no mark.
"""

import copy
import json
import os
import re
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
#: a written exercise's answer cell in the lessons: the model answer, then the rubric a grader scores it by
MODEL_ANSWER = re.compile(r"\A### BEGIN SOLUTION\n\*\*A model answer\.\*\* (?P<answer>\S.*?)\n\n"
                          r"\*\*Rubric \((?P<points>\d+) points?\)\.\*\*(?P<rubric>\s+\S.*?)\n### END SOLUTION\Z", re.S)
NBGRADER_TEXT_STUB = "YOUR ANSWER HERE"  # ClearSolutions.text_stub's default in nbgrader 0.9
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


def _answer_cells(path):
    """``{cell index: exercise id}`` of a lesson's written answer cells."""
    return {index: exercise for index, (role, exercise) in exercise_roles(_cells(path)).items() if role == "answer"}


WRITTEN = [path for path in LESSONS if _answer_cells(path)]


def test_every_written_exercise_has_an_answer_cell():
    for path in LESSONS:
        roles = exercise_roles(_cells(path))
        for exercise in {exercise for role, exercise in roles.values()}:
            kinds = {role for role, e in roles.values() if e == exercise}
            assert kinds & {"solution", "answer"}, f"{path.name}: Exercise {exercise} has no solution, no answer cell"
    assert [path.name[:2] for path in WRITTEN] == ["07", "08", "09", "10", "11", "12", "13"], WRITTEN


def test_an_answer_cell_is_the_learners_stub_or_wholly_one_solution_region():
    def cells(answer):
        return [{"cell_type": "markdown", "source": "### Exercise 99.1 (written): why?"},
                {"cell_type": "markdown", "source": answer}]

    region = "### BEGIN SOLUTION\n**A model answer.** Because.\n\n**Rubric (1 point).** Says why.\n### END SOLUTION"
    for answer in ("*Your answer here.*", region, region + "\n"):
        assert exercise_roles(cells(answer))[1] == ("answer", "99-1")
    for wrong in ("Read this first.\n\n" + region, region.replace("### END SOLUTION", "")):
        with pytest.raises(ValueError, match="markdown solution region"):
            exercise_roles(cells(wrong))


@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: p.stem)
def test_every_written_answer_has_a_model_answer_and_a_rubric(path):
    cells = _cells(path)
    for index, exercise in _answer_cells(path).items():
        source = "".join(cells[index]["source"])
        found = MODEL_ANSWER.match(source)
        assert found, (f"{path.name}, Exercise {exercise}: the answer cell must be one solution region holding "
                       "'**A model answer.** ...' and '**Rubric (1 point).** ...'")
        assert len(found["answer"].split()) >= 40, f"Exercise {exercise}: the model answer is too short to teach"
        assert len(found["rubric"].split()) >= 10, f"Exercise {exercise}: the rubric says too little to grade by"
        points = cells[index]["metadata"]["nbgrader"]["points"]
        assert int(found["points"]) == points, (
            f"Exercise {exercise}: the rubric shares out {found['points']} point(s), the cell is worth {points}")


@pytest.mark.nbgrader
@needs_nbgrader
@pytest.mark.parametrize("path", WRITTEN, ids=lambda p: p.stem)
def test_nbgrader_stubs_a_written_answer_and_scores_the_stub_zero(path):
    """What generate_assignment and autograde do to an answer cell, with nbgrader's own preprocessors: the release
    holds the text stub and no model answer; an unchanged stub scores 0; the model answer waits for a grader."""
    import nbformat
    from nbgrader.preprocessors import ClearSolutions, ComputeChecksums
    from nbgrader.utils import determine_grade

    lesson = nbformat.read(path, as_version=4)
    released, resources = ClearSolutions().preprocess(copy.deepcopy(lesson), {})
    released, _ = ComputeChecksums().preprocess(released, resources)
    for index, exercise in _answer_cells(path).items():
        stub = released.cells[index]
        assert stub.source == NBGRADER_TEXT_STUB, f"Exercise {exercise}: nbgrader released {stub.source!r}"
        assert determine_grade(stub) == (0, 1.0), f"Exercise {exercise}: an unchanged stub must score 0"
        answered = copy.deepcopy(lesson.cells[index])  # a submission with the model answer, as autograde sees it:
        answered.metadata.nbgrader["checksum"] = stub.metadata.nbgrader["checksum"]  # OverwriteCells' checksum
        assert determine_grade(answered) == (None, 1.0), f"Exercise {exercise}: a written answer is graded by hand"
    text = json.dumps([cell.source for cell in released.cells])
    assert "BEGIN SOLUTION" not in text and "**A model answer.**" not in text and "**Rubric (" not in text


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
    released = student_version.read_text(encoding="utf-8")
    assert "### BEGIN SOLUTION" not in released and "**A model answer.**" not in released
    answers = _answer_cells(path)
    for index in answers:
        assert "".join(json.loads(released)["cells"][index]["source"]) == NBGRADER_TEXT_STUB
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
            written = [g for nb in submission.notebooks for g in nb.grades if g.name.endswith("-answer")]
            assert len(written) == len(answers), f"{assignment}: nbgrader graded {len(written)} written answers"
            for grade in written:  # the solution's model answer waits for a grader; a stub scores 0
                wanted = (None, True) if expected == "full" else (0, False)
                assert (grade.auto_score, grade.needs_manual_grade) == wanted, f"{assignment}, {student}: {grade.name}"
