"""The sync job queue: a small SQLite file beside the index (``jobs.sqlite``), with all of its SQL.

A job asks for one build of one source (or of every source). It is ``queued``, then ``running``,
then ``succeeded`` or ``failed``; a failed attempt goes back to ``queued`` with a later ``not_before``
until it has been tried :data:`MAX_ATTEMPTS` times. Requests for the same source coalesce into the
job that is still queued for it, so a burst of pushes costs at most the build that is running and
one more. A webhook's delivery id is remembered with the job it made, so a replayed delivery makes
nothing new. Every call opens its own short connection: the web app's threads and the runner share
the file, never a connection. It is its own database, but its SQL lives beside the index's in this
package, the one place that holds SQL (the embedding cache, :mod:`builder.embed_cache`, is the one
older exception); the runner that executes the jobs is :mod:`builder.job_runner`.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING, Any

from builder.core.errors import JobsUnavailable
from builder.core.index.connection import connect, sqlite_module, transaction

if TYPE_CHECKING:
    from sqlite3 import Connection, Row

MAX_ATTEMPTS = 4  # the first try and at most 3 retries
KEEP_S = 30 * 24 * 3600  # finished jobs and delivery ids are forgotten after 30 days
STATES = ("queued", "running", "succeeded", "failed")
SCHEMA = dedent("""
    CREATE TABLE IF NOT EXISTS jobs (
      id TEXT PRIMARY KEY,
      source TEXT,                      -- NULL: every source
      reason TEXT NOT NULL,             -- what asked for it: api, watch, webhook <provider>
      state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed')),
      phase TEXT NOT NULL,
      attempts INTEGER NOT NULL DEFAULT 0,
      requests INTEGER NOT NULL DEFAULT 1,  -- how many requests this job answers (coalesced)
      created_at REAL NOT NULL,
      not_before REAL NOT NULL,         -- a retry waits until then
      started_at REAL,
      finished_at REAL,
      notes INTEGER NOT NULL DEFAULT 0,
      chunks INTEGER NOT NULL DEFAULT 0,
      removed INTEGER NOT NULL DEFAULT 0,
      error TEXT
    );
    CREATE INDEX IF NOT EXISTS jobs_by_state ON jobs (state, not_before);
    CREATE TABLE IF NOT EXISTS deliveries (
      delivery TEXT PRIMARY KEY,        -- <provider>:<delivery id>
      source TEXT NOT NULL,
      job TEXT NOT NULL,
      received_at REAL NOT NULL
    ) WITHOUT ROWID;
