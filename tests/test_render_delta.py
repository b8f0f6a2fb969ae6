"""The delta render (builder.render.delta) against the full render: after any edit, the site and the
manifest are the same whichever of the two ran, and the delta render runs exactly when it should."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from builder import indexfile
from builder.core import index as db
from builder.core.config import load_config
from builder.core.index import renderstate
from builder.render import delta, links, output
from builder.render.site import render_site
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.conftest import copy_portal
from tests.render_support import (
    DAY,
    NOTES,
    OTHER,
    build_and_render,
    make_config,
    make_notes,
    manifest,
    site_snapshot,
    write,
)


def touch(path: Path, when: float) -> None:
    os.utime(path, (when, when))


EDITS: dict[str, tuple[bool, Callable[[Path], None]]] = {
    # name: (the delta render takes it, the edit)
    "body": (True, lambda r: write(r, "sub/b.md", NOTES["sub/b.md"] + "\nDalší odstavec.\n")),
    "body of a linked note": (True, lambda r: write(r, "a.md", NOTES["a.md"].replace("text", "jiný text"))),
    "body with a broken link": (True, lambda r: write(r, "e.md", NOTES["e.md"] + "\nA ještě.\n")),
    "two bodies": (True, lambda r: (write(r, "e.md", NOTES["e.md"] + "\nx\n"),
                                    write(r, "old/n05.md", "# Stará 5\n\nOdkaz na [Alfu](../a.md). Nový.\n"))),
    "only the date": (True, lambda r: touch(r / "sub/c.md", time.time())),
    "an unlisted date, back": (True, lambda r: touch(r / "old/n14.md", time.time() - 400 * DAY)),
    "a listed date, back": (False, lambda r: touch(r / "old/n03.md", time.time() - 400 * DAY)),
    "the newest note back in time": (False, lambda r: touch(r / "e.md", time.time() - 400 * DAY)),
    "a broken link's note edited, a listed date back": (False, lambda r: (
        write(r, "e.md", NOTES["e.md"] + "\nA ještě.\n"), touch(r / "old/n03.md", time.time() - 400 * DAY))),
    "front matter date": (True, lambda r: write(r, "sub/d.md", NOTES["sub/d.md"].replace("2020-01-05", "2030-01-05"))),
    "attachment changed": (True, lambda r: ((r / "sub/img.png").write_bytes(b"png-2"),
                                            write(r, "e.md", NOTES["e.md"] + "\ny\n"))),
    "attachment appears": (False, lambda r: ((r / "sub/plan.png").write_bytes(b"plan"),
                                             write(r, "e.md", NOTES["e.md"] + "\ny\n"))),
    "link added": (False, lambda r: write(r, "e.md", NOTES["e.md"] + "\n[a](a.md)\n")),
    "link removed": (False, lambda r: write(r, "sub/b.md", "---\ntags: [čaj, hory]\n---\n# Beta\n\nText.\n")),
    "title": (False, lambda r: write(r, "sub/d.md", NOTES["sub/d.md"].replace("# Delta", "# Delta nová"))),
    "heading added": (True, lambda r: write(r, "sub/d.md", NOTES["sub/d.md"] + "\n## Nový oddíl\n\nx\n")),
    "heading renamed": (True, lambda r: write(r, "e.md", NOTES["e.md"].replace("## Poznámka", "## Doplněk"))),
    "heading a link names renamed, the linking note's date moved": (False, lambda r: (
        write(r, "a.md", NOTES["a.md"].replace("## Oddíl", "## Část")), touch(r / "sub/b.md", time.time()))),
    "heading a link names renamed": (False, lambda r: write(r, "a.md",
                                                            NOTES["a.md"].replace("## Oddíl", "## Část"))),
    "headings in two notes": (True, lambda r: (write(r, "e.md", NOTES["e.md"] + "\n## Nové\n\nx\n"),
                                                       write(r, "sub/d.md", NOTES["sub/d.md"] + "\n## Jiné\n"))),
    "tags": (False, lambda r: write(r, "sub/d.md", NOTES["sub/d.md"].replace("[hory]", "[hory, les]"))),
    "a heading in another source": (True, lambda r: write(r.parent / "other", "x.md", OTHER["x.md"] + "\n## Nová\n")),
    "a body in each source": (True, lambda r: (write(r.parent / "other", "dir/y.md", OTHER["dir/y.md"] + "\nA.\n"),
                                               write(r, "e.md", NOTES["e.md"] + "\nB.\n"))),
    "new note": (False, lambda r: write(r, "f.md", "# Fí\n\nNová.\n")),
    "note deleted": (False, lambda r: (r / "e.md").unlink()),
    "a draft edited": (True, lambda r: write(r, "koncept.md", "---\npublished: false\n---\n# Koncept\n\nNový.\n")),
    "a draft and a note edited": (True, lambda r: (write(r, "koncept.md", "---\npublished: false\n---\n# K\n"),
                                                   write(r, "e.md", NOTES["e.md"] + "\nC.\n"))),
    "unpublished": (False, lambda r: write(r, "e.md", "---\npublished: false\n---\n# Epsilon\n")),
}


def watched(site: Path) -> dict:
    """What the site's stamp records of the files the notes link to (both portals link the same notes' files)."""
    return json.loads((site / output.STAMP).read_text(encoding="utf-8"))["watched"]


def spy_on_delta(monkeypatch) -> list[bool]:
    """From now on, note for every render whether the delta render took it (True) or declined."""
    calls: list[bool] = []
    real = delta.render_edits

    def spy(*args, **kwargs):
        found = real(*args, **kwargs)
        calls.append(found is not None)
        return found

    monkeypatch.setattr(delta, "render_edits", spy)
    return calls


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two portals over the same notes, each with its own index and site, both built once for the module."""
    root = tmp_path_factory.mktemp("delta")
    make_notes(root / "notes")
    for name in ("delta", "full"):
        (root / name).mkdir()
        build_and_render(make_config(root / name, {"notes": root / "notes", "other": root / "other"}))
    return root


