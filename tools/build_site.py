"""Build the course as a static website: the lessons with their stored outputs (figures, tables, math), the
README and SYLLABUS as its front pages, and the docs pages beside them.

    python tools/build_site.py && python -m http.server -d site    # then open http://127.0.0.1:8000/
    python tools/build_site.py --out DIR

Nothing is executed and nothing is fetched, at build time or when a page is read: the lessons are rendered as
they are stored (``tools/execute_lessons.py`` made their outputs), figures are embedded in the pages, and the
math is typeset by a copy of MathJax 2.7 from the ``jupyter-server-mathjax`` package, served beside the pages.
A link to a file that is not a page (library code, the student edition) points to the repository on GitHub.
``tests/test_site.py`` builds the site and reads every page in headless Chromium.
"""

import argparse
import html
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import urldefrag

import nbformat
from nbconvert import HTMLExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sync_repo_url import repository_url  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MATHJAX = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"
FRONT = {"README.md": "index.html", "SYLLABUS.md": "syllabus.html"}
STYLE = """<link rel="icon" href="data:,">
<style>
.course-nav { font: 14px/1.6 system-ui, sans-serif; padding: 8px 16px; border-bottom: 1px solid #ddd;
              background: #fafafa; display: flex; flex-wrap: wrap; gap: 4px 14px; align-items: center; }
.course-nav a { text-decoration: none; } .course-nav .here { font-weight: bold; }
.course-nav .step { margin-left: auto; }
</style>"""


def lessons():
    return sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def docs_pages():
    return sorted((ROOT / "docs").rglob("*.md"))


def page_of(source):
    """The site path (relative to the site's root) of repository file ``source``, or None if it is no page."""
    relative = source.relative_to(ROOT).as_posix()
    if relative in FRONT:
        return FRONT[relative]
    if source.parent == ROOT / "notebooks" and re.fullmatch(r"\d\d_\w+\.ipynb", source.name):
        return f"lessons/{source.stem}.html"
    if relative.startswith("docs/") and source.suffix == ".md":
        return relative[:-3] + ".html"
    return None


def title_of(source):
    """A lesson's or page's first heading, without its Markdown."""
    text = source.read_text(encoding="utf-8")
    if source.suffix == ".ipynb":
        text = next((c.source for c in nbformat.reads(text, as_version=4).cells if c.cell_type == "markdown"), "")
    heading = re.search(r"^#+\s+(.+)$", text, re.M)
    return re.sub(r"[`*_]", "", heading.group(1)).strip() if heading else source.stem


def rewrite_links(page_html, source, site_path, repository, copies):
    """Point the page's relative links where the site has them: another page, a docs file copied beside the
    pages (added to ``copies``), or the file on GitHub. An image from another site (a Colab badge) becomes its
    alt text, so that a page fetches nothing."""
    depth = site_path.count("/")
    up = "../" * depth

    def rewrite(match):
        attribute, target = match.group(1), html.unescape(match.group(2))
        if re.match(r"^[a-z][a-z0-9+.-]*:|^#|^//", target, re.I) or target.startswith(up + "mathjax/"):
            return match.group(0)
        path, fragment = urldefrag(target)
        fragment = f"#{fragment}" if fragment else ""
        linked = (source.parent / path).resolve()
        if not linked.is_relative_to(ROOT) or not path:
            return match.group(0)
        if linked.is_dir() and (linked / "README.md").exists():
            linked = linked / "README.md"
        page = page_of(linked) if linked.is_file() else None
        relative = linked.relative_to(ROOT).as_posix()
        if page:
            new = up + page + fragment
        elif linked.is_file() and relative.startswith("docs/"):
            copies.add(linked)
            new = up + relative + fragment
        else:
            kind = "tree" if linked.is_dir() else "blob"
            new = f"{repository}/{kind}/main/{relative}{fragment}"
        return f'{attribute}="{html.escape(new, quote=True)}"'

    page_html = re.sub(r'<img\b[^>]*\bsrc="(?:https?:)?//[^"]*"[^>]*>',
                       lambda m: html.escape(html.unescape(re.search(r'\balt="([^"]*)"', m.group(0)).group(1))
                                             if re.search(r'\balt="', m.group(0)) else "image"), page_html)
    return re.sub(r'\b(href|src)="([^"]*)"', rewrite, page_html)


