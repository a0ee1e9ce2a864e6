"""Give every lesson's exercises nbgrader's cell metadata, so teachers can use the lessons as they are.

    python tools/add_nbgrader_metadata.py            # every lesson
    python tools/add_nbgrader_metadata.py 04 07      # the lessons whose file names start with these

An exercise is a markdown cell headed "Exercise NN.M", then the cells that belong to it:

- the statement (that markdown cell): read-only ("locked");
- a code cell with ``### BEGIN SOLUTION`` / ``### END SOLUTION``: the learner's solution cell;
- the code cell that starts ``# Check Exercise NN.M`` (after an optional nbval comment): an autograded test
  cell, read-only, worth ``POINTS`` points;
- a markdown cell that is only "*Your answer here.*", or wholly one ``### BEGIN SOLUTION`` / ``### END SOLUTION``
  region (the lesson's model answer and rubric, which the student edition and nbgrader replace by a stub): a
  written answer, graded by hand.

Ids are ``exercise-NN-M-statement``, ``-solution``, ``-check`` and ``-answer``: stable as long as the exercise
keeps its number. Running the tool again rewrites the same metadata; outputs are left as they are.
"""

import argparse
import json
import re
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
POINTS = 1
HEADING = re.compile(r"^#+ (?:\d+\. )?Exercise (\d+)\.(\d+)", re.M)
CHECK = re.compile(r"^# Check Exercise (\d+)\.(\d+)", re.M)
ANSWER = "*Your answer here.*"
#: a written answer's cell in the lessons: one solution region, the model answer and its rubric inside
MODEL_ANSWER = re.compile(r"\A### BEGIN SOLUTION\n(?:(?!BEGIN SOLUTION|END SOLUTION).)*\n### END SOLUTION\Z", re.S)


def nbgrader_metadata(role, grade_id):
    """nbgrader's schema-3 cell metadata for a statement, solution, check or answer cell."""
    metadata = {"grade": False, "grade_id": grade_id, "locked": False, "schema_version": 3, "solution": False,
                "task": False}
    if role == "statement":
        metadata["locked"] = True
    elif role == "solution":
        metadata["solution"] = True
    elif role == "check":
        metadata.update(grade=True, locked=True, points=POINTS)
    elif role == "answer":
        metadata.update(grade=True, solution=True, points=POINTS)
    return metadata


def exercise_roles(cells):
    """``{cell index: (role, exercise id "NN-M")}`` for the cells that belong to an exercise."""
    roles, current = {}, None
    for index, cell in enumerate(cells):
        text = "".join(cell["source"])
        heading = HEADING.search(text) if cell["cell_type"] == "markdown" else None
        if heading:
            current = f"{heading.group(1)}-{heading.group(2)}"
            roles[index] = ("statement", current)
        elif current is None:
            continue
        elif cell["cell_type"] == "code" and "### BEGIN SOLUTION" in text:
            roles[index] = ("solution", current)
        elif cell["cell_type"] == "code" and CHECK.search(text):
            checked = "-".join(CHECK.search(text).groups())
            if checked != current:
                raise ValueError(f"cell {index} checks Exercise {checked} inside Exercise {current}")
            roles[index] = ("check", current)
        elif cell["cell_type"] == "markdown" and is_answer(text):
            roles[index] = ("answer", current)
        elif cell["cell_type"] == "markdown" and ("BEGIN SOLUTION" in text or "END SOLUTION" in text):
            raise ValueError(f"cell {index} (Exercise {current}): a markdown solution region must be the whole cell, "
                             "### BEGIN SOLUTION on the first line and ### END SOLUTION on the last")
    return roles


def is_answer(text):
    """Whether a markdown cell's text is a written answer: the learner's "*Your answer here.*", or a model answer
    wholly inside one solution region."""
    return text.strip() == ANSWER or bool(MODEL_ANSWER.match(text.strip()))


def add_metadata(path):
    raw = path.read_text(encoding="utf-8")
    notebook = json.loads(raw)
    for index, (role, exercise) in exercise_roles(notebook["cells"]).items():
        notebook["cells"][index]["metadata"]["nbgrader"] = nbgrader_metadata(role, f"exercise-{exercise}-{role}")
    text = json.dumps(notebook, indent=1, ensure_ascii=False, sort_keys=True) + ("\n" if raw.endswith("\n") else "")
    path.write_text(text, encoding="utf-8")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lessons", nargs="*", help="file-name prefixes of the lessons to rewrite (default: all)")
    prefixes = tuple(parser.parse_args(argv).lessons)
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        if not prefixes or path.name.startswith(prefixes):
            add_metadata(path)
            print(f"{path.name}: nbgrader metadata written")


if __name__ == "__main__":
    main()
