"""The portal around the notes: navigation tree, per-source table of contents from cached folder
fragments, real dates, the broken-links report, the links view (each note's two-hop picture and a
graph page per source) — and that incremental renders of all of them equal a fresh render.
(Behaviour in a browser: tests/test_browser.py; pictures: tests/test_render_screenshots.py.)"""

from __future__ import annotations

import marshal
import random
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from builder.core.config import load_config
from builder.core.index import renderstate
from builder.render import graph, pages
from builder.render.links import Link
from builder.render.markdown import make_renderer, render_body
from server.status import broken_link_counts, collect_status, format_status
from tests.conftest import write_config
from tests.git_support import Upstream
from tests.render_support import (
    TIME,
    build_and_render,
    check_site,
    make_config,
    parse_page,
    site_files,
    site_snapshot,
    write,
)

DAY = 86400.0


def svg_links(doc) -> list[tuple[str, str]]:
    """(href, title) of every node of the page's link picture."""
    svg = next(el for el in doc.iter() if el.tag == "{http://www.w3.org/2000/svg}svg")
    return [(a.get("href"), a.find("{http://www.w3.org/2000/svg}title").text)
            for a in svg.iter("{http://www.w3.org/2000/svg}a")]


# ---------------------------------------------------------------- dates


def test_a_front_matter_date_is_a_day_in_iso_or_czech_spelling():
    assert [pages.day_of(v) for v in ("2024-03-01", "2024-03-01T10:00:00", "1. 3. 2024", "31.12.2023")] == [
        "2024-03-01", "2024-03-01", "2024-03-01", "2023-12-31"]
    assert [pages.day_of(v) for v in ("2024-02-30", "TBD", 2024, None, "2024-3-1", ["2024-03-01"])] == [None] * 6


def test_front_matter_dates_come_first_then_the_file_time(tmp_path):
    root = tmp_path / "notes"
    old = 1_700_000_000.0  # 2023-11-14
    write(root, "a.md", "---\ndate: 2021-03-01\nupdated: 2022-05-06\n---\n# A\n", old)
    write(root, "b.md", "---\ncreated: 1. 2. 2020\n---\n# B\n", old)
    write(root, "c.md", "---\ndate: nikdy\n---\n# C\n", old + DAY)
    write(root, "d.md", "# D\n", old - DAY)
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    out = config.site.output

    def meta(name: str) -> str:
        doc = parse_page(out / f"notes/{name}.html")
        div = next(d for d in doc.iter("div") if d.get("class") == "note-meta")
        return " ".join(" ".join("".join(s.itertext()).split()) for s in div.iter("span")
                        if s.get("class") in ("meta-changed", "meta-created"))

    assert [meta(n) for n in "abcd"] == [
        "changed 6 May 2022 created 1 Mar 2021",  # updated: and date: from the front matter
        "changed 14 Nov 2023 created 1 Feb 2020",  # the file's time; created: in Czech spelling
        "changed 15 Nov 2023",  # an unreadable date is no date
        "changed 13 Nov 2023"]
    home = parse_page(out / "index.html")
    recent = next(c for c in home.iter("section") if c.find("h2").text == "Recently changed")
    assert [(li.find("a").text, li.find("span/time").get("datetime"), li.find("span/time").text)
            for li in recent.iter("li")] == [
        ("C", "2023-11-15", "15 Nov 2023"), ("B", "2023-11-14", "14 Nov 2023"), ("D", "2023-11-13", "13 Nov 2023"),
        ("A", "2022-05-06", "6 May 2022")]


def test_a_git_note_shows_its_last_commit_and_author(tmp_path):
    pytest.importorskip("builder.gitsource")
    up = Upstream(tmp_path, "notes")
    up.write("caj.md", "# Čaj\n\nZelený.\n")
    up.write("hory.md", "---\nupdated: 2023-06-07\n---\n# Hory\n")
    up.commit("first", author="Alice", when="2024-01-02T10:00:00+00:00")
    up.write("caj.md", "# Čaj\n\nZelený, 80 °C.\n")
    up.commit("second", author="Bob", when="2024-02-03T11:00:00+00:00")
    up.push()
    config = load_config(write_config(tmp_path, "site:\n  output: site\nindex: data/index.sqlite\n"
                                                "embedding:\n  provider: none\n"
                                                f"sources:\n  notes:\n    git: {up.url}\n"))
    build_and_render(config)
    doc = parse_page(config.site.output / "notes/caj.html")
    changed = next(s for s in doc.iter("span") if s.get("class") == "meta-changed")
    assert " ".join("".join(changed.itertext()).split()) == "changed 3 Feb 2024 by Bob"
    doc = parse_page(config.site.output / "notes/hory.html")  # the front matter's date, so no author
    changed = next(s for s in doc.iter("span") if s.get("class") == "meta-changed")
    assert " ".join("".join(changed.itertext()).split()) == "changed 7 Jun 2023"