@pytest.fixture
def portals(template: Path, tmp_path: Path):
    """A copy of the template's two portals."""
    copy_portal(template, tmp_path, ("delta/portal.yaml", "full/portal.yaml"))
    return tmp_path / "notes", *(load_config(tmp_path / name / "portal.yaml") for name in ("delta", "full"))


@pytest.mark.parametrize("name", list(EDITS))
def test_the_delta_render_writes_what_the_full_render_writes(portals, monkeypatch, name):
    root, by_delta, by_full = portals
    takes, edit = EDITS[name]
    edit(root)
    taken = spy_on_delta(monkeypatch)
    first = build_and_render(by_delta)
    monkeypatch.setattr(delta, "render_edits", lambda *args, **kwargs: None)
    second = build_and_render(by_full)
    assert taken == [takes]
    assert site_snapshot(by_delta.site.output) == site_snapshot(by_full.site.output)
    assert manifest(by_delta.site.output) == manifest(by_full.site.output)
    assert watched(by_delta.site.output) == watched(by_full.site.output)
    assert sorted(first.report.written) == sorted(second.report.written)
    assert (first.report.notes_rendered, first.report.broken_links, first.report.unchanged) == (
        second.report.notes_rendered, second.report.broken_links, second.report.unchanged)
    def said(run) -> list[str]:  # without the time of day and the seconds the render took
        return [re.sub(r"\d+\.\d\d s$", "", line.split(" ", 1)[1]) for line in run.log.lines]

    assert said(first) == said(second)


