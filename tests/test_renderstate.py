"""The render's state file (builder.core.index.renderstate): what a save writes, what a read returns,
and that a save is all or nothing."""

from __future__ import annotations

import marshal
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from builder.core.index import renderstate
from builder.core.index.renderstate import SHARDS, read_state, shard_of, write_state
from tests.render_support import record_writes, writes

MAPS = ("notes", "pages")


def manifest(notes: int = 500) -> dict:
    return {"version": 3, "env": "e" * 64, "trees": ["a", 1], "home": {"recent": [], "n": 2},
            "notes": {f"src:folder {i % 7}/note-{i}.md": {"sha": f"{i:064x}", "links": [["wiki", f"n{i}"]]}
                      for i in range(notes)},
            "pages": {f"notes/note-{i}.html": f"fp{i}" for i in range(notes)}}


def rows(path: Path) -> dict[tuple[str, object], bytes]:
    """Every row of the file: ("meta", key) and (map, shard) → the stored bytes."""
    with sqlite3.connect(path) as conn:
        found: dict[tuple[str, object], bytes] = {
            ("meta", key): value for key, value in conn.execute("SELECT key, value FROM meta")}
        found.update({(name, shard): data for name, shard, data in conn.execute("SELECT map, shard, data FROM shards")})
    conn.close()
    return found


def test_what_is_saved_is_read_back(tmp_path):
    path = tmp_path / ".render-state"
    saved = manifest()
    write_state(path, saved, {}, maps=MAPS)
    assert read_state(path) == saved
    assert {name for name, _ in rows(path)} == {"meta", "notes", "pages"}
    assert {shard for name, shard in rows(path) if name == "notes"} == {shard_of(key) for key in saved["notes"]}
    assert len({shard_of(key) for key in saved["notes"]}) > SHARDS * 3 // 4  # (500 keys: 235 of the 256 shards)


def test_a_save_rewrites_only_the_rows_that_changed(tmp_path):
    path = tmp_path / ".render-state"
    write_state(path, manifest(), {}, maps=MAPS)
    record_writes(path)
    stored = read_state(path)
    changed = {**stored, "env": "f" * 64, "notes": dict(stored["notes"]), "pages": dict(stored["pages"])}
    key = "src:folder 3/note-10.md"
    changed["notes"][key] = {"sha": "new", "links": []}
    del changed["pages"]["notes/note-20.html"]
    changed["pages"]["notes/new.html"] = "fp"
    write_state(path, changed, stored, maps=MAPS)
    assert writes(path) == sorted([("meta", "env"), ("notes", shard_of(key)), ("pages", shard_of("notes/note-20.html")),
                                   ("pages", shard_of("notes/new.html"))])
    assert read_state(path) == changed


def test_keys_and_maps_that_are_gone_leave_the_file(tmp_path):
    path = tmp_path / ".render-state"
    write_state(path, {**manifest(3), "old": "x"}, {}, maps=MAPS)
    stored = read_state(path)
    only = {"version": 4, "notes": {"src:a.md": {"sha": "1"}}}
    write_state(path, only, stored, maps=MAPS)
    assert read_state(path) == only
    assert set(rows(path)) == {("meta", "version"), ("notes", shard_of("src:a.md"))}


def test_a_value_kept_whole_before_and_by_shards_now_or_the_other_way_leaves_one_row_of_it(tmp_path):
    """A renderer that moves a key of the manifest between ``meta`` and the maps leaves no copy of the old kind
    (which :func:`renderstate.read_meta` would read on every build, or :func:`read_state` merge into the new)."""
    path = tmp_path / ".render-state"
    before = {**manifest(3), "titles": {"src": [["a.md", "A", "d"]]}}
    write_state(path, before, {}, maps=MAPS)
    now = {**before, "titles": {"src": [["b.md", "B", "d"]]}, "pages": {"notes/b.html": "fp"}}
    write_state(path, now, read_state(path), maps=("notes", "titles"))
    assert read_state(path) == now
    assert ("meta", "titles") not in rows(path) and ("titles", shard_of("src")) in rows(path)
    assert renderstate.read_meta(path) == {k: v for k, v in now.items() if k not in ("notes", "titles")}
    assert {name for name, _ in rows(path)} == {"meta", "notes", "titles"}
    write_state(path, before, read_state(path), maps=MAPS)
    assert read_state(path) == before and {name for name, _ in rows(path)} == {"meta", "notes", "pages"}


