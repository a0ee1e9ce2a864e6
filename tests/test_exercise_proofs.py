"""Every exercise's check is proven (tools/prove_exercises.py): the solution passes, the stub and every known-wrong
answer (tools/wrong_answers.py) fail on NumPy; on the strict CuPy stand-in the whole lesson runs, the solutions
pass, and the stubs and the mistakes that only a GPU exposes (``GPU_ONLY``) fail. Slow: each lesson runs once per
device in a kernel of its own (marked ``exercises``)."""

import pytest
from lesson_proofs import DEVICES, proof
from repo_tools import load_tool

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


def chooses_the_cpu(lesson):
    """A lesson whose setup cell chooses the CPU whatever the device (lesson 11: its ranks run there, and its
    references with them): on the stand-in it would run the very same code as on NumPy."""
    setup = next(c for c in prove.nbformat.read(lesson, as_version=4).cells if c.cell_type == "code")
    return 'backend.use("cpu")' in setup.source


PROOFS = [(lesson, device) for lesson in LESSONS for device in DEVICES
          if device == "numpy" or not chooses_the_cpu(lesson)]


def test_only_a_lesson_that_chooses_the_cpu_skips_the_stand_in():
    assert [lesson.stem for lesson in LESSONS if chooses_the_cpu(lesson)] == ["11_many_processes"]
    assert len(PROOFS) == 2 * len(LESSONS) - 1


@pytest.mark.exercises
@pytest.mark.parametrize("lesson, device", PROOFS, ids=lambda p: getattr(p, "stem", p))
def test_checks_pass_the_solution_and_fail_the_stub_and_the_wrong_answers(lesson, device):
    proven = proof(lesson, device)
    surprises = [row for row in proven.rows if row[-1]]
    cells = prove.nbformat.read(lesson, as_version=4).cells
    broken = [(cells[index].id, error) for index, error in proven.broken]  # the GPU's claims are judged on a GPU
    assert not surprises and not broken, f"surprises: {surprises}; cells that failed: {broken}"
    exercises = {row[0] for row in proven.rows}
    assert [row[1] for row in proven.rows].count("solution") == len(exercises)
    assert [row[1] for row in proven.rows].count("stub") == len(exercises)
    wrong = {(row[0], row[1].removeprefix("wrong: ")) for row in proven.rows if row[1].startswith("wrong: ")}
    if device == "numpy":
        assert wrong == {(exercise, mistake) for exercise in exercises for mistake, _ in wrong_answers(exercise)}
    else:  # the other wrong answers compute with NumPy on the stand-in, as they do on NumPy
        assert wrong == {pair for pair in prove.GPU_ONLY if pair[0] in exercises}


def wrong_answers(exercise):
    return wrong.WRONG.get(exercise, [])
