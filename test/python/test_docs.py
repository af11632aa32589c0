"""The examples of README.md and docs/ run, and the site builds (issue 74).

Every ```python block runs, in its page's order, in one process per page, in a fresh folder: a
block sees what the blocks above it on the same page defined. One test case per page: the
quick tier runs the first two (README.md and getting started), the slow tier, which CI runs,
every page (conftest.py's rule for parametrized tests). A block not meant to run has
``<!-- no-run -->`` (optionally ``<!-- no-run: why -->``) on the line before its fence. An
example that drifts from the code fails here instead of misleading a reader; a broken link or
anchor fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
NO_RUN = re.compile(r"^\s*<!--\s*no-run\b.*-->\s*$")
PAGE_SECONDS = 600


@dataclass(frozen=True)
class Block:
    page: str
    line: int        # the opening fence's line, 1-based
    lang: str
    code: str
    runs: bool


def blocks(text: str, page: str = "<text>") -> list[Block]:
    """The fenced code blocks of a Markdown text, with whether each is to run."""
    lines = text.splitlines()
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m["indent"], m["fence"], m["info"].strip()
        body, j = [], i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence)
                                      and lines[j].strip().strip(fence[0]) == ""):
            body.append(lines[j][len(indent):] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        lang = info.split()[0].lower() if info else ""
        previous = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        found.append(Block(page, i + 1, lang, "\n".join(body) + "\n",
                           lang in ("python", "py") and not NO_RUN.match(previous)))
        i = j + 1
    return found


def pages() -> list[Path]:
    return [ROOT / "README.md"] + sorted((ROOT / "docs").rglob("*.md"))


# Runs a page's blocks in order in one namespace; a failure names the block's page and line.
# PyPI's torchvision (the ecosystem extra) does not load beside the CPU torch; conftest.py patches
# it for the tests' own processes, and this does the same for the pages' process.
RUNNER = """
import json, sys, traceback
from lowerkit.zoo.ecosystem import patch_torchvision
patch_torchvision()
namespace = {"__name__": "__main__"}
for block in json.load(open(sys.argv[1])):
    try:
        exec(compile(block["code"], f"{block['page']}:{block['line']}", "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        print(f"FAILED: the block at {block['page']}:{block['line']}", file=sys.stderr)
        sys.exit(1)
"""


def run_blocks(runnable: list[Block], folder: Path, timeout: float = PAGE_SECONDS):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_blocks.json").write_text(json.dumps(
        [{"page": b.page, "line": b.line, "code": b.code} for b in runnable]))
    (folder / "_runner.py").write_text(RUNNER)
    return subprocess.run([sys.executable, "_runner.py", "_blocks.json"], cwd=folder,
                          capture_output=True, text=True, timeout=timeout)


PAGES_WITH_CODE = [str(p.relative_to(ROOT)) for p in pages()
                   if any(b.runs for b in blocks(p.read_text()))]


@pytest.mark.timeout(PAGE_SECONDS + 60)
@pytest.mark.parametrize("page", PAGES_WITH_CODE)
def test_the_python_blocks_of_a_page_run(page, tmp_path):
    runnable = [b for b in blocks((ROOT / page).read_text(), page) if b.runs]
    done = run_blocks(runnable, tmp_path)
    assert done.returncode == 0, f"{page}:\n{done.stdout[-4000:]}\n{done.stderr[-8000:]}"


def test_every_python_block_runs_or_says_it_does_not():
    """Each Python block is run by the test above or marked; the README's tour is run."""
    every = [b for p in pages() for b in blocks(p.read_text(), str(p.relative_to(ROOT)))]
    python = [b for b in every if b.lang in ("python", "py")]
    assert [b for b in python if b.page == "README.md" and b.runs], "README's tour no longer runs"
    skipped = [f"{b.page}:{b.line}" for b in python if not b.runs]
    # few, each with its reason beside it on the page; a new one should be made to run instead
    assert len(skipped) <= 3, f"blocks marked no-run: {skipped}"
    # a block whose language is missing hides Python from this test
    bare = [f"{b.page}:{b.line}" for b in every
            if not b.lang and re.search(r"^\s*(import |from \w+ import |lowerkit\.compile\()",
                                        b.code, re.M)]
    assert not bare, f"code blocks that look like Python but do not say so: {bare}"


def test_the_readme_is_a_page_that_starts_with_the_two_commands():
    """A newcomer's first screen: the main job and the whole suite, then a page, not a notebook
    (the figures and the prose live in docs/)."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move the detail into docs/"
    assert lines[0] == "```bash" and lines[3] == "```", lines[:4]
    assert lines[1].startswith("scripts/setup && .venv/bin/lowerkit run python/lowerkit/zoo/vision.py:resnet18 --check")
    command = lines[2].split("#")[0].strip()
    assert command in ("scripts/test", "scripts/test --quick"), lines[2]
    # .ci/run runs exactly that command; the slow tier is scripts/test's to turn on (it does
    # unless --quick is asked), and the README names the other command beside it
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert ci[-1] == f"exec {command}", ci
    assert "LOWERKIT_SLOW" not in "\n".join(ci), ci
    script = [line.strip() for line in (ROOT / "scripts" / "test").read_text().splitlines()
              if not line.lstrip().startswith("#")]
    full = [line for line in script if " -m pytest " in line and "LOWERKIT_SLOW=1 " in line]
    assert 'tier=full' in script and full, "scripts/test runs no slow tier by default"
    # every test in one of them: the Ray tests in a pytest of their own, the rest in another,
    # each narrowed only by a marker expression the caller passed ($also is empty without one)
    marks = sorted(" ".join(m.strip('"').replace("$also", "")
                            for m in re.findall(r' -m ("[^"]+"|\w+)', line)
                            if m != "pytest") for line in full)
    assert marks in ([""], ["not ray", "ray"]), marks
    assert all("$also" in line for line in full) <= ('also="${marks:+ and ($marks)}"' in script)
    other = "`scripts/test` without `--quick`" if command.endswith("--quick") else "`scripts/test --quick`"
    assert other in "\n".join(lines[4:20]), f"the README does not name {other}"


def test_the_collector_runs_blocks_in_order_and_keeps_marked_ones_out(tmp_path):
    text = ("# t\n\n```python\nx = 2\n```\n\n<!-- no-run -->\n```python\nraise SystemExit(3)\n```\n\n"
            "- in a list:\n\n  ```python\n  assert x == 2\n  y = x + 1\n  ```\n\n"
            "```bash\nfalse\n```\n\n```python\nassert y == 4, y\n```\n")
    found = blocks(text, "t.md")
    assert [(b.lang, b.runs) for b in found] == [("python", True), ("python", False),
                                                ("python", True), ("bash", False), ("python", True)]
    done = run_blocks([b for b in found if b.runs], tmp_path)
    assert done.returncode == 1 and "FAILED: the block at t.md:23" in done.stderr
    assert "AssertionError: 3" in done.stderr


def test_the_site_builds_strict(tmp_path):
    """``mkdocs build --strict``: every nav page, link and anchor resolves, the API pages'
    docstrings parse, and the generated pages (CLI, passes) build from the code."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    if mkdocs is None:
        pytest.fail("mkdocs is not installed: pip install -e '.[docs]' (scripts/setup does)")
    done = subprocess.run([mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert done.returncode == 0, done.stderr[-8000:]
    site = tmp_path / "site"
    assert "lowerkit bench" in (site / "reference" / "cli" / "index.html").read_text()
    assert "fence-reductions" in (site / "design" / "passes" / "index.html").read_text()
    assert "search" in (site / "index.html").read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_served_site_navigates_and_searches_in_a_browser(tmp_path):
    """``mkdocs serve``, opened in Debian's chromium by Playwright (as test_graph_view.py does):
    the navigation leads to a page and the search finds one; what a build cannot show."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("needs Debian's chromium: apt-get install -y chromium")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs pip install playwright")
    import urllib.request

    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen([str(Path(sys.executable).parent / "mkdocs"), "serve", "--no-livereload",
                               "-a", f"127.0.0.1:{port}"], cwd=ROOT, stdout=log, stderr=log,
                              env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    try:
        for _ in range(240):  # the first build runs the hooks: a few seconds, more on a busy host
            try:
                urllib.request.urlopen(url, timeout=2)
                break
            except OSError:
                assert server.poll() is None, (tmp_path / "serve.log").read_text()[-4000:]
                __import__("time").sleep(0.5)
        with sync_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(url)
            assert page.title().startswith("lowerkit")
            page.locator("nav.md-nav--primary a", has_text="Getting started").first.click()
            page.wait_for_url("**/getting-started/")
            assert page.locator("article h1").first.inner_text().strip().startswith("Getting started")
            page.locator("input.md-search__input").click()  # in the header at this width
            page.keyboard.type("FileCheck")
            result = page.locator(".md-search-result__item").first
            result.wait_for(timeout=30_000)
            assert "FileCheck" in page.locator(".md-search-result").inner_text()
            result.locator("a").first.click()
            page.wait_for_load_state()
            assert page.url != url + "getting-started/"
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()
