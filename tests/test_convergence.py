"""The site and the index always converge: whatever a build was doing when it stopped, the next
ordinary build makes the site equal to a clean build's, and nothing unpublished stays public."""

from __future__ import annotations

import errno
import json
import marshal
import shutil
import sqlite3
from pathlib import Path

import pytest

from builder.core.index import renderstate
from builder.core.index.renderstate import shard_of
from builder.render import output
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.conftest import copy_config
from tests.render_support import make_config, site_snapshot, write

NOTES = {
    "a.md": "# Alfa\n\nOdkaz na [b](b.md).\n",
    "b.md": "---\ntags: [čaj]\n---\n# Beta\n\nText.\n",
    "sub/c.md": "# Gama\n\n![obrázek](img.png)\n",
}


def clean_site(tmp_path: Path, root: Path) -> dict[str, bytes]:
    """The site a fresh build of the same notes makes."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    config = make_config(fresh, {"notes": root})
    assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0
    return site_snapshot(config.site.output)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """:data:`NOTES` built once for the module; each test gets a copy."""
    root = tmp_path_factory.mktemp("convergence")
    for rel, text in NOTES.items():
        write(root / "notes", rel, text)
    (root / "notes/sub/img.png").write_bytes(b"png")
    config = make_config(root, {"notes": root / "notes"})
    assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0
    return root


@pytest.fixture
def portal(template: Path, tmp_path: Path):
    config = copy_config(template, tmp_path)
    return config, tmp_path / "notes", SyncLog(config.log_path, echo_info=False)


def test_a_build_stopped_between_index_and_render_is_repaired_by_the_next(portal, tmp_path):
    config, root, log = portal
    (root / "b.md").unlink()
    write(root, "d.md", "# Delta\n\nNová.\n")
    assert build(config, log=log, render=False) == 0  # the index moved on, the site did not
    assert (config.site.output / "notes/b.html").exists()
    assert build(config, log=log) == 0  # nothing changed in the notes since: the site is still repaired
    site = site_snapshot(config.site.output)
    assert "notes/b.html" not in site and "notes/d.html" in site
    assert site == clean_site(tmp_path, root)


def test_pages_of_a_render_that_never_finished_are_removed_when_their_note_is_unpublished(portal, tmp_path,
                                                                                           monkeypatch):
    config, root, log = portal
    write(root, "tajne.md", "# Tajné\n\nHeslo k routeru.\n")

    def killed(*args: object, **kwargs: object) -> list[str]:
        raise KeyboardInterrupt  # stands for a SIGKILL after the pages were written, before the manifest
    with monkeypatch.context() as patch:
        patch.setattr(output.Output, "remove_stale", killed)
        with pytest.raises(KeyboardInterrupt):
            build(config, log=log)
    assert (config.site.output / "notes/tajne.html").exists()
    write(root, "tajne.md", "---\npublished: false\n---\n# Tajné\n\nHeslo k routeru.\n")
    assert build(config, log=log) == 0
    assert not (config.site.output / "notes/tajne.html").exists()
    assert site_snapshot(config.site.output) == clean_site(tmp_path, root)


def test_a_full_disk_while_rendering_is_repaired_once_there_is_space(portal, tmp_path, monkeypatch):
    config, root, log = portal
    for n in range(6):
        write(root, f"nove/n{n}.md", f"# Nová {n}\n\n[alfa](../a.md)\n")
    real_write = output.write_atomic
    budget = [3]

    def disk_fills_up(path: Path, data: str | bytes) -> None:
        budget[0] -= 1
        if budget[0] < 0:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, data)

    with monkeypatch.context() as patch:
        patch.setattr(output, "write_atomic", disk_fills_up)
        assert build(config, log=log) == 3
    assert "WARN site: cannot write" in config.log_path.read_text(encoding="utf-8")
    assert not [p for p in config.site.output.rglob("*.tmp")]  # no half-written page left behind
    assert build(config, log=log) == 0  # space is back; no note changed
    assert site_snapshot(config.site.output) == clean_site(tmp_path, root)


def test_the_portal_deletes_only_files_it_wrote(portal):
    config, root, log = portal
    mine = config.site.output / "robots.txt"
    mine.write_text("User-agent: *\n", encoding="utf-8")
    (root / "b.md").unlink()
    assert build(config, log=log) == 0
    assert not (config.site.output / "notes/b.html").exists() and mine.read_text() == "User-agent: *\n"


def plain(manifest: dict) -> dict:
    """A manifest as read, in plain dicts (as marshal takes them)."""
    return {key: dict(value) if isinstance(value, dict) else value for key, value in manifest.items()}


@pytest.mark.parametrize("format", ["state", "marshal", "json"])
def test_an_upgrade_from_an_older_manifest_still_removes_what_it_listed(portal, tmp_path, format):
    """An older renderer's manifest (another version; in the state file, or in the files renderers
    wrote before it: marshal, JSON) still names the pages to remove; the older files are gone after
    the render."""
    config, root, log = portal
    site = config.site.output
    older = {**renderstate.read_manifest(site), "version": 1}
    assert "notes/b.html" in output.listed_pages(older)
    (site / output.STATE).unlink()
    if format == "json":
        (site / renderstate.JSON_MANIFEST).write_text(json.dumps(older), encoding="utf-8")
    elif format == "marshal":
        (site / renderstate.MARSHAL_MANIFEST).write_bytes(renderstate.MANIFEST_MAGIC + marshal.dumps(plain(older)))
    else:
        output.store_manifest(site, older, {})
    (root / "b.md").unlink()
    assert build(config, log=log) == 0
    assert not (site / "notes/b.html").exists()
    assert not (site / renderstate.JSON_MANIFEST).exists() and not (site / renderstate.MARSHAL_MANIFEST).exists()
    assert renderstate.read_manifest(site)["version"] == renderstate.MANIFEST_VERSION
    assert site_snapshot(site) == clean_site(tmp_path, root)


def test_the_manifest_of_the_renderer_before_the_state_file_is_trusted(portal):
    """The manifest a renderer before the state file wrote (marshal, this version) is read as the
    last render's: a build with nothing changed writes no page, and the state file takes its place."""
    config, _, log = portal
    site = config.site.output
    manifest = renderstate.read_manifest(site)
    (site / output.STATE).unlink()
    (site / renderstate.MARSHAL_MANIFEST).write_bytes(renderstate.MANIFEST_MAGIC + marshal.dumps(plain(manifest)))
    written = {path: path.stat().st_mtime_ns for path in site.rglob("*") if path.is_file()}
    assert build(config, log=log) == 0
    assert {path: path.stat().st_mtime_ns for path in written if path.exists()} == {
        path: mtime for path, mtime in written.items() if path.name != renderstate.MARSHAL_MANIFEST}
    assert renderstate.read_manifest(site) == manifest and not (site / renderstate.MARSHAL_MANIFEST).exists()