@pytest.mark.parametrize("kept", ["whole before", "by shards before"])
def test_keys_left_unread_are_left_out_and_the_save_writes_them_whole_leaving_no_other_copy(tmp_path, kept):
    """A render that does not trust the last state reads none of what it will not use (issue 47: ``--full``); its
    save writes those keys whole, and a copy of the other kind that a renderer before left (kept whole, or by
    shards) is gone: the next read is the new state, not "no state"."""
    path = tmp_path / ".render-state"
    before = {**manifest(20), "titles": {"src": [["a.md", "A", "d"]]}, "into": {"src:a.md": ["src:b.md"]}}
    maps = (*MAPS, "titles", "into") if kept == "by shards before" else MAPS
    write_state(path, before, {}, maps=maps)
    unread = ("notes", "titles", "into")
    stored = read_state(path, unread)
    assert stored == {k: v for k, v in before.items() if k not in unread}
    now = {**before, "titles": {"src": [["b.md", "B", "d"]]}, "into": {"src:b.md": []},
           "notes": {"src:b.md": {"sha": "2"}}}
    write_state(path, now, stored, maps=(*MAPS, "titles"))
    assert read_state(path) == now
    assert {name for name, _ in rows(path)} == {"meta", "notes", "pages", "titles"}
    assert ("meta", "into") in rows(path) and ("meta", "titles") not in rows(path)


def test_a_key_kept_both_whole_and_by_shards_reads_as_no_state(tmp_path):
    """What a renderer that kept ``titles`` whole leaves beside the shards of one that keeps them by shards (a
    downgrade then an upgrade): no state, so the render starts afresh, instead of failing on every build."""
    path = tmp_path / ".render-state"
    write_state(path, {**manifest(3), "titles": {"src": [["a.md", "A", "d"]]}}, {}, maps=(*MAPS, "titles"))
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO meta (key, value) VALUES ('titles', ?)", (marshal.dumps({"src": []}),))
    conn.close()
    assert read_state(path) == {} and renderstate.read_manifest(tmp_path) == {}


def test_nothing_stored_makes_the_file_anew(tmp_path):
    """``stored`` empty (nothing read, or nothing usable): every row is written again, none kept."""
    path = tmp_path / ".render-state"
    write_state(path, manifest(), {}, maps=MAPS)
    write_state(path, {"version": 3, "notes": {"src:a.md": {}}}, {}, maps=MAPS)
    assert read_state(path) == {"version": 3, "notes": {"src:a.md": {}}}


@pytest.mark.parametrize("damage", [b"", b"SQLite format 3\x00" + b"\x01" * 200, b"{}"])
def test_a_damaged_file_reads_as_nothing_and_the_next_save_replaces_it(tmp_path, damage):
    path = tmp_path / ".render-state"
    path.write_bytes(damage)
    assert read_state(path) == {}
    write_state(path, manifest(3), {}, maps=MAPS)
    assert read_state(path) == manifest(3)


def test_a_file_of_another_layout_is_not_read(tmp_path):
    path = tmp_path / ".render-state"
    write_state(path, manifest(3), {}, maps=MAPS)
    with sqlite3.connect(path) as conn:
        conn.execute(f"PRAGMA user_version = {renderstate.FORMAT + 1}")
    conn.close()
    assert read_state(path) == {}


