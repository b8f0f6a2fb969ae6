"""The digest of a folder source's files (``sources.stats_digest``): a no-op build compares its walk with
the digest the index keeps instead of reading every file's row. Whatever happens to the notes, the
digest kept is that of the files the index holds (path, size, mtime), or there is none."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

import builder.sync
from builder import indexfile
from builder.core import index as db
from builder.core.config import Config
from builder.notes.sources import stats_text, text_digest
from tests.failure_support import found, run
from tests.render_support import make_config


def notes(root: Path) -> None:
    for i in range(6):
        (root / "sub").mkdir(parents=True, exist_ok=True)
        (root / ("sub" if i % 2 else "") / f"n{i}.md").write_text(f"# Poznámka {i}\n\nslovo{i} text.\n",
                                                                  encoding="utf-8")


@pytest.fixture
def config(tmp_path: Path) -> Config:
    root = tmp_path / "notes"
    notes(root)
    return make_config(tmp_path, {"notes": root})


def source_row(config: Config) -> db.SourceRow:
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        return db.get_sources(conn)["notes"]
    finally:
        conn.close()


def kept(config: Config) -> str | None:
    return source_row(config).stats_digest


def rows(config: Config) -> list[tuple[str, int, int, str]]:
    """Every file's row of the source: path, size, mtime, sha256."""
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        return [tuple(row) for row in
                conn.execute("SELECT path, size, mtime_ns, sha256 FROM files WHERE source_id = 'notes'")]
    finally:
        conn.close()


def kept_file(config: Config) -> str | None:
    """The stats a build kept beside the listings for the next one (None: none)."""
    path = config.kept_stats_path("notes")
    return path.read_text(encoding="utf-8") if path.exists() else None


def on_disk(root: Path) -> str:
    """The stats a walk of ``root`` finds now: what a forged file would claim the index holds."""
    files = [p for p in root.rglob("*.md") if p.is_file()]
    return stats_text((p.relative_to(root).as_posix(), p.stat().st_size, p.stat().st_mtime_ns) for p in files)


def held(config: Config) -> str | None:
    """The digest of what the index holds, read from every file's row (None: a note recorded unread)."""
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        rows = conn.execute("SELECT path, size, mtime_ns, sha256 FROM files WHERE source_id = 'notes'").fetchall()
    finally:
        conn.close()
    if any(row[3] == db.UNREAD for row in rows):
        return None
    return text_digest(stats_text((row[0], row[1], row[2]) for row in rows))


@pytest.fixture
def reads(monkeypatch) -> list[tuple[str, frozenset[str] | None]]:
    """The rows of ``files`` a build reads (``db.file_states``): (source, the paths asked for; None: every
    file's)."""
    calls: list[tuple[str, frozenset[str] | None]] = []
    real = db.file_states

    def file_states(conn, source_id, paths=None):
        paths = None if paths is None else frozenset(paths)
        calls.append((source_id, paths))
        return real(conn, source_id, paths)

    monkeypatch.setattr(db, "file_states", file_states)
    return calls


def test_the_digest_is_the_index_s_through_every_kind_of_change(config):
    root = config.sources[0].root
    assert run(config) == (0, [])
    first = kept(config)
    assert first is not None and first == held(config)

    steps = [
        lambda: (root / "n0.md").write_text("# Poznámka 0\n\nnové slovo.\n", encoding="utf-8"),
        lambda: os.utime(root / "sub" / "n1.md", ns=(10**18, 10**18)),  # touched: the same text
        lambda: (root / "n2.md").unlink(),
        lambda: (root / "sub" / "new.md").write_text("# Nová\n", encoding="utf-8"),
        lambda: (root / "sub" / "gone.md").symlink_to(root / "nowhere.md"),  # a link to nothing: recorded unread
        lambda: (root / "sub" / "gone.md").unlink(),
    ]
    digests = [first]
    for step in steps:
        step()
        run(config)
        digests.append(kept(config))
        assert digests[-1] == held(config)
        files = rows(config)
        if digests[-1] is not None:  # the stats beside it are the index's, line by line
            assert kept_file(config) == stats_text((path, size, mtime) for path, size, mtime, _ in files)
            assert text_digest(kept_file(config)) == digests[-1]
        pairs = "".join(f"{path}\0{sha}\n" for path, _, _, sha in sorted(files))
        assert source_row(config).indexed_rev == hashlib.sha256(pairs.encode()).hexdigest()[:12]
    assert digests[5] is None  # a note recorded unread: no digest, the next walk reads every row
    assert len(set(digests[:5])) == 5  # every change moved it
    assert digests[6] == digests[4]  # the link gone, the files are those of step 4 again


