"""Checks of the lesson notebooks against the guide's conventions (static, but for one small kernel run).

Every notebook: a title and an "Open in Colab" badge for its own file, one setup cell that installs
from the repository's URL (read from pyproject.toml), its own ``%timeit``, exercises between
nbgrader's markers each followed by a check cell, no stored errors, no machine paths, outputs from the
current library, and every figure a cell draws stored with it (executed under CI's ``MPLBACKEND=Agg`` too).
Also checks ``tools/sync_repo_url.py``, which writes the URL into the README and the
notebooks, and that ``tools/execute_lessons.py`` fingerprints the library alike on every supported Python.
"""

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
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
TOOL = ROOT / "tools" / "sync_repo_url.py"
MACHINE_PATH = re.compile(r"(?<![\w.])/(work|tmp|root|home)\b")


sync = load_tool("sync_repo_url")
execute_lessons = load_tool("execute_lessons")
lesson_figures = load_tool("lesson_figures")
URL = sync.repository_url(ROOT / "pyproject.toml")


def _cells(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = cell.get("source", "")
        cell["text"] = "".join(source) if isinstance(source, list) else source
    return nb["cells"]


def _text_outputs(cell):
    """The text of a code cell's outputs (streams, plain-text results, errors); images left out."""
    for out in cell.get("outputs", []):
        if "text" in out:
            yield "".join(out["text"]) if isinstance(out["text"], list) else out["text"]
        if "text/plain" in out.get("data", {}):
            yield "".join(out["data"]["text/plain"])
        if out.get("output_type") == "error":
            yield "\n".join([out.get("ename", ""), out.get("evalue", ""), *out.get("traceback", [])])


def _number(path):
    return path.name[:2]


def test_there_are_lessons():
    assert [p.name for p in NOTEBOOKS[:3]] == [
        "00_backends.ipynb", "01_computation_graph.ipynb", "02_backpropagation.ipynb"
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_file_name_is_numbered(path):
    assert re.fullmatch(r"\d\d_[a-z0-9_]+\.ipynb", path.name), f"{path.name}: name lessons NN_topic.ipynb"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_first_cell_has_title_and_colab_badge(path):
    first = _cells(path)[0]
    assert first["cell_type"] == "markdown", f"{path.name}: the first cell must be markdown (title and badge)"
    assert first["text"].startswith("# "), f"{path.name}: the first cell must start with a '# ' title"
    link = f"{sync.colab_base(URL)}/{path.name}"
    assert f"]({link})" in first["text"], f"{path.name}: no Colab badge linking to {link} in the first cell"
    assert "colab-badge.svg" in first["text"], f"{path.name}: the Colab link should show the badge image"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_setup_cell_installs_from_the_repository(path):
    cells = _cells(path)
    installs = [c for c in cells if c["cell_type"] == "code" and "pip install" in c["text"]]
    assert len(installs) == 1, f"{path.name}: expected one setup cell with pip install, found {len(installs)}"
    setup = installs[0]["text"]
    assert cells.index(installs[0]) <= 2, f"{path.name}: the setup cell must come right after the title"
    assert re.search(r"except ImportError:.*\n\s+%pip install -q git\+" + re.escape(URL) + r"\s*\n", setup), (
        f"{path.name}: the setup cell must run `%pip install -q git+{URL}` only when `import dlscratch` fails"
    )
    assert " -e " not in setup and "--editable" not in setup, f"{path.name}: never an editable install in Colab"
    needed_lines = ["manual_seed(", "np.random.seed(", "describe()",
                    "dlscratch.fast.malloc.keep_freed_memory()"]  # the explicit switch that import does not make
    for needed in needed_lines:
        assert needed in setup, f"{path.name}: the setup cell does not contain {needed!r}"
    # the device: the learner's choice (the GPU where there is one), or the CPU with the reason beside it
    assert ('backend.use(os.environ.get("DLSCRATCH_DEVICE", "auto"))' in setup
            or re.search(r'backend\.use\("cpu"\)  # \w', setup)), f"{path.name}: the setup cell must choose the device"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_times_its_own_code(path):
    assert any(c["cell_type"] == "code" and "%timeit" in c["text"] for c in _cells(path)), (
        f"{path.name}: no %timeit: every lesson times its own bottlenecks"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_exercises_have_solutions_markers_and_check_cells(path):
    cells = _cells(path)
    exercise_id = re.compile(r"Exercise (" + _number(path) + r"\.\d+)")
    solutions = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and "### BEGIN SOLUTION" in c["text"]]
    assert solutions, f"{path.name}: no exercise with ### BEGIN SOLUTION / ### END SOLUTION"
    for i in solutions:
        text = cells[i]["text"]
        assert text.count("### BEGIN SOLUTION") == text.count("### END SOLUTION"), f"{path.name} cell {i}: unpaired"
        assert text.index("### BEGIN SOLUTION") < text.index("### END SOLUTION"), f"{path.name} cell {i}: order"
        statements = [c["text"] for c in cells[:i] if c["cell_type"] == "markdown" and exercise_id.search(c["text"])]
        assert statements, f"{path.name} cell {i}: no markdown before it names 'Exercise {_number(path)}.k'"
        ident = exercise_id.findall(statements[-1])[-1]
        after = next((c for c in cells[i + 1:] if c["cell_type"] == "code"), None)
        assert after is not None and f"Exercise {ident}" in after["text"] and "assert" in after["text"], (
            f"{path.name}: Exercise {ident} must be followed by a check cell that names it and asserts"
        )
        assert "### BEGIN SOLUTION" not in after["text"], f"{path.name}: the check of Exercise {ident} holds a solution"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_heading_starts_its_cell(path):
    """A heading in the middle of a markdown cell hides a section from the notebook's outline and from the cell
    that a learner reaches by it (nbgrader's solution markers are not headings)."""
    for i, cell in enumerate(_cells(path)):
        if cell["cell_type"] != "markdown":
            continue
        lines, fenced = cell["text"].strip("\n").split("\n"), False
        for line in lines[1:]:
            fenced = fenced != line.startswith("```")
            heading = re.match(r"#{1,6} ", line) and not line.startswith(("### BEGIN SOLUTION", "### END SOLUTION"))
            assert fenced or not heading, f"{path.name} cell {i}: the heading {line!r} does not start its cell"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stored_errors(path):
    for i, cell in enumerate(_cells(path)):
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{path.name} cell {i}: stored error {out.get('ename')}"
            if out.get("name") == "stderr":
                text = "".join(out["text"])
                assert "Traceback" not in text and "Warning" not in text, f"{path.name} cell {i}: stderr {text[:80]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_machine_paths(path):
    for i, cell in enumerate(_cells(path)):
        for where, text in [("source", cell["text"]), *(("output", t) for t in _text_outputs(cell))]:
            match = MACHINE_PATH.search(text)
            assert match is None, f"{path.name} cell {i}: a machine path in the {where}: {text[match.start():][:60]!r}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_stored_outputs_come_from_the_current_library(path):
    stale = execute_lessons.stale_functions(json.loads(path.read_text(encoding="utf-8")))
    assert not stale, (
        f"{path.name}: its stored outputs are older than the library ({', '.join(stale)}); "
        f"re-execute it in full mode, on Python 3.12+: python tools/execute_lessons.py {path.name[:2]}"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_cell_that_draws_stores_its_figures(path):
    missing = lesson_figures.missing_figures(json.loads(path.read_text(encoding="utf-8")))
    assert not missing, (f"{lesson_figures.describe_missing(path.name, missing)}; re-execute it on Python 3.12+: "
                         f"python tools/execute_lessons.py {path.name[:2]}")


def test_a_cell_draws_one_figure_per_plt_show_in_its_code():
    drawn = lesson_figures.figures_drawn
    assert drawn("t = %timeit -q -o f()\nplt.plot([1, 2])\nplt.show()") == 1
    assert drawn("for k in range(3):\n    plt.show()\nplt.show()") == 2
    assert drawn("ax.show()\nprint('plt.show()')") == 0


def _drawing_notebook():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()")]
    return nb


def test_a_lesson_kernel_stores_figures_under_agg(tmp_path, monkeypatch):
    """CI exports MPLBACKEND=Agg, under which plt.show() stores nothing; execute_lessons' kernel stores the figure."""
    from nbclient import NotebookClient

    monkeypatch.setenv("MPLBACKEND", "Agg")
    plain, lesson = _drawing_notebook(), _drawing_notebook()
    NotebookClient(plain, kernel_name="python3").execute(env=dict(os.environ))
    NotebookClient(lesson, kernel_name="python3").execute(env=execute_lessons.kernel_environment("cpu", tmp_path))
    assert lesson_figures.missing_figures(plain) == [(0, 1, 0)]
    assert lesson_figures.missing_figures(lesson) == []


OPS = '''\
"""Ops."""


class Scale:
    """Scales."""

    def apply(self, x, by=2):
        """Twice x."""
        return by * x  # scale


def describe(x):
    return f"{x!r:>8} doubled, {'{x}'}"
'''
# the same code: other docstrings and comments, two-space indents, lines broken inside brackets
OPS_REWORDED = '''\
"""Operations, reworded."""
class Scale:
  """Multiplies."""
  def apply(self, x,
            by=2):
    # a comment where there was none
    return by * x
def describe(x):
  """Now documented."""

  return f"{x!r:>8} doubled, {'{x}'}"
'''
# each change of code, and the units whose fingerprints it changes: "<module>" holds the signatures
CODE_CHANGES = [("by=2", "by=3", ["<module>", "Scale.apply"]), ("by * x", "x * by", ["Scale.apply"]),
                ("!r:>8", "!r:>9", ["describe"]), ("doubled", "twice", ["describe"]), ("'{x}'", "x", ["describe"]),
                ("class Scale", "class Scaled", ["<module>", "Scale.apply", "Scaled.apply"])]


def _changed_units(before, after):
    """The units whose fingerprints differ between two ``code_fingerprints``, or that only one of them has."""
    return sorted(unit for unit in before.keys() | after.keys() if before.get(unit) != after.get(unit))


def test_fingerprints_ignore_docstrings_comments_and_layout_but_not_code(tmp_path):
    module = tmp_path / "ops.py"
    module.write_text(OPS, encoding="utf-8")
    original = execute_lessons.code_fingerprints(module)
    assert sorted(original) == ["<module>", "Scale.apply", "describe"]
    module.write_text(OPS_REWORDED, encoding="utf-8")
    assert execute_lessons.code_fingerprints(module) == original
    for old, new, changed in CODE_CHANGES:
        module.write_text(OPS.replace(old, new), encoding="utf-8")
        assert _changed_units(original, execute_lessons.code_fingerprints(module)) == changed, (
            f"changing {old!r} into {new!r} should change the fingerprints of {', '.join(changed)} alone"
        )


# Run by each interpreter, isolated (-I): loads tools/execute_lessons.py by path, needing only the standard library.
FINGERPRINT_EVERY_MODULE = """
import importlib.util, json, sys
from pathlib import Path
tool, package = Path(sys.argv[1]), Path(sys.argv[2])
spec = importlib.util.spec_from_file_location("execute_lessons", tool)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
modules = sorted(package.rglob("*.py"))
print(json.dumps({p.relative_to(package).as_posix(): module.code_fingerprints(p) for p in modules}))
"""
# Runs on any Python, 2.7 included.
WHICH_VERSION = "import sys; print(list(sys.version_info[:2]))"


def _supported_pythons():
    """The ``(major, minor)`` versions that pyproject.toml's ``requires-python = ">=3.A,<3.B"`` allows."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    low, high = map(int, re.search(r'requires-python\s*=\s*">=3\.(\d+),\s*<3\.(\d+)"', text).groups())
    return [(3, minor) for minor in range(low, high)]


def _pythons():
    """``{path: (major, minor)}`` of every interpreter of a supported version on this machine: this one,
    pyenv's, and each ``python3.X`` on PATH (pyenv's shims left out: they run the interpreters of versions/)."""
    supported = _supported_pythons()
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates = [Path(sys.executable), *sorted(pyenv.glob("versions/*/bin/python3"))]
    candidates += [Path(folder) / f"python3.{minor}" for folder in os.get_exec_path() for _, minor in supported]
    runnable = [c for c in candidates if c.is_file() and os.access(c, os.X_OK) and c.parent != pyenv / "shims"]
    found = {}
    for python in dict.fromkeys(c.resolve() for c in runnable):
        probe = subprocess.run([python, "-c", WHICH_VERSION], capture_output=True, text=True, timeout=30)
        version = tuple(json.loads(probe.stdout)) if probe.returncode == 0 else None
        if version in supported:
            found[str(python)] = version
    return found


@pytest.mark.slow
def test_fingerprints_are_the_same_on_every_supported_python():
    pythons = _pythons()
    versions = sorted({f"{major}.{minor}" for major, minor in pythons.values()})
    if len(versions) < 2:
        supported = ", ".join(f"{major}.{minor}" for major, minor in _supported_pythons())
        pytest.skip(f"needs two of the supported Pythons ({supported}); this machine has {', '.join(versions)}")
    command = [FINGERPRINT_EVERY_MODULE, str(ROOT / "tools" / "execute_lessons.py"), str(ROOT / "dlscratch")]
    running = {python: subprocess.Popen([python, "-I", "-c", *command], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True) for python in pythons}
    outputs = {python: process.communicate(timeout=120) for python, process in running.items()}
    for python, (_, err) in outputs.items():
        assert running[python].returncode == 0, f"{python} could not fingerprint dlscratch:\n{err}"
    fingerprints = {python: json.loads(out) for python, (out, _) in outputs.items()}
    first, *others = fingerprints
    for python in others:
        differ = sorted(m for m in fingerprints[first].keys() | fingerprints[python].keys()
                        if fingerprints[first].get(m) != fingerprints[python].get(m))
        assert not differ, f"{first} and {python} fingerprint these modules differently: {', '.join(differ)}"


def test_sync_check_passes():
    result = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, f"tools/sync_repo_url.py --check failed:\n{result.stdout}{result.stderr}"


def _fork(tmp_path, url):
    """A copy of the repository's README, notebooks and tool whose pyproject names ``url``."""
    (tmp_path / "tools").mkdir()
    shutil.copy(TOOL, tmp_path / "tools")
    shutil.copytree(ROOT / "notebooks", tmp_path / "notebooks")
    if (ROOT / "README.md").exists():
        shutil.copy(ROOT / "README.md", tmp_path)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8").replace(URL, url)
    (tmp_path / "pyproject.toml").write_text(text, encoding="utf-8")
    return tmp_path


def _run(root, *args):
    return subprocess.run([sys.executable, str(root / "tools" / "sync_repo_url.py"), *args],
                          capture_output=True, text=True, timeout=60)


def test_sync_rewrites_a_fork_and_is_idempotent(tmp_path):
    root = _fork(tmp_path, "https://github.com/someone/myfork")
    before = {p.name: json.loads(p.read_text(encoding="utf-8")) for p in (root / "notebooks").glob("*.ipynb")}
    checked = _run(root, "--check")
    assert checked.returncode == 1 and "00_backends.ipynb" in checked.stdout, checked.stdout
    assert _run(root).returncode == 0
    for path in (root / "notebooks").glob("*.ipynb"):
        text = path.read_text(encoding="utf-8")
        assert f"colab.research.google.com/github/someone/myfork/blob/main/notebooks/{path.name}" in text
        assert "git+https://github.com/someone/myfork" in text and URL not in text
        old, new = before[path.name], json.loads(text)
        assert len(old["cells"]) == len(new["cells"]) and old["metadata"] == new["metadata"]
        for a, b in zip(old["cells"], new["cells"]):
            assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}, (
                f"{path.name}: the tool changed more than cell sources"
            )
    if (root / "README.md").exists():
        readme = (root / "README.md").read_text(encoding="utf-8")
        assert "github/someone/myfork/blob/main/notebooks/" in readme and "github/dlscratch/dlscratch" not in readme
    snapshot = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    again = _run(root)
    assert again.returncode == 0 and "updated 0 file(s)" in again.stdout
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == snapshot, "a second run changed files"
    assert _run(root, "--check").returncode == 0


def test_sync_without_readme_skips_it_with_a_note(tmp_path):
    root = _fork(tmp_path, URL)
    (root / "README.md").unlink(missing_ok=True)
    result = _run(root, "--check")
    assert result.returncode == 0 and "README.md does not exist yet" in result.stdout


def test_repository_key_is_read_without_tomllib():
    text = '[project]\nname = "x"\n\n[project.urls]\nHomepage = "https://a.org"\nRepository = "https://github.com/o/r.git"\n'
    assert sync._read_repository_key(text) == "https://github.com/o/r.git"
    assert sync._read_repository_key('[project]\nname = "x"\n') is None
    assert sync._read_repository_key((ROOT / "pyproject.toml").read_text(encoding="utf-8")) == URL


def test_non_github_url_is_refused_with_a_reason():
    with pytest.raises(SystemExit, match="github.com/<owner>/<repo>"):
        sync.colab_base("https://gitlab.com/o/r")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_quick_mode_is_on_only_for_dlscratch_quick_1(path):
    # The README's full-mode command sets DLSCRATCH_QUICK=0: a lesson must read that as the full mode.
    text = "".join("".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"])
    reads = re.findall(r"^.*DLSCRATCH_QUICK.*$", text, flags=re.M)
    assert all('os.environ.get("DLSCRATCH_QUICK") == "1"' in line for line in reads), reads


@pytest.mark.parametrize("path", NOTEBOOKS + sorted((ROOT / "student").glob("*.ipynb")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_cell_has_a_valid_id_of_its_own(path):
    """nbformat 4.5's cell ids: present, 1-64 letters, digits, '-' or '_', and unique in the notebook (JupyterLab,
    nbgrader and the failures of ``test_exercise_proofs`` name cells by them); nbformat's own validator agrees."""
    import nbformat

    notebook = json.loads(path.read_text(encoding="utf-8"))
    assert (notebook["nbformat"], notebook["nbformat_minor"]) >= (4, 5), f"{path.name}: cell ids need nbformat 4.5"
    ids = [cell.get("id") for cell in notebook["cells"]]
    bad = [(i, cell_id) for i, cell_id in enumerate(ids) if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", cell_id or "")]
    assert not bad, f"{path.name}: cells without a valid id: {bad}"
    repeated = sorted({cell_id for cell_id in ids if ids.count(cell_id) > 1})
    assert not repeated, f"{path.name}: cell ids used twice: {repeated}"
    nbformat.validate(nbformat.reads(path.read_text(encoding="utf-8"), as_version=4))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_student_edition_keeps_every_cell_id(path):
    """A teacher's notes and nbgrader's gradebook refer to cells by id: the student edition keeps them, in order."""
    student = ROOT / "student" / path.name
    assert [c["id"] for c in _cells(student)] == [c["id"] for c in _cells(path)]
