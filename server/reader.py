"""Read-only index access for the server: one connection per thread, reopened after a swap.

The index path is a symlink to the current generation (see builder.indexfile);
a ``--full`` build swaps it. Each request checks the inode behind the path and
reopens when it changed, so a new index is served without a restart. Ordinary
builds write in place (WAL): an open read-only connection sees them anyway.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core import index as db
from builder.core.errors import IndexMissing

if TYPE_CHECKING:
    from sqlite3 import Connection

Identity = tuple[int, int]  # (device, inode) of the generation file behind the index path


class QueryTimeout(Exception):
    """A query ran past the time limit and was interrupted."""


class IndexReader:
    """Hands each thread its own read-only connection to the current index generation."""

    def __init__(self, index_path: Path, time_limit_s: float = 2.0) -> None:
        self.index_path = index_path
        self.time_limit_s = time_limit_s
        self._local = threading.local()

    def _identity(self) -> Identity | None:
        try:
            st = os.stat(self.index_path)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino

    def _connection(self) -> Connection:
        identity = self._identity()
        if identity is None:
            raise IndexMissing(self.index_path)
        local = self._local
        if getattr(local, "identity", None) != identity:
            if getattr(local, "conn", None) is not None:
                local.conn.close()
            local.conn = db.open_index(self.index_path)
            local.identity = identity
        return local.conn

    def open_fresh(self) -> tuple[Identity, Connection]:
        """A new read-only connection of the caller's own (for a background loader) and its identity."""
        identity = self._identity()
        if identity is None:
            raise IndexMissing(self.index_path)
        return identity, db.open_index(self.index_path)

    def thread_identity(self) -> Identity | None:
        """The (device, inode) of the index file this thread's connection reads."""
        return getattr(self._local, "identity", None)

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """This thread's connection, interrupted when a statement runs past the time limit."""
        conn = self._connection()
        deadline = time.monotonic() + self.time_limit_s
        timed_out = False

        def check() -> int:
            nonlocal timed_out
            timed_out = time.monotonic() > deadline
            return 1 if timed_out else 0

        conn.set_progress_handler(check, 10_000)
        try:
            yield conn
        except db.sqlite_module().OperationalError as exc:
            if timed_out:
                raise QueryTimeout(f"the query took longer than {self.time_limit_s:g} s") from None
            raise exc
        finally:
            conn.set_progress_handler(None, 0)
