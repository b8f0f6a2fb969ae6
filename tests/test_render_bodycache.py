"""Note bodies kept between full renders (builder.render.bodycache): a full render that takes kept
bodies writes the site a render that parses every note writes, and a kept body whose links now
land elsewhere is not taken."""

from __future__ import annotations

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
    rendered = parsed_notes(monkeypatch)
    build_and_render(spilled, full=True, workers=workers)  # the kept bodies, written from the spill, are taken
    assert rendered == [] and site_snapshot(spilled.site.output) == site_snapshot(held.site.output)


def test_a_spill_that_cannot_be_written_keeps_the_bodies_in_memory(portals, monkeypatch):
    root, spilled, held = portals
    build_and_render(held, full=True)
    batches = spied_spill(monkeypatch)
    (spilled.site.output / ".render-cache/spill.sqlite").mkdir(parents=True)  # not a file it can write
    build_and_render(spilled, full=True)
    assert batches == []
    assert site_snapshot(spilled.site.output) == site_snapshot(held.site.output)
    assert (spilled.site.output / ".render-cache/spill.sqlite").is_dir()  # left as it was found
