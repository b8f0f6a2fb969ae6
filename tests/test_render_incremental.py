"""Incremental renders: only what depends on a change is rewritten (checked on file mtimes)."""

from __future__ import annotations

import os
import shutil
import time
from contextlib import closing
from pathlib import Path

import pytest

from builder import indexfile
from builder.core import index as db
from builder.core import templates as page_templates
from builder.core.synclog import SyncLog
from builder.core.index import renderstate
from builder.core.index.renderstate import shard_of
from builder.render.diagrams import can_draw
from builder.render import output, site, tree
from builder.render.links import Resolver
from builder.sync import build
from tests.conftest import copy_config
from tests.render_support import (
    build_and_render,
    check_site,
    make_config,
    parse_page,
    record_writes,
    site_files,
    stale,
    write,
    writes,
)

DAY = 86400.0


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Five notes with distinct past mtimes: a → b, c → d, e alone; tags on a, b, d; built once for the module."""
    home = tmp_path_factory.mktemp("incremental")
    root = home / "notes"
    base = time.time() - 30 * DAY
    write(root, "a.md", "---\ntags: [čaj]\n---\n# Alfa\n\nOdkaz na [b](sub/b.md).\n\n## Oddíl\n\ntext\n", base)
    write(root, "sub/b.md", "---\ntags: [čaj, hory]\n---\n# Beta\n\nText.\n", base + DAY)
    write(root, "sub/c.md", "# Gama\n\n[[d]] a ![obrázek](img.png)\n", base + 2 * DAY)
    write(root, "sub/d.md", "---\ntags: [hory]\n---\n# Delta\n\nText.\n", base + 3 * DAY)
    write(root, "e.md", "# Epsilon\n\nNic.\n", base + 4 * DAY)
    (root / "sub/img.png").write_bytes(b"png-1")
    config = make_config(home, {"notes": root})
    first = build_and_render(config)
    assert len(first.report.written) == len(site_files(config.site.output))
    return home


@pytest.fixture
def portal(template: Path, tmp_path: Path):
    return copy_config(template, tmp_path), tmp_path / "notes"


def changed_files(config, before: dict[str, int]) -> set[str]:
    after = site_files(config.site.output)
    return {p for p in set(before) | set(after) if before.get(p) != after.get(p)}


def edit(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")  # mtime now: the index sees a new changed_at


def test_a_second_render_with_nothing_changed_writes_nothing(portal):
    config, _ = portal
    manifest = config.site.output / ".render-state"
    before, manifest_mtime = site_files(config.site.output), manifest.stat().st_mtime_ns
    run = build_and_render(config)
    assert run.report.written == () and run.report.removed == () and run.log.lines == []
    assert changed_files(config, before) == set() and manifest.stat().st_mtime_ns == manifest_mtime


def test_body_edit_rewrites_the_note_its_new_link_target_and_home_only(portal):
    config, root = portal
    before = site_files(config.site.output)
    edit(root / "a.md", "---\ntags: [čaj]\n---\n# Alfa\n\nOdkaz na [b](sub/b.md) a [e](e.md).\n\n## Oddíl\n\ntext\n")
    run = build_and_render(config)
    # a: its text; e: "linked from" gained a; b: its picture of links shows e now (b ← a → e);
    # home: a is now the most recent note; the source's link graph: one more link
    expected = {"notes/a.html", "notes/e.html", "notes/sub/b.html", "index.html", "graph-notes.html"}
    assert changed_files(config, before) == expected
    assert set(run.report.written) == expected
    assert run.report.notes_rendered == 3  # note pages written: a, e and b
    backlinks = parse_page(config.site.output / "notes/e.html").find(".//section/ul/li/a")
    assert (backlinks.get("href"), backlinks.text) == ("../notes/a.html", "Alfa")


def test_a_body_edit_saves_one_entry_and_the_written_pages_fingerprints(portal):
    """The render state is saved by shards (builder.core.index.renderstate): a body edit rewrites the
    shard of the edited note's entry and those of the pages written, and what the delta render
    remembers of the index and the home page (builder.render.delta), nothing else."""
    config, root = portal
    state = config.site.output / output.STATE
    record_writes(state)
    edit(root / "e.md", "# Epsilon\n\nNic nového.\n")
    run = build_and_render(config)
    assert set(run.report.written) == {"notes/e.html", "index.html"}
    assert writes(state) == sorted({("notes", shard_of("notes:e.md")), ("pages", shard_of("notes/e.html")),
                                    ("pages", shard_of("index.html")), ("meta", "content"), ("meta", "home"),
                                    ("meta", "recent"), ("meta", "folders")})


def test_heading_edit_also_rewrites_the_table_of_contents(portal):
    config, root = portal
    before = site_files(config.site.output)
    edit(root / "sub/d.md", "---\ntags: [hory]\n---\n# Delta\n\nText.\n\n## Nový oddíl\n\nx\n")
    build_and_render(config)
    # c links to d but shows only d's URL and title: c's page stays as it was
    assert changed_files(config, before) == {"notes/sub/d.html", "notes/index.html", "index.html"}
    toc = (config.site.output / "notes/index.html").read_text("utf-8")
    assert 'href="sub/d.html#novy-oddil"' in toc


def test_title_and_tag_edit_rewrites_backlinked_pages_and_tag_pages(portal):
    config, root = portal
    before = site_files(config.site.output)
    edit(root / "sub/b.md", "---\ntags: [hory, Škola]\n---\n# Beta nová\n\nText.\n")
    build_and_render(config)
    # a links to b, and its picture of links shows b's title; the tree and the graph show it too
    assert changed_files(config, before) == {
        "notes/sub/b.html", "notes/a.html", "notes/index.html", "index.html", "tags/caj/index.html",
        "tags/hory/index.html", "tags/skola/index.html", "tags/index.html", "sitemap.xml", "static/tree/notes.js",
        "graph-notes.html"}
    tag = parse_page(config.site.output / "tags/skola/index.html")
    assert [a.text for a in tag.iter("a") if a.get("class") == "note-link"] == ["Beta nová"]


def test_deleted_note_loses_its_page_and_linking_pages_mark_the_link_broken(portal):
    config, root = portal
    before = site_files(config.site.output)
    (root / "sub/d.md").unlink()
    run = build_and_render(config)
    site = config.site.output
    assert not (site / "notes/sub/d.html").exists()
    assert "notes/sub/d.html" in run.report.removed and "tags/hory/index.html" not in run.report.removed
    assert changed_files(config, before) == {"notes/sub/d.html", "notes/sub/c.html", "notes/index.html",
                                             "index.html", "tags/hory/index.html", "tags/index.html", "sitemap.xml",
                                             "static/tree/notes.js", "graph-notes.html", "broken-links.html"}
    span = next(s for s in parse_page(site / "notes/sub/c.html").iter("span") if s.get("class") == "broken-link")
    assert (span.text, span.get("title")) == ("d", "Broken link: [[d]]: no note with that name or title")
    assert run.warnings == ["notes: a broken link: sub/c.md:3: [[d]]: no note with that name or title; every "
                            "broken link is listed on broken-links.html"]
    check_site(site)


def test_last_note_of_a_tag_removes_the_tag_page_and_a_new_note_fixes_a_broken_link(portal):
    config, root = portal
    (root / "e.md").write_text("# Epsilon\n\n[[zeta]]\n", encoding="utf-8")
    build_and_render(config)
    edit(root / "sub/d.md", "# Delta\n\nBez štítků.\n")
    edit(root / "sub/b.md", "# Beta\n\nBez štítků.\n")
    run = build_and_render(config)
    assert "tags/hory/index.html" in run.report.removed and not (config.site.output / "tags/hory").exists()
    before = site_files(config.site.output)
    write(root, "zeta.md", "# Zeta\n")
    run = build_and_render(config)
    assert run.warnings == []
    assert changed_files(config, before) == {"notes/zeta.html", "notes/e.html", "notes/index.html",
                                             "index.html", "sitemap.xml", "static/tree/notes.js", "graph-notes.html",
                                             "broken-links.html"}
    link = parse_page(config.site.output / "notes/e.html").find(".//div[@class='note-body']//a")
    assert (link.get("href"), link.text) == ("zeta.html", "zeta")


def test_changed_attachment_is_copied_again(portal):
    config, root = portal
    (root / "sub/img.png").write_bytes(b"png-2, longer")
    edit(root / "sub/c.md", "# Gama\n\n[[d]] a ![obrázek](img.png) a víc\n")
    build_and_render(config)
    assert (config.site.output / "notes/sub/img.png").read_bytes() == b"png-2, longer"


def test_template_change_or_full_rerenders_everything(portal, tmp_path, monkeypatch):
    config, _ = portal
    templates = tmp_path / "templates"
    shutil.copytree(page_templates.TEMPLATE_DIR, templates)
    monkeypatch.setattr(page_templates, "TEMPLATE_DIR", templates)
    assert stale(config)  # other template files than the site was rendered with …
    run = build_and_render(config)
    assert run.report.written == ()  # … but with the same content: nothing to redo
    assert not stale(config)
    note = templates / "note.html"
    note.write_text(note.read_text("utf-8").replace('{{ t("note.linked_from") }}</h2>', "Odkazují sem</h2>"),
                    encoding="utf-8")
    assert stale(config)
    run = build_and_render(config)
    everything = set(site_files(config.site.output))
    assert set(run.report.written) == everything and len(everything) == 24 + can_draw()  # + mermaid, once fetched
    assert "Odkazují sem" in (config.site.output / "notes/e.html").read_text("utf-8")
    run = build_and_render(config, full=True)
    assert set(run.report.written) == everything


def test_a_new_heading_in_the_target_remaps_a_fragment_link(portal):
    config, root = portal
    edit(root / "e.md", "# Epsilon\n\nViz [nový oddíl](sub/d.md#Nový-oddíl).\n")
    build_and_render(config)
    link = parse_page(config.site.output / "notes/e.html").find(".//div[@class='note-body']//a")
    assert link.get("href") == "sub/d.html#Nov%C3%BD-odd%C3%ADl"  # no such heading yet: kept as written
    before = site_files(config.site.output)
    edit(root / "sub/d.md", "---\ntags: [hory]\n---\n# Delta\n\n## Nový oddíl\n\nText.\n")
    run = build_and_render(config)
    link = parse_page(config.site.output / "notes/e.html").find(".//div[@class='note-body']//a")
    assert link.get("href") == "sub/d.html#novy-oddil"
    assert changed_files(config, before) == {"notes/sub/d.html", "notes/e.html", "notes/index.html", "index.html"}
    assert run.report.notes_rendered == 2


def fragments(config) -> set[str]:
    """The cached folder fragments of the source's table of contents."""
    return {p.name for p in (config.site.output / ".render-cache/toc/notes").iterdir()}


