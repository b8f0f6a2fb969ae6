"""The static site: note pages, links, wikilinks, attachments, tags, TOC, home, safety, staleness."""

from __future__ import annotations

import re
import json
import subprocess
import sys
from pathlib import Path

import pytest

from builder.core import messages, urls
from builder.render.stamp import site_is_stale
from tests.conftest import copy_config
from tests.render_support import (
    Run,
    build_and_render,
    check_site,
    make_config,
    open_index,
    parse_page,
    stale,
    write,
)


def write_notes(root: Path) -> Path:
    """Notes with links of every kind (good, broken, unsafe, out of scope), an unpublished note, an
    excluded folder and attachments."""
    write(root, "recepty/teh-tarik.md", """
        ---
        title: Teh Tarik
        tags: [recepty, Čaj]
        ---
        # Teh Tarik

        Malajský čaj. Viz [cesta](../cestovani/kuala-lumpur.md) a [[Masala chai|indický čaj]].

        ## Suroviny

        - [x] čaj
        - [ ] kondenzované mléko

        ## Postup

        ```python
        def tahat(konvice):
            return "pěna"
        ```

        | krok | čas |
        |-----:|:----|
        | vaření | 5 min |

        Poznámka pod čarou[^1].

        Tahání
        : přelévání z výšky

        [^1]: Jen doma.
        """)
    write(root, "recepty/napoje/masala-chai.md", """
        ---
        title: Masala chai
        tags: [čaj, recepty]
        ---
        # Masala chai

        Jako [Teh Tarik](../teh-tarik.md#Postup), ale s kořením. Obrázek: ![foto](foto.png)
        Chybí: [meteostanice](../../projekty/meteostanice.md) a ![schéma](chybi.svg).
        Skript: [skript](../../skripty/run.sh), zlo: [stránka](zlo.html), [svg](zle.svg), [[Neexistuje]].
        """)
    (root / "recepty/napoje/foto.png").write_bytes(b"\x89PNG\r\n\x1a\nfake")
    (root / "recepty/napoje/zlo.html").write_text("<script>alert(1)</script>", encoding="utf-8")
    (root / "recepty/napoje/zle.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
                                                  encoding="utf-8")
    (root / "skripty").mkdir()
    (root / "skripty/run.sh").write_text("echo hi\n", encoding="utf-8")
    write(root, "cestovani/kuala-lumpur.md", """
        ---
        title: Kuala Lumpur
        tags: [cestování, Malajsie]
        ---
        # Kuala Lumpur

        Tam jsem pil [[teh-tarik]] poprvé, sekce [[recepty/teh-tarik#Suroviny|suroviny]].
        Soukromé: [deník](../soukrome/denik.md). Mimo zdroj: [x](../../../etc/passwd). [[TOC]]

        ## Jídlo

        > ### Vnořený nadpis
        > Text.
        """)
    write(root, "cestovani/koncept.md", """
        ---
        title: Rozepsané
        published: false
        ---
        # Rozepsané
        """)
    write(root, "soukrome/denik.md", "# Deník\n\nTajné.\n")
    write(root, "index.md", "# Rozcestník\n\n[[Teh Tarik]], [Kuala Lumpur](cestovani/kuala-lumpur).\n")
    return root


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    return write_notes(tmp_path / "notes")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Run]:
    """The notes built and rendered once for the module, and what that build did."""
    home = tmp_path_factory.mktemp("render")
    config = make_config(home, {"notes": write_notes(home / "notes")}, extra="    exclude: ['soukrome/**']\n")
    return home, build_and_render(config)


@pytest.fixture
def site(template: tuple[Path, Run], tmp_path: Path):
    """A copy of the template, with the template's build (the first) as its own."""
    home, run = template
    config = copy_config(home, tmp_path)
    return config, run, config.site.output


def page(site: Path, source: str, path: str):
    return parse_page(site / urls.site_file(urls.note_url(source, path)))


def anchors_of(doc, css_class: str | None = None) -> list[tuple[str, str]]:
    return [(a.get("href"), "".join(a.itertext())) for a in doc.iter("a")
            if css_class is None or css_class in (a.get("class") or "").split()]


def body_of(doc):
    return next(d for d in doc.iter("div") if d.get("class") == "note-body")


