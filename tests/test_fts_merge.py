"""The full-text index merged into one segment by a build that wrote most of it, left to FTS5's own
merging by smaller builds; merging changes no search result."""

from __future__ import annotations

import pytest

import builder.sync
from builder import indexfile
from builder.core import index as db
from builder.sync import build
from tests.conftest import write_note

QUERIES = ("spoločný", "slovo3", "čaj OR text", "poznámka AND číslo", "slov*")


@pytest.fixture
def config(config_for, notes_dir, monkeypatch):
    """15 notes, one commit per note (so every note's words make a segment of their own)."""
    for i in range(12):
        write_note(notes_dir, f"denník/n{i:02d}.md", f"# Poznámka {i}\n\nslovo{i} spoločný text, číslo {i}.\n")
    monkeypatch.setattr(builder.sync, "WRITE_BATCH_S", 0.0)
    return config_for()


def run(config, quiet_log) -> None:
    assert build(config, log=quiet_log(config), render=False) == 0


def answers(conn) -> dict[str, list[tuple[int, float]]]:
    return {query: db.fts_search(conn, query, 50, None, None) for query in QUERIES}


def test_merging_leaves_one_segment_and_every_answer_as_it_was(config, quiet_log, monkeypatch):
    monkeypatch.setattr(builder.sync, "_merge_words", lambda *args: None)
    run(config, quiet_log)
    conn = db.connect(indexfile.resolve(config.index))
    assert db.word_segments(conn) > 1
    before = answers(conn)
    assert all(before.values()) and len(before["slov*"]) == 12
    db.merge_words(conn)
    assert db.word_segments(conn) == 1
    assert answers(conn) == before  # the same chunks, the same scores, in the same order
    assert db.fts_integrity_error(conn) is None


def test_a_first_build_merges_a_one_note_edit_does_not(config, notes_dir, quiet_log):
    run(config, quiet_log)
    conn = db.connect(indexfile.resolve(config.index))
    assert db.word_segments(conn) == 1
    conn.close()

    write_note(notes_dir, "denník/n03.md", "# Poznámka 3\n\nslovo3 úplne nový obsah.\n")
    run(config, quiet_log)  # 1 chunk written: FTS5's own merging is enough
    conn = db.connect(indexfile.resolve(config.index))
    assert db.word_segments(conn) > 1  # the edit's own segments, not merged
    assert [hit[0] for hit in db.fts_search(conn, "nový", 10, None, None)] == [
        row[0] for row in conn.execute("SELECT id FROM chunks WHERE path = 'denník/n03.md'")]
    total = db.count_chunks(conn)
    conn.close()
    if total % 2:  # an even count, so that the test hits exactly half
        write_note(notes_dir, "denník/navyše.md", "Jedna veta navyše.\n")
        run(config, quiet_log)
        total += 1
    half = total // 2

    for edits, segments in ((half - 1, "several"), (half, "one")):  # one chunk a note
        for i in range(edits):
            write_note(notes_dir, f"denník/n{i:02d}.md", f"# Poznámka {i}\n\nslovo{i} prepísaný v kole{edits}.\n")
        run(config, quiet_log)
        conn = db.connect(indexfile.resolve(config.index))
        assert (db.word_segments(conn) == 1) == (segments == "one")
        assert len(db.fts_search(conn, f"kole{edits}", 50, None, None)) == edits
        assert db.fts_integrity_error(conn) is None
        conn.close()


def test_a_merge_that_fails_warns_and_the_index_answers_as_before(config, quiet_log, monkeypatch):
    monkeypatch.setattr(builder.sync, "_merge_words", lambda *args: None)
    run(config, quiet_log)
    monkeypatch.undo()
    path = indexfile.resolve(config.index)
    conn = db.connect(path, timeout=0.1)
    segments, before = db.word_segments(conn), answers(conn)
    other = db.connect(path)
    other.execute("BEGIN IMMEDIATE")  # another writer holds the index: SQLite's own "database is locked"
    builder.sync._merge_words(conn, written=db.count_chunks(conn), log=quiet_log(config))
    other.execute("ROLLBACK")
    assert config.log_path.read_text(encoding="utf-8").splitlines()[-1].endswith(
        "WARN the full-text index could not be merged (database is locked); searches work, a little slower")
    assert db.word_segments(conn) == segments > 1 and answers(conn) == before
    assert db.fts_integrity_error(conn) is None