def github_anchors(page_html):
    """Give every heading the anchor GitHub gives it too (``#keeping-the-lessons-honest``), beside nbconvert's
    own id, so that the README's and the lessons' links into a page work on the site as they do on GitHub."""
    taken = {}

    def add(match):
        opening, _, own_id, content, closing = match.groups()
        text = html.unescape(re.sub(r"<a class=\"anchor-link\".*?</a>|<[^>]+>", "", content))
        slug = re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")
        count = taken.get(slug, 0)
        taken[slug] = count + 1
        slug = f"{slug}-{count}" if count else slug
        extra = f'<a id="{html.escape(slug, quote=True)}"></a>' if slug != own_id else ""
        return f"{opening}{extra}{content}{closing}"

    return re.sub(r'(<h([1-6]) id="([^"]*)">)(.*?)(</h\2>)', add, page_html, flags=re.S)


def navigation(site_path, site_lessons):
    """The bar at the top of every page: the front pages, every lesson, and the previous and next lesson."""
    up = "../" * site_path.count("/")
    links = [(up + "index.html", "Home"), (up + "syllabus.html", "Syllabus")]
    links += [(up + page, page.split("/")[1][:2]) for page, _ in site_lessons]
    items = [f'<a class="{"here" if up + site_path == href else ""}" href="{href}" title="{html.escape(title)}">'
             f'{html.escape(label)}</a>' for (href, label), title in
             zip(links, ["The course", "The course plan", *(title for _, title in site_lessons)])]
    pages = [page for page, _ in site_lessons]
    if site_path in pages:
        k = pages.index(site_path)
        step = []
        if k > 0:
            step.append(f'<a href="{up + pages[k - 1]}">&larr; previous</a>')
        if k + 1 < len(pages):
            step.append(f'<a href="{up + pages[k + 1]}">next &rarr;</a>')
        items.append(f'<span class="step">{" · ".join(step)}</span>')
    return f'<nav class="course-nav">{"".join(items)}</nav>'


def render(source, exporter):
    """``source`` (a notebook, or a Markdown file as a notebook of one cell) as one HTML page."""
    if source.suffix == ".ipynb":
        notebook = nbformat.read(source, as_version=4)
    else:
        notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source.read_text("utf-8"))])
    notebook.metadata.setdefault("title", title_of(source))
    body, _ = exporter.from_notebook_node(notebook, resources={"metadata": {"path": str(source.parent)}})
    return body


def build(out):
    """Write the site into ``out`` (emptied first); returns the list of pages written, relative to ``out``."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    exporter = HTMLExporter(template_name="site_template", extra_template_basedirs=[str(Path(__file__).parent)],
                            embed_images=True)
    repository = repository_url(ROOT / "pyproject.toml")
    site_lessons = [(page_of(path), title_of(path)) for path in lessons()]
    sources = [ROOT / name for name in FRONT] + lessons() + docs_pages()
    copies, written = set(), []
    for source in sources:
        site_path = page_of(source)
        exporter.mathjax_url = "../" * site_path.count("/") + MATHJAX
        page = rewrite_links(github_anchors(render(source, exporter)), source, site_path, repository, copies)
        bar = navigation(site_path, site_lessons)
        page = re.sub(r"(<body[^>]*>)", lambda m, bar=bar: m.group(1) + bar, page, count=1)
        page = page.replace("</head>", STYLE + "\n</head>", 1)
        target = out / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(page, encoding="utf-8")
        written.append(site_path)
    for source in sorted(copies):
        target = out / source.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    copy_mathjax(out / "mathjax")
    return written


def copy_mathjax(target):
    """MathJax 2.7 as ``jupyter-server-mathjax`` ships it (10 MB, its menus' translations included)."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        sys.exit("the site's math needs MathJax from the jupyter-server-mathjax package: "
                 "pip install -r requirements.txt")
    static = Path(jupyter_server_mathjax.__file__).parent / "static"
    shutil.copytree(static, target)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "site", help="the site's folder (default: site/)")
    args = parser.parse_args(argv)
    pages = build(args.out)
    print(f"{len(pages)} pages in {args.out}: serve them with `python -m http.server -d {args.out}` and open "
          "http://127.0.0.1:8000/ (as files, the math is not typeset: MathJax then looks for fonts it lacks)")


if __name__ == "__main__":
    main()