def test_urls_are_readable_and_the_root_index_note_does_not_hide_the_toc():
    assert urls.note_url("notes", "recepty/teh-tarik.md") == "notes/recepty/teh-tarik.html"
    assert urls.note_url("notes", "index.md") == "notes/index.md.html"
    assert urls.toc_url("notes") == "notes/index.html"
    assert urls.note_url("notes", "Čaj a mléko.md") == "notes/%C4%8Caj%20a%20ml%C3%A9ko.html"
    assert urls.tag_url("Čaj") == urls.tag_url("čaj") == "tags/caj/index.html"
    assert urls.tag_url("Škola života") == "tags/skola-zivota/index.html"
    assert urls.tag_url("日本").startswith("tags/tag-") and urls.tag_url("日本") == urls.tag_url("日本")
    assert urls.hit_url("notes", "recepty/teh-tarik.md", "postup") == "notes/recepty/teh-tarik.html#postup"
    assert urls.hit_url("notes", "a.md", "") == "notes/a.html"
    # one table of contents per source lists every folder, each at its anchor
    assert urls.folder_toc_url("notes", "recepty") == urls.folder_toc_url("notes", "") == urls.toc_url("notes")
    assert urls.dir_toc_url("notes", "recepty/napoje", "dir-recepty-napoje") == "notes/index.html#dir-recepty-napoje"
    # the source's own pages beside the notes: none can be a note's (source ids hold no dot)
    assert urls.graph_url("notes") == "graph-notes.html"
    assert urls.tree_url("notes") == "static/tree/notes.js"
    assert urls.BROKEN_LINKS_URL == "broken-links.html"
    # where a top-level folder's table of contents once was stays free, so old links do not land on a note
    assert urls.note_url("notes", "recepty/index.toc.md") == "notes/recepty/index.toc.md.html"
    assert urls.note_url("notes", "recepty/napoje/index.toc.md") == "notes/recepty/napoje/index.toc.html"
    assert urls.note_url("notes", "recepty/index.md") == "notes/recepty/index.html"


def test_every_page_parses_and_every_internal_link_resolves(site):
    _, run, out = site
    check = check_site(out)
    expected = {"index.html", "search.html", "404.html", "notes/index.html", "tags/index.html",
                "tags/caj/index.html", "tags/recepty/index.html", "tags/cestovani/index.html",
                "tags/malajsie/index.html", "notes/index.md.html", "notes/recepty/teh-tarik.html",
                "notes/recepty/napoje/masala-chai.html", "notes/cestovani/kuala-lumpur.html",
                "graph-notes.html", "broken-links.html"}
    assert set(check.ids) == expected
    assert check.broken_marked == 7
    assert not list(out.rglob("*.tmp"))


def test_unpublished_and_out_of_scope_notes_get_no_page(site):
    _, _, out = site
    assert not (out / "notes/cestovani/koncept.html").exists()
    assert not (out / "notes/soukrome").exists()
    assert "koncept" not in (out / "sitemap.xml").read_text(encoding="utf-8")
    assert "Rozepsané" not in (out / "notes/index.html").read_text(encoding="utf-8")


def test_note_page_shows_title_tags_source_date_toc_and_backlinks(site):
    _, _, out = site
    doc = page(out, "notes", "recepty/teh-tarik.md")
    assert doc.find(".//title").text == "Teh Tarik · Poznámky"
    h1 = doc.find(".//h1")
    assert (h1.get("id"), h1.text) == ("teh-tarik", "Teh Tarik")
    assert anchors_of(doc, "tag") == [("../../tags/recepty/index.html", "#recepty"),
                                     ("../../tags/caj/index.html", "#Čaj")]
    meta = next(d for d in doc.iter("div") if d.get("class") == "note-meta")
    assert "notes: recepty/teh-tarik.md" in "".join(meta.itertext())
    when = meta.find(".//time")  # the day in the site's language (English here), the ISO date for machines
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", when.get("datetime"))
    assert when.text == messages.day("en", when.get("datetime"))
    toc = next(a for a in doc.iter("aside") if a.get("class") == "page-toc")
    assert anchors_of(toc) == [("#suroviny", "Suroviny"), ("#postup", "Postup")]
    backlinks = next(s for s in doc.iter("section") if s.get("class") == "backlinks")
    assert anchors_of(backlinks) == [("../../notes/cestovani/kuala-lumpur.html", "Kuala Lumpur"),
                                     ("../../notes/recepty/napoje/masala-chai.html", "Masala chai"),
                                     ("../../notes/index.md.html", "Rozcestník")]
    crumbs = next(n for n in doc.iter("nav") if n.get("class") == "breadcrumbs")
    assert ["".join(li.itertext()) for li in crumbs.iter("li")] == ["Home", "notes", "recepty", "Teh Tarik"]