def test_a_file_of_the_64_shard_layout_is_read_whole_and_made_anew_by_the_next_save(tmp_path):
    """Layout 1 kept 64 shards a map: its pages are read (a render after an upgrade removes what the older one
    wrote), no key is looked up by its shard (they moved), and the next save writes the file in today's layout."""
    path = tmp_path / ".render-state"
    old = manifest(300)
    with sqlite3.connect(path) as conn:
        conn.executescript(renderstate._SCHEMA)
        conn.execute("PRAGMA user_version = 1")
        conn.executemany("INSERT INTO meta VALUES (?, ?)",
                         [(k, marshal.dumps(v)) for k, v in old.items() if k not in MAPS])
        for name in MAPS:
            parts: dict[int, dict] = {}
            for key, value in old[name].items():
                parts.setdefault(zlib.crc32(key.encode()) % 64, {})[key] = value
            conn.executemany("INSERT INTO shards VALUES (?, ?, ?)",
                             [(name, n, marshal.dumps(part)) for n, part in parts.items()])
    conn.close()
    stored = read_state(path)
    assert stored == old
    assert renderstate.read_keys(path, "pages", ["notes/note-7.html"]) is None and renderstate.read_meta(path) is None
    new = {**old, "env": "f" * 64}
    write_state(path, new, stored, maps=MAPS)
    assert read_state(path) == new
    assert renderstate.read_keys(path, "pages", ["notes/note-7.html", "notes/note-250.html"]) == {
        "notes/note-7.html": "fp7", "notes/note-250.html": "fp250"}
    assert {shard for name, shard in rows(path) if name == "pages"} == {shard_of(key) for key in new["pages"]}


def test_a_save_killed_half_way_is_rolled_back_by_the_next_reader(tmp_path):
    """A process killed in the middle of a save leaves SQLite's journal beside the file and part of
    the new rows in it; the next read rolls them back and finds the last complete save."""
    path = tmp_path / ".render-state"
    saved = manifest(2000)
    write_state(path, saved, {}, maps=MAPS)
    child = f"""
import os, sqlite3
conn = sqlite3.connect({str(path)!r}, isolation_level=None)
conn.execute("PRAGMA cache_size = 1")  # spill changed pages into the file before the commit
conn.execute("BEGIN IMMEDIATE")
conn.execute("UPDATE shards SET data = zeroblob(length(data) + 5000)")
os._exit(9)
"""
    assert subprocess.run([sys.executable, "-c", child], check=False).returncode == 9
    assert (tmp_path / renderstate.JOURNAL_FILE).exists()
    assert read_state(path) == saved
    assert not (tmp_path / renderstate.JOURNAL_FILE).exists()


def test_a_patch_changes_only_the_keys_it_names(tmp_path):
    path = tmp_path / ".render-state"
    saved = manifest()
    write_state(path, saved, {}, maps=MAPS)
    record_writes(path)
    key, gone = "src:folder 3/note-10.md", "notes/note-20.html"
    assert renderstate.patch_state(path, {"env": "x"}, {"notes": {key: {"sha": "new"}}, "pages": {gone: None}})
    assert writes(path) == sorted([("meta", "env"), ("notes", shard_of(key)), ("pages", shard_of(gone))])
    saved["env"], saved["notes"][key] = "x", {"sha": "new"}
    del saved["pages"][gone]
    assert read_state(path) == saved
    assert renderstate.read_keys(path, "notes", [key, "src:nothing"]) == {key: {"sha": "new"}}
    assert renderstate.read_map(path, "pages") == saved["pages"]
    assert renderstate.read_meta(path) == {k: v for k, v in saved.items() if k not in MAPS}


def test_a_patch_of_a_damaged_file_removes_it(tmp_path):
    path = tmp_path / ".render-state"
    write_state(path, manifest(), {}, maps=MAPS)
    key = "src:folder 3/note-10.md"
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE shards SET data = x'ff00' WHERE map = 'notes' AND shard = :shard",
                     {"shard": shard_of(key)})
    conn.close()
    assert renderstate.read_keys(path, "notes", [key]) is None
    assert not renderstate.patch_state(path, {}, {"notes": {key: {"sha": "new"}}})
    assert not path.exists() and read_state(path) == {} and renderstate.read_meta(path) is None
