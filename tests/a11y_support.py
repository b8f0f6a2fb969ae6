"""The example portal as a reader meets it, for the web's own measures (tests/test_a11y.py: axe-core in Debian's
Chromium; tests/test_lighthouse.py: Lighthouse): the bundled Czech example notes (``examples/portal.yaml`` as it
is, words only: no page differs by the model) with an answer provider (a stand-in on 127.0.0.1 that quotes the
passages, tests/answer_support.py), served by the real ``notes-portal serve``; every page type, and where each is.

axe-core and Lighthouse are npm packages pinned in ``tests/a11y/package.json`` (``npm ci --prefix tests/a11y``;
.ci/run installs them), as Chromium is Debian's: without them the tests skip with the reason (fail in CI).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from tests.answer_support import FakeChat
from tests.conftest import PROJECT, serve, unavailable

NODE_MODULES = PROJECT / "tests" / "a11y" / "node_modules"
AXE = NODE_MODULES / "axe-core" / "axe.min.js"
LIGHTHOUSE = NODE_MODULES / "lighthouse" / "cli" / "index.js"
INSTALL = "npm ci --prefix tests/a11y (Debian package npm)"
QUERY = "teh tarik mléko"

# every page type a reader meets, by where it is on the example portal
PAGES = {
    "home": "/index.html",
    "note with math": "/notes/projekty/elektronika/delic-napeti.html",
    "note with a diagram": "/notes/devops/ci-pipeline.html",
    "toc": "/notes/index.html",
    "tags": "/tags/index.html",
    "tag": "/tags/recepty/index.html",
    "search results": f"/search?q={quote(QUERY)}",
    "ask answer": f"/search?q={quote(QUERY)}&ask=1",
    "graph": "/graph-notes.html",
    "broken links": "/broken-links.html",
    "404": "/no/such/page.html",
}


def require_axe() -> Path:
    if not AXE.is_file():
        unavailable(f"axe-core is not installed ({AXE.relative_to(PROJECT)}): {INSTALL}")
    return AXE


def require_lighthouse() -> Path:
    if not LIGHTHOUSE.is_file():
        unavailable(f"Lighthouse is not installed ({LIGHTHOUSE.relative_to(PROJECT)}): {INSTALL}")
    if shutil.which("node") is None:
        unavailable("node is not installed (Debian package nodejs)")
    return LIGHTHOUSE


def example_portal(work: Path) -> Iterator[str]:
    """The Czech example portal built in ``work`` and served; yields its base URL."""
    shutil.copytree(PROJECT / "examples", work / "examples", ignore=shutil.ignore_patterns(".portal"))
    config = work / "examples" / "portal.yaml"
    with FakeChat("ollama") as chat:
        text = config.read_text(encoding="utf-8").replace("provider: local ", "provider: none  ")
        config.write_text(text + chat.yaml(timeout_s=10), encoding="utf-8")
        subprocess.run([sys.executable, "-m", "builder.cli", "build", "--config", str(config)], check=True,
                       capture_output=True, cwd=PROJECT)
        yield from serve(config, "--no-mcp")


def violations(page) -> list[str]:
    """axe-core's violations of the page as it is now: ``rule (impact): where`` each."""
    page.add_script_tag(content=AXE.read_text(encoding="utf-8"))
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations'],"
                          " rules: {'target-size': {enabled: true}}})).violations")
    return [f"{v['id']} ({v['impact']}): {', '.join(str(n['target']) for n in v['nodes'][:3])}" for v in found]