def test_a_no_op_build_reads_no_file_s_row_and_an_edit_does(config, reads):
    assert run(config) == (0, [])
    reads.clear()
    assert run(config) == (0, [])
    assert reads == []
    (config.sources[0].root / "sub" / "n3.md").write_text("# Poznámka 3\n\nzmenené.\n", encoding="utf-8")
    assert run(config) == (0, [])
    assert reads == [("notes", frozenset({"sub/n3.md"}))] and found(config, "zmenené") == 1


def test_a_build_reads_the_rows_of_the_files_added_changed_and_removed_only(config, reads):
    root = config.sources[0].root
    assert run(config) == (0, [])
    reads.clear()
    (root / "n0.md").write_text("# Poznámka 0\n\nupravená.\n", encoding="utf-8")
    (root / "n2.md").unlink()
    (root / "sub" / "nova.md").write_text("# Nová\n\nčerstvá.\n", encoding="utf-8")
    assert run(config) == (0, [])
    assert reads == [("notes", frozenset({"n0.md", "n2.md", "sub/nova.md"}))]
    assert (found(config, "upravená"), found(config, "slovo0"), found(config, "slovo2"), found(config, "čerstvá")) \
        == (1, 0, 0, 1)
    assert kept(config) == held(config) is not None


@pytest.mark.parametrize("tamper", ["lost", "forged", "garbled", "old"])
def test_kept_stats_that_are_not_the_index_s_are_not_trusted(config, reads, tamper):
    """The stats beside the listings are trusted only while their digest is the one the index keeps: a
    file that claims an edit not yet indexed (forged), one from before the last build (old), one cut short
    or lost make the scan read every file's row, and the edit is found."""
    root, path = config.sources[0].root, config.kept_stats_path("notes")
    assert run(config) == (0, [])
    old = path.read_bytes()
    (root / "n4.md").write_text("# Poznámka 4\n\nprvá úprava.\n", encoding="utf-8")
    assert run(config) == (0, [])
    (root / "sub" / "n1.md").write_text("# Poznámka 1\n\ndruhá úprava textu.\n", encoding="utf-8")
    if tamper == "lost":
        path.unlink()
    elif tamper == "forged":
        path.write_text(on_disk(root), encoding="utf-8")
    elif tamper == "garbled":
        path.write_bytes(path.read_bytes()[:-7])
    else:
        path.write_bytes(old)
    reads.clear()
    assert run(config) == (0, [])
    assert reads == [("notes", None)]
    assert found(config, "druhá") == 1 and found(config, "prvá") == 1 and found(config, "slovo1") == 0
    assert kept(config) == held(config) is not None and text_digest(kept_file(config)) == kept(config)


def test_a_file_back_as_it_was_after_a_build_that_failed_midway_is_read_again(config, monkeypatch):
    """A build that dies after committing some notes must not leave the digest of the files before it:
    a note then put back as it was, size and mtime too, would match it while the index holds the new text."""
    root = config.sources[0].root
    assert run(config) == (0, [])
    before = {name: (root / name).stat() for name in ("n0.md", "n4.md")}
    (root / "n0.md").write_text("# Poznámka 0\n\nprvá zmena.\n", encoding="utf-8")
    (root / "n4.md").write_text("# Poznámka 4\n\ndruhá zmena.\n", encoding="utf-8")
    monkeypatch.setattr(builder.sync, "WRITE_BATCH_S", 0.0)  # every note its own commit
    real, written = db.replace_file, []

    def replace_file(conn, source_id, record, chunks, now):
        if written:
            raise RuntimeError("the build dies here")
        written.append(record.path)
        real(conn, source_id, record, chunks, now)

    monkeypatch.setattr(db, "replace_file", replace_file)
    code, warnings = run(config)
    monkeypatch.undo()
    assert code != 0 and any("the build dies here" in w for w in warnings)
    assert found(config, "zmena") == 1  # one of the two committed
    assert kept(config) is None
    for name in ("n0.md", "n4.md"):  # both back, text, size and mtime
        (root / name).write_text(f"# Poznámka {name[1]}\n\nslovo{name[1]} text.\n", encoding="utf-8")
        os.utime(root / name, ns=(before[name].st_atime_ns, before[name].st_mtime_ns))
    assert run(config) == (0, [])
    assert found(config, "zmena") == 0 and found(config, "slovo0") == found(config, "slovo4") == 1
    assert kept(config) == held(config) is not None