# ---------------------------------------------------------------- broken links


def test_each_link_knows_the_lines_it_is_written_on():
    text = ("---\ntitle: x\n---\n# H\n\ntext [a](b.md)\nmore [c](d.md) [a](b.md)\n\n| a | b |\n|---|---|\n"
            "| [x](y.md) | z |\n\n- item\n  [[w]] [[TOC]]\n\n<p>\n<a href=\"q.md\">x</a></p>\n\nand <img\n"
            "src=\"i.png\"> ![i](j.png)\n")
    body = render_body(make_renderer(), text, page_url="a.html", anchors={}, trusted=False,
                       resolve=lambda kind, raw: Link("broken", reason=raw))
    assert body.broken() == [(6, "b.md"), (7, "b.md"), (7, "d.md"), (11, "y.md"), (14, "w"), (17, "q.md"),
                             (20, "i.png"), (20, "j.png")]


def test_grav_routes_find_notes_under_pages_when_the_source_is_the_folder_above(tmp_path):
    """A Grav repository is its ``user/`` folder: its pages live in ``pages/`` and link each other
    by route from there, without ordering prefixes. Elsewhere the same link stays broken."""
    link = "Nainštalujte [Docker Desktop](/zkt/cvicenia/desktop#instalacia).\n"
    grav, plain = tmp_path / "grav", tmp_path / "plain"
    write(grav, "pages/05.zkt/cvicenia/01.desktop/item.md", "# Docker Desktop\n\n## Inštalácia\n")
    write(grav, "pages/05.zkt/cvicenia/02.toolbox/item.md", "# Toolbox\n\n" + link)
    write(plain, "zkt-docs/cvicenia/01.desktop/item.md", "# Docker Desktop\n")
    write(plain, "toolbox.md", "# Toolbox\n\n" + link)
    config = make_config(tmp_path, {"grav": grav, "plain": plain})
    build_and_render(config)
    toolbox = (config.site.output / "grav/pages/05.zkt/cvicenia/02.toolbox/item.html").read_text(encoding="utf-8")
    assert 'href="../01.desktop/item.html#instalacia"' in toolbox
    assert broken_link_counts(config.site.output) == {"plain": 1}  # a source with none is left out


def test_broken_link_counts_for_status(tmp_path):
    root = tmp_path / "notes"
    write(root, "a.md", "# A\n\n[x](nic.md) [[ani]]\n\n[x](nic.md)\n")
    write(root, "b.md", "# B\n\n[[a]]\n")
    (tmp_path / "prazdny").mkdir()
    config = make_config(tmp_path, {"notes": root, "prazdny": tmp_path / "prazdny"})
    assert broken_link_counts(config.site.output) is None  # not rendered yet
    build_and_render(config)
    assert broken_link_counts(config.site.output) == {"notes": 3}  # occurrences: the same link twice counts twice
    status = collect_status(config)
    assert [(s["id"], s["broken_links"]) for s in status["sources"]] == [("notes", 3), ("prazdny", 0)]
    lines = format_status(status).splitlines()
    assert lines[2].startswith("notes (folder: ") and lines[2].endswith(", 3 broken links")
    assert lines[3].startswith("prazdny (folder: ") and "broken links" not in lines[3]
    write(root, "b.md", "# B\n\n[[a]] Dál.\n")  # the render of the edited note alone keeps the counts
    assert build_and_render(config).report.notes_rendered == 1
    assert broken_link_counts(config.site.output) == {"notes": 3}
    write(root, "nic.md", "# Nic\n")  # a note where two links pointed to nothing
    build_and_render(config)
    assert broken_link_counts(config.site.output) == {"notes": 1}


