"""Build behaviour on real SQLite files: orphan vectors, idempotence, lock, coverage, bad input."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from builder import indexfile
from builder.core import index as db
from builder.sync import build
from tests.conftest import DIMS, HashEmbedder, ollama_yaml, write_note

EMBED = ollama_yaml("http://127.0.0.1:9", DIMS)  # never contacted: the tests pass an embedder


def run(config, log_factory, **kwargs) -> int:
    return build(config, embedder_factory=kwargs.pop("embedder", HashEmbedder), log=log_factory(config), **kwargs)


def open_index(config):
    return db.connect(indexfile.resolve(config.index))


def vec_rowids(conn) -> set[int]:
    return {r[0] for r in conn.execute("SELECT rowid FROM vec_chunks")}


def test_first_build_indexes_every_note_with_vectors(config_for, quiet_log):
    config = config_for(EMBED)
    assert run(config, quiet_log) == 0
    conn = open_index(config)
    paths = {r["path"] for r in conn.execute("SELECT path FROM files")}
    assert paths == {"recepty/teh-tarik.md", "projekty/sauter-bus.md", "cestovani/snezka.md"}
    counts = db.counts(conn)
    assert counts["chunks"] == counts["chunks_fts"] == counts["vec_chunks"] > 0
    assert db.fts_integrity_error(conn) is None
    assert db.count_pending(conn) == 0
    meta = db.get_meta(conn)
    assert meta["embedding_model"] == "test-embed:1" and meta["embedding_dims"] == str(DIMS)
    assert meta["chunker_version"] and meta["sqlite_vec_version"].startswith("v")


def test_deleting_a_note_leaves_no_orphan_vectors(config_for, notes_dir, quiet_log):
    config = config_for(EMBED)
    run(config, quiet_log)
    conn = open_index(config)
    doomed = {r[0] for r in conn.execute("SELECT id FROM chunks WHERE path = 'recepty/teh-tarik.md'")}
    assert doomed and doomed <= vec_rowids(conn)
    (notes_dir / "recepty/teh-tarik.md").unlink()
    assert run(config, quiet_log) == 0
    conn = open_index(config)
    assert not doomed & vec_rowids(conn)
    chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
    assert vec_rowids(conn) == chunk_ids  # no orphans at all, none missing
    assert db.counts(conn)["chunks_fts"] == len(chunk_ids) and db.fts_integrity_error(conn) is None


def test_fts_figures_come_from_the_full_text_index_itself(config_for, quiet_log):
    config = config_for(EMBED)
    run(config, quiet_log)
    conn = open_index(config)
    chunks = db.counts(conn)["chunks"]
    assert db.counts(conn)["chunks_fts"] == chunks > 0 and db.fts_integrity_error(conn) is None
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")  # the content table stays
    assert db.counts(conn)["chunks"] == chunks and db.counts(conn)["chunks_fts"] == 0
    assert db.fts_integrity_error(conn) == "database disk image is malformed"  # FTS5's word for "out of sync"


def test_renamed_note_moves_without_a_model_call(config_for, notes_dir, quiet_log):
    config = config_for(EMBED)
    run(config, quiet_log)
    (notes_dir / "recepty/teh-tarik.md").rename(notes_dir / "recepty/teh-tarik-2.md")
    embedder = HashEmbedder()
    run(config, quiet_log, embedder=lambda _cfg: embedder)
    conn = open_index(config)
    paths = {r["path"] for r in conn.execute("SELECT DISTINCT path FROM chunks")}
    assert "recepty/teh-tarik-2.md" in paths and "recepty/teh-tarik.md" not in paths
    assert embedder.passages_embedded == 0  # every vector came from the cache
    assert db.count_pending(conn) == 0


def test_second_build_over_unchanged_sources_changes_nothing(config_for, quiet_log):
    config = config_for(EMBED)
    run(config, quiet_log)
    conn = open_index(config)
    before = (db.counts(conn), db.get_sources(conn), db.get_meta(conn))
    conn.close()
    index_file = indexfile.resolve(config.index)
    stamp = (index_file.stat().st_mtime_ns, config.log_path.stat().st_mtime_ns, config.log_path.read_bytes())
    time.sleep(0.05)
    assert run(config, quiet_log) == 0
    assert (index_file.stat().st_mtime_ns, config.log_path.stat().st_mtime_ns,
            config.log_path.read_bytes()) == stamp
    conn = open_index(config)
    assert (db.counts(conn), db.get_sources(conn), db.get_meta(conn)) == before


def test_noop_cli_build_prints_nothing(config_for, quiet_log):
    config = config_for(EMBED)
    run(config, quiet_log)
    proc = subprocess.run([sys.executable, "-m", "builder.cli", "build", "--config", str(config.path)],
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def test_touched_but_unchanged_note_is_not_rechunked(config_for, notes_dir, quiet_log):
    config = config_for(EMBED)
    run(config, quiet_log)
    conn = open_index(config)
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
    os.utime(notes_dir / "projekty/sauter-bus.md", ns=(1, 1_000_000_000))
    run(config, quiet_log)
    conn = open_index(config)
    assert [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")] == ids
    mtime_ns = conn.execute("SELECT mtime_ns FROM files WHERE path = 'projekty/sauter-bus.md'").fetchone()[0]
    assert mtime_ns == 1_000_000_000


HELD_BUILD = """
import sys, time
from pathlib import Path
from builder.core.config import load_config
from builder.sync import build
from tests.conftest import HashEmbedder

