"""Every script in ``tools/`` answers ``--help`` with its usage and refuses an unknown flag (argparse's exit 2),
and neither changes a file.

Each run happens in a copy of the files the tools read and write (``COPIED``), so a tool that ignored its
arguments and went to work would change the copy, not the repository, and the test would see it.
"""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = sorted((ROOT / "tools").glob("*.py"))
#: what the tools read and write: the lessons, the student edition, the README, CuPy's table, the URL's home
COPIED = ["tools", "notebooks", "student", "README.md", "SYLLABUS.md", "pyproject.toml",
          "dlscratch/bench/strict_cupy/cupy_api.py"]
TIMEOUT = 30  # seconds: --help answers before any heavy import or any work


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    """A folder holding ``COPIED`` as they are in the repository."""
    folder = tmp_path_factory.mktemp("repository")
    for name in COPIED:
        source, target = ROOT / name, folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            shutil.copy2(source, target)
    return folder


def fingerprints(folder):
    """``{path relative to folder: (mtime in ns, sha256)}`` of every file under ``folder``."""
    return {path.relative_to(folder): (path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
            for path in sorted(folder.rglob("*")) if path.is_file()}


def run_tool(copy, tool, *args):
    """Run the copy's ``tools/<tool>`` with ``args``; the finished process, and whether the copy's files changed."""
    before = fingerprints(copy)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(copy / "tools" / tool.name), *args], cwd=copy, env=env,
                          capture_output=True, text=True, timeout=TIMEOUT)
    after = fingerprints(copy)
    return done, sorted(str(path) for path in before.keys() | after.keys() if before.get(path) != after.get(path))


def test_every_tool_is_a_script():
    """A module in tools/ without a command line would meet --help with silence."""
    for tool in TOOLS:
        assert 'if __name__ == "__main__":' in tool.read_text(encoding="utf-8"), f"{tool.name} has no command line"


@pytest.mark.parametrize("tool", TOOLS, ids=lambda path: path.stem)
def test_help_prints_the_usage_and_changes_nothing(copy, tool):
    done, changed = run_tool(copy, tool, "--help")
    assert done.returncode == 0, f"{tool.name} --help exited {done.returncode}:\n{done.stderr[-2000:]}"
    assert done.stdout.startswith(f"usage: {tool.name}"), f"{tool.name} --help printed no usage:\n{done.stdout}"
    assert not changed, f"{tool.name} --help changed {changed}"


@pytest.mark.parametrize("tool", TOOLS, ids=lambda path: path.stem)
def test_an_unknown_flag_is_refused_and_changes_nothing(copy, tool):
    done, changed = run_tool(copy, tool, "--no-such-flag")
    assert done.returncode == 2, f"{tool.name} --no-such-flag exited {done.returncode}, not 2:\n{done.stdout}"
    assert f"usage: {tool.name}" in done.stderr and "--no-such-flag" in done.stderr, done.stderr[-2000:]
    assert not changed, f"{tool.name} --no-such-flag changed {changed}"