def test_broken_link_counts_read_only_two_values_of_the_render_state(tmp_path):
    """At 100,000 notes the state's notes map is hundreds of MB: status reads the counts the render kept."""
    root = tmp_path / "notes"
    write(root, "a.md", "# A\n\n[x](nic.md)\n")
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    state = config.site.output / renderstate.STATE_FILE
    with closing(sqlite3.connect(state)) as conn, conn:
        assert conn.execute("DELETE FROM shards WHERE map = 'notes'").rowcount > 0
    assert broken_link_counts(config.site.output) == {"notes": 1}
    with closing(sqlite3.connect(state)) as conn, conn:  # a render by an older version: its counts are not trusted
        conn.execute("UPDATE meta SET value = ? WHERE key = 'version'", (marshal.dumps(4),))
    assert broken_link_counts(config.site.output) is None


# ---------------------------------------------------------------- the links view


def linked_notes(tmp_path: Path, links: dict[str, list[str]]) -> Path:
    """Notes ``n<i>.md`` (title ``N<i>``) linking as ``links`` says: name → names it links to."""
    root = tmp_path / "notes"
    for name, targets in links.items():
        write(root, f"{name}.md", f"# {name.upper()}\n\n" + " ".join(f"[[{t}]]" for t in targets) + "\n")
    return root


def test_a_note_picture_shows_two_hops_both_ways_with_links_to_the_notes(tmp_path):
    # chain c → b → a → x → y → z, and d → a; the picture of a: b, x, d; then c, y; never z
    root = linked_notes(tmp_path, {"a": ["x"], "b": ["a"], "c": ["b"], "d": ["a"], "x": ["y"], "y": ["z"], "z": []})
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    doc = parse_page(config.site.output / "notes/a.html")
    assert svg_links(doc) == [("../notes/x.html", "X"), ("../notes/b.html", "B"), ("../notes/d.html", "D"),
                              ("../notes/y.html", "Y"), ("../notes/c.html", "C")]
    section = next(s for s in doc.iter("section") if s.get("class") == "links-view")
    assert ("../graph-notes.html", "All links of notes") in [(a.get("href"), a.text) for a in section.iter("a")]
    lonely = parse_page(config.site.output / "notes/z.html")  # linked from y only: y, and x behind it
    assert svg_links(lonely) == [("../notes/y.html", "Y"), ("../notes/x.html", "X")]
    check_site(config.site.output)  # every node's href reaches a page


def test_the_picture_keeps_its_size_around_a_hub():
    notes = [pages.NoteInfo("s", f"n{i:02}.md", f"N{i:02}", (), b"[]", None, "x", f"s:n{i:02}.md", f"s/n{i:02}.html")
             for i in range(40)]
    entries = {n.key: {"resolved": [["note", "", "n00.md", ""]] if n.path != "n00.md" else []} for n in notes}
    links = graph.Links(notes, entries)
    hub = links.local("s:n00.md")
    assert [n.title for n in hub.nodes] == ["N00"] + [f"N{i:02}" for i in range(1, graph.RING1_MAX + 1)]
    assert hub.more == 39 - graph.RING1_MAX and len(hub.edges) == graph.RING1_MAX
    leaf = links.local("s:n05.md")  # one hop to the hub, then the hub's neighbours: RING2_PER of them
    assert [n.title for n in leaf.nodes] == ["N05", "N00", "N01", "N02", "N03"]
    assert [(leaf.nodes[a].title, leaf.nodes[b].title) for a, b in leaf.edges] == [
        ("N05", "N00"), ("N01", "N00"), ("N02", "N00"), ("N03", "N00")]


def test_a_change_reaches_the_pictures_two_links_away_and_no_further(tmp_path):
    root = linked_notes(tmp_path, {"a": ["b"], "b": ["c"], "c": ["d"], "d": ["e"], "e": []})
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    before = site_files(config.site.output)
    write(root, "a.md", "# A nové\n\n[[b]]\n")  # a new title: b and c show it, d and e do not
    run = build_and_render(config)
    notes_written = {rel for rel in run.report.written if rel.startswith("notes/") and rel != "notes/index.html"}
    assert notes_written == {"notes/a.html", "notes/b.html", "notes/c.html"}
    after = site_files(config.site.output)
    assert after["notes/d.html"] == before["notes/d.html"] and after["notes/e.html"] == before["notes/e.html"]