def test_a_page_has_one_h1_whether_or_not_the_body_opens_with_the_title(tmp_path):
    write(tmp_path / "notes", "ddia.md", """
        ---
        title: DDIA – notes
        ---
        # Designing Data-Intensive Applications

        Text.
        """)
    write(tmp_path / "notes", "bare.md", "---\ntitle: Bez nadpisu\n---\nJen text.\n")
    config = make_config(tmp_path, {"notes": tmp_path / "notes"})
    build_and_render(config)
    out = config.site.output
    opened = parse_page(out / urls.site_file(urls.note_url("notes", "ddia.md")))
    assert ["".join(h.itertext()) for h in opened.iter("h1")] == ["Designing Data-Intensive Applications"]
    assert opened.find(".//title").text == "DDIA – notes · Poznámky"
    bare = parse_page(out / urls.site_file(urls.note_url("notes", "bare.md")))
    assert ["".join(h.itertext()) for h in bare.iter("h1")] == ["Bez nadpisu"]

def test_markdown_extensions_render(site):
    _, _, out = site
    body = body_of(page(out, "notes", "recepty/teh-tarik.md"))
    boxes = [(i.get("type"), i.get("checked") is not None, i.get("disabled")) for i in body.iter("input")]
    assert boxes == [("checkbox", True, "disabled"), ("checkbox", False, "disabled")]
    pre = body.find(".//pre")
    assert pre.get("class") == "highlight" and pre.find("code").get("class") == "language-python"
    assert {s.get("class") for s in pre.iter("span")} >= {"k", "nf", "s2"}
    alignment = [(th.get("class"), th.get("style")) for th in body.iter("th")]
    assert alignment == [("align-right", None), ("align-left", None)]
    assert body.find(".//dl/dt").text == "Tahání"
    footnote = body.find(".//sup/a")
    assert footnote.get("href") == "#fn1" and any(li.get("id") == "fn1" for li in body.iter("li"))


def test_relative_links_and_wikilinks_are_rewritten(site):
    _, _, out = site
    kl = anchors_of(body_of(page(out, "notes", "cestovani/kuala-lumpur.md")))
    assert kl == [("../recepty/teh-tarik.html", "teh-tarik"),
                  ("../recepty/teh-tarik.html#suroviny", "suroviny")]
    tarik = [a for a in anchors_of(body_of(page(out, "notes", "recepty/teh-tarik.md"))) if "#fn" not in a[0]]
    assert tarik == [("../cestovani/kuala-lumpur.html", "cesta"), ("napoje/masala-chai.html", "indický čaj")]
    chai = anchors_of(body_of(page(out, "notes", "recepty/napoje/masala-chai.md")))
    assert chai[0] == ("../teh-tarik.html#postup", "Teh Tarik")  # "#Postup" mapped onto the heading anchor
    root = anchors_of(body_of(page(out, "notes", "index.md")))
    assert root == [("recepty/teh-tarik.html", "Teh Tarik"), ("cestovani/kuala-lumpur.html", "Kuala Lumpur")]