def test_a_new_folder_enters_the_table_of_contents_and_the_tree_and_goes_with_its_last_note(portal):
    config, root = portal
    before, cached = site_files(config.site.output), fragments(config)
    assert len(cached) == 2  # the root's notes and sub/'s
    write(root, "nova/f.md", "# Fí\n\n## Oddíl\n")
    build_and_render(config)
    assert changed_files(config, before) == {"notes/nova/f.html", "notes/index.html", "index.html", "sitemap.xml",
                                             "static/tree/notes.js", "graph-notes.html"}  # (the graph counts notes)
    assert fragments(config) > cached and len(fragments(config)) == 3  # one new fragment; the others reused
    toc = parse_page(config.site.output / "notes/index.html")
    assert [(a.get("href"), a.text) for a in toc.iter("a") if "f.html" in (a.get("href") or "")] == [
        ("nova/f.html", "Fí"), ("nova/f.html#oddil", "Oddíl")]
    assert [d.get("id") for d in toc.iter("div") if "toc-dir-body" in d.get("class", "")] == [
        "dir-root", "dir-nova", "dir-sub"]
    tree = (config.site.output / "static/tree/notes.js").read_text("utf-8")
    assert tree == ('notesPortalTree("notes",{"n":[["Alfa","a.html"],["Epsilon","e.html"]],'
                    '"d":[["nova","nova",{"n":[["Fí","f.html"]]}],'
                    '["sub","sub",{"n":[["Beta","b.html"],["Gama","c.html"],["Delta","d.html"]]}]]});\n')
    before = site_files(config.site.output)
    (root / "nova/f.md").unlink()
    run = build_and_render(config)
    assert set(run.report.removed) == {"notes/nova/f.html"}
    assert not (config.site.output / "notes/nova").exists()
    assert changed_files(config, before) == {"notes/nova/f.html", "notes/index.html", "index.html", "sitemap.xml",
                                             "static/tree/notes.js", "graph-notes.html"}
    assert fragments(config) == cached  # the unused fragment is gone


