"""axe-core finds no violation on any page type of the portal (issue 45): home, a note with math, a note with a
diagram, the table of contents, tags, search results, an answer, the link graph, broken links and 404 — on a
desktop (1280×900) and a phone (390×844), light and dark; and in the search box's drop-down and the phone's
drawer, open. axe-core 4.14 (every rule it runs by default: WCAG 2.x A and AA and its best practices; and
WCAG 2.2's target size, which Lighthouse asks for on a phone) is injected into Debian's Chromium; the figures
are in docs/QUALITY.md ("Accessibility and weight").

    python -m pytest -n 0 -m slow tests/test_a11y.py      # after: npm ci --prefix tests/a11y
"""

from __future__ import annotations

import json

import pytest

from tests.a11y_support import PAGES, QUERY, example_portal, require_axe, violations
from tests.conftest import require_browser

pytestmark = pytest.mark.slow

VIEWS = {"desktop": {"width": 1280, "height": 900}, "phone": {"width": 390, "height": 844}}


@pytest.fixture(scope="module")
def portal(tmp_path_factory):
    require_browser()
    require_axe()
    yield from example_portal(tmp_path_factory.mktemp("a11y"))


def _context(browser, view: str, scheme: str):
    # bypass_csp: the test injects axe-core as an inline script, which the portal's CSP forbids (rightly)
    return browser.new_context(viewport=VIEWS[view], color_scheme=scheme, bypass_csp=True,
                               device_scale_factor=1, is_mobile=view == "phone", has_touch=view == "phone")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("view", list(VIEWS))
def test_no_page_type_has_an_axe_violation(portal, browser, view, scheme):
    context = _context(browser, view, scheme)
    found = {}
    try:
        for kind, path in PAGES.items():
            page = context.new_page()
            page.goto(portal + path, wait_until="networkidle")
            if kind == "note with a diagram":
                page.locator(".mermaid-diagram svg").first.wait_for(timeout=20_000)  # drawn, as a reader sees it
            if kind == "ask answer":
                assert page.locator(".answer.answer-answered").count() == 1, "the stand-in's answer is shown"
            if kind == "404":
                assert page.locator("h1").inner_text() == "Stránka nenalezena"
            found[kind] = violations(page)
            page.close()
    finally:
        context.close()
    print(json.dumps({f"{view} {scheme}": {k: len(v) for k, v in found.items()}}, ensure_ascii=False))
    assert {kind: v for kind, v in found.items() if v} == {}


@pytest.mark.parametrize("view", list(VIEWS))
def test_the_search_drop_down_and_the_drawer_open_have_no_axe_violation(portal, browser, view):
    context = _context(browser, view, "light")
    try:
        page = context.new_page()
        page.goto(portal + "/index.html", wait_until="networkidle")
        page.locator("header form.search input[name=q]").fill(QUERY)
        page.locator("header .search-results a.search-all").wait_for(timeout=10_000)
        assert "\n".join(violations(page)) == ""
        page.keyboard.press("Escape")
        if view == "phone":
            page.locator(".nav-toggle").click()
            page.locator("html.nav-open").wait_for(timeout=5_000)
            assert "\n".join(violations(page)) == ""
    finally:
        context.close()
