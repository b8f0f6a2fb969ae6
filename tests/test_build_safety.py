"""Nothing disappears silently, nothing private gets out: read errors, mounts that are not there,
symlinks into excluded folders, attachments that could run script, leftovers of killed builds."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builder import indexfile
from builder.core import index as db
from builder.core.config import load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.conftest import write_config, write_note


def make(tmp_path: Path, source: str = "folder: notes") -> object:
    body = ("index: data/index.sqlite\nsite:\n  output: site\nembedding:\n  provider: none\n"
            f"sources:\n  notes:\n    {source}\n")
    return load_config(write_config(tmp_path, body))


def run(config) -> int:
    return build(config, log=SyncLog(config.log_path, echo_info=False))


def indexed_paths(config) -> set[str]:
    conn = db.connect(indexfile.resolve(config.index), vec=False)
    try:
        return {row[0] for row in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


def log_lines(config, level: str = "WARN") -> list[str]:
    return [line.split(f" {level} ", 1)[1] for line in config.log_path.read_text("utf-8").splitlines()
            if f" {level} " in line]


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    for i in range(12):
        write_note(root, f"deniky/d{i}.md", f"# Deník {i}\n\nZápis číslo {i}.\n")
    write_note(root, "index.md", "# Úvod\n\nText.\n")
    return root


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every folder whatever its permissions")
def test_an_unreadable_folder_is_a_source_failure_and_its_notes_stay(tmp_path, notes):
    config = make(tmp_path)
    assert run(config) == 0
    os.chmod(notes / "deniky", 0)
    try:
        assert run(config) == 3
    finally:
        os.chmod(notes / "deniky", 0o755)
    assert len(indexed_paths(config)) == 13
    assert log_lines(config)[-1].startswith("notes: cannot read deniky/: Permission denied;")


def test_an_unreadable_folder_as_root_too(tmp_path, notes, monkeypatch):
    """The same defect for a user who is root (CI is): the folder listing fails as the OS would fail it."""
    config = make(tmp_path)
    assert run(config) == 0
    real_scandir = os.scandir

    def failing(path):
        if str(path).endswith("deniky"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr("builder.notes.sources.os.scandir", failing)
    assert run(config) == 3
    assert len(indexed_paths(config)) == 13
    assert log_lines(config)[-1] == "notes: cannot read deniky/: Permission denied; its notes stay as they were indexed"
    assert (config.site.output / "notes/deniky/d3.html").exists()


def test_an_empty_folder_where_notes_were_is_not_taken_as_deleting_them(tmp_path, notes):
    config = make(tmp_path)
    assert run(config) == 0
    moved = tmp_path / "unmounted"
    notes.rename(moved)
    notes.mkdir()  # a mount point with nothing mounted on it
    assert run(config) == 3
    assert len(indexed_paths(config)) == 13
    assert log_lines(config)[-1] == (
        f"notes: the scan would remove 13 of the 13 notes the index holds (is {notes} mounted and complete?); "
        "nothing was removed. If they are really gone, run `notes-portal build --full --source notes`")
    assert (config.site.output / "notes/deniky/d3.html").exists()
    notes.rmdir()
    moved.rename(notes)
    assert run(config) == 0 and len(indexed_paths(config)) == 13


def test_deleting_a_few_notes_is_applied_as_usual(tmp_path, notes):
    config = make(tmp_path)
    assert run(config) == 0
    for i in range(3):
        (notes / f"deniky/d{i}.md").unlink()
    assert run(config) == 0 and len(indexed_paths(config)) == 10



def test_removing_most_notes_keeps_them_and_indexes_the_rest_until_full_accepts_it(tmp_path, notes):
    config = make(tmp_path)
    assert run(config) == 0
    for i in range(11):
        (notes / f"deniky/d{i}.md").unlink()
    write_note(notes, "index.md", "# Úvod\n\nPřepsaný úvod.\n")
    write_note(notes, "novy.md", "# Nový\n\nText.\n")
    assert run(config) == 3
    assert len(indexed_paths(config)) == 14  # the 11 stay, the new note came in
    assert log_lines(config)[-1] == (
        f"notes: the scan would remove 11 of the 13 notes the index holds (is {notes} mounted and complete?); "
        "they stay as they were indexed, the other changes were indexed. If they are really gone, run "
        "`notes-portal build --full --source notes`")
    assert (config.site.output / "notes/deniky/d3.html").exists()
    assert "Přepsaný úvod" in (config.site.output / "notes/index.md.html").read_text(encoding="utf-8")
    assert run(config) == 3  # said again each build
    assert build(config, log=SyncLog(config.log_path, echo_info=False), full=True, source_id="notes") == 0
    assert indexed_paths(config) == {"deniky/d11.md", "index.md", "novy.md"}
    assert not (config.site.output / "notes/deniky/d3.html").exists()

def test_a_symlink_does_not_carry_an_excluded_note_or_file_past_the_scope(tmp_path, notes):
    write_note(notes, "soukrome/hesla.md", "# Hesla\n\nwifi: modrý-kocour\n")
    (notes / "soukrome/plan.pdf").write_bytes(b"%PDF-1.4 secret")
    os.symlink("../soukrome/hesla.md", notes / "deniky/hesla.md")
    os.symlink("../soukrome", notes / "deniky/odkaz")
    os.symlink("../soukrome/plan.pdf", notes / "deniky/plan.pdf")
    write_note(notes, "deniky/s-prilohou.md", "# Příloha\n\n[plán](plan.pdf) a [vedle](odkaz/plan.pdf)\n")
    config = make(tmp_path, 'folder: notes\n    exclude: ["soukrome/**"]')
    assert run(config) == 0
    paths = indexed_paths(config)
    assert not any("hesla" in p or "odkaz" in p for p in paths) and "deniky/s-prilohou.md" in paths
    site = config.site.output
    assert not list(site.rglob("*hesla*")) and not list(site.rglob("*.pdf"))
    assert "broken links in 1 note, such as deniky/s-prilohou.md:3: plan.pdf: no such note or file" in \
        " ".join(log_lines(config))


@pytest.mark.parametrize("name, content, published", [
    ("obrazek.png", b"\x89PNG\r\n", True),
    ("navod.pdf", b"%PDF-1.4", True),
    ("zaloha.sh", b"#!/bin/sh\necho hi\n", True),
    ("skript.es", b"alert(1)", False),  # served as text/javascript by a mimetypes guess
    ("stranka.xhtml", b"<html xmlns='http://www.w3.org/1999/xhtml'><script>alert(1)</script></html>", False),
    ("data.xml", b"<x/>", False),
    ("neznamy.qqq", b"?", False),
    ("kresba.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><circle r="1"/></svg>', True),
    ("jmenny.svg", b'<s:svg xmlns:s="http://www.w3.org/2000/svg"><s:script>alert(1)</s:script></s:svg>', False),
    ("entita.svg", b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:x="http://www.w3.org/1999/xlink">'
                   b'<a x:href="&#106;avascript:alert(1)"><text>x</text></a></svg>', False),
    ("udalost.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><rect onclick="alert(1)"/></svg>', False),
])
def test_attachments_are_published_by_an_allowlist(tmp_path, notes, name, content, published):
    (notes / "deniky" / name).write_bytes(content)
    write_note(notes, "deniky/priloha.md", f"# Příloha\n\n[soubor]({name})\n")
    config = make(tmp_path)
    assert run(config) == 0
    assert (config.site.output / "notes/deniky" / name).exists() == published
    warnings = log_lines(config)
    assert (not warnings) if published else \
        warnings[0].startswith(f"notes: a broken link: deniky/priloha.md:3: {name}: ")


def test_leftovers_of_a_killed_full_build_are_removed_by_the_next_build(tmp_path, notes):
    config = make(tmp_path)
    assert run(config) == 0
    current = indexfile.resolve(config.index)
    dead = indexfile.new_generation(config.index)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{dead}{suffix}").write_bytes(b"half a generation")
    keep = config.index.with_name("index-backup.sqlite")  # a user's file: not ours
    keep.write_bytes(b"mine")
    write_note(notes, "novy.md", "# Nový\n")
    assert run(config) == 0
    left = sorted(p.name for p in config.index.parent.iterdir() if p.name.startswith("index"))
    assert left == sorted([config.index.name, current.name, f"{current.name}-shm", f"{current.name}-wal",
                           keep.name]) or left == sorted([config.index.name, current.name, keep.name])
    assert f"removed {dead.name}, left by a build that did not finish" in log_lines(config, "INFO")


def test_a_full_build_keeps_the_notes_of_a_folder_it_cannot_read(tmp_path, notes, monkeypatch):
    config = make(tmp_path)
    assert run(config) == 0
    before = indexfile.resolve(config.index)
    real_scandir = os.scandir

    def failing(path):
        if str(path) == str(notes / "deniky"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr("builder.notes.sources.os.scandir", failing)
    assert build(config, full=True, log=SyncLog(config.log_path, echo_info=False)) == 3
    assert indexfile.resolve(config.index) != before and len(indexed_paths(config)) == 13
    assert log_lines(config) == ["notes: cannot read deniky/: Permission denied; its notes stay as they were indexed"]
    assert "notes: kept 12 notes as the previous index held them" in log_lines(config, "INFO")
    assert (config.site.output / "notes/deniky/d3.html").exists()


def test_status_shows_an_indexing_failure(tmp_path, notes, monkeypatch, capsys):
    from builder.cli import main

    config = make(tmp_path)
    assert run(config) == 0
    write_note(notes, "novy.md", "# Nový\n")

    def full_disk(*args, **kwargs):
        raise db.sqlite_module().OperationalError("database or disk is full")

    monkeypatch.setattr("builder.core.index.notes.replace_file", full_disk)
    monkeypatch.setattr("builder.sync.db.replace_file", full_disk)
    assert run(config) == 3
    assert main(["status", "--config", str(config.path)]) == 0
    out = capsys.readouterr().out
    assert ("last error" in out and "indexing failed (OperationalError: database or disk is full); "
            "the next build tries again" in out)


@pytest.mark.parametrize(("batch_s", "kept"), [(0, range(14, 25)), (3600, range(13, 14))])
def test_a_build_is_killed_and_the_next_one_finishes_the_work(tmp_path, notes, batch_s, kept):
    """A SIGKILL in the middle of indexing (the crash test covers many more moments). The notes
    committed before it stay (with a commit after every note, the four stored before the kill; with
    one batch, none), no note is half there, and the next build does the rest."""
    config = make(tmp_path)
    assert run(config) == 0
    for i in range(12, 24):
        write_note(notes, f"deniky/d{i}.md", f"# Deník {i}\n\nZápis číslo {i}.\n")
    script = ("import os, signal, sys\n"
              f"import builder.sync\nbuilder.sync.WRITE_BATCH_S = {batch_s}\n"
              "from builder.core.index import notes\n"
              "real = notes.replace_file\n"
              "count = [0]\n"
              "def dying(*a, **k):\n"
              "    count[0] += 1\n"
              "    if count[0] == 5: os.kill(os.getpid(), signal.SIGKILL)\n"
              "    return real(*a, **k)\n"
              "notes.replace_file = dying\n"
              "import builder.sync\nbuilder.sync.db.replace_file = dying\n"
              "from builder.cli import main\nsys.exit(main(['build', '--config', sys.argv[1]]))\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    killed = subprocess.run([sys.executable, "-c", script, str(config.path)], env=env, capture_output=True)
    assert killed.returncode == -9
    assert len(indexed_paths(config)) in kept
    assert not (config.site.output / "notes/deniky/d23.html").exists()
    assert run(config) == 0 and len(indexed_paths(config)) == 25
    assert (config.site.output / "notes/deniky/d23.html").exists()


def test_a_write_batch_commits_whole_steps_only(tmp_path):
    """Inside a batch each transaction() is a step: the steps commit together at the batch's end
    (or as soon as its time is up); a step that fails fails the batch, which keeps nothing it had
    not committed, even when the caller catches the error and goes on."""
    path = tmp_path / "batch.sqlite"
    conn, reader = db.connect(path, vec=False), None
    try:
        conn.execute("CREATE TABLE t (x INTEGER)")
        reader = db.connect(path, vec=False, readonly=True)

        def seen() -> list[int]:
            return [row[0] for row in reader.execute("SELECT x FROM t ORDER BY x")]

        def step(x: int, fail: bool = False) -> None:
            with db.transaction(conn):
                conn.execute("INSERT INTO t VALUES (:x)", {"x": x})
                if fail:
                    raise ValueError("a bad step")

        with db.WriteBatch(conn, seconds=3600):
            step(1)
            step(2)
            assert seen() == []  # not committed yet
        assert seen() == [1, 2]
        with db.WriteBatch(conn, seconds=0):
            step(3)
            assert seen() == [1, 2, 3]  # its time was up: committed after the step
            step(4)
        with db.WriteBatch(conn, seconds=3600):
            step(5)
            with pytest.raises(ValueError):
                step(6, fail=True)
            with pytest.raises(RuntimeError, match="an earlier step of this write batch failed"):
                step(7)
        assert seen() == [1, 2, 3, 4] and not conn.in_transaction
        with pytest.raises(RuntimeError), db.WriteBatch(conn, seconds=3600):
            step(8)
            raise RuntimeError("the build dies")
        assert seen() == [1, 2, 3, 4]
        batch = db.WriteBatch(conn, seconds=3600)
        with pytest.raises(db.sqlite_module().OperationalError), batch:
            step(9)
            batch.index_words = lambda *a: conn.execute("SELECT * FROM no_such_table")  # the last commit fails
        assert seen() == [1, 2, 3, 4] and not conn.in_transaction  # rolled back, the connection usable
        step(10)
        assert seen() == [1, 2, 3, 4, 10]
    finally:
        conn.close()
        if reader is not None:
            reader.close()


def test_a_build_killed_while_its_workers_parse_leaves_no_worker_and_no_lock(tmp_path):
    """SIGKILL the build while its forked workers parse: they die with it (they would block on their
    pipes for ever) and the lock they share from the fork with it, so the next build runs."""
    import signal

    from builder.lock import BuildLock

    root = tmp_path / "notes"
    root.mkdir()
    for i in range(600):
        (root / f"n{i:03}.md").write_text(f"# Poznámka {i}\n\n" + "slovo a další slovo. " * 200, encoding="utf-8")
    config = tmp_path / "portal.yaml"
    config.write_text(f"index: {tmp_path / 'data' / 'index.sqlite'}\nembedding:\n  provider: none\n"
                      f"sources:\n  notes:\n    folder: {root}\n", encoding="utf-8")
    with (tmp_path / "build.out").open("wb") as log:  # the child holds its own copy of the file
        build = subprocess.Popen([sys.executable, "-m", "builder.cli", "build", "--config", str(config)],
                                 stdout=log, stderr=log)

    def children() -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == build.pid:
                    found.append(int(entry.name))
            except (OSError, ValueError, IndexError):
                pass
        return found

    deadline = time.monotonic() + 60
    workers: list[int] = []
    while not workers and build.poll() is None and time.monotonic() < deadline:
        workers = children()
        time.sleep(0.002)
    assert workers, "the build forked no workers"
    build.send_signal(signal.SIGKILL)
    build.wait()
    # A worker shares the lock's open file from its fork until it exits: one forked in the instant before the
    # kill, not yet running, exits as soon as it runs and sees its parent gone (forkpool._worker_start). So
    # the next build gets the lock within moments, never after a worker has lived on.
    deadline = time.monotonic() + 5
    while True:
        with BuildLock(tmp_path / "data" / "sync.lock") as lock:
            if lock.acquired:
                break
        assert time.monotonic() < deadline, "the build lock is still held 5 s after the build was killed"
        time.sleep(0.01)

    def alive(pid: int) -> bool:
        try:
            return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in workers)