def test_edit_after_edit_each_delta_render_leaves_what_the_next_needs(portals, monkeypatch):
    """A series of edits, each rendered by the delta render on one portal and by the full render on
    the other: the same site and manifest after each (the delta render keeps what it remembers
    current: entries, digests of the table of contents, the home page's list)."""
    root, by_delta, by_full = portals
    calls: list[bool] = []
    series = [lambda: write(root, "sub/b.md", NOTES["sub/b.md"] + "\nOdstavec 1.\n"),
              lambda: write(root, "sub/d.md", NOTES["sub/d.md"] + "\n## Jedna\n"),
              lambda: write(root, "sub/c.md", NOTES["sub/c.md"] + "\n## Dva\n"),
              lambda: write(root, "sub/d.md", NOTES["sub/d.md"] + "\n## Tři\n"),
              lambda: touch(root / "old/n15.md", time.time()),
              lambda: write(root, "sub/b.md", NOTES["sub/b.md"] + "\nOdstavec 2.\n")]
    for step in series:
        step()
        with monkeypatch.context() as patch:
            taken = spy_on_delta(patch)
            build_and_render(by_delta)
        with monkeypatch.context() as patch:
            patch.setattr(delta, "render_edits", lambda *a, **k: None)
            build_and_render(by_full)
        calls += taken
        assert site_snapshot(by_delta.site.output) == site_snapshot(by_full.site.output)
        assert manifest(by_delta.site.output) == manifest(by_full.site.output)
    assert calls == [True] * len(series)
    assert "Odstavec 2." in (by_delta.site.output / "notes/sub/b.html").read_text("utf-8")


def test_a_delta_render_keeps_the_wikilink_tables_it_built_and_a_render_drops_those_of_notes_renamed(portals,
                                                                                                      monkeypatch):
    """A one-note render of a note with a wikilink builds its source's table of every note's name as a slug (70 ms of
    a one-note build at 100,000 notes; issue 47) and keeps it in the state: the next such render reads it instead.
    A render after which a source's paths or titles differ drops that source's tables (a stale one would send a
    wikilink to a note that is gone); those of a source whose notes kept their names stay."""
    root, by_delta, _ = portals
    state = by_delta.site.output / ".render-state"
    taken = spy_on_delta(monkeypatch)
    write(root, "sub/c.md", NOTES["sub/c.md"] + "\nDál.\n")  # [[d]]: its source's names
    write(root.parent / "other", "x.md", OTHER["x.md"] + "\nDál.\n")  # [[y]]
    build_and_render(by_delta)
    tables = renderstate.read_map(state, "wiki")
    assert tables is not None and sorted(tables) == ["notes:by_stem", "other:by_stem"]
    assert tables["notes:by_stem"]["d"] == ("sub/d.md",)
    built: list[int] = []
    grouped = links._grouped
    monkeypatch.setattr(links, "_grouped", lambda pairs: built.append(1) or grouped(pairs))
    write(root, "sub/c.md", NOTES["sub/c.md"] + "\nDál, znovu.\n")
    build_and_render(by_delta)
    assert built == [] and "Dál, znovu." in (by_delta.site.output / "notes/sub/c.html").read_text("utf-8")
    assert 'href="d.html"' in (by_delta.site.output / "notes/sub/c.html").read_text("utf-8")
    write(root, "sub/d.md", NOTES["sub/d.md"].replace("# Delta", "# Delta nová"))  # a title: the full render
    build_and_render(by_delta)
    assert taken == [True, True, False]
    assert sorted(renderstate.read_map(state, "wiki") or {}) == ["other:by_stem"]


def test_a_heading_edit_reads_and_writes_the_list_of_its_own_source_s_notes_only(portals, monkeypatch):
    """The delta render's lists of each source's notes (titles for its links, the table of contents) are kept by
    source: a heading renamed in one source reads and writes that source's list alone, and the next edit in the
    other source still finds its own list as the full render left it."""
    root, by_delta, by_full = portals
    asked: list[tuple[str, ...]] = []
    real = renderstate.read_keys

    def read_keys(path, name, keys):
        keys = list(keys)
        if name == "titles":
            asked.append(tuple(keys))
        return real(path, name, keys)

    monkeypatch.setattr(renderstate, "read_keys", read_keys)
    state = by_delta.site.output / output.STATE
    before = renderstate.read_state(state)["titles"]
    write(root.parent / "other", "x.md", OTHER["x.md"] + "\n## Nová\n")
    taken = spy_on_delta(monkeypatch)
    build_and_render(by_delta)
    assert taken == [True] and asked == [("other",)]
    after = renderstate.read_state(state)["titles"]
    assert after["notes"] == before["notes"] and after["other"] != before["other"]
    write(root, "sub/d.md", NOTES["sub/d.md"] + "\n## Jedna\n")
    build_and_render(by_delta)
    assert taken == [True, True] and asked[1:] == [("notes",)]
    with monkeypatch.context() as patch:
        patch.setattr(delta, "render_edits", lambda *a, **k: None)
        build_and_render(by_full)  # the same notes (both portals read them), fully rendered
    assert site_snapshot(by_delta.site.output) == site_snapshot(by_full.site.output)
    assert manifest(by_delta.site.output) == manifest(by_full.site.output)