def test_broken_links_are_marked_on_the_page_listed_with_their_lines_and_logged_once(site, tmp_path):
    config, run, out = site
    body = body_of(page(out, "notes", "recepty/napoje/masala-chai.md"))
    broken = [("".join(s.itertext()), s.get("title")) for s in body.iter("span") if "broken-link" in s.get("class", "")]
    assert broken == [
        ("meteostanice", "Broken link: ../../projekty/meteostanice.md: no such note or file"),
        ("[schéma]", "Broken image: chybi.svg: no such note or file"),
        ("stránka", "Broken link: zlo.html: type .html could run scripts inside the portal, so it is not published"),
        ("svg", "Broken link: zle.svg: the SVG holds scripts, event handlers or script links, so it is not published"),
        ("Neexistuje", "Broken link: [[Neexistuje]]: no note with that name or title"),
    ]
    kl = body_of(page(out, "notes", "cestovani/kuala-lumpur.md"))
    assert [s.get("title") for s in kl.iter("span") if "broken-link" in s.get("class", "")] == [
        "Broken link: ../soukrome/denik.md: no such note or file",
        "Broken link: ../../../etc/passwd points outside the source"]
    assert "TOC" not in "".join(kl.itertext())  # [[TOC]] is a marker, not a link
    # one line for the source, not one per link
    assert run.warnings == ["notes: 7 broken links in 2 notes, such as cestovani/kuala-lumpur.md:8: "
                            "../soukrome/denik.md: no such note or file; every broken link is listed on "
                            "broken-links.html"]
    assert run.report.broken_links == 7
    report = parse_page(out / "broken-links.html")
    notes = [li for li in report.iter("li") if li.find("a") is not None and li.find("ul") is not None]
    listed = [(li.find("a").get("href"), [" ".join("".join(b.itertext()).split()) for b in li.find("ul")])
              for li in notes]
    assert listed == [
        ("notes/cestovani/kuala-lumpur.html", ["line 8 → ../soukrome/denik.md: no such note or file",
                                               "line 8 → ../../../etc/passwd points outside the source"]),
        ("notes/recepty/napoje/masala-chai.html", [
            "line 8 → ../../projekty/meteostanice.md: no such note or file",
            "line 8 → chybi.svg: no such note or file",
            "line 9 → zlo.html: type .html could run scripts inside the portal, so it is not published",
            "line 9 → zle.svg: the SVG holds scripts, event handlers or script links, so it is not published",
            "line 9 → [[Neexistuje]]: no note with that name or title"])]
    assert "7 broken links in 2 notes" in "".join(report.find(".//p[@class='lead']").itertext())
    home = parse_page(out / "index.html")
    assert ("broken-links.html", "7 broken links") in anchors_of(home)
    again = build_and_render(config)
    assert again.warnings == [] and again.report.written == ()
    # mended in one note: the summary names what this build rendered, the page lists what is left
    (config.site.output.parent / "notes/recepty/napoje/masala-chai.md").write_text(
        "# Masala chai\n\nJen [[Neexistuje]] a [[Teh Tarik]].\n", encoding="utf-8")
    mended = build_and_render(config)
    assert mended.warnings == ["notes: a broken link: recepty/napoje/masala-chai.md:3: [[Neexistuje]]: no note "
                               "with that name or title; every broken link is listed on broken-links.html"]
    assert ("broken-links.html", "3 broken links") in anchors_of(parse_page(out / "index.html"))
    assert "3 broken links in 2 notes" in "".join(parse_page(out / "broken-links.html")
                                                  .find(".//p[@class='lead']").itertext())


def test_attachments_are_copied_only_when_safe_and_in_scope(site):
    _, _, out = site
    assert (out / "notes/recepty/napoje/foto.png").read_bytes() == b"\x89PNG\r\n\x1a\nfake"
    assert (out / "notes/skripty/run.sh").read_text(encoding="utf-8") == "echo hi\n"
    assert not (out / "notes/recepty/napoje/zlo.html").exists()
    assert not (out / "notes/recepty/napoje/zle.svg").exists()
    body = body_of(page(out, "notes", "recepty/napoje/masala-chai.md"))
    img = body.find(".//img")
    assert (img.get("src"), img.get("alt"), img.get("loading")) == ("foto.png", "foto", "lazy")
    assert ("../../skripty/run.sh", "skript") in anchors_of(body)


def toc_folders(doc) -> list:
    """The folders of a table of contents (``<details class="toc-dir">``), in document order."""
    return [d for d in doc.iter("details") if "toc-dir" in d.get("class", "")]


def own_notes(body) -> list[tuple[str, str]]:
    """The links of a folder's own notes (not its subfolders'): its body's list of notes."""
    return anchors_of(next(ul for ul in body if ul.get("class") == "toc-notes"))


