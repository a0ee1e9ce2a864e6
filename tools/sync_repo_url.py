"""Write the repository's URL, kept once in pyproject.toml, wherever the course repeats it.

The URL is ``[project.urls] Repository`` in ``pyproject.toml``. From it this script rewrites
- the "Open in Colab" links in ``README.md``,
- the "Open in Colab" link in the first cell of every ``notebooks/*.ipynb`` (pointing at that notebook),
- the ``pip install git+<URL>`` line of every notebook's setup cell.

    python tools/sync_repo_url.py           # rewrite what is out of date
    python tools/sync_repo_url.py --check   # list what is out of date; exit 1 if anything is

Notebooks are edited as JSON: only the ``source`` of the cells concerned changes. Running it
twice changes nothing the second time.
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COLAB = "https://colab.research.google.com/github"
# A Colab link to a notebook of some GitHub repository: group 1 is the notebook's file name.
COLAB_LINK = re.compile(re.escape(COLAB) + r"/[^/\s)\"'\]]+/[^/\s)\"'\]]+/blob/[^/\s)\"'\]]+/notebooks/([^/\s)\"'\]]+)")
# `pip install ... git+URL` (as %pip or !pip): group 1 is everything before the URL.
PIP_GIT = re.compile(r"(pip install\b[^\n]*?git\+)[^\s\"']+")


def repository_url(pyproject):
    """``[project.urls] Repository`` from ``pyproject`` (a Path), without a trailing ``/`` or ``.git``."""
    text = pyproject.read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: read the one key we need
        url = _read_repository_key(text)
    else:
        url = tomllib.loads(text).get("project", {}).get("urls", {}).get("Repository")
    if not url:
        raise SystemExit(f"sync_repo_url: no [project.urls] Repository in {pyproject.name}; add one")
    return url.strip().rstrip("/").removesuffix(".git")


def _read_repository_key(text):
    section = re.search(r"^\[project\.urls\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if section is None:
        return None
    key = re.search(r"^\s*Repository\s*=\s*[\"']([^\"']+)[\"']", section.group(1), re.M)
    return key.group(1) if key else None


def colab_base(url):
    """``https://colab.research.google.com/github/<owner>/<repo>/blob/main/notebooks`` for a GitHub URL."""
    match = re.fullmatch(r"https?://github\.com/([^/\s]+)/([^/\s]+)", url)
    if match is None:
        raise SystemExit(
            f"sync_repo_url: {url!r} is not a https://github.com/<owner>/<repo> URL, the only kind Colab opens"
        )
    owner, repo = match.groups()
    return f"{COLAB}/{owner}/{repo}/blob/main/notebooks"


def sync_readme(text, base):
    """README text with every Colab notebook link pointing at ``base``."""
    return COLAB_LINK.sub(lambda m: f"{base}/{m.group(1)}", text)


def sync_notebook(nb, filename, base, url):
    """Rewrite, in place in the notebook dict ``nb``, the first cell's Colab link and the pip lines."""
    cells = nb.get("cells", [])
    if cells:
        _edit_source(cells[0], lambda s: COLAB_LINK.sub(f"{base}/{filename}", s))
    for cell in cells:
        if cell.get("cell_type") == "code":
            _edit_source(cell, lambda s: PIP_GIT.sub(lambda m: m.group(1) + url, s))


def _edit_source(cell, rewrite):
    source = cell.get("source", "")
    joined = "".join(source) if isinstance(source, list) else source
    new = rewrite(joined)
    if new != joined:
        cell["source"] = new.splitlines(keepends=True) if isinstance(source, list) else new


def _notebook_json(nb):
    """The text nbformat itself writes: sorted keys, one-space indent, UTF-8, final newline."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def planned_changes(root):
    """``{path: new text}`` for every file whose text would change, and notes on what was skipped."""
    url = repository_url(root / "pyproject.toml")
    base = colab_base(url)
    changes, notes = {}, []
    readme = root / "README.md"
    if readme.exists():
        text = readme.read_text(encoding="utf-8")
        if sync_readme(text, base) != text:
            changes[readme] = sync_readme(text, base)
    else:
        notes.append("README.md does not exist yet: skipped")
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        before = json.dumps(nb, sort_keys=True)
        sync_notebook(nb, path.name, base, url)
        if json.dumps(nb, sort_keys=True) != before:
            changes[path] = _notebook_json(nb)
    return url, changes, notes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list out-of-date files; exit 1 if any")
    args = parser.parse_args(argv)
    url, changes, notes = planned_changes(ROOT)
    for note in notes:
        print(f"note: {note}")
    names = [str(path.relative_to(ROOT)) for path in changes]
    if args.check:
        if names:
            print(f"out of date with {url} (run python tools/sync_repo_url.py):")
            print("\n".join(f"  {name}" for name in names))
            return 1
        print(f"up to date with {url}")
        return 0
    for path, text in changes.items():
        path.write_text(text, encoding="utf-8")
    print(f"updated {len(names)} file(s) for {url}" + "".join(f"\n  {name}" for name in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
