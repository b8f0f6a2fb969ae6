"""``status`` (the command and the MCP tool): per source notes, chunks, pending vectors, last sync, indexed
rev and the broken links of the last render (each listed with its line on the site's ``broken-links.html``),
and whether English questions are searched in Czech (the dictionary, see :mod:`server.translate`).

It only reads: the index (read-only, without sqlite-vec) and two values of the last render's state
(:func:`builder.core.index.renderstate.read_meta`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from builder.core import index as db
from builder.core.config import Config
from builder.core.index.renderstate import MANIFEST_VERSION, STATE_FILE, read_meta
from builder.core.redact import redact_url


def broken_link_counts(site: Path) -> dict[str, int] | None:
    """Source id → the number of broken links in its notes as of the last complete render (sources
    without any are left out); None when the site has not been rendered (by this version) yet.

    The render keeps the counts in its state's values (``broken_links``, see
    :func:`builder.render.delta.remember`): only they are read, not every note's entry."""
    meta = read_meta(site / STATE_FILE, ("version", "broken_links"))
    if not meta or meta.get("version") != MANIFEST_VERSION or not isinstance(meta.get("broken_links"), dict):
        return None
    return dict(meta["broken_links"])


def collect_status(config: Config) -> dict[str, Any]:
    """The status as plain data (the ``--json`` output and the MCP tool's, in its envelope)."""
    path = Path(os.path.realpath(config.index)) if config.index.exists() else None  # the current generation
    status: dict[str, Any] = {"index": str(config.index), "exists": path is not None,
                              "embedding": {"provider": config.embedding.provider, "model": config.embedding.model,
                                            "dims": config.embedding.dims},
                              "dictionary": str(config.dictionary) if config.dictionary is not None else None,
                              "sources": []}
    rows: dict[str, db.SourceRow] = {}
    stats: dict[str, dict[str, int]] = {}
    if path is not None:
        try:
            conn = db.connect(path, readonly=True, vec=False)
            try:
                rows, stats = db.get_sources(conn), db.source_stats(conn)
                status["meta"] = db.get_meta(conn)
            finally:
                conn.close()
        except db.sqlite_module().OperationalError as exc:  # a full disk leaves no room for its -shm file
            status["error"] = f"cannot read the index now ({exc})"
    broken = broken_link_counts(config.site.output)  # None: no complete render yet
    for source in config.sources:
        row = rows.get(source.id)
        numbers = stats.get(source.id, {"files": 0, "chunks": 0, "pending": 0})
        status["sources"].append({
            "id": source.id, "kind": source.kind,
            "location": str(source.root) if source.root else redact_url(source.url),
            "branch": source.branch,
            "files": numbers["files"], "chunks": numbers["chunks"],
            "pending_vectors": numbers["pending"] if config.embedding.enabled else 0,
            "last_sync_at": row.last_sync_at if row else None,
            "indexed_rev": row.indexed_rev if row else None,
            "last_error": row.last_error if row else None,
            "last_error_at": row.last_error_at if row else None,
            "uncovered": list(row.uncovered) if row else [],
            "broken_links": broken.get(source.id, 0) if broken is not None else None,
        })
    return status


def format_status(status: dict[str, Any]) -> str:
    emb = status["embedding"]
    lines = [f"index: {status['index']}" + ("" if status["exists"] else " (not built yet)")
             + (f": {status['error']}" if status.get("error") else ""),
             f"embedding: {emb['provider']} {emb['model']} ({emb['dims']} dims)"]
    waiting = sum(s["pending_vectors"] for s in status["sources"])
    if waiting:
        total = sum(s["chunks"] for s in status["sources"])
        lines.append(f"vectors: {total - waiting:,} of {total:,} sections so far (the rest are being backfilled; "
                     "search finds them by words meanwhile)")
    for s in status["sources"]:
        where = s["location"]
        if s["kind"] == "git":
            where += f", branch {s['branch'] or '(remote HEAD)'}"
        rev = s["indexed_rev"] or "-"
        lines.append(f"{s['id']} ({s['kind']}: {where}): {s['files']} notes, {s['chunks']} chunks, "
                     f"{s['pending_vectors']} pending vectors, last sync {s['last_sync_at'] or 'never'}, "
                     f"rev {rev[:12] if s['kind'] == 'git' else rev}"
                     + (f", {s['broken_links']} broken links" if s.get("broken_links") else ""))
        if s["last_error"]:
            when = f" ({s['last_error_at']})" if s["last_error_at"] else ""
            lines.append(f"  last error{when}: {s['last_error']}")
        if s["uncovered"]:
            lines.append(f"  not covered by paths: {', '.join(d + '/' for d in s['uncovered'])}")
    lines.append(f"English questions: also searched in Czech ({status['dictionary']})" if status.get("dictionary")
                 else "English questions: not translated (no dictionary: apt-get install dict-freedict-eng-ces, "
                      "or search.dictionary in the config)")
    return "\n".join(lines)
