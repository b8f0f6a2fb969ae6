"""The server's compact in-memory copy of an index's vectors, for a fast exact KNN scan.

sqlite-vec's ``vec0`` scans every vector from the database pages on each query. From
``MIN_VECTORS`` on (below it ``vec0`` is as fast as the copy's own re-scoring) the long-running
server keeps each vector in one byte per dimension (each dimension quantized to 256 steps over its
own range, a quarter of float32's bytes), scans that with numpy, and re-scores its best candidates
exactly from ``chunk_vectors`` by id (:func:`rescored`). Invariant: the answer is the exact nearest
``k``, never the quantized order's. What it buys, and the recall of the quantized order's best
candidates, are in docs/BENCHMARKS.md ("Vectors in memory", "From 2,000 vectors on").

SQLite stays the only source of truth: the copy is reloaded, in the background,
whenever ``meta.vectors_version`` moves (every build that stores or deletes
vectors bumps it) or a ``--full`` build swaps in a new file. Until a reload is
done, queries use the previous copy (chunks gone since are dropped by the
re-scoring) or ``vec0``. A load that fails is remembered with its reason (see
``/api/health``) and tried again only after ``RETRY_AFTER_S`` or when the index
changes; ``vec0`` answers meanwhile, as it does for an index from before
``chunk_vectors`` until the next build adds it. The CLI never uses it: one query
does not repay a load.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core.clock import now_iso
from server.reader import Identity

if TYPE_CHECKING:
    from sqlite3 import Connection

    import numpy as np

    from server.search import VectorLater

SnapshotKey = tuple[Identity, str]  # (index file identity, vectors_version)

MIN_VECTORS = 2_000
SCAN_ROWS = 1024  # rows widened to float32 at a time: 1.5 MB per query thread at 384 dimensions
SCAN_THREADS = 4  # scans waiting for their query's vector hold one each (the embedder is one thread)
SCAN_PARTS = min(os.cpu_count() or 1, 4)  # threads one scan runs on


def rescored(k: int) -> int:
    """How many of the quantized scan's best are re-scored exactly to find the nearest ``k``."""
    return min(4 * k, k + 200)