""")


@dataclass(frozen=True)
class Job:
    """One job as the runner needs it."""

    id: str
    source: str | None
    attempts: int


@dataclass(frozen=True)
class Enqueued:
    """What a request for work got: its job, whether that job is new, whether the request was a replay."""

    job: dict[str, Any]
    new: bool
    duplicate: bool = False


def _iso(moment: float | None) -> str | None:
    if moment is None:
        return None
    return datetime.fromtimestamp(moment, tz=UTC).isoformat(timespec="seconds")


def job_view(row: Row, now: float | None = None) -> dict[str, Any]:
    """A job as the sync API shows it (JSON-ready)."""
    now = time.time() if now is None else now
    started, finished = row["started_at"], row["finished_at"]
    duration = None if started is None else round((finished if finished is not None else now) - started, 3)
    return {
        "id": row["id"], "source": row["source"], "reason": row["reason"], "state": row["state"],
        "phase": row["phase"], "attempts": row["attempts"], "requests": row["requests"],
        "counts": {"notes": row["notes"], "chunks": row["chunks"], "removed": row["removed"]},
        "created_at": _iso(row["created_at"]), "started_at": _iso(started), "finished_at": _iso(finished),
        "duration_s": duration, "error": row["error"],
        "retry_at": _iso(row["not_before"]) if row["state"] == "queued" and row["attempts"] else None,
    }


def _job_row(conn: Connection, job_id: str) -> Row | None:
    return conn.execute("SELECT * FROM jobs WHERE id = :id", {"id": job_id}).fetchone()


class JobQueue:
    """The queue file at ``path``; safe to use from several threads and processes at once."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextmanager
    def _conn(self) -> Iterator[Connection]:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = connect(self.path, vec=False)
        except (OSError, sqlite_module().Error) as exc:
            raise JobsUnavailable(self.path, exc) from None
        try:
            if conn.execute("PRAGMA user_version").fetchone()[0] < 1:
                conn.executescript(SCHEMA + "PRAGMA user_version = 1;")
            yield conn
        except sqlite_module().Error as exc:
            raise JobsUnavailable(self.path, exc) from None
        finally:
            conn.close()

    def exists(self) -> bool:
        return self.path.exists()

    # ------------------------------------------------------------ asking for work

    def enqueue(self, source: str | None, reason: str, delivery: str | None = None) -> Enqueued:
        """Queue a build of ``source`` (None: every source), or join the job still queued for it.
        ``delivery`` (``provider:id``) seen before: nothing is queued, the answer names its job."""
        now = time.time()
        with self._conn() as conn, transaction(conn):
            if delivery is not None:
                seen = conn.execute("SELECT job FROM deliveries WHERE delivery = :delivery",
                                    {"delivery": delivery}).fetchone()
                if seen is not None:
                    row = _job_row(conn, seen["job"])
                    view = job_view(row, now) if row is not None else {"id": seen["job"], "state": "forgotten"}
                    return Enqueued(view, new=False, duplicate=True)
            # a job for every source covers one source's request; one source's job never covers all
            row = conn.execute(dedent("""
                SELECT * FROM jobs WHERE state = 'queued' AND (source IS :source OR source IS NULL)
                ORDER BY source IS NULL, created_at LIMIT 1
            """), {"source": source}).fetchone()
            if row is not None:
                conn.execute("UPDATE jobs SET requests = requests + 1, not_before = min(not_before, :now) "
                             "WHERE id = :id", {"id": row["id"], "now": now})
                job_id, new = row["id"], False
            else:
                job_id, new = secrets.token_hex(6), True
                conn.execute(dedent("""
                    INSERT INTO jobs (id, source, reason, state, phase, created_at, not_before)
                    VALUES (:id, :source, :reason, 'queued', 'queued', :now, :now)
                """), {"id": job_id, "source": source, "reason": reason, "now": now})
            if delivery is not None:
                conn.execute("INSERT INTO deliveries (delivery, source, job, received_at) "
                             "VALUES (:delivery, :source, :job, :now)",
                             {"delivery": delivery, "source": source or "", "job": job_id, "now": now})
            row = _job_row(conn, job_id)
            assert row is not None  # inserted above, in this transaction
            view = job_view(row, now)
        return Enqueued(view, new=new)

    # ------------------------------------------------------------ reading

    def job(self, job_id: str) -> dict[str, Any] | None:
        """One job, or None when there is no such job (or it was forgotten)."""
        if not self.exists():
            return None
        with self._conn() as conn:
            row = _job_row(conn, job_id)
        return job_view(row) if row is not None else None

    def status(self, recent: int = 20) -> dict[str, Any]:
        """How many jobs are in each state, and the ``recent`` latest jobs (newest first)."""
        counts = dict.fromkeys(STATES, 0)
        if not self.exists():
            return {"counts": counts, "jobs": []}
        with self._conn() as conn:
            for row in conn.execute("SELECT state, count(*) AS n FROM jobs GROUP BY state"):
                counts[row["state"]] = row["n"]
            rows = conn.execute("SELECT * FROM jobs ORDER BY created_at DESC, rowid DESC LIMIT :recent",
                                {"recent": recent}).fetchall()
        now = time.time()
        return {"counts": counts, "jobs": [job_view(row, now) for row in rows]}

    # ------------------------------------------------------------ the runner's side

    def claim(self) -> Job | None:
        """The next job that is due, now marked running (its attempt counted); None when none is due."""
        if not self.exists():
            return None
        now = time.time()
        with self._conn() as conn, transaction(conn):
            row = conn.execute("SELECT * FROM jobs WHERE state = 'queued' AND not_before <= :now "
                               "ORDER BY not_before, created_at LIMIT 1", {"now": now}).fetchone()
            if row is None:
                return None
            conn.execute(dedent("""
                UPDATE jobs SET state = 'running', phase = 'waiting', attempts = attempts + 1, started_at = :now,
                                finished_at = NULL, notes = 0, chunks = 0, removed = 0
                WHERE id = :id
            """), {"now": now, "id": row["id"]})
        return Job(row["id"], row["source"], row["attempts"] + 1)

    def progress(self, job_id: str, phase: str, notes: int, chunks: int, removed: int) -> None:
        """Where a running job is."""
        with self._conn() as conn:
            conn.execute("UPDATE jobs SET phase = :phase, notes = :notes, chunks = :chunks, removed = :removed "
                         "WHERE id = :id AND state = 'running'",
                         {"phase": phase, "notes": notes, "chunks": chunks, "removed": removed, "id": job_id})

    def finish(self, job_id: str, error: str | None, retry_in: float | None = None) -> str:
        """End an attempt: succeeded (``error`` None), queued again after ``retry_in`` seconds, or failed
        for good (no ``retry_in``, or its last attempt). Returns the job's new state."""
        now = time.time()
        with self._conn() as conn, transaction(conn):
            row = _job_row(conn, job_id)
            if row is None:
                return "forgotten"
            if error is None:
                state = "succeeded"
                conn.execute("UPDATE jobs SET state = :state, phase = 'done', finished_at = :now, error = NULL "
                             "WHERE id = :id", {"state": state, "now": now, "id": job_id})
            elif retry_in is not None and row["attempts"] < MAX_ATTEMPTS:
                state = "queued"
                conn.execute("UPDATE jobs SET state = :state, phase = 'retry', finished_at = :now, error = :error, "
                             "not_before = :not_before WHERE id = :id",
                             {"state": state, "now": now, "error": error, "not_before": now + retry_in, "id": job_id})
            else:
                state = "failed"
                conn.execute("UPDATE jobs SET state = :state, finished_at = :now, error = :error WHERE id = :id",
                             {"state": state, "now": now, "error": error, "id": job_id})
            self._forget_old(conn, now)
        return state

    def recover(self, reason: str) -> int:
        """Jobs left ``running`` by a process that died: queued again (due now), or failed when that was
        their last attempt. Only the runner that holds the runner lock may call this. Returns how many."""
        if not self.exists():
            return 0
        now = time.time()
        with self._conn() as conn, transaction(conn):
            cursor = conn.execute(dedent("""
                UPDATE jobs SET
                  state = CASE WHEN attempts >= :max THEN 'failed' ELSE 'queued' END,
                  phase = CASE WHEN attempts >= :max THEN phase ELSE 'retry' END,
                  finished_at = :now, not_before = :now, error = :reason
                WHERE state = 'running'
            """), {"max": MAX_ATTEMPTS, "now": now, "reason": reason})
            return cursor.rowcount

    @staticmethod
    def _forget_old(conn: Connection, now: float) -> None:
        before = {"before": now - KEEP_S}
        conn.execute("DELETE FROM jobs WHERE state IN ('succeeded', 'failed') AND finished_at < :before", before)
        conn.execute("DELETE FROM deliveries WHERE received_at < :before", before)
