"""The course as a website (tools/build_site.py): it builds without executing or fetching anything, every link
inside it resolves, and headless Chromium reads every page without an error, each lesson with its figures loaded
and its math typeset. CI installs Chromium and sets DLSCRATCH_REQUIRE_BROWSER=1, so there the browser's test
runs or fails; elsewhere it needs a Chromium on the PATH."""

import functools
import http.server
import os
import re
import threading
from html.parser import HTMLParser
from urllib.parse import unquote, urldefrag, urlsplit

import nbformat
import pytest
from browser import Chromium, chromium_path
from repo_tools import load_tool

pytestmark = pytest.mark.site
build_site = load_tool("build_site")
needs_chromium = pytest.mark.skipif(
    chromium_path() is None and os.environ.get("DLSCRATCH_REQUIRE_BROWSER") != "1",
    reason="no Chromium on the PATH (Debian: apt-get install chromium); CI installs it")
#: run in every page once it has loaded and MathJax has typeset: what a reader would see. MathJax typesets at the end
#: of its startup, which on a slow machine ends after the load event, so the page is read at that end ("End").
CHECK = r"""new Promise(done => {
    const report = () => {
        const prose = [...document.querySelectorAll(".jp-RenderedMarkdown")].map(cell => cell.innerText).join("\n");
        done({
            figures: [...document.querySelectorAll(".jp-OutputArea img")].filter(i => i.naturalWidth > 0).length,
            broken: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src.slice(0, 80)),
            math: document.querySelectorAll(".MathJax, .MathJax_Display").length,
            mathErrors: document.querySelectorAll(".MathJax_Error, merror").length,
            rawTeX: (prose.match(/\$[^$\n]{0,80}\\[a-zA-Z]+/g) || []).slice(0, 3),
        });
    };
    if (window.MathJax && MathJax.Hub) MathJax.Hub.Register.StartupHook("End", () => { report(); }); else report();
})"""


class Links(HTMLParser):
    """A page's ids and names (its anchors) and the addresses it links to or loads."""

    def __init__(self):
        super().__init__()
        self.anchors, self.links, self.loads = set(), [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.anchors.update(attrs[key] for key in ("id", "name") if attrs.get(key))
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        elif attrs.get("src") or (tag == "link" and attrs.get("href")):
            self.loads.append(attrs.get("src") or attrs["href"])


@functools.cache
def parsed(path):
    links = Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    return out, build_site.build(out)


def is_outside(address):
    return bool(re.match(r"^[a-z][a-z0-9+.-]*:|^//", address, re.I))


def test_the_site_holds_the_front_pages_every_lesson_and_the_docs(site):
    _, pages = site
    lessons = [p for p in pages if p.startswith("lessons/")]
    assert pages[:2] == ["index.html", "syllabus.html"]
    assert [p.split("/")[1][:2] for p in lessons] == [f"{k:02d}" for k in range(len(build_site.lessons()))]
    assert len(lessons) >= 14 and "docs/gpu-runs/2026-11-28/README.html" in pages


def test_every_link_inside_the_site_resolves_to_a_file_and_an_anchor(site):
    out, pages = site
    broken = []
    for page in pages:
        path = out / page
        for address in parsed(path).links + parsed(path).loads:
            if is_outside(address):
                continue
            target, fragment = urldefrag(address)
            target = urlsplit(target).path  # MathJax's ?config=...
            target_path = (path.parent / unquote(target)).resolve() if target else path
            anchors = parsed(target_path).anchors if target_path.suffix == ".html" and target_path.is_file() else ()
            if not target_path.is_file():
                broken.append(f"{page}: {address} (no such file)")
            elif fragment and anchors and not {fragment, unquote(fragment)} & anchors:  # as a browser looks it up
                broken.append(f"{page}: {address} (no such anchor)")
    assert not broken, "\n".join(broken)


def test_no_page_loads_anything_from_the_network(site):
    out, pages = site
    fetched = [f"{page}: {address}" for page in pages for address in parsed(out / page).loads if is_outside(address)
               and not address.startswith("data:")]
    assert not fetched, "\n".join(fetched)


@pytest.fixture(scope="module")
def served(site):
    """The site on a local HTTP server, as a learner's `python -m http.server` would serve it."""
    out, pages = site

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(out)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", pages
    server.shutdown()


def stored_figures(notebook):
    return sum(1 for cell in notebook.cells if cell.cell_type == "code" for output in cell.get("outputs", [])
               if "image/png" in output.get("data", {}))


def has_math(notebook):
    return any(re.search(r"\$[^$\n]+\$", cell.source) for cell in notebook.cells if cell.cell_type == "markdown")


@needs_chromium
def test_chromium_reads_every_page_without_an_error_with_its_figures_and_its_math(served):
    base, pages = served
    lessons = {build_site.page_of(path): nbformat.read(path, as_version=4) for path in build_site.lessons()}
    problems, figures = [], 0
    with Chromium() as browser:
        for page in pages:
            seen = browser.visit(f"{base}/{page}", CHECK)
            result = seen.result
            problems += [f"{page}: {error}" for error in seen.errors]
            problems += [f"{page}: image not loaded: {src}" for src in result["broken"]]
            if result["mathErrors"] or result["rawTeX"]:
                problems.append(f"{page}: math not typeset: {result['mathErrors']} errors, raw {result['rawTeX']}")
            if page in lessons:
                expected = stored_figures(lessons[page])
                figures += result["figures"]
                if result["figures"] != expected:
                    problems.append(f"{page}: {result['figures']} figures shown, {expected} stored")
                if has_math(lessons[page]) and not result["math"]:
                    problems.append(f"{page}: its Markdown holds math, but nothing was typeset")
    assert not problems, "\n".join(problems)
    assert figures >= 29  # every figure that the lessons store, each one shown
