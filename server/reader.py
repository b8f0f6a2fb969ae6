"""Read-only index access for the server: a small pool of connections to the current generation.

The index path is a symlink to the current generation (see builder.indexfile);
a ``--full`` build swaps it and deletes the old file. A request checks a
connection out of the pool (one thread uses it at a time) and back in. When the
file behind the path changes, the next check-out closes the idle connections of
the old generation, and one still in use is closed when it comes back, so no
connection keeps a deleted generation's disk space. Ordinary builds write in
place (WAL): an open read-only connection sees them anyway.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.core import index as db
from builder.core.errors import IndexMissing, IndexUnreadable, UserError

if TYPE_CHECKING:
    from sqlite3 import Connection

Identity = tuple[int, int]  # (device, inode) of the generation file behind the index path

OPEN_ATTEMPTS = 3  # a swap may delete the generation between resolving the path and opening it


class QueryTimeout(UserError):
    """A query ran past the time limit and was interrupted."""


class SqlClock:
    """When a lease's statements are interrupted; time spent in :meth:`excluded` does not count."""

    def __init__(self, limit_s: float) -> None:
        self.deadline = time.monotonic() + limit_s

    @contextmanager
    def excluded(self) -> Iterator[None]:
        """Wait here for something else (the query's vector) without using up the SQL's time."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.deadline += time.monotonic() - started


class Lease(NamedTuple):
    """A connection checked out of the pool, the generation it reads and its SQL time limit."""

    conn: Connection
    identity: Identity
    snapshot: bool = False  # an immutable snapshot (a full disk): used once, never pooled
    clock: SqlClock | None = None  # set while :meth:`IndexReader.connection` lends it


class IndexReader:
    """Lends read-only connections to the current index generation, each to one thread at a time."""

    def __init__(self, index_path: Path, time_limit_s: float = 2.0, max_idle: int = 16) -> None:
        self.index_path = index_path
        self.time_limit_s = time_limit_s
        self.max_idle = max_idle
        self._lock = threading.Lock()
        self._generation: Identity | None = None
        self._idle: list[Connection] = []  # all of self._generation

    def _open(self, *, pooled: bool) -> Lease:
        for _ in range(OPEN_ATTEMPTS):
            real = Path(os.path.realpath(self.index_path))
            conn = None
            try:
                st = real.stat()
                # check_same_thread=False only because check-out and check-in move it between threads
                conn = db.connect(real, readonly=True, check_same_thread=not pooled)
                conn.execute("SELECT count(*) FROM meta")  # reads through the WAL index: creates -shm
            except FileNotFoundError:
                continue
            except db.sqlite_module().Error as exc:
                if conn is not None:
                    conn.close()
                if not real.exists():
                    continue
                if isinstance(exc, db.sqlite_module().OperationalError) and db.snapshot_only(real):
                    # no room for the WAL index on a full disk: the file alone holds the last good index
                    conn = db.connect(real, snapshot=True, check_same_thread=not pooled)
                    return Lease(conn, (st.st_dev, st.st_ino), snapshot=True)
                raise IndexUnreadable(exc) from exc
            return Lease(conn, (st.st_dev, st.st_ino))
        raise IndexMissing(self.index_path)

    def _current(self) -> Identity:
        try:
            st = os.stat(self.index_path)
        except FileNotFoundError:
            raise IndexMissing(self.index_path) from None
        return st.st_dev, st.st_ino

    def open_fresh(self) -> tuple[Identity, Connection]:
        """A new read-only connection of the caller's own (for a background loader) and its identity."""
        lease = self._open(pooled=False)
        return lease.identity, lease.conn

    def _check_out(self) -> Lease:
        identity = self._current()
        with self._lock:
            stale: list[Connection] = []
            if identity != self._generation:
                stale, self._idle, self._generation = self._idle, [], identity
            conn = self._idle.pop() if self._idle else None
        for old in stale:
            old.close()
        return Lease(conn, identity) if conn is not None else self._open(pooled=True)

    def _check_in(self, lease: Lease, reusable: bool) -> None:
        with self._lock:
            keep = (reusable and not lease.snapshot and lease.identity == self._generation
                    and len(self._idle) < self.max_idle)
            if keep:
                self._idle.append(lease.conn)
        if not keep:
            lease.conn.close()

    @contextmanager
    def connection(self) -> Iterator[Lease]:
        """A connection of the current generation, interrupted when a statement runs past the time limit.

        Raises :class:`QueryTimeout` for an interrupted statement and :class:`IndexUnreadable` for any
        other SQLite error (a damaged file), so a request never ends in a traceback.
        """
        clock = SqlClock(self.time_limit_s)
        lease = self._check_out()._replace(clock=clock)
        timed_out = False

        def check() -> int:
            nonlocal timed_out
            timed_out = time.monotonic() > clock.deadline
            return 1 if timed_out else 0

        lease.conn.set_progress_handler(check, 10_000)
        reusable = True
        try:
            yield lease
        except db.sqlite_module().Error as exc:
            if timed_out:
                raise QueryTimeout(f"the query took longer than {self.time_limit_s:g} s") from None
            reusable = False  # whatever went wrong, the next request gets a fresh connection
            raise IndexUnreadable(exc) from exc
        finally:
            lease.conn.set_progress_handler(None, 0)
            self._check_in(lease, reusable)