def settle(site: Path) -> None:
    """Let the manifest's folder times read as taken long after each folder's last change (the case
    where a folder is trusted from its time alone, without listing it)."""
    stored = renderstate.read_manifest(site)
    stored["folders"] = {rel: [mtime, mtime + 10 * output.SETTLED_NS] for rel, (mtime, _) in stored["folders"].items()}
    output.store_manifest(site, stored, {})


@pytest.mark.parametrize("damage", ["page", "page, its folder's time settled", "journal", "fragments",
                                    "a damaged fragment"])
def test_a_missing_page_or_an_unfinished_render_leaves_it_to_the_full_render(portals, monkeypatch, damage):
    root, by_delta, _ = portals
    site = by_delta.site.output
    if damage.startswith("page"):
        if "settled" in damage:
            settle(site)
        (site / "notes/sub/d.html").unlink()
    elif damage == "journal":
        (site / output.JOURNAL).write_text("notes/sub/d.html\n", encoding="utf-8")
    else:  # the table of contents' folder lists, kept in the site's cache: a heading edit needs them
        fragments = site / output.CACHE_DIR / "toc"
        if damage == "fragments":
            shutil.rmtree(fragments)
        else:  # another folder's list than the edited note's, which the full render makes again
            for fragment in (fragments / "notes").glob("*.frag"):
                fragment.write_bytes(b"\xff\xfe not UTF-8")
        write(root, "e.md", NOTES["e.md"] + "\n## Nový oddíl\n")
    calls = spy_on_delta(monkeypatch)
    if damage.startswith("page") or damage == "journal":
        write(root, "e.md", NOTES["e.md"] + "\nz\n")
    run = build_and_render(by_delta)
    assert calls == [False]
    if not (damage.startswith("page") or damage == "journal"):
        assert "notes/index.html" in run.report.written
        assert all(f.read_bytes().decode("utf-8") for f in (site / output.CACHE_DIR / "toc").rglob("*.frag"))
        assert 'href=""' not in (site / "notes/index.html").read_text("utf-8")
    else:
        assert "notes/sub/d.html" in run.report.written and (site / "notes/sub/d.html").exists()


def test_a_render_from_an_older_manifest_is_the_full_render(portals, monkeypatch):
    """A manifest saved without what the delta render needs (by a renderer before it) is never
    read as if it had it."""
    root, by_delta, _ = portals
    site = by_delta.site.output
    stored = renderstate.read_manifest(site)
    older = {key: value for key, value in stored.items() if key not in ("into", "recent", "home")}
    output.store_manifest(site, older, {})
    write(root, "e.md", NOTES["e.md"] + "\nz\n")
    calls = spy_on_delta(monkeypatch)
    build_and_render(by_delta)
    assert calls == [False] and "into" in renderstate.read_manifest(site)


