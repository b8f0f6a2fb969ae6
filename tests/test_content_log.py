"""The index's log of note changes (schema step 9, builder.core.index.content_changes): what a render
asks to learn which notes changed since it last ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.core import index as db
from builder.core.index import notes as index_notes


def record(path: str, sha: str) -> db.FileRecord:
    return db.FileRecord(path=path, title=path, tags=(), headings=(), front_matter={}, status="ok",
                         status_note=None, sha256=sha, size=1, mtime_ns=1, changed_at=None)


def chunk() -> dict:
    return {"chunk_idx": 0, "breadcrumb": "x", "anchor": "x", "line_start": 1, "line_end": 1, "text": "slovo",
            "embed_sha": "e"}


@pytest.fixture
def conn(tmp_path: Path):
    conn = db.connect(tmp_path / "index.sqlite", vec=False)
    db.migrate(conn)
    with db.transaction(conn):
        db.set_meta(conn, {"generation": "gen-1"})
        db.upsert_source(conn, "notes", "folder", None, None)
        db.upsert_source(conn, "other", "folder", None, None)
    yield conn
    conn.close()


def test_every_kind_of_note_change_is_logged(conn):
    db.replace_file(conn, "notes", record("a.md", "1"), [chunk()], "now")
    db.replace_file(conn, "notes", record("b.md", "1"), [chunk()], "now")
    since = db.content_token(conn)
    assert db.content_changes(conn, since) == []
    db.replace_file(conn, "notes", record("a.md", "2"), [chunk()], "now")
    db.touch_file(conn, "notes", "b.md", 2, 2, "2026-01-01T00:00:00+00:00")
    db.touch_file(conn, "notes", "b.md", 3, 3, "2026-01-01T00:00:00+00:00")  # the same date: nothing to show
    db.set_last_change(conn, "other", "c.md", "2026-01-02T00:00:00+00:00", "Eva")
    db.delete_file(conn, "notes", "a.md")
    assert db.content_changes(conn, since) == [("notes", "a.md"), ("notes", "b.md"), ("other", "c.md")]
    assert db.content_token(conn).endswith(f"#{int(since.rpartition('#')[2]) + 4}")


def test_what_the_log_cannot_tell_is_none(conn, monkeypatch):
    db.replace_file(conn, "notes", record("a.md", "1"), [chunk()], "now")
    since = db.content_token(conn)
    assert db.content_changes(conn, "gen-0#" + since.rpartition("#")[2]) is None  # another generation
    assert db.content_changes(conn, "gen-1#x") is None
    db.replace_file(conn, "notes", record("a.md", "2"), [chunk()], "now")
    with db.transaction(conn):
        conn.execute("DELETE FROM content_log")  # as in an index from before schema step 9
    assert db.content_changes(conn, since) is None  # a change that was not logged
    since = db.content_token(conn)
    db.delete_source(conn, "other")
    assert db.content_changes(conn, since) is None  # a whole source: not one note
    monkeypatch.setattr(index_notes, "CONTENT_LOG_KEEP", 3)
    later = db.content_token(conn)
    for n in range(3):
        db.replace_file(conn, "notes", record("a.md", str(n + 5)), [chunk()], "now")
    assert db.content_changes(conn, later) == [("notes", "a.md")]
    db.replace_file(conn, "notes", record("b.md", "9"), [chunk()], "now")
    assert db.content_changes(conn, later) is None  # further back than the log keeps