def test_toc_page_lists_every_folder_note_tag_and_heading(site):
    _, _, out = site
    doc = parse_page(out / "notes/index.html")  # one page: every folder, every note, their headings
    assert not list(out.rglob("index.toc.html"))
    assert "4 notes in 4 folders" in "".join(doc.find(".//p[@class='lead']").itertext())
    folders = toc_folders(doc)
    assert [("".join(d.find("summary").itertext()), d.get("open")) for d in folders] == [
        ("cestovani/ 1", ""), ("recepty/ 2", ""), ("napoje/ 1", "")]  # a small source: every folder open
    bodies = {div.get("id"): div for div in doc.iter("div") if "toc-dir-body" in div.get("class", "")}
    assert list(bodies) == ["dir-root", "dir-cestovani", "dir-recepty", "dir-recepty-napoje"]
    assert own_notes(bodies["dir-root"]) == [("index.md.html", "Rozcestník")]
    assert own_notes(bodies["dir-cestovani"]) == [
        ("cestovani/kuala-lumpur.html", "Kuala Lumpur"), ("../tags/cestovani/index.html", "#cestování"),
        ("../tags/malajsie/index.html", "#Malajsie"), ("cestovani/kuala-lumpur.html#jidlo", "Jídlo")]
    assert own_notes(bodies["dir-recepty"]) == [
        ("recepty/teh-tarik.html", "Teh Tarik"), ("../tags/recepty/index.html", "#recepty"),
        ("../tags/caj/index.html", "#Čaj"), ("recepty/teh-tarik.html#suroviny", "Suroviny"),
        ("recepty/teh-tarik.html#postup", "Postup")]
    assert own_notes(bodies["dir-recepty-napoje"]) == [
        ("recepty/napoje/masala-chai.html", "Masala chai"), ("../tags/caj/index.html", "#čaj"),
        ("../tags/recepty/index.html", "#recepty")]
    assert bodies["dir-recepty-napoje"] in list(folders[1].iter("div"))  # nested in its parent folder
    filter_box = next(d for d in doc.iter("div") if d.get("class") == "toc-filter")
    assert filter_box.get("hidden") is None  # its place kept (no layout shift); style.css hides it until toc.js works
    assert ".toc-filter:not(.toc-filter-ready) { visibility: hidden; }" in (out / "static/style.css").read_text()
    assert [s.get("src").split("?")[0] for s in doc.iter("script") if s.get("src")] == [
        "../static/nav.js", "../static/search.js", "../static/toc.js"]
    crumbs = next(n for n in doc.iter("nav") if n.get("class") == "breadcrumbs")
    assert anchors_of(crumbs) == [("../index.html", "Home")]
    # a note's folders lead to their place on the source's table of contents
    note = page(out, "notes", "recepty/napoje/masala-chai.md")
    crumbs = next(n for n in note.iter("nav") if n.get("class") == "breadcrumbs")
    assert anchors_of(crumbs) == [("../../../index.html", "Home"), ("../../../notes/index.html", "notes"),
                                  ("../../../notes/index.html#dir-recepty", "recepty"),
                                  ("../../../notes/index.html#dir-recepty-napoje", "napoje")]


def test_tag_pages_have_stable_readable_urls_and_list_every_note(site):
    _, _, out = site
    doc = parse_page(out / "tags/caj/index.html")
    assert doc.find(".//h1").itertext().__next__() == "#"
    assert "".join(doc.find(".//h1").itertext()) == "#Čaj"
    assert [(h, t) for h, t in anchors_of(doc) if "note-link" in h or t in ("Masala chai", "Teh Tarik")] == [
        ("../../notes/recepty/napoje/masala-chai.html", "Masala chai"),
        ("../../notes/recepty/teh-tarik.html", "Teh Tarik")]
    index = parse_page(out / "tags/index.html")
    cloud = [(a.get("href"), a.text) for a in index.iter("a") if a.get("class") == "tag"]
    assert cloud == [("../tags/caj/index.html", "#Čaj"), ("../tags/cestovani/index.html", "#cestování"),
                     ("../tags/malajsie/index.html", "#Malajsie"), ("../tags/recepty/index.html", "#recepty")]


def test_home_lists_sources_recent_notes_and_tags(site):
    _, _, out = site
    doc = parse_page(out / "index.html")
    cards = {c.find("h2").text: c for c in doc.iter("section") if c.get("class") == "card"}
    assert anchors_of(cards["Sources"]) == [("notes/index.html", "notes"), ("graph-notes.html", "link graph"),
                                            ("broken-links.html", "7 broken links")]
    assert "4 notes" in "".join(cards["Sources"].itertext())
    assert sorted(t for _, t in anchors_of(cards["Recently changed"])) == [
        "Kuala Lumpur", "Masala chai", "Rozcestník", "Teh Tarik"]
    assert len(anchors_of(cards["Tags"])) == 4