def test_a_note_that_could_not_be_read_leaves_the_next_render_to_the_full_render(portals, monkeypatch):
    """The full render tries every note it could not read again: the delta render never skips that."""
    root, by_delta, _ = portals
    site = by_delta.site.output
    text = NOTES["e.md"] + "\nNové.\n"
    write(root, "e.md", text)
    log = SyncLog(by_delta.log_path, echo_info=False)
    assert build(by_delta, log=log, render=False) == 0
    indexed = (root / "e.md").stat().st_mtime_ns
    (root / "e.md").unlink()
    (root / "e.md").symlink_to(root / "nowhere.md")  # indexed, but not there when the render reads it
    conn = db.connect(indexfile.resolve(by_delta.index))
    try:
        render_site(by_delta, conn, full=False, log=log)
    finally:
        conn.close()
    assert renderstate.read_manifest(site)["unreadable"] == ["notes:e.md"]
    (root / "e.md").unlink()
    write(root, "e.md", text)
    os.utime(root / "e.md", ns=(indexed, indexed))  # as the index saw it: not a change to index
    write(root, "sub/b.md", NOTES["sub/b.md"] + "\nDalší.\n")
    calls = spy_on_delta(monkeypatch)
    build_and_render(by_delta)
    assert calls == [False] and renderstate.read_manifest(site)["unreadable"] == []


def test_a_failing_delta_render_costs_a_warning_and_the_full_render_repairs_its_pages(portals, monkeypatch):
    root, by_delta, by_full = portals

    def broken(config, conn, notes, old, meta, titles, into, opened, *rest):  # writes one page, then fails
        opened([notes[0].url]).write(notes[0].url, "<p>half done</p>")  # (in the journal first, as every write)
        raise RuntimeError("a bug")

    monkeypatch.setattr(delta, "_render_delta", broken)
    write(root, "sub/b.md", NOTES["sub/b.md"] + "\nNový.\n")
    run = build_and_render(by_delta)
    build_and_render(by_full)
    assert run.warnings == [("render: the render of the changed notes alone failed (RuntimeError: a bug); "
                             "rendering the whole site")]
    assert site_snapshot(by_delta.site.output) == site_snapshot(by_full.site.output)
    assert manifest(by_delta.site.output) == manifest(by_full.site.output)


def small_site(site: Path) -> list[str]:
    files = ["index.html", "notes/a.html", "notes/sub/b.html", "notes/sub/c.html", "tags/x.html"]
    for rel in files:
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(rel, encoding="utf-8")
    return files


@pytest.mark.parametrize("settled", [True, False], ids=["settled", "just taken"])
def test_folder_times_tell_every_page_is_there_and_miss_no_page_deleted_by_hand(tmp_path, settled):
    site = tmp_path / "site"
    files = small_site(site)
    folders = output.folder_times(site)
    assert sorted(folders) == ["notes", "notes/sub", "tags"]  # never the site's own folder
    if settled:
        folders = {rel: [mtime, mtime + 10 * output.SETTLED_NS] for rel, (mtime, _) in folders.items()}
    assert output.unchanged_files(site, files, folders) == set(files)
    (site / "notes/sub/c.html").unlink()
    assert output.unchanged_files(site, files, folders) is None
    assert output.unchanged_files(site, [f for f in files if f != "notes/sub/c.html"],
                                  output.folder_times(site)) == set(files) - {"notes/sub/c.html"}


def test_a_page_deleted_within_its_folders_clock_tick_is_still_missed_by_no_render(tmp_path):
    """A coarse clock leaves a folder's time where it was when a page goes within the same tick: a folder
    whose time was taken that soon after its change is listed, not trusted."""
    site = tmp_path / "site"
    files = small_site(site)
    folders = output.folder_times(site)
    before = os.stat(site / "notes/sub").st_mtime_ns
    (site / "notes/sub/c.html").unlink()
    os.utime(site / "notes/sub", ns=(before, before))  # the same tick: the time did not move
    assert output.unchanged_files(site, files, folders) is None
    (site / "notes/sub/stray.tmp").write_text("x", encoding="utf-8")
    (site / "notes/sub/c.html").write_text("c", encoding="utf-8")
    os.utime(site / "notes/sub", ns=(before, before))
    assert output.unchanged_files(site, files, folders) == {*files, "notes/sub/stray.tmp"}


def test_a_folder_whose_time_was_never_taken_or_is_gone_is_not_trusted(tmp_path):
    site = tmp_path / "site"
    files = small_site(site)
    folders = output.folder_times(site)
    assert output.unchanged_files(site, [*files, "new/p.html"], folders) is None
    shutil.rmtree(site / "tags")
    assert output.unchanged_files(site, [f for f in files if not f.startswith("tags/")], folders) is None
    kept = output.folder_times(site, ["notes", "tags"], previous=folders)
    assert kept == {"notes": folders["notes"]}  # the same time keeps its record; a gone folder is left out