def _bad_shard(site: Path) -> None:
    """A state file SQLite reads, with one map's shard that is not marshal data: the one holding
    the entry of the note the test edits."""
    with sqlite3.connect(site / output.STATE) as conn:
        conn.execute("UPDATE shards SET data = :data WHERE map = 'notes' AND shard = :shard",
                     {"data": b"\xffgarbage", "shard": shard_of("notes:b.md")})
    conn.close()


@pytest.mark.parametrize("damage", [b"", b"SQLite format 3\x00garbage", b"{not a database}", _bad_shard])
def test_a_damaged_manifest_is_read_as_none_and_the_render_rebuilds(portal, tmp_path, damage):
    """Saves are all-or-nothing, so only a damaged disk or a hand makes this: the next render
    rewrites every page and the state file anew."""
    config, root, log = portal
    site = config.site.output
    if callable(damage):
        damage(site)
    else:
        (site / output.STATE).write_bytes(damage)
    assert renderstate.read_manifest(site) == {}
    write(root, "b.md", NOTES["b.md"].replace("Text.", "Nový text."))
    assert build(config, log=log) == 0
    assert "Nový text." in (site / "notes/b.html").read_text("utf-8")
    assert renderstate.read_manifest(site)["version"] == renderstate.MANIFEST_VERSION
    assert site_snapshot(site) == clean_site(tmp_path, root)


@pytest.mark.parametrize("damage", [None, b"{not a database}"])
def test_with_the_manifest_lost_an_unpublished_notes_page_still_goes(portal, tmp_path, damage):
    """The manifest names the pages to remove; without it the site folder's subfolders are the
    portal's own, so the page of a note unpublished meanwhile goes, and a file put at the top by
    hand stays."""
    config, root, log = portal
    site = config.site.output
    (site / "robots.txt").write_text("User-agent: *\n", encoding="utf-8")
    if damage is None:
        (site / output.STATE).unlink()
    else:
        (site / output.STATE).write_bytes(damage)
    write(root, "b.md", NOTES["b.md"].replace("tags: [čaj]", "tags: [čaj]\npublished: false"))
    assert build(config, log=log) == 0
    assert not (site / "notes/b.html").exists() and not (site / "tags/caj/index.html").exists()
    assert site_snapshot(site) == {**clean_site(tmp_path, root), "robots.txt": b"User-agent: *\n"}


def test_a_missing_page_is_written_again(portal, tmp_path):
    config, root, log = portal
    (config.site.output / "notes/a.html").unlink()
    shutil.rmtree(config.site.output / "tags")
    (root / "b.md").write_text(NOTES["b.md"] + "\nDalší řádek.\n", encoding="utf-8")  # some build work
    assert build(config, log=log) == 0
    assert site_snapshot(config.site.output) == clean_site(tmp_path, root)


def test_a_file_a_note_links_to_is_watched_though_no_note_changes(portal, tmp_path):
    """The every-minute build re-renders a page whose linked image appeared, changed or went, with every
    note as it was (the index unchanged)."""
    config, root, log = portal
    page = config.site.output / "notes/sub/c.html"
    (root / "sub/img.png").unlink()
    assert build(config, log=log) == 0
    assert "Broken image: img.png" in page.read_text(encoding="utf-8")
    (root / "sub/img.png").write_bytes(b"png")
    assert build(config, log=log) == 0
    assert "Broken image" not in page.read_text(encoding="utf-8")
    assert (config.site.output / "notes/sub/img.png").read_bytes() == b"png"
    (root / "sub/img.png").write_bytes(b"png, changed")
    assert build(config, log=log) == 0
    assert (config.site.output / "notes/sub/img.png").read_bytes() == b"png, changed"
    assert site_snapshot(config.site.output) == clean_site(tmp_path, root)