def test_an_edited_note_takes_its_unchanged_code_from_the_stored_blocks(portal, monkeypatch):
    """A small render reads the site's stored highlighted blocks when it meets code it does not
    remember (as a new process would), highlights nothing anew, and writes the same page."""
    from builder.render import highlight, site

    config, root = portal
    code = "```python\ndef pozdrav(jmeno):\n    return f'Ahoj {jmeno}'\n```\n"
    write(root, "e.md", f"# Epsilon\n\nNic.\n\n{code}")
    with monkeypatch.context() as big:
        big.setattr(site, "BIG_RENDER", 1)  # five notes make a big render: it stores the blocks its notes use
        build_and_render(config, full=True)
    lexed: list[str] = []  # (a render starts with no block in memory, as a new process does)
    real = highlight._highlight
    monkeypatch.setattr(highlight, "_highlight",
                        lambda code, lexer, lang: lexed.append(code) or real(code, lexer, lang))
    write(root, "e.md", f"# Epsilon\n\nNic, jen kód.\n\n{code}")
    build_and_render(config)
    assert lexed == []  # read from the store, not highlighted again
    page = (config.site.output / "notes/e.html").read_text("utf-8")
    assert "Nic, jen kód." in page and '<span class="k">def</span>' in page


def test_an_unchanged_notes_broken_links_follow_the_files_beside_it(portal):
    """A note's text and the notes stay the same while files come and go next to it: its links say
    what is on disk now (a file that appears is linked, one that goes is broken, and a broken
    link's reason follows the file)."""
    config, root = portal
    edit(root / "e.md", "# Epsilon\n\n![plán](plan.png), [mimo](../../mimo.png) a [stránka](stranka.html)\n")
    (root / "stranka.html").write_text("<script></script>", encoding="utf-8")

    def broken() -> list[str]:
        body = parse_page(config.site.output / "notes/e.html").find(".//div[@class='note-body']")
        return [s.get("title") for s in body.iter("span") if "broken-link" in s.get("class", "")]

    outside = "Broken link: ../../mimo.png points outside the source"
    unsafe = "Broken link: stranka.html: type .html could run scripts inside the portal, so it is not published"
    build_and_render(config)
    assert broken() == ["Broken image: plan.png: no such note or file", outside, unsafe]
    manifest = renderstate.load_manifest(config.site.output)
    assert {key: entry["files"] for key, entry in manifest["notes"].items()} == {
        "notes:a.md": 0, "notes:sub/b.md": 0, "notes:sub/c.md": 1, "notes:sub/d.md": 0, "notes:e.md": 1}
    for entry in manifest["notes"].values():
        del entry["files"]  # as an older render wrote them: "maybe"
    output.store_manifest(config.site.output, manifest, {})
    (root / "plan.png").write_bytes(b"png")
    build_and_render(config)
    image = parse_page(config.site.output / "notes/e.html").find(".//div[@class='note-body']//img")
    assert broken() == [outside, unsafe] and image.get("src") == "plan.png"
    assert (config.site.output / "notes/plan.png").read_bytes() == b"png"
    (root / "stranka.html").unlink()
    build_and_render(config)
    assert broken() == [outside, "Broken link: stranka.html: no such note or file"]
    (root / "plan.png").unlink()
    run = build_and_render(config)
    assert broken() == ["Broken image: plan.png: no such note or file", outside,
                        "Broken link: stranka.html: no such note or file"]
    assert "notes/plan.png" in run.report.removed


