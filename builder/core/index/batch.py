"""Writing many notes in few transactions: :class:`WriteBatch`, and the words of new chunks put into
``chunks_fts`` by the writer (no insert trigger since schema step 6), now or with the batch's next
commit."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from builder.core.index.connection import dedent, transaction

if TYPE_CHECKING:
    from sqlite3 import Connection



class WriteBatch:
    """Many notes written in few transactions: each :func:`.connection.transaction` inside the batch
    is a step, and the batch commits at the first step boundary after ``seconds``, its new chunks'
    words put into ``chunks_fts`` by one statement just before (FTS5 writes its pending words out at the start
    of every statement that may change it, so a trigger per inserted chunk made a segment per note:
    ~40 % of a first build's writing time at 10,000 notes).

    A savepoint per step would cost the same, so a step that fails fails the batch: everything
    since its last commit is rolled back, even if the caller goes on. Either way no step is ever
    half committed, and readers see the notes a commit at a time."""

    def __init__(self, conn: Connection, seconds: float = 0.5) -> None:
        self.conn = conn
        self.seconds = seconds
        self.unindexed: set[int] = set()  # chunks stored whose words are not in chunks_fts yet
        self._since = 0.0
        self._failed: BaseException | None = None

    def __enter__(self) -> WriteBatch:
        self.conn.execute("BEGIN IMMEDIATE")
        self._since = time.monotonic()
        self.conn.batch = self  # type: ignore[attr-defined]
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self.conn.batch = None  # type: ignore[attr-defined]
        try:
            if kind is None and self._failed is None:
                self.index_words()
                self.conn.execute("COMMIT")
        finally:
            if self.conn.in_transaction:  # failed, or the last commit did (a full disk): nothing stays half
                self.conn.execute("ROLLBACK")

    @contextmanager
    def step(self) -> Iterator[None]:
        """One step; the batch commits after it when its time is up."""
        if self._failed is not None:
            raise RuntimeError("an earlier step of this write batch failed; its writes are rolled back") \
                from self._failed
        try:
            yield
        except BaseException as exc:
            self._failed = exc
            raise
        if time.monotonic() - self._since >= self.seconds:
            self.index_words()
            self.conn.execute("COMMIT")
            self.conn.execute("BEGIN IMMEDIATE")
            self._since = time.monotonic()

    def index_words(self, before_deleting: Iterable[int] | None = None) -> None:
        """Put the stored chunks' words into ``chunks_fts``; with ``before_deleting``, only when one
        of those chunks is among them (FTS5 must hold the words a delete trigger takes out)."""
        if not self.unindexed or before_deleting is not None and self.unindexed.isdisjoint(before_deleting):
            return
        self.conn.execute(dedent("""
            INSERT INTO chunks_fts (rowid, breadcrumb, text, stems)
            SELECT id, breadcrumb, text, stems FROM chunks WHERE id IN (SELECT value FROM json_each(:ids))
        """), {"ids": json.dumps(sorted(self.unindexed))})
        self.unindexed.clear()


def index_words(conn: Connection, key: dict[str, str]) -> None:
    """The words of one note's new chunks into ``chunks_fts``: now, or with the batch's next commit."""
    batch: WriteBatch | None = getattr(conn, "batch", None)
    if batch is None:
        conn.execute(dedent("""
            INSERT INTO chunks_fts (rowid, breadcrumb, text, stems)
            SELECT id, breadcrumb, text, stems FROM chunks WHERE source_id = :source_id AND path = :path
        """), key)
        return
    batch.unindexed.update(row[0] for row in conn.execute(
        "SELECT id FROM chunks WHERE source_id = :source_id AND path = :path", key))


def before_deleting(conn: Connection, where: str, params: dict[str, Any]) -> None:
    """Before chunks selected by ``where`` (a fixed condition) are deleted: their words must be in
    ``chunks_fts`` for the delete trigger to take them out."""
    batch: WriteBatch | None = getattr(conn, "batch", None)
    if batch is not None and batch.unindexed:
        batch.index_words(row[0] for row in conn.execute(f"SELECT id FROM chunks WHERE {where}", params))


def merge_words(conn: Connection) -> None:
    """Merge ``chunks_fts`` into one segment (FTS5's ``optimize``). Each commit adds a segment and
    FTS5's own merging leaves several; a query looks each word up in every one. After a first build
    of 10,000 notes (9 segments) BM25 queries took ~10 % less time once merged (docs/BENCHMARKS.md);
    the merge rewrites the whole full-text index (0.7–1.1 s at 45,000 chunks), so only builds that
    wrote most of the index run it."""
    with transaction(conn):
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('optimize')")


def word_segments(conn: Connection) -> int:
    """How many segments ``chunks_fts`` is made of (each has at least one row in its ``_idx`` table)."""
    return conn.execute("SELECT count(DISTINCT segid) FROM chunks_fts_idx").fetchone()[0]