def test_an_index_from_before_the_digest_gains_it_on_its_first_no_op_build(config, reads):
    assert run(config) == (0, [])
    conn = db.connect(indexfile.resolve(config.index), vec=False)
    with db.transaction(conn):
        conn.execute("ALTER TABLE sources DROP COLUMN stats_digest")
        db.set_meta(conn, {"schema_version": "13"})
    conn.close()
    assert run(config) == (0, [])  # the schema step, a walk compared file by file, and the digest kept
    assert kept(config) == held(config) is not None
    reads.clear()
    assert run(config) == (0, [])
    assert reads == []


def test_a_note_that_could_not_be_read_is_read_once_it_can_be_its_size_and_mtime_the_same(config, monkeypatch):
    """A note recorded unread is read again when it can be (a chmod moves neither its size nor its mtime):
    no digest may stand for a source holding one, or the walk would match it and never look."""
    import builder.ingest
    import builder.scan

    real, readable = builder.ingest.read_bounded, builder.scan._readable

    def read_bounded(path, limit):
        if path.name == "n5.md":
            raise PermissionError(13, "Permission denied")
        return real(path, limit)

    monkeypatch.setattr(builder.ingest, "read_bounded", read_bounded)
    monkeypatch.setattr(builder.scan, "_readable", lambda path: path.name != "n5.md" and readable(path))
    code, warnings = run(config)
    assert code == 0 and warnings == [
        "notes: sub/n5.md: cannot be read (Permission denied); skipped until it changes or can be read"]
    assert run(config)[0] == 0  # a no-op build: the walk is as the index holds it, but for that note
    assert kept(config) is None and found(config, "slovo5") == 0
    monkeypatch.undo()
    assert run(config) == (0, [])
    assert found(config, "slovo5") == 1 and kept(config) == held(config) is not None


def test_the_index_s_order_of_names_is_the_walk_s(config, reads):
    """The kept stats are made by SQLite (paths ordered as bytes), the walk's digest in Python (as code
    points): accented names, a name that begins another and a space must come out the same, or no no-op
    build would ever match."""
    root = config.sources[0].root
    for name in ("čaj.md", "zebra.md", "Ábel.md", "x.md", "x.md.md", "a b.md", "sub/ž.md", "sub/z.md", "€.md"):
        (root / name).write_text(f"# {name}\n\ntext.\n", encoding="utf-8")
    assert run(config) == (0, [])
    files = rows(config)
    assert kept_file(config) == stats_text((path, size, mtime) for path, size, mtime, _ in files)
    reads.clear()
    assert run(config) == (0, []) and reads == []


def test_a_name_holding_a_newline_is_indexed_changed_and_removed(config, reads):
    """The kept stats are lines: a name with a newline in it cannot be told apart there, so the scan reads
    every file's row instead, and misses nothing."""
    root = config.sources[0].root
    odd = root / "sub" / "prvý\nďalší.md"
    odd.write_text("# Zvláštny\n\nnovinka.\n", encoding="utf-8")
    assert run(config)[0] == 0 and found(config, "novinka") == 1
    reads.clear()
    odd.write_text("# Zvláštny\n\nnovinka zmenená.\n", encoding="utf-8")
    (root / "n0.md").write_text("# Poznámka 0\n\niná zmena.\n", encoding="utf-8")
    assert run(config)[0] == 0
    assert reads == [("notes", None)] and found(config, "zmenená") == 1 and found(config, "iná") == 1
    odd.unlink()
    assert run(config)[0] == 0 and found(config, "novinka") == 0 and found(config, "slovo1") == 1
    assert kept(config) == held(config) is not None
    reads.clear()
    (root / "n4.md").write_text("# Poznámka 4\n\nposledná.\n", encoding="utf-8")
    assert run(config) == (0, []) and reads == [("notes", frozenset({"n4.md"}))]  # no such name left
