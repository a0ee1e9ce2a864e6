"""What the README links to must stay true: "What you can rely on" (docs/reliability.md) names the test behind
each promise, and every file and test it names must exist, so that a promise cannot outlive the test that holds
it; the line counts in docs/layout.md stay close to the files'; the README's first example runs and prints what its
comment says."""

import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _section():
    return (ROOT / "docs" / "reliability.md").read_text(encoding="utf-8")


def _test_names(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_the_readme_names_exists():
    references = re.findall(r"`(test_\w+\.py)(?:::(test_\w+))?`", _section())
    assert len(references) >= 15, "the section should name the test of each promise"
    for filename, name in references:
        path = ROOT / "tests" / filename
        assert path.exists(), f"docs/reliability.md names {filename}, which does not exist"
        tests = _test_names(path)
        assert tests, f"{filename} holds no tests"
        assert not name or name in tests, f"docs/reliability.md names {filename}::{name}, which does not exist"


def _lines(pattern):
    return sum(len(p.read_text(encoding="utf-8").splitlines()) for p in ROOT.glob(pattern))


def test_the_line_counts_of_the_two_paths_are_close_to_the_truth():
    text = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| [^|]+ \| ([\d,]+) \| `([^`]+)` \|$", text, flags=re.M)
    table = {where: int(count.replace(",", "")) for count, where in rows}
    actual = {
        "dlscratch/*.py": _lines("dlscratch/*.py") - _lines("dlscratch/__init__.py") - _lines("dlscratch/viz.py")
        - _lines("dlscratch/checkpoint.py") - _lines("dlscratch/gradcheck.py") + _lines("dlscratch/cuda/*.py"),
        "core/": _lines("dlscratch/core/*.py"),
        "engine/": _lines("dlscratch/engine/**/*.py"),
        "operations/": _lines("dlscratch/operations/*.py"),
        "nn/": _lines("dlscratch/nn/**/*.py"),
        "optim/": _lines("dlscratch/optim/*.py"),
        "fast/": _lines("dlscratch/fast/*.py"),
    }
    for where, count in actual.items():
        stated = table[where]
        assert abs(stated - count) <= 0.2 * count, f"docs/layout.md says {stated} lines in {where}, there are {count}"


def test_the_readmes_first_example_prints_the_loss_its_comment_states():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    code = re.search(r"^## A first example\n.*?^```python\n(.*?)^```$", text, flags=re.M | re.S).group(1)
    stated = float(re.search(r"# loss: ([\d.]+)", code).group(1))
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    printed = float(re.fullmatch(r"loss: ([\d.]+)\n", run.stdout).group(1))
    assert abs(printed - stated) <= 5e-4, f"the README's first example printed {printed}, its comment says {stated}"
