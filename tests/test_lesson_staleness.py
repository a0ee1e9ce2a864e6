"""A lesson's stored outputs are stale when library code that it ran has changed, and only then.

``tools/execute_lessons.py`` starts a lesson's kernel with ``tools/lesson_trace/sitecustomize.py`` on its
``PYTHONPATH``; every process started so records the library functions it runs. Here a fake ``dlscratch``
in a temporary folder is run the same way, by a Python 3.12+ (the recording needs ``sys.monitoring``): a
process that starts a child and forks. Then its code is changed in a copy, and the record judged against
it. The last test does the same with a lesson's stored record and the repository's library.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from repo_tools import load_tool

ROOT = Path(__file__).resolve().parent.parent
LESSON = ROOT / "notebooks" / "02_backpropagation.ipynb"
execute_lessons = load_tool("execute_lessons")

OPS = '''\
"""Ops."""
import os
import subprocess
import sys

SCALE = 2
_CHILD = "child"  # private, read only by in_a_child: a unit of its own
_STEP = 1  # private, read only by never_run


class Scale:
    """Scales."""

    factor = SCALE

    def apply(self, values):
        """Each value, scaled."""
        return list(map(lambda value: value * self.factor, values))

    def unused(self, values):
        return values[::-1]


def never_run(x):
    return x + _STEP


def in_a_child():
    return _CHILD


def in_a_fork():
    return "fork"


def run():
    Scale().apply([1, 2])
    subprocess.run([sys.executable, "-c", "import dlscratch.ops as ops; ops.in_a_child()"], check=True)
    if hasattr(os, "fork"):
        if os.fork() == 0:
            in_a_fork()
            os._exit(0)
        os.wait()
'''
RAN = ["<module>", "Scale.apply", "_CHILD", "in_a_child", *(["in_a_fork"] if hasattr(os, "fork") else []), "run"]
# a change to the fake library, and what the check then says
CHANGES = {
    "a function that ran": ("value * self.factor", "self.factor * value",
                            ["dlscratch.ops: Scale.apply (its code changed)"]),
    "a function that ran only in the child": ("return _CHILD", "return _CHILD * 2",
                                              ["dlscratch.ops: in_a_child (its code changed)"]),
    "a private constant that a function that ran read": ('_CHILD = "child"', '_CHILD = "a child"',
                                                         ["dlscratch.ops: _CHILD (its code changed)"]),
    "a function that never ran": ("return x + _STEP", "return x - _STEP", []),
    "a private constant that only a function that never ran read": ("_STEP = 1", "_STEP = 2", []),
    "a method that never ran": ("values[::-1]", "values[::-2]", []),
    "a module constant": ("SCALE = 2", "SCALE = 3", ["dlscratch.ops: <module> (its code changed)"]),
    "a docstring and a comment": ('"""Each value, scaled."""', '"""Every value, scaled."""  # a comment', []),
    "the name of a function that ran": ("def in_a_child", "def in_the_child",
                                        ["dlscratch.ops: <module> (its code changed)",
                                         "dlscratch.ops: in_a_child (no longer exists)"]),
}


def _python(condition):
    """A Python for which ``condition`` (an expression on ``sys``) holds: this one, pyenv's, or the PATH's
    ``python3.X``; None when there is none."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [sys.executable, *map(str, sorted(pyenv.glob("versions/3.*/bin/python3")))]
    candidates += [found for minor in range(10, 14) if (found := shutil.which(f"python3.{minor}"))]
    for python in dict.fromkeys(candidates):
        probe = subprocess.run([python, "-c", f"import sys; sys.exit(not ({condition}))"], capture_output=True)
        if probe.returncode == 0:
            return python
    return None