def test_a_full_render_reads_none_of_the_state_it_does_not_trust_and_saves_it_whole(portal, monkeypatch):
    """``--full`` does not trust the last render's state: each note's entry, the site's files, the backlinks, the
    titles and the links to files are not read (~3.2 KB a note: 323 MB of 100,000 notes, held for the whole
    render; issue 47). Its save writes them afresh, as a render that read them would, and the next build trusts
    them (an edit renders one note). The pages the last render listed are read: a note gone loses its page."""
    config, root = portal
    state = config.site.output / ".render-state"
    before = renderstate.read_map(state, "notes")
    kept = {key: value for key, value in renderstate.read_state(state).items() if key in site.UNTRUSTED}
    assert set(site.UNTRUSTED) - set(kept) == {"wiki"}  # no one-note render built a wikilink table yet
    read, found = renderstate.read_state, []

    def read_state(path, unread=(), only=None):
        saved = read(path, unread, only)
        found.append(sorted(saved))
        return saved

    monkeypatch.setattr(renderstate, "read_state", read_state)
    (root / "e.md").unlink()
    build_and_render(config, full=True)
    assert len(found) == 1 and not set(found[0]) & set(site.UNTRUSTED) and "pages" in found[0]
    assert not (config.site.output / "notes/e.html").exists()
    after = renderstate.read_map(state, "notes")
    assert before is not None and after is not None and "notes:e.md" in before
    assert sorted(after) == sorted(set(before) - {"notes:e.md"})
    assert after["notes:a.md"] == before["notes:a.md"]
    now = renderstate.read_state(state)
    assert set(kept) <= set(now) and "notes/e.html" in kept["files"] and "notes/e.html" not in now["files"]
    assert now["file_links"] == kept["file_links"] and now["titles"].keys() == kept["titles"].keys()
    write(root, "a.md", (root / "a.md").read_text("utf-8") + "\nDalší věta.\n")
    assert build_and_render(config).report.notes_rendered == 1


