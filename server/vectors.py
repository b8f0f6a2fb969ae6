"""The server's in-memory copy of a large index's vectors, for a faster exact KNN scan.

sqlite-vec's ``vec0`` scans every vector from the database pages on each query:
fine for a personal corpus (about 10 ms at 10,000 chunks) but 70–110 ms at
100,000 on two cores. Above ``MIN_VECTORS`` the long-running server keeps one
float32 matrix per index generation and scans it with numpy (about 17 ms at
100,000). SQLite stays the only source of truth: the matrix is reloaded, in the
background, whenever ``meta.vectors_version`` moves (every build that stores
or deletes vectors bumps it) or a ``--full`` build swaps in a new file. Until a
reload is done, queries use the previous matrix (missing chunks are dropped by
the caller) or ``vec0``. A load that fails is remembered with its reason (see
``/api/health``) and tried again only after ``RETRY_AFTER_S`` or when the index
changes; ``vec0`` answers meanwhile. The CLI never uses it: one query does not
repay a load.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core.clock import now_iso
from server.reader import Identity

if TYPE_CHECKING:
    from sqlite3 import Connection

    import numpy as np

SnapshotKey = tuple[Identity, str]  # (index file identity, vectors_version)

MIN_VECTORS = 20_000


@dataclass(frozen=True)
class _Snapshot:
    key: SnapshotKey
    ids: np.ndarray  # int64, one chunk id per row
    matrix: np.ndarray  # float32, one L2-normalized row per id


@dataclass(frozen=True)
class _Failure:
    key: SnapshotKey
    reason: str
    at: float  # time.monotonic()
    at_iso: str


def _matrix(rows: Iterable[tuple[int, bytes]], count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ids and the float32 matrix, filled row by row: never a second copy of all vectors in memory
    (joining the rows' bytes first would double the peak while loading)."""
    import numpy as np

    ids = np.empty(count, dtype=np.int64)
    matrix: np.ndarray | None = None
    n = 0
    for chunk_id, blob in rows:
        vector = np.frombuffer(blob, dtype=np.float32)
        if matrix is None:
            matrix = np.empty((count, vector.shape[0]), dtype=np.float32)
        if n == count:
            break
        ids[n], matrix[n] = chunk_id, vector
        n += 1
    if matrix is None:
        return ids[:0], np.empty((0, 0), dtype=np.float32)
    return ids[:n], matrix[:n]


class VectorMemory:
    """Thread-safe holder of the current snapshot; ``nearest`` returns None when vec0 should answer."""

    RETRY_AFTER_S = 300.0

    def __init__(self, open_connection: Callable[[], tuple[Identity, Connection]],
                 min_vectors: int = MIN_VECTORS) -> None:
        self._open = open_connection  # () -> (identity, read-only connection) for a loader thread
        self.min_vectors = min_vectors
        self._snapshot: _Snapshot | None = None
        self._loading = False
        self._lock = threading.Lock()
        self._too_small: SnapshotKey | None = None
        self._failure: _Failure | None = None

    def loaded(self) -> SnapshotKey | None:
        """(index file identity, vectors_version) of the matrix in memory, or None."""
        snapshot = self._snapshot
        return snapshot.key if snapshot is not None else None

    def state(self) -> dict[str, Any]:
        """What ``/api/health`` shows: whether a matrix is in memory and the last failed load."""
        snapshot, failure = self._snapshot, self._failure
        return {"loaded": snapshot is not None, "vectors": int(snapshot.ids.shape[0]) if snapshot else 0,
                "error": failure.reason if failure else None, "failed_at": failure.at_iso if failure else None}

    def _should_load(self, key: SnapshotKey) -> bool:
        failure = self._failure
        recently_failed = (failure is not None and failure.key == key
                           and time.monotonic() - failure.at < self.RETRY_AFTER_S)
        return key != self._too_small and not recently_failed

    def nearest(self, conn: Connection, identity: Identity | None, vector: bytes,
                k: int) -> list[tuple[int, float]] | None:
        """Up to ``k`` (chunk id, cosine similarity) nearest to ``vector``, or None (use vec0 instead)."""
        if identity is None:
            return None
        key = (identity, db.vectors_version(conn))
        snapshot = self._snapshot
        if snapshot is None or snapshot.key != key:
            if self._should_load(key):
                self._start_load(key)
            if snapshot is None or snapshot.key[0] != identity:
                return None
        import numpy as np

        query = np.frombuffer(vector, dtype=np.float32)
        if snapshot.matrix.shape[0] == 0 or query.shape[0] != snapshot.matrix.shape[1]:
            return None
        scores = snapshot.matrix @ query
        k = min(k, scores.shape[0])
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(int(i), float(s)) for i, s in zip(snapshot.ids[top], scores[top])]

    def _start_load(self, key: SnapshotKey) -> None:
        with self._lock:
            if self._loading:
                return
            self._loading = True
        threading.Thread(target=self._load, args=(key,), daemon=True, name="vector-memory").start()

    def _load(self, key: SnapshotKey) -> None:

        try:
            identity, conn = self._open()
            try:
                if identity != key[0]:
                    return
                version = db.vectors_version(conn)
                if db.count_vectors(conn) < self.min_vectors:
                    self._too_small, self._snapshot, self._failure = (identity, version), None, None
                    return
                ids, matrix = _matrix(db.iter_vectors(conn), db.count_vectors(conn))
            finally:
                conn.close()
            self._snapshot, self._failure = _Snapshot((identity, version), ids, matrix), None
        except Exception as exc:  # vec0 keeps answering; retried after the back-off or a change
            self._snapshot = None
            self._failure = _Failure(key, f"{type(exc).__name__}: {exc}", time.monotonic(), now_iso())
        finally:
            with self._lock:
                self._loading = False