EDITS = ("link", "unlink", "retitle", "add", "delete", "body")


@pytest.mark.slow
def test_incremental_renders_equal_a_fresh_render_through_random_edits(tmp_path):
    """Whatever is edited, the pictures, backlinks, trees, tables of contents, graph and broken-links
    pages of an incremental render are those of a fresh render of the same notes."""
    rng = random.Random(12)
    names = [f"n{i}" for i in range(10)]
    targets = names + [f"m{step}" for step in range(14)]  # notes the edits add later: their links are broken till then
    state = {name: {"title": name.upper(), "links": rng.sample(targets, 2), "folder": rng.choice(["", "y/"])}
             for name in names}
    state["n0"]["folder"] = "x/"  # the only note of x/, the folder's page, till a note is added beside it

    def save(root: Path) -> None:
        if root.exists():
            shutil.rmtree(root)
        for name, note in state.items():
            # and a link to the folder x/: its page while it holds one note
            body = " ".join(f"[[{t}]]" for t in note["links"]) + " [x](/x/)"
            write(root, f"{note['folder']}{name}.md", f"# {note['title']}\n\n{body} {note.get('text', '')}\n")

    root = tmp_path / "notes"
    save(root)
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    for step in range(14):
        edit = EDITS[step % len(EDITS)]
        name = rng.choice(sorted(state))
        if edit == "link":
            state[name]["links"].append(rng.choice(targets))
        elif edit == "unlink" and state[name]["links"]:
            state[name]["links"].pop(0)
        elif edit == "retitle":
            state[name]["title"] = f"{state[name]['title']} {step}"
        elif edit == "add":
            wanted = sorted({t for note in state.values() for t in note["links"]} - set(state))  # a broken link's
            state[wanted[0] if wanted else f"m{step}"] = {"title": f"M{step}", "links": [rng.choice(sorted(state))],
                                                          "folder": rng.choice(["x/", "y/"])}
        elif edit == "delete" and len(state) > 4:
            del state[name]
        else:
            state[name]["text"] = f"text {step}"
        save(root)
        build_and_render(config)
        fresh = tmp_path / f"fresh{step}"
        fresh.mkdir()
        shutil.copytree(root, fresh / "notes")
        build_and_render(make_config(fresh, {"notes": fresh / "notes"}))
        assert site_snapshot(config.site.output) == site_snapshot(fresh / "site"), (step, edit, name)


def test_a_source_graph_page_draws_its_most_linked_notes(tmp_path):
    root = linked_notes(tmp_path, {"a": ["b", "c"], "b": ["a"], "c": [], "d": []})
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    doc = parse_page(config.site.output / "graph-notes.html")
    assert svg_links(doc) == [("notes/a.html", "A"), ("notes/b.html", "B"), ("notes/c.html", "C")]  # d: no links
    lead = " ".join("".join(doc.find(".//p[@class='lead']").itertext()).split())
    assert lead == "3 links between notes · 3 of 4 notes link or are linked · contents"
    most = next(ol for ol in doc.iter("ol") if ol.get("class") == "note-list")
    assert [" ".join("".join(li.itertext()).split()) for li in most] == [
        "A 1 note links here", "B 1 note links here", "C 1 note links here"]


# ---------------------------------------------------------------- table of contents and navigation


