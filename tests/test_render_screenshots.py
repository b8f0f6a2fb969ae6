"""The rendered example site in headless Debian chromium (Playwright): layout on a desktop and a
phone, dark mode, the file:// search note; screenshots for docs/screenshots/.

    NOTES_PORTAL_SCREENSHOTS=1 python -m pytest -q tests/test_render_screenshots.py

writes docs/screenshots/*.png (otherwise they go to pytest's tmp_path).
"""

from __future__ import annotations

import os
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, require_browser
from tests.test_render_helpers import EXAMPLES, build_and_render, make_config

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
DOCS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"



@pytest.fixture(autouse=True, scope="module")
def _tools() -> None:
    require_browser()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The example notes rendered and served over HTTP on 127.0.0.1, as the portal will be."""
    tmp = tmp_path_factory.mktemp("shots")
    config = make_config(tmp, {"notes": EXAMPLES}, title="Ukázkové poznámky")
    build_and_render(config)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(config.site.output)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", config.site.output, tmp
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    from playwright import sync_api
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield chromium
        chromium.close()


def shot_dir(tmp: Path) -> Path:
    target = DOCS if os.environ.get("NOTES_PORTAL_SCREENSHOTS") else tmp / "screenshots"
    target.mkdir(parents=True, exist_ok=True)
    return target


def open_page(browser, url: str, *, width: int, height: int, dark: bool = False):
    context = browser.new_context(viewport={"width": width, "height": height}, device_scale_factor=1,
                                  color_scheme="dark" if dark else "light")
    page = context.new_page()
    page.goto(url)
    page.wait_for_load_state("load")
    return context, page


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")


def test_note_page_on_desktop_has_a_side_toc_and_highlighted_code(served, browser):
    base, _, tmp = served
    context, page = open_page(browser, base + "notes/recepty/teh-tarik.html", width=1280, height=1000)
    toc = page.locator("aside.page-toc").bounding_box()
    main = page.locator(".note-main").bounding_box()
    assert toc["x"] > main["x"] + main["width"]  # beside the text, not above it
    assert page.locator(".note-meta .tag").all_inner_texts() == ["#recepty", "#napoje", "#malajsie"]
    assert no_horizontal_scroll(page)
    page.screenshot(path=str(shot_dir(tmp) / "note-desktop.png"))
    context.close()
    context, page = open_page(browser, base + "notes/projekty/sauter-bus.html", width=1280, height=1000)
    assert page.locator("pre.highlight span.k").count() > 0
    assert page.evaluate("getComputedStyle(document.querySelector('pre.highlight span.k')).color") != \
        page.evaluate("getComputedStyle(document.querySelector('pre.highlight')).color")
    context.close()


def test_note_page_on_a_phone_in_dark_mode(served, browser):
    base, _, tmp = served
    context, page = open_page(browser, base + "notes/recepty/teh-tarik.html", width=390, height=844, dark=True)
    assert no_horizontal_scroll(page)
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(21, 23, 26)"
    toc = page.locator("aside.page-toc").bounding_box()
    main = page.locator(".note-main").bounding_box()
    assert toc["y"] < main["y"]  # stacked above the text on a narrow screen
    page.screenshot(path=str(shot_dir(tmp) / "note-phone-dark.png"))
    context.close()


def test_toc_and_tag_pages(served, browser):
    base, _, tmp = served
    context, page = open_page(browser, base + "notes/index.html", width=1280, height=1000)
    assert page.locator("section.toc-dir").count() == 1  # the root's notes …
    assert page.locator("#toc-folders li").count() == 16  # … and the root and 15 folders
    assert no_horizontal_scroll(page)
    page.screenshot(path=str(shot_dir(tmp) / "toc.png"))
    page.click("#toc-folders a[href$='recepty/index.toc.html#dir-recepty']")
    page.wait_for_load_state("load")
    assert page.locator("section.toc-dir h2").all_inner_texts() == ["recepty/", "recepty/napoje/", "recepty/polevky/"]
    assert no_horizontal_scroll(page)
    page.goto(base + "tags/recepty/index.html")
    assert page.locator("a.note-link").all_inner_texts() == [
        "Bryndzové halušky", "Kváskový chléb – můj postup", "Masala chai",
        "Svíčková na smetaně (podle babičky)", "Teh Tarik"]
    page.screenshot(path=str(shot_dir(tmp) / "tag.png"))
    context.close()


def test_search_box_explains_that_search_needs_the_server_from_file(served, browser):
    _, site, _ = served
    context, page = open_page(browser, (site / "notes/recepty/teh-tarik.html").as_uri(), width=1280, height=800)
    offline = page.locator("header .search-offline")
    assert not offline.is_visible()
    page.fill("header form.search input", "čaj")
    page.press("header form.search input", "Enter")
    offline.wait_for(state="visible")
    assert page.url.endswith("teh-tarik.html")  # the form did not navigate to a missing file
    assert "Search needs the server" in offline.inner_text()
    context.close()
