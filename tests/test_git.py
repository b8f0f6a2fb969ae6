"""Git sources against real repositories: file:// and `git daemon` transports, a host that never
answers, wrong URLs, rewritten history, redaction of credentials, grep over our clone.

Every repository lives in tmp_path; the only network is 127.0.0.1. Global and system git config
are switched off, and the identity comes from the environment (conftest's ``isolated_git``), so the
user's setup cannot leak in.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from builder import gitsource, indexfile
from builder.core import index as db
from builder.core.index import schema
from server.status import collect_status, format_status
from tests.conftest import require_ripgrep, write_note
from tests.git_support import (
    Upstream,
    assert_index_is_exactly,
    git,
    log_lines,
    make_config,
    open_index,
    run,
    source_row,
)

NO_EMBED = "embedding:\n  provider: none\n"


class SilentServer:
    """Accepts TCP connections on 127.0.0.1 and never says a word: a hung git host."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted.append(conn)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for conn in self.accepted:
            conn.close()
        self.sock.close()


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every git command the builder runs, in order (the real calls still happen)."""
    calls: list[list[str]] = []
    real = gitsource.run_git

    def recording(args: list[str], **kwargs: Any) -> tuple[int, bytes]:
        calls.append(list(args))
        return real(args, **kwargs)

    monkeypatch.setattr(gitsource, "run_git", recording)
    return calls


def tree_stamp(root: Path) -> dict[str, tuple[int, int]]:
    """(mtime, size) of every file below ``root``: equal stamps mean nothing was written."""
    return {str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size)
            for p in root.rglob("*") if p.is_file()}


# ---------------------------------------------------------------- 1. a push, then a no-op


@pytest.mark.parametrize("transport", ["file", "daemon"])
def test_a_pushed_note_is_reindexed_alone_and_the_next_build_only_asks_ls_remote(
        transport: str, tmp_path: Path, request: pytest.FixtureRequest, git_calls: list[list[str]]) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("recepty/caj.md", "# Čaj\n\nZelený čaj se spaří vodou o 80 °C.\n")
    up.write("hory/snezka.md", "# Sněžka\n\nVýstup z Pece pod Sněžkou.\n")
    up.write("readme.txt", "not a note\n")
    up.commit("first", author="Alice", when="2024-01-02T10:00:00+00:00")
    up.write("hory/snezka.md", "# Sněžka\n\nVýstup z Pece pod Sněžkou trvá tři hodiny.\n")
    up.commit("second", author="Bob", when="2024-02-03T11:00:00+00:00")
    up.push()
    daemon = request.getfixturevalue("git_daemon") if transport == "daemon" else None
    url = f"{daemon.url}/notes.git" if daemon else up.url
    config = make_config(tmp_path, f"notes:\n  git: {url}\n")

    assert run(config) == 0
    conn = open_index(config)
    assert {r["path"]: (r["changed_at"], r["changed_by"]) for r in conn.execute(
        "SELECT path, changed_at, changed_by FROM files")} == {
        "recepty/caj.md": ("2024-01-02T10:00:00+00:00", "Alice"),
        "hory/snezka.md": ("2024-02-03T11:00:00+00:00", "Bob")}
    assert source_row(config, "notes").indexed_rev == up.head()
    before = {r["path"]: (r["indexed_at"], r["ids"]) for r in conn.execute(
        "SELECT f.path, f.indexed_at, group_concat(c.id) AS ids FROM files f JOIN chunks c USING (source_id, path) "
        "GROUP BY f.path")}

    up.write("recepty/caj.md", "# Čaj\n\nMatcha se šlehá bambusovou metličkou.\n")
    up.commit("third", author="Carol", when="2024-03-04T12:00:00+00:00")
    up.push()
    bare_stamp = tree_stamp(up.bare)
    time.sleep(1.1)  # indexed_at has one-second resolution
    git_calls.clear()
    assert run(config) == 0
    commands = [c[0] for c in git_calls]
    assert "diff-tree" in commands and "ls-tree" not in commands  # changes from the diff, not a full listing
    lines = log_lines(config)
    at = lines.index("INFO notes: indexed 1 files / 1 chunks, removed 0 files")
    # the page first, then (the build lock released) the vector
    assert lines[at + 1].startswith("INFO render: 2 files written")
    assert lines[at + 2] == "INFO embedded 1 chunks (1 computed, 0 from the cache)"
    conn = open_index(config)
    after = {r["path"]: (r["indexed_at"], r["ids"]) for r in conn.execute(
        "SELECT f.path, f.indexed_at, group_concat(c.id) AS ids FROM files f JOIN chunks c USING (source_id, path) "
        "GROUP BY f.path")}
    assert after["hory/snezka.md"] == before["hory/snezka.md"]  # untouched: same row, same chunks
    assert after["recepty/caj.md"][0] != before["recepty/caj.md"][0]
    assert conn.execute("SELECT changed_at, changed_by FROM files WHERE path = 'recepty/caj.md'").fetchone()[:] \
        == ("2024-03-04T12:00:00+00:00", "Carol")
    assert [r[0] for r in conn.execute("SELECT c.path FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
                                       "WHERE chunks_fts MATCH 'metlickou'")] == ["recepty/caj.md"]
    assert source_row(config, "notes").indexed_rev == up.head()
    assert_index_is_exactly(conn, "notes", up.notes())
    conn.close()

    index_file = indexfile.resolve(config.index)
    clone = config.source_root(config.source("notes"))
    stamp = (index_file.stat().st_mtime_ns, config.log_path.read_bytes(), tree_stamp(clone))
    requests_before = daemon.upload_requests() if daemon else 0
    git_calls.clear()
    assert run(config) == 0
    assert git_calls == [["ls-remote", "--", url, "HEAD"]]  # no fetch, nothing else
    assert (index_file.stat().st_mtime_ns, config.log_path.read_bytes(), tree_stamp(clone)) == stamp
    if daemon:
        assert daemon.upload_requests() == requests_before + 1  # the ls-remote, seen by the server
    assert tree_stamp(up.bare) == bare_stamp  # the user's repository is never written to


def test_a_commit_without_note_changes_moves_the_rev_silently(tmp_path: Path, git_calls: list[list[str]]) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.write("data.csv", "x,y\n1,2\n")
    up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n")
    run(config)
    log_before = config.log_path.read_bytes()
    up.write("data.csv", "x,y\n1,2\n3,4\n")
    up.commit("more data")
    up.push()
    assert run(config) == 0
    assert config.log_path.read_bytes() == log_before  # nothing worth a line
    assert source_row(config, "notes").indexed_rev == up.head()
    clone = config.source_root(config.source("notes"))
    assert (clone / "data.csv").read_text() == "x,y\n1,2\n3,4\n"
    git_calls.clear()
    assert run(config) == 0
    assert [c[0] for c in git_calls] == ["ls-remote"]


# ---------------------------------------------------------------- 2. rename, delete, force-push


def test_rename_delete_and_force_push_leave_exactly_the_new_tree(tmp_path: Path, git_calls: list[list[str]]) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# Alfa\n\nslovo alfaslovo\n")
    up.write("b.md", "# Beta\n\nslovo betaslovo\n")
    up.write("sub/c.md", "# Gama\n\nslovo gamaslovo\n")
    up.write("sub/d.md", "# Delta\n\nslovo deltaslovo\n")
    first = up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n")
    assert run(config) == 0
    assert_index_is_exactly(open_index(config), "notes", up.notes())

    up.move("a.md", "moved/a.md")
    up.remove("b.md")
    up.commit("rename a, delete b", author="Bob", when="2024-05-01T08:00:00+00:00")
    up.push()
    assert run(config) == 0
    conn = open_index(config)
    assert_index_is_exactly(conn, "notes", up.notes(), gone_words=("betaslovo",))
    assert set(up.notes()) == {"moved/a.md", "sub/c.md", "sub/d.md"}
    assert conn.execute("SELECT changed_by FROM files WHERE path = 'moved/a.md'").fetchone()[0] == "Bob"
    conn.close()

    git("reset", "--quiet", "--hard", first, cwd=up.work)  # rewrite history: drop both commits
    up.remove("sub/d.md")
    up.write("sub/c.md", "# Gama\n\nnové znění, slovo zetaslovo\n")
    up.write("e.md", "# Epsilon\n\nslovo epsilonslovo\n")
    old_rev = source_row(config, "notes").indexed_rev
    new_rev = up.commit("rewritten", author="Dana", when="2024-06-01T08:00:00+00:00")
    up.push(force=True)
    git_calls.clear()
    assert run(config) == 0
    assert "ls-tree" in [c[0] for c in git_calls]  # a full listing of the new tree
    assert (f"INFO notes: {old_rev[:12]} is not in the history of {new_rev[:12]} (force-pushed?): full re-scan"
            in log_lines(config))
    conn = open_index(config)
    assert set(up.notes()) == {"a.md", "b.md", "sub/c.md", "e.md"}
    assert_index_is_exactly(conn, "notes", up.notes(), gone_words=("deltaslovo", "gamaslovo"))
    assert source_row(config, "notes").indexed_rev == new_rev
    assert {r[0]: r[1] for r in conn.execute("SELECT path, changed_by FROM files")} == {
        "a.md": "Alice", "b.md": "Alice", "sub/c.md": "Dana", "e.md": "Dana"}


def test_symlinks_submodule_like_entries_and_hidden_directories_are_never_indexed(tmp_path: Path) -> None:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Secret\n\nmimo repozitář\n", encoding="utf-8")
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.write(".obsidian/workspace.md", "# Obsidian\n")
    (up.work / "link.md").symlink_to(secret)
    up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n")
    assert run(config) == 0
    conn = open_index(config)
    assert [r[0] for r in conn.execute("SELECT path FROM files")] == ["a.md"]
    assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'repozitar'").fetchone()[0] == 0


def test_a_build_started_from_a_git_hook_leaves_the_hooks_repository_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n", embedding=NO_EMBED)
    refs_before = git("for-each-ref", cwd=up.work)
    monkeypatch.setenv("GIT_DIR", str(up.work / ".git"))  # what a post-receive or post-commit hook exports
    monkeypatch.setenv("GIT_WORK_TREE", str(up.work))
    assert run(config) == 0
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_WORK_TREE")
    assert git("for-each-ref", cwd=up.work) == refs_before
    assert git("status", "--porcelain", cwd=up.work) == ""
    assert [r[0] for r in open_index(config).execute("SELECT path FROM files")] == ["a.md"]


def test_changing_the_scope_rescans_the_clone_without_fetching(tmp_path: Path, git_calls: list[list[str]]) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.write("private/b.md", "# B\n\nsoukromé tajemstvi\n")
    up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n")
    run(config)
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n  exclude: [\"private/**\"]\n")
    git_calls.clear()
    assert run(config) == 0
    assert [c[0] for c in git_calls if c[0] in ("fetch", "init")] == []
    notes = up.notes()
    del notes["private/b.md"]
    assert_index_is_exactly(open_index(config), "notes", notes, gone_words=("tajemstvi",))


# ---------------------------------------------------------------- 3. a host that never answers


@pytest.mark.slow
def test_a_remote_that_never_answers_times_out_and_the_folder_source_is_indexed(
        tmp_path: Path, notes_dir: Path, silent_server: SilentServer) -> None:
    config = make_config(tmp_path, f"""
        stuck:
          git: git://127.0.0.1:{silent_server.port}/x.git
        stuck2:
          git: git://127.0.0.1:{silent_server.port}/y.git
        notes:
          folder: notes
        """, timeout=3)
    start = time.monotonic()
    assert run(config) == 3
    elapsed = time.monotonic() - start
    # the two hanging remotes are waited for at the same time: one after the other would take at least 2 × 3 s
    assert elapsed < 2 * 3, elapsed
    assert len(silent_server.accepted) == 2  # git did connect, and then got nothing
    lines = log_lines(config)
    assert "WARN stuck: git ls-remote failed (no answer within 3 s)" in lines
    assert "WARN stuck2: git ls-remote failed (no answer within 3 s)" in lines
    assert "INFO notes: indexed 3 files / 5 chunks, removed 0 files" in lines
    row = source_row(config, "stuck")
    assert (row.indexed_rev, row.last_error) == (None, "git ls-remote failed (no answer within 3 s)")
    assert row.last_error_at is not None


@pytest.mark.slow
def test_a_timeout_kills_git_and_its_helpers_and_ssh_runs_in_batch_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_ssh = tmp_path / "fake-ssh"
    fake_ssh.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/ssh-args\nsleep 300 &\necho $! > {tmp_path}/child-pid\n'
                        "wait\n", encoding="utf-8")
    fake_ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(fake_ssh))
    monkeypatch.setenv("GIT_SSH_VARIANT", "ssh")
    start = time.monotonic()
    with pytest.raises(gitsource.GitError) as failure:
        gitsource.remote_head("ssh://git@gitea.invalid/me/notes.git", None, timeout=1)
    assert time.monotonic() - start < 1 + 1.5
    assert str(failure.value) == "git ls-remote failed (no answer within 1 s)"
    assert (tmp_path / "ssh-args").read_text().startswith("-o BatchMode=yes ")
    child = int((tmp_path / "child-pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(child):  # the grandchild `sleep` was in git's process group: killed with it
        assert time.monotonic() < deadline, "the ssh helper's child survived the timeout"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a killed child nobody reaped yet is not running


# ---------------------------------------------------------------- 4. wrong URL, deleted repository


def test_a_wrong_url_or_a_deleted_repository_warns_and_the_build_is_partial(tmp_path: Path, notes_dir: Path) -> None:
    up = Upstream(tmp_path, "kept")
    up.write("k.md", "# Kept\n\nkeptword\n")
    up.commit("first")
    up.push()
    nowhere = tmp_path / "nowhere.git"
    config = make_config(tmp_path, f"""
        missing:
          git: file://{nowhere}
        kept:
          git: {up.url}
        notes:
          folder: notes
        """)
    assert run(config) == 3
    lines = log_lines(config)
    assert f"WARN missing: git ls-remote failed ('{nowhere}' does not appear to be a git repository)" in lines
    assert "INFO kept: indexed 1 files / 1 chunks, removed 0 files" in lines
    assert "INFO notes: indexed 3 files / 5 chunks, removed 0 files" in lines
    kept_rev = source_row(config, "kept").indexed_rev

    shutil.rmtree(up.bare)
    write_note(notes_dir, "nova.md", "# Nová\n\nnovinka\n")
    assert run(config) == 3
    lines = log_lines(config)
    build_lines = [line for line in lines if not line.startswith("INFO render:")]
    assert build_lines[-4:] == [
        f"WARN missing: git ls-remote failed ('{nowhere}' does not appear to be a git repository)",
        f"WARN kept: git ls-remote failed ('{up.bare}' does not appear to be a git repository)",
        "INFO notes: indexed 1 files / 1 chunks, removed 0 files",
        "INFO embedded 1 chunks (1 computed, 0 from the cache)"]
    row = source_row(config, "kept")
    assert row.indexed_rev == kept_rev and row.last_error.startswith("git ls-remote failed (")
    assert_index_is_exactly(open_index(config), "kept", {"k.md": b"# Kept\n\nkeptword\n"})

    git("init", "--quiet", "--bare", "-b", "main", str(up.bare))  # the repository comes back
    up.push()
    assert run(config) == 3  # `missing` still fails
    row = source_row(config, "kept")
    assert (row.indexed_rev, row.last_error) == (kept_rev, None)
    assert row.last_error_at is not None  # when it last failed stays on record


def test_cli_build_with_a_broken_source_exits_3_with_one_line_and_no_traceback(tmp_path: Path, notes_dir: Path) -> None:
    config = make_config(tmp_path, f"broken:\n  git: {tmp_path / 'not-a-repo'}\nnotes:\n  folder: notes\n",
                         embedding=NO_EMBED)
    (tmp_path / "not-a-repo").mkdir()
    proc = subprocess.run([sys.executable, "-m", "builder.cli", "build", "--config", str(config.path)],
                          capture_output=True, text=True)
    assert proc.returncode == 3
    assert proc.stderr == (f"WARN broken: git ls-remote failed ('{tmp_path / 'not-a-repo'}' does not appear to be"
                           " a git repository)\n")


def test_a_missing_branch_warns_and_a_configured_branch_is_indexed(tmp_path: Path) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.commit("first")
    up.push()
    git("checkout", "--quiet", "-b", "drafts", cwd=up.work)
    up.write("draft.md", "# Draft\n\nkoncept\n")
    up.commit("draft")
    up.push("drafts")
    config = make_config(tmp_path, f"""
        main:
          git: {up.url}
        drafts:
          git: {up.url}
          branch: drafts
        nope:
          git: {up.url}
          branch: nope
        """, embedding=NO_EMBED)
    assert run(config) == 3
    assert "WARN nope: git ls-remote failed (branch 'nope' not found on the remote)" in log_lines(config)
    conn = open_index(config)
    paths = {(r[0], r[1]) for r in conn.execute("SELECT source_id, path FROM files")}
    assert paths == {("main", "a.md"), ("drafts", "a.md"), ("drafts", "draft.md")}


# ---------------------------------------------------------------- credentials


def test_credentials_in_urls_never_appear_in_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capfd: pytest.CaptureFixture[str]) -> None:
    fake_ssh = tmp_path / "fake-ssh"
    fake_ssh.write_text('#!/bin/sh\necho "ssh: cannot reach $@" >&2\nexit 255\n', encoding="utf-8")
    fake_ssh.chmod(0o755)
    monkeypatch.setenv("GIT_SSH_COMMAND", str(fake_ssh))
    monkeypatch.setenv("GIT_SSH_VARIANT", "ssh")
    ssh_url = "ssh://notes:s3cret-pw@127.0.0.1:2222/x.git"
    raw = subprocess.run(["git", "ls-remote", ssh_url], capture_output=True, text=True)
    assert "s3cret-pw" in raw.stderr  # git itself would print it: our redaction is what hides it
    config = make_config(tmp_path, f"""
        viassh:
          git: {ssh_url}
        viahttps:
          git: https://notes:s3cret-pw@127.0.0.1:1/x.git
        token:
          git: https://s3cret-tok@127.0.0.1:1/y.git
        query:
          git: https://127.0.0.1:1/z.git?private_token=s3cret-qs&ref=x
        """, embedding=NO_EMBED)
    assert run(config) == 3
    status_text = format_status(collect_status(config)) + json.dumps(collect_status(config))
    index_rows = json.dumps([list(r) for r in open_index(config).execute("SELECT * FROM sources")])
    everything = config.log_path.read_text(encoding="utf-8") + capfd.readouterr().err + status_text + index_rows
    assert "s3cret" not in everything
    assert "WARN viassh: git ls-remote failed (ssh: cannot reach -o BatchMode=yes -o SendEnv=GIT_PROTOCOL " \
           "notes:***@127.0.0.1:2222 git-upload-pack '/x.git')" in log_lines(config)
    assert "viahttps (git: https://notes:***@127.0.0.1:1/x.git, branch (remote HEAD))" in status_text
    assert "token (git: https://***@127.0.0.1:1/y.git, branch (remote HEAD))" in status_text
    assert "query (git: https://127.0.0.1:1/z.git?private_token=***&ref=***, branch (remote HEAD))" in status_text


@pytest.mark.parametrize("text, url, expected", [
    ("https://me:pa%40ss@gitea.lan/x.git", None, "https://me:***@gitea.lan/x.git"),
    ("auth failed for pa@ss", "https://me:pa%40ss@gitea.lan/x.git", "auth failed for ***"),
    ("https://me:p@ss@gitea.lan/x.git", None, "https://me:***@gitea.lan/x.git"),
    ("https://TOKEN123@gitea.lan/x.git", None, "https://***@gitea.lan/x.git"),
    ("git@gitea.lan:me/x.git", None, "git@gitea.lan:me/x.git"),
    ("ssh://git@gitea.lan/me/x.git", None, "ssh://git@gitea.lan/me/x.git"),
    ("fatal: 'git://u:pw@h/x' not found", None, "fatal: 'git://u:***@h/x' not found"),
    ("unable to access 'https://h/x.git?token=abc123/': 403", None,
     "unable to access 'https://h/x.git?token=***': 403"),
    ("the token abc123 expired", "https://h/x.git?token=abc123", "the token *** expired"),
])
def test_redact(text: str, url: str | None, expected: str) -> None:
    assert gitsource.redact(text, url) == expected


# ---------------------------------------------------------------- status


def test_status_shows_url_branch_rev_last_sync_and_last_error(tmp_path: Path) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.write("b.md", "# B\n\nbeta\n")
    up.commit("first")
    up.push()
    config = make_config(tmp_path, f"""
        good:
          git: {up.url}
          branch: main
        bad:
          git: https://me:hunter2@127.0.0.1:1/x.git
        """, embedding=NO_EMBED)
    assert run(config) == 3
    rows = db.get_sources(open_index(config))
    lines = format_status(collect_status(config)).splitlines()
    assert lines[2] == (f"good (git: {up.url}, branch main): 2 notes, 2 chunks, 0 pending vectors, "
                        f"last sync {rows['good'].last_sync_at}, rev {up.head()[:12]}")
    assert lines[3] == ("bad (git: https://me:***@127.0.0.1:1/x.git, branch (remote HEAD)): 0 notes, 0 chunks, "
                        "0 pending vectors, last sync never, rev -")
    assert lines[4].startswith(f"  last error ({rows['bad'].last_error_at}): git ls-remote failed (unable to access "
                               "'https://127.0.0.1:1/x.git/'")
    assert len(lines) == 6 and lines[5].startswith("English questions: ")


# ---------------------------------------------------------------- 5. grep, our clone


@pytest.mark.parametrize("engine", ["rg", "python"])
def test_grep_reads_the_clone_including_non_markdown(engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from builder.notes import grep as grep_module

    if engine == "rg":
        require_ripgrep()
    if engine == "python":
        monkeypatch.setattr(grep_module.shutil, "which", lambda name: None)
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nrouter heslo: modrý-kocour\n")
    up.write("config/wifi.txt", "ssid=domov\nheslo=modrý-kocour\n")
    up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n", embedding=NO_EMBED)
    run(config)
    capsys.readouterr()
    assert grep_module.grep(config, [config.source("notes")], "modrý-kocour") is True
    assert sorted(capsys.readouterr().out.splitlines()) == [
        "notes:a.md:3:router heslo: modrý-kocour", "notes:config/wifi.txt:2:heslo=modrý-kocour"]


def test_a_half_done_clone_is_detected_and_redone(tmp_path: Path, git_calls: list[list[str]]) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.write("b.txt", "bravo\n")
    up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n")
    run(config)
    clone = config.source_root(config.source("notes"))
    (clone / ".git" / gitsource.MARKER).unlink()  # as if the first clone had died before completing
    (clone / "a.md").write_text("half-written")
    partial = clone.with_name(".notes.partial")
    (partial / ".git").mkdir(parents=True)
    index_stamp = indexfile.resolve(config.index).stat().st_mtime_ns
    git_calls.clear()
    assert run(config) == 0
    assert [c[0] for c in git_calls][:3] == ["ls-remote", "init", "fetch"]
    assert "INFO notes: our clone in remote/notes was incomplete; cloned again" in log_lines(config)
    assert not partial.exists() and (clone / ".git" / gitsource.MARKER).is_file()
    assert {str(p.relative_to(clone)) for p in clone.rglob("*") if ".git" not in p.parts} == {"a.md", "b.txt"}
    assert (clone / "a.md").read_text() == "# A\n\nalpha\n"
    assert indexfile.resolve(config.index).stat().st_mtime_ns == index_stamp  # the index already had this rev


def test_full_build_reuses_the_clone_and_keeps_a_source_whose_remote_is_down(
        tmp_path: Path, git_calls: list[list[str]]) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    up.write("sub/b.md", "# B\n\nbeta\n")
    up.commit("first", author="Eva", when="2024-07-01T09:00:00+00:00")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n")
    run(config)
    git_calls.clear()
    assert run(config, full=True) == 0
    commands = [c[0] for c in git_calls]
    assert "init" not in commands and "fetch" not in commands and "ls-tree" in commands
    conn = open_index(config)
    assert_index_is_exactly(conn, "notes", up.notes())
    assert {r[0] for r in conn.execute("SELECT changed_by FROM files")} == {"Eva"}
    conn.close()

    shutil.rmtree(up.bare)
    assert run(config, full=True) == 3
    assert (f"WARN notes: git ls-remote failed ('{up.bare}' does not appear to be a git repository); "
            f"indexed our existing clone at {up.head()[:12]}") in log_lines(config)
    assert_index_is_exactly(open_index(config), "notes", up.notes())
    row = source_row(config, "notes")
    assert row.indexed_rev == up.head()
    assert row.last_error == (f"git ls-remote failed ('{up.bare}' does not appear to be a git repository); "
                              f"indexed our existing clone at {up.head()[:12]}")


def test_an_index_from_schema_step_1_gains_changed_by(tmp_path: Path, notes_dir: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    folder_only = make_config(tmp_path, "notes:\n  folder: notes\n")
    with monkeypatch.context() as patch:
        patch.setattr(schema, "SCHEMA_STEPS", schema.SCHEMA_STEPS[:1])
        run(folder_only)
    conn = open_index(folder_only)
    assert db.get_meta(conn)["schema_version"] == "1"
    assert "changed_by" not in {r[1] for r in conn.execute("PRAGMA table_info(files)")}
    conn.close()
    up = Upstream(tmp_path, "repo")
    up.write("a.md", "# A\n\nalpha\n")
    up.commit("first", author="Filip")
    up.push()
    config = make_config(tmp_path, f"notes:\n  folder: notes\nrepo:\n  git: {up.url}\n")
    assert run(config) == 0
    conn = open_index(config)
    assert db.get_meta(conn)["schema_version"] == str(len(schema.SCHEMA_STEPS))
    assert conn.execute("SELECT changed_by FROM files WHERE source_id = 'repo'").fetchone()[0] == "Filip"


# ---------------------------------------------------------------- files that cannot be read


def test_a_file_that_cannot_be_read_keeps_the_indexed_rev_so_it_is_read_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    first = up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n", embedding=NO_EMBED)
    assert run(config) == 0
    up.write("b.md", "# B\n\nbeta\n")
    second = up.commit("second")
    up.push()
    import builder.ingest

    real_read = builder.ingest.read_bounded

    def flaky(path: Path, max_bytes: int) -> tuple[bytes, int, str | None]:
        if path.name == "b.md":
            raise OSError(5, "Input/output error", str(path))
        return real_read(path, max_bytes)

    with monkeypatch.context() as patch:
        patch.setattr(builder.ingest, "read_bounded", flaky)
        assert run(config) == 3
    row = source_row(config, "notes")
    assert row.indexed_rev == first  # not moved on: b.md was not indexed
    assert row.last_error == "cannot read 1 changed files (such as b.md); the next build tries again"
    assert "WARN notes: b.md: cannot read (Input/output error); the next build tries again" in log_lines(config)
    assert run(config) == 0  # the remote did not move; the build reads b.md again
    assert source_row(config, "notes").indexed_rev == second and source_row(config, "notes").last_error is None
    assert {r[0] for r in open_index(config).execute("SELECT path FROM files")} == {"a.md", "b.md"}


def test_a_file_name_that_is_not_utf8_is_reported_not_lost_silently(tmp_path: Path) -> None:
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# A\n\nalpha\n")
    (up.work / os.fsdecode(b"caf\xe9.md")).write_bytes(b"# Cafe\n\nlatin-1 name\n")
    rev = up.commit("first")
    up.push()
    config = make_config(tmp_path, f"notes:\n  git: {up.url}\n", embedding=NO_EMBED)
    assert run(config) == 3
    assert ("WARN notes: caf\\xe9.md: the file name is not valid UTF-8, so it cannot be indexed; rename it"
            in log_lines(config))
    assert source_row(config, "notes").indexed_rev == rev
    assert {r[0] for r in open_index(config).execute("SELECT path FROM files")} == {"a.md"}