def test_a_full_render_after_a_note_added_or_removed_times_the_folders_it_changed_and_lists_no_folder(portals,
                                                                                                     monkeypatch):
    """A full render whose last render's folder times still hold learns the site's files from them (a ``stat`` a
    folder, no listing) and takes again only the times of the folders it wrote or removed files in: its record
    is then what a listing of every folder would find, a folder it made included and one it emptied left out, so
    the next delta render still misses no page deleted by hand."""
    root, by_delta, _ = portals
    site = by_delta.site.output
    listed: list[Path] = []
    real = output.existing_files
    monkeypatch.setattr(output, "existing_files", lambda path: (listed.append(path), real(path))[1])
    taken = spy_on_delta(monkeypatch)

    def times() -> dict[str, int]:
        return {rel: mtime for rel, (mtime, _) in renderstate.read_manifest(site)["folders"].items()}

    def listing() -> dict[str, int]:
        return {rel: mtime for rel, (mtime, _) in output.folder_times(site).items()}

    write(root, "nova/f.md", "# Fí\n\nNová, odkaz na [[Alfa]].\n")
    build_and_render(by_delta)
    assert taken == [False] and listed == []  # the full render, the site's files from the folders' times
    assert (site / "notes/nova/f.html").is_file() and times() == listing() and "notes/nova" in times()
    (site / "notes/sub/d.html").unlink()  # by hand
    write(root, "e.md", NOTES["e.md"] + "\nDále.\n")
    build_and_render(by_delta)
    assert taken == [False, False] and listed == [site]  # the folder's time moved: both renders decline to trust
    assert (site / "notes/sub/d.html").is_file() and times() == listing()
    (root / "nova/f.md").unlink()
    build_and_render(by_delta)
    assert taken[2] is False and listed == [site] and not (site / "notes/nova").exists()
    assert times() == listing() and "notes/nova" not in times()
    write(root, "sub/b.md", NOTES["sub/b.md"] + "\nA dál.\n")
    build_and_render(by_delta)
    assert taken[3] is True and times() == listing()


def test_a_file_the_delta_render_writes_anew_is_in_its_record_of_the_site_and_a_full_render_removes_it(portals,
                                                                                                      monkeypatch):
    """An attachment a full render could not copy is copied by the next delta render: the site's record of its
    files names it, so a full render that trusts the folders' times (not listing them) removes it once no note
    links it."""
    root, by_delta, _ = portals
    site = by_delta.site.output
    real = output.copy_atomic

    def refuse(source, target, **kwargs):
        if target.name == "img.png":
            raise PermissionError(13, "Permission denied")
        return real(source, target, **kwargs)

    (root / "sub/img.png").write_bytes(b"png-2, bigger")
    write(root, "f.md", "# Fí\n\nNová.\n")  # a full render
    with monkeypatch.context() as patch:
        patch.setattr(output, "copy_atomic", refuse)
        build_and_render(by_delta)
    assert not (site / "notes/sub/img.png").exists()
    taken = spy_on_delta(monkeypatch)
    write(root, "e.md", NOTES["e.md"] + "\nDále.\n")
    build_and_render(by_delta)
    assert taken == [True] and (site / "notes/sub/img.png").read_bytes() == b"png-2, bigger"
    assert "notes/sub/img.png" in renderstate.read_manifest(site)["files"]
    settle(site)  # every folder trusted from its time: no listing shows the file
    write(root, "sub/c.md", NOTES["sub/c.md"].replace("![obrázek](img.png)", "obrázek"))
    build_and_render(by_delta)
    assert taken == [True, False] and not (site / "notes/sub/img.png").exists()


