"""The README's "What you can rely on" section names the test behind each promise: every file and
test it names must exist, so that a promise cannot outlive the test that holds it."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _section():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("## What you can rely on")
    return text[start : text.index("\n## ", start + 1)]


def _test_names(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_test_the_readme_names_exists():
    references = re.findall(r"`(test_\w+\.py)(?:::(test_\w+))?`", _section())
    assert len(references) >= 15, "the section should name the test of each promise"
    for filename, name in references:
        path = ROOT / "tests" / filename
        assert path.exists(), f"README names {filename}, which does not exist"
        tests = _test_names(path)
        assert tests, f"{filename} holds no tests"
        assert not name or name in tests, f"README names {filename}::{name}, which does not exist"
