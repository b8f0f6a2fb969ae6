"""``/api/health``: the index, its sources, the query embedder, the in-memory vectors and the
dictionary English questions are searched in Czech through.

It reads the index and reports what the server already knows; it never runs a
model inference and never raises (an unhealthy portal still answers).
"""

from __future__ import annotations

from typing import Any

from builder.core import index as db
from builder.core.config import Config
from builder.core.errors import UserError
from server import translate
from server.embedder import QueryEmbedder
from server.reader import IndexReader
from server.vectors import VectorMemory


def health(config: Config, reader: IndexReader, embedder: QueryEmbedder, memory: VectorMemory) -> dict[str, Any]:
    """The JSON body of ``/api/health``; ``status`` is ``ok`` or ``degraded``."""
    body: dict[str, Any] = {"index": False}
    try:
        body.update(_index(config, reader))
    except UserError as exc:  # no index yet, an unreadable one, a timeout: reported, not raised
        body["error"] = str(exc)
    body["embedding"] = embedder.state()
    body["vector_memory"] = memory.state()
    body["dictionary"] = translate.state(config.dictionary)  # English questions searched in Czech
    failing = [sid for sid, source in body.get("sources", {}).items() if source["last_error"]]
    healthy = (body["index"] and "error" not in body and not failing and body["embedding"]["reachable"] is not False
               and body["vector_memory"]["error"] is None and body["dictionary"]["error"] is None)
    body["status"] = "ok" if healthy else "degraded"
    return body


def _vector_progress(progress: tuple[int, int] | None) -> dict[str, int] | None:
    """``{ready, total}`` while chunks wait for their vectors (being backfilled), else None."""
    return {"ready": progress[0], "total": progress[1]} if progress else None


def _index(config: Config, reader: IndexReader) -> dict[str, Any]:
    with reader.connection() as lease:
        conn = lease.conn
        counts = db.counts(conn)
        sources = db.get_sources(conn)
        body: dict[str, Any] = {
            "index": True, "counts": counts,
            "pending_vectors": db.count_pending(conn) if config.embedding.enabled else 0,
            "vectors": _vector_progress(db.vector_progress(conn) if config.embedding.enabled else None),
            "sources": {sid: {"last_sync_at": row.last_sync_at, "indexed_rev": row.indexed_rev,
                              "last_error": row.last_error} for sid, row in sources.items()},
        }
    if counts["chunks_fts"] != counts["chunks"]:
        body["error"] = (f"the full-text index holds {counts['chunks_fts']} of {counts['chunks']} chunks: "
                         "rebuild it with `notes-portal build --full`")
    return body
