"""Helpers of the git tests: a user's repository pushed to a bare one (the remote a source indexes), a
portal over git sources, and what its index and log hold afterwards.

Git runs without the user's or the system's config and with a fixed identity: conftest's autouse
``isolated_git`` sets that for every test. ``git daemon`` is conftest's ``git_daemon`` fixture.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.conftest import DIMS, HashEmbedder, ollama_yaml, write_config

EMBED = ollama_yaml("http://127.0.0.1:9", DIMS)  # never contacted: the tests pass an embedder


def git(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr}"
    return proc.stdout


class Upstream:
    """The user's side: a bare repository (the remote we index) and a working copy that pushes to it."""

    def __init__(self, tmp_path: Path, name: str, *, create: bool = True) -> None:
        self.name = name
        self.bare = tmp_path / "served" / f"{name}.git"
        self.work = tmp_path / "work" / name
        if create:
            git("init", "--quiet", "--bare", "-b", "main", str(self.bare))
            git("init", "--quiet", "-b", "main", str(self.work))

    @classmethod
    def existing(cls, tmp_path: Path, name: str) -> Upstream:
        """The repositories an ``Upstream(tmp_path, name)`` made, e.g. in a copied portal (conftest.copy_portal)."""
        upstream = cls(tmp_path, name, create=False)
        assert (upstream.bare / "HEAD").is_file() and (upstream.work / ".git").is_dir(), upstream.work
        return upstream

    @property
    def url(self) -> str:
        return f"file://{self.bare}"

    def write(self, rel: str, text: str) -> None:
        path = self.work / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")

    def move(self, old: str, new: str) -> None:
        (self.work / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new, cwd=self.work)

    def remove(self, rel: str) -> None:
        git("rm", "--quiet", rel, cwd=self.work)

    def commit(self, message: str, author: str = "Alice", when: str = "2024-01-01T10:00:00+00:00") -> str:
        git("add", "--all", cwd=self.work)
        git("commit", "--quiet", "-m", message, cwd=self.work,
            env={"GIT_AUTHOR_NAME": author, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
        return self.head()

    def push(self, branch: str = "main", force: bool = False) -> None:
        git("push", "--quiet", *(["--force"] if force else []), str(self.bare), f"{branch}:{branch}",
            cwd=self.work)

    def head(self) -> str:
        return git("rev-parse", "HEAD", cwd=self.work).strip()

    def notes(self, rev: str = "HEAD") -> dict[str, bytes]:
        """Every markdown file of ``rev`` with its bytes: what the index must hold exactly."""
        names = git("ls-tree", "-r", "-z", "--name-only", rev, cwd=self.work).split("\0")
        return {name: subprocess.run(["git", "show", f"{rev}:{name}"], cwd=self.work, capture_output=True,
                                     check=True).stdout
                for name in names if name.endswith(".md")}


@dataclass
class Daemon:
    """``git daemon`` serving a folder of bare repositories on 127.0.0.1 (conftest's ``git_daemon``)."""

    url: str
    log: Path

    def upload_requests(self) -> int:
        return self.log.read_text(encoding="utf-8", errors="replace").count("Request upload-pack")


def make_config(tmp_path: Path, sources: str, *, timeout: float | None = None, embedding: str = EMBED) -> Config:
    body = (f"index: data/index.sqlite\n{embedding}"
            + (f"git:\n  timeout: {timeout}\n" if timeout is not None else "")
            + "sources:\n" + textwrap.indent(textwrap.dedent(sources).strip("\n"), "  ") + "\n")
    return load_config(write_config(tmp_path, body))


def run(config: Config, **kwargs: Any) -> int:
    return build(config, embedder_factory=HashEmbedder, log=SyncLog(config.log_path, echo_info=False), **kwargs)


def open_index(config: Config) -> Any:
    return db.connect(indexfile.resolve(config.index))


def log_lines(config: Config) -> list[str]:
    """The log without timestamps."""
    if not config.log_path.exists():
        return []
    return [line.split(" ", 1)[1] for line in config.log_path.read_text(encoding="utf-8").splitlines()]


def source_row(config: Config, source_id: str) -> db.SourceRow:
    return db.get_sources(open_index(config))[source_id]


def assert_index_is_exactly(conn: Any, source_id: str, notes: dict[str, bytes],
                            gone_words: tuple[str, ...] = ()) -> None:
    """The source's files are the notes (same bytes), every note has chunks, nothing is orphaned."""
    files = {r["path"]: r["sha256"] for r in conn.execute(
        "SELECT path, sha256 FROM files WHERE source_id = :s", {"s": source_id})}
    assert files == {path: hashlib.sha256(data).hexdigest() for path, data in notes.items()}
    chunk_paths = {r[0] for r in conn.execute("SELECT DISTINCT path FROM chunks WHERE source_id = :s",
                                              {"s": source_id})}
    assert chunk_paths == set(notes)
    chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
    assert {r[0] for r in conn.execute("SELECT rowid FROM vec_chunks")} == chunk_ids  # no orphan vectors
    assert db.counts(conn)["chunks_fts"] == len(chunk_ids)
    for word in gone_words:  # a stale FTS entry would still match the words of a deleted note
        assert conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH :w", {"w": word}).fetchone()[0] == 0