def test_pages_use_relative_urls_and_the_search_box_needs_the_server(site):
    _, _, out = site
    for rel in ("index.html", "notes/index.html", "notes/recepty/napoje/masala-chai.html", "tags/caj/index.html"):
        doc = parse_page(out / rel)
        for el in doc.iter():
            for attr in ("href", "src", "action"):
                value = el.get(attr)
                assert value is None or not value.startswith("/"), (rel, attr, value)
        form = doc.find(".//form")
        depth = rel.count("/")
        assert form.get("action") == "../" * depth + "search"
        assert form.get("data-api") == "../" * depth + "api/search"
        scripts = [s.get("src").split("?v=")[0] for s in doc.iter("script") if s.get("src")]
        assert scripts[:2] == ["../" * depth + "static/nav.js", "../" * depth + "static/search.js"]
        assert scripts[2:] == (["../static/toc.js"] if rel == "notes/index.html" else [])
        inline = [s for s in doc.iter("script") if (s.text or "").strip()]  # no inline script, only the words' data
        assert [(s.get("type"), s.get("id")) for s in inline] == [("application/json", "ui-messages")]
    js = (out / "static/search.js").read_text(encoding="utf-8")
    assert 'window.location.protocol === "file:"' in js and ".search-offline" in js  # behaviour: test_browser.py
    stylesheets = [el.get("href") for el in parse_page(out / "404.html").iter() if el.get("rel") == "stylesheet"]
    assert stylesheets and all(href.startswith("/static/") for href in stylesheets)
    sitemap = (out / "sitemap.xml").read_text(encoding="utf-8")
    assert "<loc>/notes/recepty/teh-tarik.html</loc>" in sitemap and "404" not in sitemap


def test_heading_ids_equal_chunk_anchors(site):
    config, _, out = site
    conn = open_index(config)
    rows = conn.execute("SELECT source_id, path, anchor FROM chunks WHERE anchor != ''").fetchall()
    assert {r["anchor"] for r in rows} == {"teh-tarik", "suroviny", "kuala-lumpur", "jidlo", "masala-chai",
                                           "rozcestnik"}
    for row in rows:
        doc = page(out, row["source_id"], row["path"])
        assert row["anchor"] in {el.get("id") for el in doc.iter()}, dict(row)
    kl = body_of(page(out, "notes", "cestovani/kuala-lumpur.md"))
    assert [h.get("id") for h in kl.iter("h3")] == ["vnoreny-nadpis"]  # nested heading: an id of its own


SCRIPTY = """
    ---
    title: <script>alert('title')</script>
    tags: ["<b>x</b>", "x\\" onmouseover=\\"alert(1)"]
    ---
    # Zlý <img src=x onerror=alert(1)>

    <script>alert('body')</script>
    <img src="x.png" onerror="alert('img')">
    <a href="javascript:alert('href')">klik</a> [md](javascript:alert(1)) [[x|<script>alert(2)</script>]]
    <iframe src="https://example.org"></iframe><svg onload="alert(3)"><circle r="1"/></svg>
    <div style="background:url(javascript:alert(4))" onclick="alert(5)">div</div>
    <form action="https://evil.example"><input type="text" name="pw"></form>
    <details open ontoggle="alert(6)"><summary>víc</summary>obsah</details>
    """


def _active(doc) -> list[str]:
    found = []
    for el in doc.iter():
        tag = el.tag if isinstance(el.tag, str) else ""
        ours = tag == "script" and (el.get("src", "").startswith(("static/", "../static/", "../../static/"))
                                    or el.get("type") == "application/json" and el.get("id") == "ui-messages")
        if tag in ("script", "iframe", "object", "embed", "svg") and not ours:
            found.append(tag)
        for name, value in el.attrib.items():
            if name.lower().startswith("on") or name.lower() == "style" and "url(" in value:
                found.append(f"{tag}[{name}]")
            if name in ("href", "src", "action") and value.strip().lower().startswith("javascript:"):
                found.append(f"{tag}[{name}={value}]")
    return found