def _record(python, root, command):
    """Run ``python -c command`` as execute_lessons runs a lesson's kernel, with ``root``'s dlscratch; the
    ``(file, qualname)`` pairs that its processes recorded, and the number of processes that recorded."""
    trace = root / "trace"
    trace.mkdir()
    environment = execute_lessons.kernel_environment("cpu", trace, root=root)
    subprocess.run([python, "-c", command], cwd=root, env=environment, check=True, timeout=120)
    return execute_lessons.read_trace(trace), len(list(trace.glob("*.tsv")))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """``(record, ran, processes)`` of a run of the fake library: what execute_lessons would store, the
    ``(file, qualname)`` pairs recorded, and how many processes recorded them."""
    python = _python("sys.version_info >= (3, 12)")
    if python is None:
        pytest.skip("recording needs Python 3.12+ (sys.monitoring), and this machine has none")
    root = tmp_path_factory.mktemp("recorded")
    (root / "dlscratch").mkdir()
    (root / "dlscratch" / "__init__.py").write_text('"""A fake library."""\n', encoding="utf-8")
    (root / "dlscratch" / "ops.py").write_text(OPS, encoding="utf-8")
    ran, processes = _record(python, root, "import dlscratch.ops; dlscratch.ops.run()")
    return execute_lessons.library_record(ran, root=root), ran, processes


@pytest.fixture
def library(tmp_path):
    """A folder holding a copy of the fake library, to change."""
    (tmp_path / "dlscratch").mkdir()
    (tmp_path / "dlscratch" / "ops.py").write_text(OPS, encoding="utf-8")
    return tmp_path


def _notebook(record):
    return {"metadata": {"dlscratch": {"library": record}}}


def test_the_record_holds_what_ran_in_the_process_its_child_and_its_fork(recorded):
    record, ran, processes = recorded
    assert {module: list(units) for module, units in record.items()} == {"dlscratch": ["<module>"],
                                                                         "dlscratch.ops": RAN}
    assert processes == (3 if hasattr(os, "fork") else 2), "the process, its child and its fork: a file each"
    lambdas = [qualname for _, qualname in ran if "<lambda>" in qualname]
    assert lambdas == ["Scale.apply.<locals>.<lambda>"], "the lambda ran, and is Scale.apply's"


@pytest.mark.parametrize("change", CHANGES, ids=lambda name: name.replace(" ", "_"))
def test_a_lesson_is_stale_when_code_that_it_ran_changes(recorded, library, change):
    old, new, why = CHANGES[change]
    assert OPS.count(old) == 1
    (library / "dlscratch" / "ops.py").write_text(OPS.replace(old, new), encoding="utf-8")
    record = {"dlscratch.ops": recorded[0]["dlscratch.ops"]}
    assert execute_lessons.stale_functions(_notebook(record), root=library) == why


def test_a_module_that_is_gone_makes_the_lesson_stale(recorded, library):
    (library / "dlscratch" / "ops.py").unlink()
    record = {"dlscratch.ops": recorded[0]["dlscratch.ops"]}
    assert execute_lessons.stale_functions(_notebook(record), root=library) == ["dlscratch.ops (no longer exists)"]


def test_code_inside_a_function_belongs_to_it():
    units = {"<module>", "f", "Outer.Inner.method"}
    expected = {"f": "f", "f.<locals>.g": "f", "f.<locals>.<lambda>": "f", "f.<locals>.C.m.<locals>.<genexpr>": "f",
                "Outer.Inner.method.<locals>.<listcomp>": "Outer.Inner.method", "Outer.Inner": "<module>",
                "Outer.<genexpr>": "<module>", "<genexpr>": "<module>", "<module>": "<module>"}
    assert {qualname: execute_lessons.unit_of(qualname, units) for qualname in expected} == expected


def test_a_private_constant_is_its_own_unit_only_where_nothing_else_could_read_it(tmp_path):
    library = tmp_path / "dlscratch"
    library.mkdir()
    (library / "kernels.py").write_text(
        '_SOURCE = "p = p - g;"\n_TWICE = 1\n_TWICE = 2\n_SHARED = 3\n_ON_IMPORT = 4\n__all__ = ["run"]\n'
        "PUBLIC = 5\nLIMIT = _ON_IMPORT + 1\n\n\n"
        "def run():\n    return _SOURCE, _TWICE, _SHARED, PUBLIC\n", encoding="utf-8")
    (library / "user.py").write_text("from .kernels import _SHARED\n", encoding="utf-8")
    units = execute_lessons.code_fingerprints(library / "kernels.py")
    assert sorted(units) == ["<module>", "_SOURCE", "run"]  # assigned twice, imported, read on import, public: no
    assert execute_lessons.constants_read(library / "kernels.py", {"run"}) == {"_SOURCE"}
    assert execute_lessons.constants_read(library / "kernels.py", {"<module>"}) == set()