def test_a_note_added_to_one_source_resolves_again_the_links_of_that_source_only(tmp_path, monkeypatch):
    """A link resolves inside its own source: a note added to one source re-resolves those links of that source
    that share a name with it (a broken one now lands on the new note: builder.render.links.note_names) and asks
    nothing about the other links, nor about the other source's; a note removed likewise; a stored state without
    the list of a source's notes (from an older render) re-resolves every link."""
    for name in ("mine", "theirs"):
        write(tmp_path / name, "a.md", "# Alfa\n\n[[zeta]] a [beta](b.md)\n")
        write(tmp_path / name, "b.md", "# Beta\n")
        write(tmp_path / name, "c.md", "# Cé\n\n[[gama]] a [beta](b.md)\n")  # three hops from zeta
    config = make_config(tmp_path, {"mine": tmp_path / "mine", "theirs": tmp_path / "theirs"})
    build_and_render(config)
    asked: list[tuple[str, str, str]] = []
    resolve = Resolver.resolve

    def spy(self, source_id, from_path, kind, raw):
        asked.append((source_id, from_path, raw))
        return resolve(self, source_id, from_path, kind, raw)

    monkeypatch.setattr(Resolver, "resolve", spy)
    write(tmp_path / "mine", "zeta.md", "# Zeta\n")
    run = build_and_render(config)
    assert set(asked) == {("mine", "a.md", "b.md"), ("mine", "a.md", "zeta")}  # and again to render a.md
    site = config.site.output
    assert [a.get("href") for a in parse_page(site / "mine/a.html").iterfind(".//div[@class='note-body']//a")] \
        == ["zeta.html", "b.html"]
    assert run.warnings == [] and "theirs/a.html" not in run.report.written
    assert [s.text for s in parse_page(site / "theirs/a.html").iter("span") if s.get("class") == "broken-link"] \
        == ["zeta"]
    asked.clear()
    (tmp_path / "theirs/b.md").unlink()
    run = build_and_render(config)
    assert set(asked) == {("theirs", "a.md", "b.md"), ("theirs", "a.md", "zeta"),  # both notes linked to b.md
                          ("theirs", "c.md", "b.md"), ("theirs", "c.md", "gama")}
    assert "theirs/b.html" in run.report.removed
    asked.clear()
    state = site / ".render-state"
    meta = renderstate.read_meta(state)
    assert meta is not None and set(meta["universe"]) == {"mine", "theirs"}
    assert renderstate.patch_state(state, {"universe": "one digest of every note, as before"},
                                   {"titles": {"mine": None, "theirs": None}})
    write(tmp_path / "mine", "eta.md", "# Eta\n")
    build_and_render(config)
    assert {source_id for source_id, _, _ in asked} == {"mine", "theirs"}


def test_a_note_added_to_one_source_makes_the_navigation_tree_of_that_source_only(tmp_path, monkeypatch):
    """Each source's tree is made again only when its notes' paths or titles moved: at 100,000 notes in four
    sources, the other three trees were a fifth of what a note added cost. A stored digest from before the trees
    had one each (one string) makes every tree again."""
    for name in ("mine", "theirs"):
        write(tmp_path / name, "a.md", "# Alfa\n")
    config = make_config(tmp_path, {"mine": tmp_path / "mine", "theirs": tmp_path / "theirs"})
    build_and_render(config)
    made: list[str] = []
    parts = tree.tree_parts
    monkeypatch.setattr(tree, "tree_parts", lambda source_id, notes: made.append(source_id) or parts(source_id, notes))
    write(tmp_path / "mine", "zeta.md", "# Zeta\n")
    run = build_and_render(config)
    assert made == ["mine"] and "static/tree/mine.js" in run.report.written
    assert "Zeta" in (config.site.output / "static/tree/mine.js").read_text("utf-8")
    made.clear()
    write(tmp_path / "theirs", "a.md", "# Alfa nová\n")  # a title: the tree lists it
    run = build_and_render(config)
    assert made == ["theirs"] and "Alfa nová" in (config.site.output / "static/tree/theirs.js").read_text("utf-8")
    made.clear()
    state = config.site.output / ".render-state"
    assert renderstate.patch_state(state, {"trees": "one digest of every source, as before"}, {})
    write(tmp_path / "mine", "eta.md", "# Eta\n")
    build_and_render(config)
    assert sorted(made) == ["mine", "theirs"]