def test_raw_html_is_inert_by_default(tmp_path):
    root = tmp_path / "notes"
    write(root, "zly.md", SCRIPTY)
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    for rel in ("notes/zly.html", "notes/index.html", "index.html", "tags/index.html"):
        doc = parse_page(config.site.output / rel)
        assert _active(doc) == [], rel
    text = (config.site.output / "notes/zly.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(&#39;title&#39;)&lt;/script&gt;" in text  # the title is text
    body = text.split('class="note-body"')[1]
    assert '<details open=""><summary>víc</summary>obsah</details>' in body  # harmless HTML stays
    assert "<form" not in body and "<input" not in body.replace('<input disabled="disabled">', "")
    assert '<img data-broken-link="Broken link: x.png: no such note or file">' in body


def test_allow_html_trusts_raw_html(tmp_path):
    root = tmp_path / "notes"
    write(root, "zly.md", SCRIPTY)
    config = make_config(tmp_path, {"notes": root}, extra="render:\n  allow_html: true\n")
    build_and_render(config)
    doc = parse_page(config.site.output / "notes/zly.html")
    assert "script" in _active(doc) and "div[onclick]" in _active(doc)
    # the portal's own text is still escaped: trusting note HTML does not trust titles or tags
    assert "<script>alert('title')</script>" not in (config.site.output / "notes/index.html").read_text("utf-8")


def test_site_is_stale_is_cheap_and_notices_a_missing_site_or_new_settings(tmp_path, notes):
    config = make_config(tmp_path, {"notes": notes})
    assert site_is_stale(config, "#0")  # no site yet
    build_and_render(config)
    assert not stale(config)
    retitled = make_config(tmp_path, {"notes": notes}, title="Jiný název")
    assert stale(retitled)
    probe = ("import sys, json; from builder.core.config import load_config;"
             "from builder.render.stamp import site_is_stale;"
             "from builder.core import index as db;"
             f"config = load_config({str(tmp_path / 'portal.yaml')!r});"
             "stale = site_is_stale(config, db.content_token(db.open_index(config.index, vec=False)));"
             "print(json.dumps([stale] + [m in sys.modules for m in ('jinja2', 'markdown_it', 'pygments', 'nh3')]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1])
    assert json.loads(out.stdout) == [True, False, False, False, False]


def test_notes_with_the_same_text_share_their_body_only_where_their_links_agree(tmp_path, monkeypatch):
    from builder.render import markdown

    rendered = []
    render_body = markdown.render_body
    monkeypatch.setattr(markdown, "render_body", lambda md, text, **kw: rendered.append(kw["page_url"]) or
                        render_body(md, text, **kw))
    root = tmp_path / "notes"
    text = ("# Kopie\n\n[vedle](vedle.md), [[vedle]], ![obr](obr.png), [web](https://example.org), [nahoru](../x.md)."
            "\n\n```python\nx = 1\n```\n")
    for folder in ("a", "b", "c"):
        write(root, f"{folder}/kopie.md", text)
    for folder in ("a", "b"):  # c has neither: its links are broken
        write(root, f"{folder}/vedle.md", f"# Vedle {folder}\n")
        (root / folder / "obr.png").write_bytes(b"png")
    write(root, "x.md", "# X\n")
    config = make_config(tmp_path, {"notes": root})
    run = build_and_render(config)
    out = config.site.output
    assert sorted(u for u in rendered if "kopie" in u) == ["notes/a/kopie.html", "notes/c/kopie.html"]  # b: a's
    html = {f: (out / f"notes/{f}/kopie.html").read_text("utf-8").split('class="note-body"')[1]
            .split('<section class="backlinks"')[0] for f in "abc"}  # the body alone: the links around differ
    assert html["a"] == html["b"] != html["c"]
    assert anchors_of(body_of(page(out, "notes", "b/kopie.md"))) == [
        ("vedle.html", "vedle"), ("vedle.html", "vedle"), ("https://example.org", "web"), ("../x.html", "nahoru")]
    assert "obr.png" in html["b"] and (out / "notes/b/obr.png").read_bytes() == b"png"
    assert anchors_of(body_of(page(out, "notes", "c/kopie.md"))) == [  # [[vedle]]: found by name elsewhere
        ("../a/vedle.html", "vedle"), ("https://example.org", "web"), ("../x.html", "nahoru")]
    # each copy links to the note beside it, not to the one its body was first rendered for
    for folder, linked_from in (("a", ["a", "c"]), ("b", ["b"])):
        backlinks = next(s for s in page(out, "notes", f"{folder}/vedle.md").iter("section")
                         if s.get("class") == "backlinks")
        assert anchors_of(backlinks) == [(f"../../notes/{f}/kopie.html", "Kopie") for f in linked_from]
    assert run.warnings == ["notes: 2 broken links in 1 note, such as c/kopie.md:3: vedle.md: no such note or "
                            "file; every broken link is listed on broken-links.html"]
    check_site(out)


def test_big_renders_keep_highlighted_code_in_the_site_for_the_next_one(tmp_path, monkeypatch):
    from builder.render import delta, highlight, site

    monkeypatch.setattr(site, "BIG_RENDER", 1)  # every render is a big one
    monkeypatch.setattr(delta, "MAX_NOTES", 0)  # (a delta render renders fewer notes than a big one)
    root = tmp_path / "notes"
    write(root, "py.md", "# Py\n\n```python\ndef f():\n    return 1\n```\n\n```mermaid\ngraph\n```\n")
    write(root, "c.md", "# C\n\n```c\nint x = 1;\n```\n")
    write(root, "kopie/c.md", "# C\n\n```c\nint x = 1;\n```\n")
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    out = config.site.output
    cache = highlight.blocks_file(out)

    def stored() -> set[str]:
        return set(highlight.stored(cache))

    def body(rel: str) -> str:  # the note's body alone (the page's footer names the minute it was built)
        return (out / rel).read_text("utf-8").split('class="note-body"')[1].split('<section class="backlinks"')[0]

    assert cache.parent.name == ".render-cache" and len(stored()) == 2  # mermaid has no lexer
    before, original = body("notes/py.html"), highlight._highlight
    # a render starts with no block in memory (highlight.CodeBlocks): it can only read them from the cache
    monkeypatch.setattr(highlight, "_highlight", lambda *a: pytest.fail("highlighted again"))
    build_and_render(config, full=True)  # every block comes from the site's cache
    assert body("notes/py.html") == before and '<span class="k">def</span>' in before
    monkeypatch.setattr(highlight, "_highlight", original)
    (root / "py.md").write_text("# Py\n\n```python\ndef g():\n    return 2\n```\n", encoding="utf-8")
    build_and_render(config)
    keys = stored()
    assert len(keys) == 2 and '<span class="nf">g</span>' in body("notes/py.html")
    (root / "c.md").unlink()  # its copy still uses the block
    write(root, "novy.md", "# Nový\n")  # something to render: the cache is kept by renders of notes
    build_and_render(config)
    assert stored() == keys
    (root / "kopie/c.md").unlink()
    write(root, "novy.md", "# Nový 2\n")
    build_and_render(config)
    assert len(stored()) == 1
    (cache.parent / "highlight-0123456789ab.json").write_text("{}", encoding="utf-8")  # an older version's
    build_and_render(config, full=True)
    assert [p.name for p in cache.parent.glob("highlight-*")] == [cache.name]
    cache.write_bytes(cache.read_bytes()[:40])  # cut short (a full disk): highlighted anew, same page
    for kept in cache.parent.glob("bodies-*.sqlite"):  # (a body kept whole needs no highlighting)
        kept.unlink()
    build_and_render(config, full=True)  # (a render starts with no block in memory: the cut file is all it has)
    assert len(stored()) == 1 and '<span class="nf">g</span>' in body("notes/py.html")


def test_wikilink_title_keys_equal_slugify():
    from builder.core.slug import slugify
    from builder.render.links import _key

    samples = ["Poznámka 12 – čaj", "Příliš žluťoučký kůň", "ℌello", "K", "İstanbul", "Straße", "Æble", "日本語",
               "Ελληνικά", "Москва", "a\u034fb", "e\u0301", "👍 ok", "ÉCOLE Noël", "Ľadový čaj", "ﬁ", "①", "²", "Ǆ",
               "Œuvre", "Þór", "ŁÓDŹ", "Đak", "ı", "", "  -- ", "x" * 100 + "é"]
    samples += [f"a{chr(c)}b" for c in range(0x80, 0x2500)]
    assert [_key(t) for t in samples] == [slugify(t, fallback="") for t in samples]


@pytest.mark.parametrize("source_id", ["tags", "static", "api", "search", "auth"])
def test_reserved_source_ids_are_refused_by_the_config(tmp_path, notes, source_id):
    from builder.core.errors import ConfigError

    with pytest.raises(ConfigError, match=rf"sources\.{source_id}: source id '{source_id}' is reserved for the "
                                          r"site's own pages \(api, auth, search, static, tags\); choose another"):
        make_config(tmp_path, {source_id: notes})
