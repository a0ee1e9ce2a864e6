"""SYLLABUS.md stays true: it lists every lesson, links files that exist, and its count of learner-written
lines per lesson (non-blank lines inside nbgrader's solution regions of code cells: the code a learner writes;
a written exercise's markdown answer cell holds a model answer in a region too, which the count leaves out) is
the notebooks' own."""

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYLLABUS = (ROOT / "SYLLABUS.md").read_text(encoding="utf-8")
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)


def solution_regions(path):
    """The code inside each solution region of a lesson's code cells, in order (not the model answers of the
    markdown answer cells)."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [region for cell in cells if cell["cell_type"] == "code"
            for region in SOLUTION.findall("".join(cell["source"]))]


def learner_lines(path):
    return sum(len([line for line in region.splitlines() if line.strip()]) for region in solution_regions(path))


def test_every_lesson_is_in_the_syllabus_and_every_link_exists():
    for path in LESSONS:
        assert f"(notebooks/{path.name})" in SYLLABUS, f"SYLLABUS.md does not list {path.name}"
    for link in re.findall(r"\]\(([^)#]+)\)", SYLLABUS):
        if not link.startswith("http"):
            assert (ROOT / link).exists(), f"SYLLABUS.md links {link}, which does not exist"


def test_the_count_of_learner_written_lines_is_the_notebooks_own():
    rows = dict(
        (number, (int(regions), int(lines)))
        for number, regions, lines in re.findall(r"^\| (\d\d) \| (\d+) \| (\d+) \|$", SYLLABUS, flags=re.M)
    )
    total = re.search(r"^\| \*\*all\*\* \| \*\*(\d+)\*\* \| \*\*(\d+)\*\* \|$", SYLLABUS, flags=re.M)
    assert total, "SYLLABUS.md has no total row"
    actual = {path.name[:2]: (len(solution_regions(path)), learner_lines(path)) for path in LESSONS}
    assert rows == actual, f"SYLLABUS.md says {rows}, the notebooks have {actual}"
    assert (int(total.group(1)), int(total.group(2))) == tuple(map(sum, zip(*actual.values())))


def test_the_count_leaves_out_the_model_answers_of_written_exercises(tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": ["def f():\n", "    ### BEGIN SOLUTION\n", "    return 1\n", "    ### END SOLUTION\n"]},
             {"cell_type": "markdown", "metadata": {},
              "source": ["### BEGIN SOLUTION\n", "**A model answer.** Two\n", "lines.\n", "### END SOLUTION"]}]
    lesson = tmp_path / "99_lesson.ipynb"
    lesson.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert (len(solution_regions(lesson)), learner_lines(lesson)) == (1, 1)


def test_the_readme_links_the_syllabus():
    assert "(SYLLABUS.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