@dataclass(frozen=True)
class _Snapshot:
    key: SnapshotKey
    ids: np.ndarray  # int64, one chunk id per row
    codes: np.ndarray  # uint8, one row per id: round((vector - low) / step), each dimension over its range
    step: np.ndarray  # float32, one per dimension (the vectors' ``low`` is a constant per query: not kept)

    def candidates(self, query: np.ndarray, count: int, helpers: ThreadPoolExecutor | None = None,
                   parts: int = 1) -> np.ndarray:
        """The ids of the ``count`` rows whose quantized vectors score best against ``query``."""
        import numpy as np

        scores = self.scores(query, helpers, parts)
        count = min(count, scores.shape[0])
        return self.ids[np.argpartition(-scores, count - 1)[:count]]

    def scores(self, query: np.ndarray, helpers: ThreadPoolExecutor | None = None, parts: int = 1) -> np.ndarray:
        """Every row's quantized vector times ``query`` (up to a constant). With ``helpers``, their
        threads score ``parts - 1`` parts of the rows while this one scores the first (numpy lets go
        of the GIL; what that buys: docs/BENCHMARKS.md, "the vectors' scan in parts")."""
        import numpy as np

        weights = (query * self.step).astype(np.float32)
        rows = self.codes.shape[0]
        scores = np.empty(rows, dtype=np.float32)
        parts = max(1, min(parts if helpers is not None else 1, rows // SCAN_ROWS))
        per_part = max(1, -(-rows // parts // SCAN_ROWS)) * SCAN_ROWS  # whole blocks: the products of one scan
        starts = list(range(0, rows, per_part))
        others = [helpers.submit(self._score, weights, scores, start, start + per_part)
                  for start in starts[1:]] if helpers is not None else []
        self._score(weights, scores, 0, per_part)
        for other in others:
            other.result()
        return scores

    def _score(self, weights: np.ndarray, scores: np.ndarray, start: int, stop: int) -> None:
        """``scores[start:stop]``: the rows' quantized vectors times ``weights``, a block at a time."""
        import numpy as np

        stop = min(stop, self.codes.shape[0])
        wide = np.empty((min(SCAN_ROWS, max(stop - start, 0)), self.codes.shape[1]), dtype=np.float32)
        for begin in range(start, stop, SCAN_ROWS):
            block = self.codes[begin:min(begin + SCAN_ROWS, stop)]
            np.copyto(wide[:block.shape[0]], block, casting="unsafe")
            np.matmul(wide[:block.shape[0]], weights, out=scores[begin:begin + block.shape[0]])


@dataclass(frozen=True)
class Scan:
    """What :meth:`VectorMemory.scan_later` found: the ids of the best ``count`` rows of ``snapshot``
    for ``vector`` (the candidates :meth:`VectorMemory.nearest` re-scores)."""

    snapshot: _Snapshot
    vector: bytes
    count: int
    ids: np.ndarray


@dataclass(frozen=True)
class _Failure:
    key: SnapshotKey
    reason: str
    at: float  # time.monotonic()
    at_iso: str


def _quantized(read: Callable[[], Iterable[tuple[int, bytes]]],
               count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ids, codes and steps of the vectors ``read()`` yields (called twice: the ranges first, then
    the codes, so no float32 copy of all vectors is ever in memory)."""
    import numpy as np

    low = high = None
    n = 0
    for _, blob in read():
        vector = np.frombuffer(blob, dtype=np.float32)
        low = vector.copy() if low is None else np.minimum(low, vector, out=low)
        high = vector.copy() if high is None else np.maximum(high, vector, out=high)
        n += 1
    if low is None or high is None:
        return np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.uint8), np.empty(0, dtype=np.float32)
    step = np.where(high > low, (high - low) / 255, 1.0).astype(np.float32)
    n = min(n, count)
    ids = np.empty(n, dtype=np.int64)
    codes = np.empty((n, low.shape[0]), dtype=np.uint8)
    row = 0
    for chunk_id, blob in read():
        if row == n:
            break
        vector = np.frombuffer(blob, dtype=np.float32)
        ids[row] = chunk_id
        codes[row] = np.clip(np.rint((vector - low) / step), 0, 255)
        row += 1
    return ids[:row], codes[:row], step


class VectorMemory:
    """Thread-safe holder of the current snapshot; ``nearest`` returns None when vec0 should answer."""

    RETRY_AFTER_S = 300.0
    # A backfill stores vectors a batch at a time, every few seconds: while chunks still wait, the copy of
    # the same file is made again at most this often (each load reads every vector), the newest vectors
    # waiting for it (their chunks are found by words until then); a build that leaves none waiting is
    # followed at once.
    RELOAD_AFTER_S = 20.0

    def __init__(self, open_connection: Callable[[], tuple[Identity, Connection]],
                 min_vectors: int = MIN_VECTORS) -> None:
        self._open = open_connection  # () -> (identity, read-only connection) for a loader thread
        self.min_vectors = min_vectors
        self._snapshot: _Snapshot | None = None
        self._loaded_at = 0.0  # time.monotonic() of the last load that made a copy
        self._loading = False
        self._lock = threading.Lock()
        self._vec0_answers: SnapshotKey | None = None  # too few vectors, or no chunk_vectors yet
        self._failure: _Failure | None = None
        self._scans: ThreadPoolExecutor | None = None
        self._parts: ThreadPoolExecutor | None = None

    def loaded(self) -> SnapshotKey | None:
        """(index file identity, vectors_version) of the copy in memory, or None."""
        snapshot = self._snapshot
        return snapshot.key if snapshot is not None else None

    def state(self) -> dict[str, Any]:
        """What ``/api/health`` shows: whether a copy is in memory and the last failed load."""
        snapshot, failure = self._snapshot, self._failure
        return {"loaded": snapshot is not None, "vectors": int(snapshot.ids.shape[0]) if snapshot else 0,
                "error": failure.reason if failure else None, "failed_at": failure.at_iso if failure else None}

    def _should_load(self, key: SnapshotKey) -> bool:
        failure = self._failure
        recently_failed = (failure is not None and failure.key == key
                           and time.monotonic() - failure.at < self.RETRY_AFTER_S)
        return key != self._vec0_answers and not recently_failed

    def snapshot(self, conn: Connection, identity: Identity | None) -> _Snapshot | None:
        """The copy that answers for the index behind ``conn`` (an older one of the same file while a
        newer loads), or None: ``vec0`` answers. A missing or stale copy starts a load."""
        if identity is None:
            return None
        key = (identity, db.vectors_version(conn))
        snapshot = self._snapshot
        if snapshot is None or snapshot.key != key:
            recent = (snapshot is not None and snapshot.key[0] == identity
                      and time.monotonic() - self._loaded_at < self.RELOAD_AFTER_S
                      and db.count_pending(conn) > 0)  # a backfill under way; its last batch reloads at once
            if not recent and self._should_load(key):
                self._start_load(key)
            if snapshot is None or snapshot.key[0] != identity:
                return None
        return snapshot

    def nearest(self, conn: Connection, identity: Identity | None, vector: bytes, k: int,
                scanned: Scan | None = None) -> list[tuple[int, float]] | None:
        """Up to ``k`` (chunk id, cosine similarity) nearest to ``vector``, exactly, or None (use vec0
        instead). ``scanned``: this vector's candidates, found meanwhile by :meth:`scan_later`."""
        snapshot = self.snapshot(conn, identity)
        if snapshot is None:
            return None
        import numpy as np

        query = np.frombuffer(vector, dtype=np.float32)
        if snapshot.codes.shape[0] == 0 or query.shape[0] != snapshot.codes.shape[1]:
            return None
        if scanned is not None and scanned.snapshot is snapshot and scanned.vector == vector \
                and scanned.count == rescored(k):
            candidates = scanned.ids
        else:
            candidates = snapshot.candidates(query, rescored(k), self._helpers(), SCAN_PARTS)
        found = db.vectors_of(conn, candidates.tolist())
        if not found:
            return []
        ids = np.array([chunk_id for chunk_id, _ in found], dtype=np.int64)
        exact = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32).reshape(len(found), -1) @ query
        order = np.lexsort((ids, -exact))[:k]  # the best first; equal scores (copies): the smaller id
        return [(int(ids[i]), float(exact[i])) for i in order]

    def scan_later(self, snapshot: _Snapshot, vector_later: VectorLater,
                   k: int) -> Callable[[], tuple[bytes | None, str | None, Scan | None]]:
        """Scan ``snapshot`` for the candidates of the ``k`` nearest to the query's vector on a scan
        thread, as soon as ``vector_later()`` gives the vector, while the caller searches the words
        (numpy and SQLite let go of the GIL: on two cores the two overlap). The function returned
        waits for the vector, its error and the scan (None without a vector), to pass to :meth:`nearest`."""
        def scan() -> tuple[bytes | None, str | None, Scan | None]:
            import numpy as np

            vector, error = vector_later()
            if vector is None:
                return None, error, None
            query = np.frombuffer(vector, dtype=np.float32)
            if snapshot.codes.shape[0] == 0 or query.shape[0] != snapshot.codes.shape[1]:
                return vector, error, None
            ids = snapshot.candidates(query, rescored(k), self._helpers(), SCAN_PARTS)
            return vector, error, Scan(snapshot, vector, rescored(k), ids)

        return self._scanner().submit(scan).result

    def _scanner(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._scans is None:
                self._scans = ThreadPoolExecutor(max_workers=SCAN_THREADS, thread_name_prefix="vector-scan")
            return self._scans

    def _helpers(self) -> ThreadPoolExecutor | None:
        """The threads that score parts of a scan (their jobs wait for nothing: never a deadlock)."""
        if SCAN_PARTS < 2:
            return None
        with self._lock:
            if self._parts is None:
                self._parts = ThreadPoolExecutor(max_workers=SCAN_PARTS - 1, thread_name_prefix="vector-scan-part")
            return self._parts

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
                with db.read_snapshot(conn):  # both passes over the vectors see the same ones
                    version = db.vectors_version(conn)
                    count = db.count_vectors(conn)
                    if count < self.min_vectors or not db.has_chunk_vectors(conn):
                        self._vec0_answers, self._snapshot, self._failure = (identity, version), None, None
                        return
                    ids, codes, step = _quantized(lambda: db.iter_chunk_vectors(conn), count)
            finally:
                conn.close()
            self._snapshot, self._failure = _Snapshot((identity, version), ids, codes, step), None
            self._loaded_at = time.monotonic()
        except Exception as exc:  # vec0 keeps answering; retried after the back-off or a change
            self._snapshot = None
            self._failure = _Failure(key, f"{type(exc).__name__}: {exc}", time.monotonic(), now_iso())
        finally:
            with self._lock:
                self._loading = False