def test_a_folder_timed_too_soon_is_trusted_once_a_render_listed_it_whole_long_enough_after_its_change(
        portals, monkeypatch):
    """A render writes into a folder, then times it at once: too soon to trust (the folder's clock may not have
    ticked). The next render lists it and finds it whole; when that listing came long enough after the folder's
    last change, its time is recorded as of the listing, and later renders trust it without listing it."""
    root, by_delta, _ = portals
    site = by_delta.site.output
    monkeypatch.setattr(output, "SETTLED_NS", 50_000_000)  # a fine clock's tick: the test need not wait 2 s
    taken = spy_on_delta(monkeypatch)

    def record(rel: str) -> list[int]:
        return renderstate.read_manifest(site)["folders"][rel]

    write(root, "sub/b.md", NOTES["sub/b.md"] + "\nOdstavec.\n")
    build_and_render(by_delta)
    mtime, at = record("notes/sub")
    assert mtime >= at - output.SETTLED_NS  # written, then timed at once
    time.sleep(0.2)
    write(root, "e.md", NOTES["e.md"] + "\nDále.\n")  # a page of another folder
    build_and_render(by_delta)
    assert taken == [True, True] and record("notes/sub")[0] == mtime
    assert record("notes/sub")[1] - mtime >= output.SETTLED_NS  # trusted from now on
    assert os.stat(site / "notes/sub").st_mtime_ns == mtime


def test_a_temporary_file_of_a_killed_write_in_a_folder_timed_too_soon_is_removed_by_the_delta_render(portals,
                                                                                                      monkeypatch):
    root, by_delta, _ = portals
    site = by_delta.site.output
    stored = renderstate.read_manifest(site)
    stored["folders"] = {rel: [mtime, mtime] for rel, (mtime, _) in stored["folders"].items()}  # all just timed
    output.store_manifest(site, stored, {})
    folder = site / "notes/sub"
    before = os.stat(folder).st_mtime_ns
    (folder / ".d.html.4242.tmp").write_text("half", encoding="utf-8")
    os.utime(folder, ns=(before, before))  # within the folder's clock tick: its time did not move
    write(root, "e.md", NOTES["e.md"] + "\nz\n")
    calls = spy_on_delta(monkeypatch)
    run = build_and_render(by_delta)
    assert calls == [True]
    assert not (folder / ".d.html.4242.tmp").exists() and "notes/sub/.d.html.4242.tmp" in run.report.removed


def test_a_body_edit_keeps_the_stamps_record_of_the_linked_files_and_resolves_no_link_again(portals, monkeypatch):
    root, by_delta, _ = portals
    resolved: list[str] = []
    real = delta._files_hold
    monkeypatch.setattr(delta, "_files_hold", lambda resolver, links: resolved.extend(links) or real(resolver, links))
    before = watched(by_delta.site.output)
    write(root, "e.md", NOTES["e.md"] + "\nJen text.\n")
    calls = spy_on_delta(monkeypatch)
    build_and_render(by_delta)
    assert calls == [True]
    assert resolved == []
    assert watched(by_delta.site.output) == before


def test_a_stamp_of_another_render_is_not_trusted_for_the_linked_files(portals, monkeypatch):
    """A render killed after storing its state and before its stamp leaves the stamp of the render before: its
    record of the linked files may be older than the state's links, so every link to a file is resolved again.
    Here a missing image appears while its folder's time is set back (the record alone would not see it)."""
    root, by_delta, _ = portals
    site = by_delta.site.output
    stamp = json.loads((site / output.STAMP).read_text(encoding="utf-8"))
    (site / output.STAMP).write_text(json.dumps({**stamp, "content": "an older render"}), encoding="utf-8")
    times = {folder: os.stat(folder).st_mtime_ns for folder in (root, root / "sub")}
    (root / "sub/plan.png").write_bytes(b"plan")
    write(root, "e.md", NOTES["e.md"] + "\nJen text.\n")
    for folder, mtime in times.items():
        os.utime(folder, ns=(mtime, mtime))
    calls = spy_on_delta(monkeypatch)
    build_and_render(by_delta)
    assert calls == [False]  # the image mends Gama's broken link: the full render re-renders it
    assert 'src="plan.png"' in (site / "notes/sub/c.html").read_text(encoding="utf-8")