inside, release = Path(sys.argv[2]), Path(sys.argv[3])

class Held(HashEmbedder):
    def embed_passages(self, texts):
        inside.touch()  # we hold the build lock now
        deadline = time.monotonic() + 60
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return super().embed_passages(texts)

print("done", build(load_config(sys.argv[1]), embedder_factory=Held))
"""


def test_a_build_started_while_another_holds_the_lock_leaves_without_indexing(config_for, tmp_path):
    """The first build is held inside the lock until the second has finished: they certainly overlap."""
    config = config_for(EMBED)
    script = tmp_path / "held_build.py"
    script.write_text(HELD_BUILD, encoding="utf-8")
    inside, release = tmp_path / "inside", tmp_path / "release"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    first = subprocess.Popen([sys.executable, str(script), str(config.path), str(inside), str(release)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not inside.exists():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.01)
        second = subprocess.run([sys.executable, "-c", "from builder.cli import main; import sys; sys.exit(main())",
                                 "build", "--config", str(config.path)], capture_output=True, text=True, env=env,
                                timeout=60)
        assert (second.returncode, second.stdout, second.stderr) == (0, "", "")
        assert first.poll() is None  # still held: the two overlapped
    finally:
        release.touch()
    out, err = first.communicate(timeout=60)
    assert (first.returncode, out) == (0, "done 0\n"), err
    indexed = [line for line in config.log_path.read_text(encoding="utf-8").splitlines() if "notes: indexed" in line]
    assert len(indexed) == 1  # the first build's; the second indexed nothing
    assert db.counts(open_index(config))["files"] == 3


@contextmanager
def held_lock(config):
    """Hold the build lock the way a running build does (an OS lock on sync.lock) in this process."""
    config.build_lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(config.build_lock_path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def test_a_lock_file_left_by_a_dead_build_does_not_block(config_for, quiet_log):
    config = config_for(EMBED)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    config.build_lock_path.parent.mkdir(parents=True, exist_ok=True)
    config.build_lock_path.write_text(json.dumps({"pid": int(dead.stdout), "started_at": "2026-01-01T00:00:00"}))
    assert run(config, quiet_log) == 0
    assert db.counts(open_index(config))["files"] == 3
    assert "WARN" not in config.log_path.read_text(encoding="utf-8")  # nothing stale to reclaim: the OS freed it
    with open(config.build_lock_path, "a") as handle:  # the file stays, unlocked
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)


def test_a_held_lock_is_never_taken_over_however_old(config_for, quiet_log):
    config = config_for(EMBED)
    with held_lock(config):
        os.utime(config.build_lock_path, (time.time() - 7200, time.time() - 7200))  # a first build running for 2 h
        assert run(config, quiet_log) == 0
        assert indexfile.resolve(config.index) is None and not config.log_path.exists()
    assert run(config, quiet_log) == 0 and indexfile.resolve(config.index) is not None


def this_process_started() -> float:
    """When this test process started, in seconds since the epoch (from its ``ps`` entry)."""
    elapsed = subprocess.run(["ps", "-o", "etimes=", "-p", str(os.getpid())], capture_output=True, text=True,
                             check=True).stdout
    return time.time() - int(elapsed)


def test_a_no_op_build_leaves_the_lock_file_untouched(config_for, quiet_log):
    config = config_for(EMBED)
    assert run(config, quiet_log) == 0
    before = config.build_lock_path.stat()
    os.utime(config.build_lock_path, ns=(before.st_atime_ns, before.st_mtime_ns - 10**9))
    assert run(config, quiet_log) == 0
    after = config.build_lock_path.stat()
    assert (after.st_mtime_ns, after.st_size) == (before.st_mtime_ns - 10**9, before.st_size)


def test_a_person_at_a_terminal_is_told_which_build_holds_the_lock(config_for):
    config = config_for(EMBED)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    command = [sys.executable, "-m", "builder.cli", "build", "--full", "--config", str(config.path)]
    with held_lock(config):
        quiet = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
        assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")  # cron: silent
        controller, terminal = pty.openpty()
        try:
            shown = subprocess.run(command, stdout=subprocess.PIPE, stderr=terminal, text=True, env=env, timeout=60)
            os.close(terminal)
            terminal = -1
            said = os.read(controller, 4096).decode()
        finally:
            os.close(controller)
            if terminal != -1:
                os.close(terminal)
    assert shown.returncode == 0
    started = this_process_started()  # ps counts whole seconds: the minute is one of two
    minutes = "|".join(time.strftime("%Y-%m-%dT%H:%M", time.localtime(started - d)) for d in (0, 1.5))
    assert re.fullmatch(rf"notes-portal: another build \(pid {os.getpid()}, started ({minutes}):\d\d[+-]\d{{4}}\) is "
                        r"running; this build leaves the work to it \(use --wait to run after it\)\n",
                        said.replace("\r", "")), said
    assert indexfile.resolve(config.index) is None


def test_wait_runs_the_build_after_the_one_holding_the_lock(config_for, quiet_log):
    config = config_for(EMBED)
    released = threading.Event()

    def hold() -> None:
        with held_lock(config):
            started.set()
            time.sleep(0.5)
            released.set()

    started = threading.Event()
    holder = threading.Thread(target=hold)
    holder.start()
    started.wait(10)
    assert run(config, quiet_log, wait=True) == 0
    assert released.is_set()  # it ran only after the other let go
    holder.join()
    assert db.counts(open_index(config))["files"] == 3


def test_coverage_line_names_markdown_outside_paths(tmp_path, notes_dir, quiet_log):
    from builder.core.config import load_config
    from tests.conftest import write_config

    config = load_config(write_config(tmp_path, f"""
        index: data/index.sqlite
        {EMBED.replace(chr(10), chr(10) + '        ')}
        sources:
          notes:
            folder: notes
            paths: ["recepty/**", "projekty/**"]
        """))
    run(config, quiet_log)
    log = config.log_path.read_text(encoding="utf-8")
    assert "notes: coverage: markdown outside every paths entry in: cestovani/" in log
    write_note(notes_dir, "inbox/new-idea.md", "# Idea\n\nSomething new.\n")
    run(config, quiet_log)  # no indexed file changed, but the coverage did
    last = config.log_path.read_text(encoding="utf-8").splitlines()[-1]
    assert last.endswith("notes: coverage: markdown outside every paths entry in: cestovani/, inbox/")
    conn = open_index(config)
    assert {r[0] for r in conn.execute("SELECT path FROM files")} == {"recepty/teh-tarik.md",
                                                                      "projekty/sauter-bus.md"}


@pytest.mark.parametrize("name, content, warning", [
    ("empty.md", b"", None),
    ("latin2.md", "# Čaj\n\nŽluťoučký kůň\n".encode("iso-8859-2"), "not UTF-8: read as ISO 8859-2"),
    ("damaged.md", "# Čaj\n\nŽluťoučký kůň\n".encode() + b"\xff\n", "invalid UTF-8 at byte 28"),
    ("binary.md", bytes(range(256)) * 8, "binary data, not a text note"),
    ("huge.md", b"# Huge\n\n" + b"word " * 1_100_000, "over limits.max_note_bytes"),
    ("broken-front.md", b"---\ntitle: [unclosed\n---\n# Body title\n\nbody text\n", "broken front matter"),
    ("nested.md", "".join("  " * i + "- level\n" for i in range(400)).encode(), None),
    ("deep-quote.md", b"> " * 300 + b"deep\n", None),
])
def test_malformed_input_warns_and_the_build_completes(config_for, notes_dir, quiet_log, name, content, warning):
    config = config_for(EMBED)
    (notes_dir / "bad").mkdir()
    (notes_dir / "bad" / name).write_bytes(content)
    assert run(config, quiet_log) == 0
    log = config.log_path.read_text(encoding="utf-8")
    if warning:
        assert f"WARN notes: bad/{name}: " in log and warning in log
    else:
        assert "WARN" not in log
    conn = open_index(config)
    good = {r[0] for r in conn.execute("SELECT path FROM files WHERE status = 'ok'")}
    assert {"recepty/teh-tarik.md", "projekty/sauter-bus.md", "cestovani/snezka.md"} <= good
    assert db.count_pending(conn) == 0
    # the bad note is remembered, so the next build neither re-reads it nor warns again
    size = config.log_path.stat().st_size
    assert run(config, quiet_log) == 0
    assert config.log_path.stat().st_size == size


def test_broken_front_matter_is_indexed_from_the_body(config_for, notes_dir, quiet_log):
    config = config_for(EMBED)
    write_note(notes_dir, "broken.md", "---\ntitle: [unclosed\n---\n# Tělo poznámky\n\nzrzavý jednorožec\n")
    run(config, quiet_log)
    conn = open_index(config)
    row = conn.execute("SELECT title, status FROM files WHERE path = 'broken.md'").fetchone()
    assert (row["title"], row["status"]) == ("Tělo poznámky", "ok")
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'jednorozec'").fetchone()[0] == 1


@pytest.mark.parametrize("front", ["published: false", "published:false", "title: [unclosed\npublished: false"])
def test_unpublished_note_leaves_no_trace_in_chunks(config_for, notes_dir, quiet_log, front):
    """Also when the front matter is not YAML (``published:false`` is one string to a YAML parser)."""
    config = config_for(EMBED)
    write_note(notes_dir, "osobni/koncept.md", f"---\n{front}\n---\n# Tajné\n\nDatamax smlouva\n")
    run(config, quiet_log)
    conn = open_index(config)
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'datamax'").fetchone()[0] == 0
    row = conn.execute("SELECT status, title, headings FROM files WHERE path = 'osobni/koncept.md'").fetchone()
    assert (row["status"], row["title"], row["headings"]) == ("unpublished", "koncept", "[]")


def test_symlink_outside_the_root_is_not_followed(config_for, notes_dir, tmp_path, quiet_log):
    outside = tmp_path / "private"
    write_note(outside, "secret.md", "# Secret\n\nheslo\n")
    (notes_dir / "linked").symlink_to(outside, target_is_directory=True)
    (notes_dir / "inside-link.md").symlink_to(notes_dir / "projekty/sauter-bus.md")
    config = config_for(EMBED)
    run(config, quiet_log)
    paths = {r[0] for r in open_index(config).execute("SELECT path FROM files")}
    assert "linked/secret.md" not in paths and "inside-link.md" in paths


def test_scope_precedence_paths_include_exclude(tmp_path, notes_dir, quiet_log):
    from builder.core.config import load_config
    from tests.conftest import write_config

    write_note(notes_dir, "projekty/inbox/draft.md", "# Draft\n")
    write_note(notes_dir, "projekty/readme.txt", "plain text\n")
    write_note(notes_dir, "projekty/plan.markdown", "# Plan\n")
    config = load_config(write_config(tmp_path, """
        index: data/index.sqlite
        embedding:
          provider: none
        sources:
          notes:
            folder: notes
            paths: ["projekty/**"]
            include: ["*.md", "*.markdown"]
            exclude: ["**/inbox/**"]
        """))
    run(config, quiet_log)
    paths = {r[0] for r in open_index(config).execute("SELECT path FROM files")}
    assert paths == {"projekty/sauter-bus.md", "projekty/plan.markdown"}


def test_source_removed_from_config_leaves_the_index(tmp_path, notes_dir, quiet_log):
    from builder.core.config import load_config
    from tests.conftest import write_config

    other = tmp_path / "other"
    write_note(other, "a.md", "# A\n\nalpha\n")
    two = f"index: data/index.sqlite\n{EMBED}sources:\n  notes:\n    folder: notes\n  other:\n    folder: other\n"
    run(load_config(write_config(tmp_path, two)), quiet_log)
    one = f"index: data/index.sqlite\n{EMBED}sources:\n  notes:\n    folder: notes\n"
    config = load_config(write_config(tmp_path, one))
    run(config, quiet_log)
    conn = open_index(config)
    assert {r[0] for r in conn.execute("SELECT DISTINCT source_id FROM chunks")} == {"notes"}
    assert vec_rowids(conn) == {r[0] for r in conn.execute("SELECT id FROM chunks")}
    assert "other: source removed from the config" in config.log_path.read_text(encoding="utf-8")


def test_build_renders_the_site_and_a_noop_build_leaves_it_alone(config_for, notes_dir, quiet_log):
    config = config_for(EMBED)
    run(config, quiet_log)
    page = config.site.output / "notes" / "recepty" / "teh-tarik.html"
    other = config.site.output / "notes" / "projekty" / "sauter-bus.html"
    assert 'id="suroviny"' in page.read_text(encoding="utf-8")
    stamps = {p: p.stat().st_mtime_ns for p in config.site.output.rglob("*") if p.is_file()}
    time.sleep(0.05)
    assert run(config, quiet_log) == 0
    assert {p: p.stat().st_mtime_ns for p in config.site.output.rglob("*") if p.is_file()} == stamps
    write_note(notes_dir, "recepty/teh-tarik.md", "# Teh Tarik\n\n## Suroviny\n\nvoda, čaj, mléko a led\n")
    assert run(config, quiet_log) == 0
    assert "mléko a led" in page.read_text(encoding="utf-8")
    assert other.stat().st_mtime_ns == stamps[other]  # an unrelated note page is not rewritten
    (notes_dir / "recepty" / "teh-tarik.md").unlink()
    assert run(config, quiet_log) == 0
    assert not page.exists()


def test_unwritable_site_keeps_the_index_fresh_and_says_so(config_for, notes_dir, quiet_log, tmp_path):
    config = config_for(EMBED)
    config.site.output.parent.mkdir(parents=True, exist_ok=True)
    config.site.output.write_text("a file where the site folder should be")
    assert run(config, quiet_log) == 3
    assert db.counts(open_index(config))["files"] == 3
    assert "WARN site: cannot write" in config.log_path.read_text(encoding="utf-8")


def test_build_source_only_touches_that_source(tmp_path, notes_dir, quiet_log):
    from builder.core.config import load_config
    from tests.conftest import write_config

    other = tmp_path / "other"
    write_note(other, "a.md", "# A\n\nalfa\n")
    config = load_config(write_config(
        tmp_path, f"index: data/index.sqlite\n{EMBED}sources:\n  notes:\n    folder: notes\n"
                  "  other:\n    folder: other\n"))
    assert run(config, quiet_log) == 0
    write_note(other, "b.md", "# B\n\nbeta\n")
    write_note(notes_dir, "new.md", "# New\n\ngama\n")
    assert run(config, quiet_log, source_id="other") == 0
    conn = open_index(config)
    paths = {(r[0], r[1]) for r in conn.execute("SELECT source_id, path FROM files")}
    assert ("other", "b.md") in paths and ("notes", "new.md") not in paths
    assert run(config, quiet_log) == 0
    conn = open_index(config)
    assert ("notes", "new.md") in {(r[0], r[1]) for r in conn.execute("SELECT source_id, path FROM files")}
