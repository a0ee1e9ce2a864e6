"""The student edition (student/) is the lessons with their solutions stubbed out, and is current."""

import ast
import json

import pytest
from repo_tools import load_tool

edition = load_tool("make_student_edition")
exercise_roles = load_tool("add_nbgrader_metadata").exercise_roles
LESSONS = sorted(edition.LESSONS.glob("[0-9][0-9]_*.ipynb"))
#: what only a model answer or its rubric says (the lessons' answer cells; tests/test_nbgrader.py checks they do)
MODEL_ANSWER_MARKS = ("**A model answer.**", "**Rubric (")


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def test_the_student_edition_is_what_the_tool_writes_from_the_lessons():
    out_of_date = [str(p.relative_to(edition.ROOT)) for p in edition.stale()]
    assert not out_of_date, f"student/ is out of date ({out_of_date}); run python tools/make_student_edition.py"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_every_solution_is_a_stub_and_everything_else_is_kept(lesson):
    lesson_cells, student_cells = _cells(lesson), _cells(edition.STUDENT / lesson.name)
    assert len(student_cells) == len(lesson_cells)
    regions = 0
    for mine, theirs in zip(lesson_cells, student_cells):
        source, student = "".join(mine["source"]), "".join(theirs["source"])
        assert "SOLUTION ###" not in student and "### BEGIN SOLUTION" not in student and "HIDDEN TESTS" not in student
        if mine["cell_type"] == "markdown":
            assert student == edition.stub_answers(source).replace("/blob/main/notebooks/", "/blob/main/student/")
            continue
        regions += source.count("### BEGIN SOLUTION")
        assert student.count("# YOUR CODE HERE") == source.count("### BEGIN SOLUTION")
        graded = mine["metadata"].get("nbgrader", {}).get("grade", False)
        if graded or "### BEGIN SOLUTION" in source:
            assert theirs["outputs"] == [], "a check's or a solution's output would show the answer"
        if "### BEGIN SOLUTION" not in source and "HIDDEN TESTS" not in source:
            assert student == source, "a cell without a solution changed"
        if not graded and "### BEGIN SOLUTION" not in source:
            assert theirs["outputs"] == mine["outputs"], "an output of the lesson (a figure, a measurement) was lost"
        if "### BEGIN SOLUTION" in source and "%" not in source:
            ast.parse(student)  # a stub leaves valid Python
    assert regions >= 1, f"{lesson.name} has no exercise"


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_written_answers_are_stubs_with_no_model_answer(lesson):
    student_cells = _cells(edition.STUDENT / lesson.name)
    for index, (role, exercise) in exercise_roles(_cells(lesson)).items():
        if role == "answer":
            assert "".join(student_cells[index]["source"]) == edition.ANSWER_STUB, (
                f"{lesson.name}, Exercise {exercise}: the student's answer cell must be only {edition.ANSWER_STUB}")
    for index, cell in enumerate(student_cells):
        source = "".join(cell["source"])
        assert not any(mark in source for mark in MODEL_ANSWER_MARKS), (
            f"student/{lesson.name}, cell {index}: a model answer or its rubric reached the student edition")


def test_a_markdown_answer_region_becomes_the_learners_stub():
    answer = "### BEGIN SOLUTION\n**A model answer.** Because.\n\n**Rubric (1 point).** Says why.\n### END SOLUTION"
    assert edition.stub_answers(answer) == "*Your answer here.*"
    assert edition.stub_answers("Before.\n\n" + answer + "\n") == "Before.\n\n*Your answer here.*\n"
    assert edition.stub_answers(edition.ANSWER_STUB) == edition.ANSWER_STUB


def test_colab_links_open_the_student_edition_and_its_readme_lists_every_lesson():
    readme = (edition.STUDENT / "README.md").read_text(encoding="utf-8")
    for lesson in LESSONS:
        first = "".join(_cells(edition.STUDENT / lesson.name)[0]["source"])
        assert f"/blob/main/student/{lesson.name}" in first and "/blob/main/notebooks/" not in first
        assert f"]({lesson.name})" in readme and f"/blob/main/student/{lesson.name})" in readme


def test_stubs_keep_the_indentation_of_the_region_they_replace():
    source = "def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x + y\n    ### END SOLUTION\n"
    stub = "def f(x):\n    y = 1\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"
    assert edition.stub_solutions(source) == stub
    hidden = "assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(2) == 3\n### END HIDDEN TESTS\nprint('ok')\n"
    assert edition.remove_hidden_tests(hidden) == "assert f(1) == 2\nprint('ok')\n"