def test_a_lesson_never_executed_or_recorded_the_old_way_must_be_executed():
    assert execute_lessons.stale_functions({"metadata": {}}) == ["never executed by tools/execute_lessons.py"]
    old = {"dlscratch.engine.tensor": "0123456789abcdef"}  # a fingerprint per module, as recorded before functions were
    assert execute_lessons.stale_functions(_notebook(old)) == [
        "executed by an older tools/execute_lessons.py, which recorded the modules it imported, "
        "not the functions it ran"
    ]


def test_executing_refuses_a_python_without_sys_monitoring(monkeypatch, tmp_path):
    monkeypatch.setattr(execute_lessons.sys, "version_info", (3, 11, 9))
    with pytest.raises(SystemExit, match=r"needs Python 3\.12 or newer(.|\n)*would\nfalsify the timings"):
        execute_lessons.require_sys_monitoring()
    python = _python("sys.version_info < (3, 12)")
    if python is None:
        pytest.skip("no Python older than 3.12 here, to see a process of one refused")
    with pytest.raises(SystemExit, match=r"ran unrecorded: Python 3\.1[01]\..* has no sys\.monitoring"):
        _record(python, tmp_path, "pass")


def _body_on_its_own_lines(path, qualname):
    """The function or method ``qualname`` of the file ``path``, if its body starts a line: the node, else None."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for name, node in execute_lessons.top_level_functions(ast.parse("\n".join(lines))):
        first = node.body[0]
        if name == qualname and not lines[first.lineno - 1][:first.col_offset].strip():
            return node
    return None


def _add_a_statement(path, qualname):
    """Add ``pass`` at the end of the body of ``qualname`` in the file ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    node = _body_on_its_own_lines(path, qualname)
    lines.insert(node.end_lineno, " " * node.body[0].col_offset + "pass\n")
    path.write_text("".join(lines), encoding="utf-8")


def _a_function(record, root, ran):
    """``(module, qualname)`` of a function or method, with its body on lines of its own, that the lesson's
    ``record`` says it ran (and that has not changed since), or, if not ``ran``, that it never ran."""
    for module, units in record.items():
        path = execute_lessons.module_path(module, root)
        now = execute_lessons.code_fingerprints(path)
        if ran:
            candidates = [unit for unit in units if unit != "<module>" and now.get(unit) == units[unit]]
        else:
            candidates = [unit for unit in now if unit not in units]
        for qualname in candidates:
            if _body_on_its_own_lines(path, qualname) is not None:
                return module, qualname
    raise AssertionError(f"no function {'that it ran' if ran else 'that it never ran'} found in the record")


def test_a_lesson_is_stale_when_a_function_it_ran_changes_and_only_then(tmp_path):
    notebook = json.loads(LESSON.read_text(encoding="utf-8"))
    record = notebook["metadata"].get("dlscratch", {}).get("library")
    if not record or not all(isinstance(units, dict) for units in record.values()):
        pytest.skip(f"{LESSON.name} has no record of the functions it ran: python tools/execute_lessons.py 02")
    shutil.copytree(ROOT / "dlscratch", tmp_path / "dlscratch", ignore=shutil.ignore_patterns("__pycache__"))
    before = execute_lessons.stale_functions(notebook, root=tmp_path)
    for ran in (True, False):
        module, qualname = _a_function(record, tmp_path, ran)
        path = execute_lessons.module_path(module, tmp_path)
        source = path.read_text(encoding="utf-8")
        _add_a_statement(path, qualname)
        after = execute_lessons.stale_functions(notebook, root=tmp_path)
        path.write_text(source, encoding="utf-8")
        expected = before + [f"{module}: {qualname} (its code changed)"] if ran else before
        assert sorted(after) == sorted(expected), f"changed {module}: {qualname}, which it {'' if ran else 'never '}ran"
