"""Note bodies kept between full renders (builder.render.bodycache): a full render that takes kept
bodies writes the site a render that parses every note writes, and a kept body whose links now
land elsewhere is not taken."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

from builder.core.config import load_config
from builder.render import bodycache, markdown, site
from tests.conftest import copy_portal
from tests.render_support import NOTES, build_and_render, make_config, make_notes, manifest, site_snapshot, write


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two portals over the same notes (2 sources, links, copies, code, broken links), both built once
    for the module, every render counting as a big one."""
    root = tmp_path_factory.mktemp("bodycache")
    make_notes(root / "notes")
    write(root / "notes", "kod.md", "# Kód\n\n```python\nprint('ahoj')\n```\n\n[Alfa](a.md) a [[Gama]]\n")
    write(root / "notes", "kopie/kod.md", "# Kód\n\n```python\nprint('ahoj')\n```\n\n[Alfa](a.md) a [[Gama]]\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(site, "BIG_RENDER", 1)
        for name in ("kept", "parsed"):
            (root / name).mkdir()
            build_and_render(make_config(root / name, {"notes": root / "notes", "other": root / "other"}))
    return root


@pytest.fixture
def portals(template: Path, tmp_path: Path, monkeypatch):
    """A copy of the template's two portals; every render counts as a big one (the body cache is used
    by big renders only)."""
    monkeypatch.setattr(site, "BIG_RENDER", 1)
    copy_portal(template, tmp_path, ("kept/portal.yaml", "parsed/portal.yaml"))
    return tmp_path / "notes", *(load_config(tmp_path / name / "portal.yaml") for name in ("kept", "parsed"))


def parsed_notes(monkeypatch) -> list[str]:
    """From now on, the page URL of every note body markdown-it renders."""
    rendered: list[str] = []
    real = markdown.render_body

    def spy(md, text, *, page_url, **kwargs):
        rendered.append(page_url)
        return real(md, text, page_url=page_url, **kwargs)

    monkeypatch.setattr(markdown, "render_body", spy)
    return rendered


def no_kept_bodies(config) -> None:
    for kept in (config.site.output / ".render-cache").glob("bodies-*.sqlite"):
        kept.unlink()


def test_a_full_render_takes_the_kept_bodies_and_writes_the_same_site(portals, monkeypatch):
    _, kept, parsed = portals
    rendered = parsed_notes(monkeypatch)
    build_and_render(kept, full=True)
    assert rendered == []  # every body was kept: nothing parsed
    no_kept_bodies(parsed)
    build_and_render(parsed, full=True)
    assert len(rendered) > 20
    assert site_snapshot(kept.site.output) == site_snapshot(parsed.site.output)
    assert manifest(kept.site.output) == manifest(parsed.site.output)


def test_a_kept_body_whose_links_land_elsewhere_now_is_rendered_again(portals, monkeypatch):
    """``e.md`` links to ``nikde.md``, broken until it is written; ``kod.md`` links to Gama by title,
    which another note takes over: both are parsed again, the others are taken as kept."""
    root, kept, parsed = portals
    write(root, "nikde.md", "# Nikde\n\nUž existuje.\n")
    write(root, "sub/c.md", NOTES["sub/c.md"].replace("# Gama", "# Gama stará"))
    write(root, "gama.md", "# Gama\n\nNová.\n")
    rendered = parsed_notes(monkeypatch)
    build_and_render(kept, full=True)
    assert sorted(rendered) == sorted(["notes/e.html", "notes/kod.html", "notes/kopie/kod.html", "notes/a.html",
                                       "notes/nikde.html", "notes/sub/c.html", "notes/gama.html"])
    no_kept_bodies(parsed)
    build_and_render(parsed, full=True)
    assert site_snapshot(kept.site.output) == site_snapshot(parsed.site.output)
    assert 'href="nikde.html"' in (kept.site.output / "notes/e.html").read_text(encoding="utf-8")


def test_a_damaged_body_cache_is_no_cache(portals, monkeypatch):
    _, kept, parsed = portals
    [cache] = (kept.site.output / ".render-cache").glob("bodies-*.sqlite")
    cache.write_bytes(b"not SQLite at all" * 100)
    rendered = parsed_notes(monkeypatch)
    build_and_render(kept, full=True)
    assert len(rendered) > 20  # parsed, and kept again
    rendered.clear()
    build_and_render(kept, full=True)
    assert rendered == []
    build_and_render(parsed, full=True)
    assert site_snapshot(kept.site.output) == site_snapshot(parsed.site.output)


def test_a_body_kept_under_another_key_is_not_taken(portals, monkeypatch):
    """A file damaged so that a key holds another note's blob (a torn write), or text: those notes are
    parsed."""
    import sqlite3

    _, kept, parsed = portals
    [cache] = (kept.site.output / ".render-cache").glob("bodies-*.sqlite")
    conn = sqlite3.connect(cache)
    (_, data), (second, _), (third, _) = conn.execute("SELECT key, data FROM bodies ORDER BY key LIMIT 3").fetchall()
    conn.execute("UPDATE bodies SET data = ? WHERE key = ?", (data, second))
    conn.execute("UPDATE bodies SET data = 'text, not a blob' WHERE key = ?", (third,))
    conn.commit()
    conn.close()
    rendered = parsed_notes(monkeypatch)
    build_and_render(kept, full=True)
    assert len(rendered) == 2
    build_and_render(parsed, full=True)
    assert site_snapshot(kept.site.output) == site_snapshot(parsed.site.output)


def test_bodies_are_kept_per_renderer_version(tmp_path, monkeypatch):
    """Another renderer (its code, the markdown libraries, trusted HTML or not) keeps another file,
    and the render drops the other versions' files."""
    code = tmp_path / "m.py"
    code.write_text("x = 1\n")
    first = bodycache.cache_file(tmp_path, [code], trusted=False)
    assert bodycache.cache_file(tmp_path, [code], trusted=True) != first
    code.write_text("x = 2\n")
    assert bodycache.cache_file(tmp_path, [code], trusted=False) != first
    monkeypatch.setattr(site, "BIG_RENDER", 1)
    root = tmp_path / "notes"
    write(root, "a.md", "# A\n\ntext\n")
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    stale = config.site.output / ".render-cache" / "bodies-000000000000.sqlite"
    stale.write_bytes(b"")
    build_and_render(config, full=True)
    assert [p.name for p in (config.site.output / ".render-cache").glob("bodies-*.sqlite")] != [stale.name]
    assert not stale.exists()


def test_a_write_killed_inside_its_transaction_leaves_the_kept_bodies_as_they_were(tmp_path):
    """A build killed while it writes the kept bodies: a reader meets the old blobs or none (a
    read-only connection does not roll back a hot journal; it reads nothing then), and the next
    write rolls the file back first."""
    import subprocess
    import sys

    from builder.core.index import bodystore

    path = tmp_path / "bodies.sqlite"
    rows = {f"k{i}": bytes([i]) * 3000 for i in range(40)}
    assert bodystore.write_bodies(path, lambda: rows.items(), None)
    child = f"""
import os, sqlite3
conn = sqlite3.connect({str(path)!r}, isolation_level=None)
conn.execute("PRAGMA cache_size = 1")  # spill changed pages into the file before the commit
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE bodies SET data = zeroblob(5000)")
os._exit(9)
"""
    assert subprocess.run([sys.executable, "-c", child], check=False).returncode == 9
    assert path.with_name(path.name + "-journal").exists()
    bodystore.close_reader()
    assert {bodystore.read_body(path, key) for key in rows} <= {None, *rows.values()}
    assert bodystore.write_bodies(path, lambda: [("new", b"x")], None)
    assert not path.with_name(path.name + "-journal").exists()
    assert {key: bodystore.read_body(path, key) for key in rows} == rows
    assert bodystore.read_body(path, "new") == b"x"


def spied_spill(monkeypatch) -> list[int]:
    """From now on, every render of at least one note spills its bodies' HTML, 3 at a time; returns the sizes of
    the batches written."""
    monkeypatch.setattr(bodycache, "SPILL_MIN", 1)
    monkeypatch.setattr(bodycache, "SPILL_BATCH", 3)
    batches: list[int] = []
    real = bodycache.Spill.write

    def spy(self, batch):
        written = real(self, batch)
        if written:
            batches.append(len(batch))
        return written

    monkeypatch.setattr(bodycache.Spill, "write", spy)
    return batches


@pytest.mark.parametrize("workers", [1, 2])
def test_a_big_render_that_keeps_its_bodies_on_disk_writes_the_same_site(portals, monkeypatch, workers):
    """The HTML of a big render's bodies goes to the spill as it arrives and the page workers read it back (issue
    47: 100,000 notes held 2 GB of it): the site, the manifest and the bodies kept for the next render are those of
    a render that held them in memory; the spill is gone when the render ends."""
    root, spilled, held = portals
    monkeypatch.setattr("builder.core.forkpool.PARALLEL_MIN", 1)
    for config in (spilled, held):
        no_kept_bodies(config)
    build_and_render(held, full=True, workers=workers)
    batches = spied_spill(monkeypatch)
    build_and_render(spilled, full=True, workers=workers)
    assert batches and max(batches) == 3 and sum(batches) >= len(list(root.rglob("*.md")))
    assert site_snapshot(spilled.site.output) == site_snapshot(held.site.output)
    assert manifest(spilled.site.output) == manifest(held.site.output)
    assert not (spilled.site.output / ".render-cache/spill.sqlite").exists()
    assert kept_bodies(spilled) == kept_bodies(held) != {}  # whole: their links too, read back from the spill
    rendered = parsed_notes(monkeypatch)
    build_and_render(spilled, full=True, workers=workers)  # the kept bodies, written from the spill, are taken
    assert rendered == [] and site_snapshot(spilled.site.output) == site_snapshot(held.site.output)


def kept_bodies(config) -> dict[str, bytes]:
    """Every body kept for the next render, as stored."""
    from builder.core.index import bodystore

    (path,) = (config.site.output / ".render-cache").glob("bodies-*.sqlite")
    conn = bodystore.sqlite_module().connect(str(path))
    try:
        return dict(conn.execute("SELECT key, data FROM bodies"))
    finally:
        conn.close()


def render_memory(monkeypatch) -> list:
    """From now on, what each full render holds at its end: (its notes, the bodies it rendered)."""
    held: list = []
    real = site._end_pass

    def spy(run, notes, done, *args, **kwargs):
        held.append((notes, done.bodies))
        return real(run, notes, done, *args, **kwargs)

    monkeypatch.setattr(site, "_end_pass", spy)
    return held


def test_a_big_render_holds_of_a_spilled_body_only_what_its_page_shows_besides_the_html(portals, monkeypatch):
    """Issue 47: a body's links and their resolutions (1.4 KB a note) went to the manifest entry and stayed in
    memory to the render's end; in a spilled render the spill keeps them, memory the page's language and summary."""
    root, spilled, _ = portals
    write(root, "souhrn.md", "---\nsummary: Krátce o všem\nlang: cs\n---\n# Souhrn\n\n[Alfa](a.md)\n")
    no_kept_bodies(spilled)
    spied_spill(monkeypatch)
    held = render_memory(monkeypatch)
    build_and_render(spilled, full=True)
    (_, bodies), = held
    assert {o.body.html for o in bodies.values()} == {bodycache.SPILLED}
    assert {(o.body.links, o.body.results, o.body.lines, o.highlights) for o in bodies.values()} == {((), (), (), ())}
    summary = bodies["notes:souhrn.md"].body
    assert (summary.lang, summary.summary) == ("cs", "Krátce o všem")
    page = (spilled.site.output / "notes/souhrn.html").read_text("utf-8")
    assert '<meta name="description" content="Krátce o všem">' in page and 'lang="cs"' in page
    assert '<a href="a.html" rel="noopener noreferrer">Alfa</a>' in page


def test_the_workers_of_a_big_render_are_sent_no_note(portals, monkeypatch):
    """Forked workers hold the render's notes: a job names them by position. A note pickled to a worker kept a
    UTF-8 copy of each of its strings that is not ASCII (1.2 KB a note of the render's memory at 10,000 notes)."""
    root, spilled, _ = portals
    for number in range(5):
        write(root, f"poznámky/čeština-{number}.md", f"---\ntags: [štítek]\n---\n# Čeština {number}\n\n[[Alfa]]\n")
    monkeypatch.setattr("builder.core.forkpool.PARALLEL_MIN", 1)
    no_kept_bodies(spilled)
    held = render_memory(monkeypatch)
    build_and_render(spilled, full=True, workers=2)
    (notes, _), = held
    czech = [n for n in notes if not n.path.isascii()]
    assert len(czech) == 5 and (spilled.site.output / "notes/poznámky/čeština-4.html").is_file()
    for note in czech:  # sys.getsizeof counts a str's UTF-8 copy once one was made (its key and title travel in
        for text in (note.path, note.url, *note.tags):  # the pictures of links: not the note)
            assert sys.getsizeof(text) == sys.getsizeof(text.encode().decode()), (note.key, text)


def test_a_spill_that_cannot_be_written_keeps_the_bodies_in_memory(portals, monkeypatch):
    root, spilled, held = portals
    build_and_render(held, full=True)
    batches = spied_spill(monkeypatch)
    (spilled.site.output / ".render-cache/spill.sqlite").mkdir(parents=True)  # not a file it can write
    build_and_render(spilled, full=True)
    assert batches == []
    assert site_snapshot(spilled.site.output) == site_snapshot(held.site.output)
    assert (spilled.site.output / ".render-cache/spill.sqlite").is_dir()  # left as it was found


@pytest.mark.parametrize("cycles", ["collected", "left"])
def test_the_pages_templates_leave_no_reference_cycles_to_the_render_s_end(tmp_path, monkeypatch, cycles):
    """A render runs without the cycle collector (it would rescan the render's 10^6 objects again and again), but
    each page a template renders leaves reference cycles (Jinja's contexts), which held 100,000 notes' tables of
    contents and tag pages to the render's end (issue 47): they are collected while the pages besides the notes'
    are made. ``left``: the same render with that collection taken out, to show the count below can fail."""
    import gc

    import jinja2.runtime

    notes = tmp_path / "notes"
    for number in range(160):
        write(notes, f"složka-{number % 12}/poznámka-{number}.md", f"---\ntags: [štítek-{number % 7}]\n---\n"
              f"# Poznámka {number}\n\n## Část\n\nText.\n")
    config = make_config(tmp_path, {"notes": notes})
    monkeypatch.setattr("builder.core.forkpool.PARALLEL_MIN", 1)  # the note pages' templates run in the workers
    monkeypatch.setattr("builder.render.toc.TOC_ENTRIES", 10)  # a table of contents in pieces, as a big one is
    if cycles == "left":
        monkeypatch.setattr(site, "_cycles_collected", contextlib.nullcontext)
    found: list[int] = []
    real = site._note_pages

    def spy(*args, **kwargs):  # called once the other pages are made
        found.append(sum(isinstance(o, jinja2.runtime.Context) for o in gc.get_objects()))  # not one is in use
        return real(*args, **kwargs)

    monkeypatch.setattr(site, "_note_pages", spy)
    gc.collect()  # none left by what ran before in this process
    build_and_render(config, full=True, workers=2)
    assert (config.site.output / "notes/index.html").is_file() and len(found) == 1
    assert (found[0] == 0) == (cycles == "collected"), found
