"""The SQL of the render's kept note bodies (:mod:`builder.render.bodycache`): one table of marshal
blobs by key in a file of the site's cache, read by each render process on its own connection."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING

from builder.core.index.connection import sqlite_module

if TYPE_CHECKING:
    from sqlite3 import Connection

_READERS: dict[int, tuple[Path, Connection | None]] = {}  # per process (render workers are forked)


def read_body(path: Path, key: str) -> bytes | None:
    """The blob kept under ``key`` in ``path``, or None (none kept, no file, a file not ours)."""
    conn = _reader(path)
    if conn is None:
        return None
    try:
        row = conn.execute("SELECT data FROM bodies WHERE key = :key", {"key": key}).fetchone()
    except sqlite_module().Error:
        return None
    return row[0] if row is not None and isinstance(row[0], bytes) else None


def write_bodies(path: Path, rows: Callable[[], Iterable[tuple[str, bytes]]], keep: set[str] | None) -> bool:
    """Keep the rows ``rows()`` yields (key, blob) in ``path``; with ``keep``, forget every other key.
    A file that is not a database of ours is made anew. False when the file could not be written (it
    is then removed: a cache that cannot be trusted is none)."""
    close_reader()
    return _write(path, rows(), keep) or _write(path, rows(), None)  # (a failed _write removed the file)


def _write(path: Path, rows: Iterable[tuple[str, bytes]], keep: set[str] | None) -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite_module().connect(str(path), isolation_level=None)
        try:
            conn.execute("CREATE TABLE IF NOT EXISTS bodies (key TEXT PRIMARY KEY, data BLOB NOT NULL)")
            conn.execute("BEGIN IMMEDIATE")
            if keep is not None:
                conn.execute("CREATE TEMP TABLE keep (key TEXT PRIMARY KEY)")
                conn.executemany("INSERT OR IGNORE INTO keep (key) VALUES (:key)", ({"key": k} for k in keep))
                conn.execute("DELETE FROM bodies WHERE key NOT IN (SELECT key FROM keep)")
            conn.executemany(dedent("""
                INSERT OR REPLACE INTO bodies (key, data) VALUES (:key, :data)
            """), ({"key": key, "data": data} for key, data in rows))
            conn.execute("COMMIT")
        finally:
            conn.close()
        return True
    except (OSError, sqlite_module().Error):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return False


def close_reader() -> None:
    """Close this process's reading connection (before its file is written)."""
    found = _READERS.pop(os.getpid(), None)
    if found is not None and found[1] is not None:
        found[1].close()


def _reader(path: Path) -> Connection | None:
    """This process's read-only connection to ``path`` (a forked worker opens its own: a connection
    is never used across a fork), or None when there is no such file."""
    found = _READERS.get(os.getpid())
    if found is not None and found[0] == path:
        return found[1]
    close_reader()
    conn = None
    if path.is_file():
        try:
            conn = sqlite_module().connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except (OSError, sqlite_module().Error):
            conn = None
    _READERS[os.getpid()] = (path, conn)
    return conn