def test_a_note_that_cannot_be_read_leaves_its_source_tree_and_comes_back(tmp_path, monkeypatch):
    """A note indexed but unreadable when the render reads it has no page, so its source's tree leaves it out
    (its path and title did not move); once readable again the tree lists it. The other source's tree holds."""
    for name in ("mine", "theirs"):
        write(tmp_path / name, "a.md", "# Alfa\n")
        write(tmp_path / name, "zeta.md", "# Zeta\n")
    config = make_config(tmp_path, {"mine": tmp_path / "mine", "theirs": tmp_path / "theirs"})
    build_and_render(config)
    note = tmp_path / "mine/zeta.md"
    write(tmp_path / "mine", "zeta.md", "# Zeta\n\nNová.\n")
    log = SyncLog(config.log_path, echo_info=False)
    assert build(config, log=log, render=False) == 0
    indexed = note.stat().st_mtime_ns
    note.unlink()
    note.symlink_to(tmp_path / "nowhere.md")  # indexed, but not there when the render reads it
    made: list[str] = []
    parts = tree.tree_parts
    monkeypatch.setattr(tree, "tree_parts", lambda source_id, notes: made.append(source_id) or parts(source_id, notes))
    with closing(db.connect(indexfile.resolve(config.index))) as conn:
        site.render_site(config, conn, full=False, log=log)
    mine = config.site.output / "static/tree/mine.js"
    assert made == ["mine"] and "Zeta" not in mine.read_text("utf-8")
    note.unlink()
    write(tmp_path / "mine", "zeta.md", "# Zeta\n\nNová.\n")
    os.utime(note, ns=(indexed, indexed))  # as the index saw it: not a change to index
    made.clear()
    build_and_render(config)
    assert made == ["mine"] and "Zeta" in mine.read_text("utf-8")


def test_a_note_added_removed_or_retagged_fingerprints_the_pages_of_its_tags_only(portal, monkeypatch):
    """A tag page is made again (its fingerprint computed over every note of the tag) only for the tags of a note
    added, or re-rendered with another title or tags, and for a tag whose notes are others now (a note left it, or
    was removed): not for every tag of the site. Each page then shows what a fresh render would."""
    config, root = portal
    made: list[str] = []
    tag_fp = site._tag_fp
    monkeypatch.setattr(site, "_tag_fp", lambda env_fp, slug, name, members: made.append(slug)
                        or tag_fp(env_fp, slug, name, members))

    def titles(slug: str) -> list[str]:
        doc = parse_page(config.site.output / f"tags/{slug}/index.html")
        return [a.text for a in doc.iterfind(".//main//li/a")]

    write(root, "f.md", "---\ntags: [hory]\n---\n# Fí\n")
    build_and_render(config)
    assert made == ["hory"] and "Fí" in titles("hory")
    made.clear()
    (root / "a.md").unlink()  # it was on čaj
    build_and_render(config)
    assert made == ["caj"] and "Alfa" not in titles("caj")
    made.clear()
    edit(root / "sub/b.md", "---\ntags: [les, hory]\n---\n# Beta\n\nText.\n")  # leaves čaj, its last note
    build_and_render(config)
    assert sorted(made) == ["hory", "les"] and not (config.site.output / "tags/caj").exists()
    made.clear()
    edit(root / "sub/d.md", "---\ntags: [hory]\n---\n# Delta nová\n\nText.\n")
    build_and_render(config)
    assert made == ["hory"] and "Delta nová" in titles("hory")
    made.clear()
    edit(root / "e.md", "# Epsilon\n\nNic, ale jinak.\n")  # no tags, its title kept
    build_and_render(config)
    assert made == []
    check_site(config.site.output)