def test_a_heading_edit_renders_one_folder_fragment_of_the_table_of_contents(tmp_path, monkeypatch):
    from builder.core.templates import Templates

    root = tmp_path / "notes"
    for folder in ("a", "b", "c"):
        for i in range(3):
            write(root, f"{folder}/n{i}.md", f"# {folder}{i}\n\n## Oddíl\n")
    config = make_config(tmp_path, {"notes": root})
    made: list[str] = []
    fragment = Templates.fragment
    monkeypatch.setattr(Templates, "fragment", lambda self, name, **c: made.append(c["notes"][0]["href"])
                        or fragment(self, name, **c))
    build_and_render(config)
    assert sorted(made) == ["a/n0.html", "b/n0.html", "c/n0.html"]
    made.clear()
    write(root, "b/n1.md", "# b1\n\n## Jiný oddíl\n")
    build_and_render(config)
    assert made == ["b/n0.html"]  # b's list of notes alone
    assert 'href="b/n1.html#jiny-oddil"' in (config.site.output / "notes/index.html").read_text("utf-8")
    made.clear()
    page = config.site.output / "notes/index.html"

    def shown() -> str:  # the page without the time of its build
        return TIME.sub(b"", page.read_bytes()).decode()

    whole = shown()
    page.unlink()  # a page gone: written again, from the cache
    build_and_render(config)
    assert made == [] and shown() == whole
    assert "notes-portal fragment" not in whole and whole.count('href="b/n1.html#jiny-oddil"') == 1
    damaged = sorted((config.site.output / ".render-cache/toc/notes").glob("*.frag"))[0]
    damaged.write_bytes(b"\xff\xfe not UTF-8")  # a damaged disk: that folder's list is made again
    page.unlink()
    build_and_render(config)
    assert len(made) == 1 and shown() == whole


def test_a_big_source_shows_its_folders_closed(tmp_path, monkeypatch):
    from builder.render import toc

    monkeypatch.setattr(toc, "OPEN_MAX", 2)
    root = tmp_path / "notes"
    for i in range(3):
        write(root, f"f{i}/n.md", f"# N{i}\n")
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    doc = parse_page(config.site.output / "notes/index.html")
    assert [d.get("open") for d in doc.iter("details")] == [None, None, None]


def test_a_big_sources_folder_alone_in_its_parent_is_open(tmp_path, monkeypatch):
    """A Grav wiki keeps every page under ``pages/``: that folder, and each folder alone in it down to
    where the tree branches or holds notes, is open; the rest stay closed."""
    from builder.render import toc

    monkeypatch.setattr(toc, "OPEN_MAX", 2)
    root = tmp_path / "notes"
    for path in ("pages/kurz/a/n.md", "pages/kurz/b/n.md", "pages/kurz/b/c/n.md", "pages/kurz/n.md"):
        write(root, path, f"# {path}\n")
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    doc = parse_page(config.site.output / "notes/index.html")
    shown = [(d.find("summary/span").text, d.get("open") is not None) for d in doc.iter("details")]
    assert shown == [("pages/", True), ("kurz/", True), ("a/", False), ("b/", False), ("c/", False)]


def test_every_page_carries_the_navigation_without_the_tree(tmp_path):
    root = linked_notes(tmp_path, {"a": ["b"], "b": []})
    write(root, "sub/c.md", "# C\n")
    config = make_config(tmp_path, {"notes": root, "druhy": root / "sub"})
    build_and_render(config)
    out = config.site.output
    check_site(out)
    for rel, source, folder in [("notes/sub/c.html", "notes", "sub"), ("druhy/c.html", "druhy", ""),
                                ("notes/index.html", "notes", ""), ("graph-druhy.html", "druhy", ""),
                                ("index.html", "", ""), ("tags/index.html", "", ""), ("broken-links.html", "", "")]:
        doc = parse_page(out / rel)
        nav = next(n for n in doc.iter("nav") if n.get("id") == "site-nav")
        depth = "../" * rel.count("/")
        assert (nav.get("data-root"), nav.get("data-page"), nav.get("data-source"), nav.get("data-folder")) == \
            (depth, rel, source, folder), rel
        assert [(li.get("data-source"), li.get("data-tree"), li.find("a").get("href"))
                for li in nav.iter("li")] == [
            ("notes", f"{depth}static/tree/notes.js", f"{depth}notes/index.html"),
            ("druhy", f"{depth}static/tree/druhy.js", f"{depth}druhy/index.html")], rel
        assert "Alfa" not in "".join(nav.itertext())  # titles of other notes live in the tree script only
    assert (out / "static/tree/druhy.js").read_text("utf-8") == 'notesPortalTree("druhy",{"n":[["C","c.html"]]});\n'
    assert re.fullmatch(r'notesPortalTree\("notes",\{"n":\[\["A","a.html"\],\["B","b.html"\]\],'
                        r'"d":\[\["sub","sub",\{"n":\[\["C","c.html"\]\]\}\]\]\}\);\n',
                        (out / "static/tree/notes.js").read_text("utf-8"))
