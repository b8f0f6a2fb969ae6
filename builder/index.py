"""The SQLite index: the only module with SQL.

One file holds ``files``, ``chunks``, ``chunks_fts`` (FTS5, external content
kept by triggers) and ``vec_chunks`` (sqlite-vec ``vec0``, ``rowid = chunks.id``).
Schema changes are numbered, idempotent steps recorded in ``meta.schema_version``.
Vectors do not cascade: every delete of chunks deletes their ``vec_chunks`` rows
explicitly, in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from textwrap import dedent
from typing import Any


def sqlite_module() -> Any:
    """The standard sqlite3 when it can load extensions, else pysqlite3 (same API)."""
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    import pysqlite3.dbapi2 as pysqlite3  # type: ignore[import-not-found]

    return pysqlite3


def connect(path: Path, *, readonly: bool = False, vec: bool = True, timeout: float = 10.0) -> Any:
    """Open the index (autocommit, explicit transactions) and load sqlite-vec when ``vec``."""
    sqlite3 = sqlite_module()
    if readonly:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None, timeout=timeout,
                               check_same_thread=True)
    else:
        conn = sqlite3.connect(str(path), isolation_level=None, timeout=timeout)
    conn.row_factory = sqlite3.Row
    # SQLite's lower() folds ASCII only; tags are Czech and Slovak.
    conn.create_function("casefold", 1, lambda v: v.casefold() if isinstance(v, str) else v, deterministic=True)
    if vec:
        import sqlite_vec

        conn.enable_load_extension(True)
        sqlite_vec.load(conn)
        conn.enable_load_extension(False)
    if not readonly:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


@contextmanager
def transaction(conn: Any) -> Iterator[Any]:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception: all or nothing."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


SCHEMA_STEPS: tuple[str, ...] = (
    # 1: the reference schema, with status columns for notes that yield no chunks
    """
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS sources (
      source_id     TEXT PRIMARY KEY,
      kind          TEXT NOT NULL CHECK (kind IN ('git', 'folder')),
      url           TEXT,
      branch        TEXT,
      indexed_rev   TEXT,
      last_sync_at  TEXT,
      last_error    TEXT,
      last_error_at TEXT,
      uncovered     TEXT NOT NULL DEFAULT '[]'
    );
    CREATE TABLE IF NOT EXISTS files (
      source_id    TEXT NOT NULL REFERENCES sources(source_id) ON DELETE CASCADE,
      path         TEXT NOT NULL,
      title        TEXT NOT NULL,
      tags         TEXT NOT NULL DEFAULT '[]',
      headings     TEXT NOT NULL DEFAULT '[]',
      links        TEXT NOT NULL DEFAULT '[]',
      front_matter TEXT NOT NULL DEFAULT '{}',
      status       TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'unpublished', 'skipped')),
      status_note  TEXT,
      sha256       TEXT NOT NULL,
      size         INTEGER NOT NULL,
      mtime_ns     INTEGER,
      changed_at   TEXT,
      indexed_at   TEXT NOT NULL,
      PRIMARY KEY (source_id, path)
    );
    CREATE TABLE IF NOT EXISTS chunks (
      id          INTEGER PRIMARY KEY AUTOINCREMENT,
      source_id   TEXT NOT NULL,
      path        TEXT NOT NULL,
      chunk_idx   INTEGER NOT NULL,
      breadcrumb  TEXT NOT NULL,
      anchor      TEXT NOT NULL,
      line_start  INTEGER NOT NULL,
      line_end    INTEGER NOT NULL,
      text        TEXT NOT NULL,
      embed_sha   TEXT NOT NULL,
      embedded_at TEXT,
      UNIQUE (source_id, path, chunk_idx),
      FOREIGN KEY (source_id, path) REFERENCES files(source_id, path) ON DELETE CASCADE
    );
    CREATE INDEX IF NOT EXISTS idx_chunks_pending ON chunks(id) WHERE embedded_at IS NULL;
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
      breadcrumb, text,
      content='chunks', content_rowid='id',
      tokenize='unicode61 remove_diacritics 2',
      prefix='2 3 4'
    );
    CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
      INSERT INTO chunks_fts(rowid, breadcrumb, text) VALUES (new.id, new.breadcrumb, new.text);
    END;
    CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
      INSERT INTO chunks_fts(chunks_fts, rowid, breadcrumb, text)
        VALUES ('delete', old.id, old.breadcrumb, old.text);
    END;
    CREATE TRIGGER IF NOT EXISTS chunks_au AFTER UPDATE OF breadcrumb, text ON chunks BEGIN
      INSERT INTO chunks_fts(chunks_fts, rowid, breadcrumb, text)
        VALUES ('delete', old.id, old.breadcrumb, old.text);
      INSERT INTO chunks_fts(rowid, breadcrumb, text) VALUES (new.id, new.breadcrumb, new.text);
    END;
    """,
    # 2: who last changed a note (git sources; the renderer shows it) and the scope a git source was
    # indexed with (a changed paths/include/exclude re-scans it)
    """
    ALTER TABLE files ADD COLUMN changed_by TEXT;
    ALTER TABLE sources ADD COLUMN scope TEXT;
    """,
)


def migrate(conn: Any) -> None:
    """Apply the schema steps this file has not seen yet (each is idempotent)."""
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    current = int(row[0]) if row else 0
    for number, step in enumerate(SCHEMA_STEPS, start=1):
        if number > current:
            with transaction(conn):
                for statement in _statements(step):
                    conn.execute(statement)
                set_meta(conn, {"schema_version": str(number)})


def _statements(script: str) -> list[str]:
    """Split a schema step into statements (triggers contain ';' inside BEGIN … END)."""
    complete = sqlite_module().complete_statement
    out, buffer = [], ""
    for line in dedent(script).splitlines(keepends=True):
        buffer += line
        if buffer.strip() and complete(buffer):
            out.append(buffer.strip())
            buffer = ""
    return out


def ensure_vec_table(conn: Any, dims: int) -> None:
    """Create ``vec_chunks`` for ``dims``-dimensional cosine vectors (dims is a validated int)."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_chunks USING vec0("
                 f"embedding float[{int(dims)}] distance_metric=cosine)")


def has_vec_table(conn: Any) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'vec_chunks'").fetchone()
    return row is not None


# ---------------------------------------------------------------- meta, sources


def get_meta(conn: Any) -> dict[str, str]:
    return {row["key"]: row["value"] for row in conn.execute("SELECT key, value FROM meta")}


def set_meta(conn: Any, values: dict[str, str]) -> None:
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (:key, :value) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [{"key": k, "value": v} for k, v in values.items()],
    )


@dataclass(frozen=True)
class SourceRow:
    source_id: str
    kind: str
    url: str | None
    branch: str | None
    indexed_rev: str | None
    last_sync_at: str | None
    last_error: str | None
    last_error_at: str | None
    uncovered: tuple[str, ...]
    scope: str | None = None  # git sources: the paths/include/exclude indexed_rev was indexed with


def get_sources(conn: Any) -> dict[str, SourceRow]:
    rows = conn.execute("SELECT * FROM sources ORDER BY source_id").fetchall()
    return {r["source_id"]: SourceRow(r["source_id"], r["kind"], r["url"], r["branch"], r["indexed_rev"],
                                      r["last_sync_at"], r["last_error"], r["last_error_at"],
                                      tuple(json.loads(r["uncovered"])),
                                      r["scope"] if "scope" in r.keys() else None)  # read-only pre-step-2 file
            for r in rows}


def upsert_source(conn: Any, source_id: str, kind: str, url: str | None, branch: str | None) -> None:
    conn.execute(dedent("""
        INSERT INTO sources (source_id, kind, url, branch) VALUES (:source_id, :kind, :url, :branch)
        ON CONFLICT (source_id) DO UPDATE SET kind = excluded.kind, url = excluded.url,
                                              branch = excluded.branch
    """), {"source_id": source_id, "kind": kind, "url": url, "branch": branch})


def update_source(conn: Any, source_id: str, **values: Any) -> None:
    """Set some of indexed_rev, last_sync_at, last_error, last_error_at, uncovered (a list), scope."""
    allowed = {"indexed_rev", "last_sync_at", "last_error", "last_error_at", "uncovered", "scope"}
    if not values or not set(values) <= allowed:
        raise ValueError(f"update_source: bad columns {sorted(values)}")
    if "uncovered" in values:
        values["uncovered"] = json.dumps(list(values["uncovered"]), ensure_ascii=False)
    assignments = ", ".join(f"{name} = :{name}" for name in sorted(values))  # names from the allow-list
    conn.execute(f"UPDATE sources SET {assignments} WHERE source_id = :source_id",
                 {**values, "source_id": source_id})


def delete_source(conn: Any, source_id: str) -> None:
    """Remove a source that left the config: its vectors, chunks, files and the row itself."""
    with transaction(conn):
        _delete_vectors(conn, "source_id = :source_id", {"source_id": source_id})
        conn.execute("DELETE FROM sources WHERE source_id = :source_id", {"source_id": source_id})


# ---------------------------------------------------------------- files and chunks


@dataclass(frozen=True)
class FileState:
    sha256: str
    size: int
    mtime_ns: int | None


@dataclass(frozen=True)
class FileRecord:
    """Everything the index stores about one note besides its chunks."""

    path: str
    title: str
    tags: tuple[str, ...]
    headings: tuple[dict[str, Any], ...]
    links: tuple[str, ...]
    front_matter: dict[str, Any]
    status: str
    status_note: str | None
    sha256: str
    size: int
    mtime_ns: int | None
    changed_at: str | None
    changed_by: str | None = None  # git sources: the author of the last commit that touched the note


def file_states(conn: Any, source_id: str) -> dict[str, FileState]:
    rows = conn.execute("SELECT path, sha256, size, mtime_ns FROM files WHERE source_id = :source_id",
                        {"source_id": source_id})
    return {r["path"]: FileState(r["sha256"], r["size"], r["mtime_ns"]) for r in rows}


def _delete_vectors(conn: Any, where: str, params: dict[str, Any]) -> None:
    if has_vec_table(conn):
        conn.execute(f"DELETE FROM vec_chunks WHERE rowid IN (SELECT id FROM chunks WHERE {where})", params)
        _bump_vectors_version(conn)


def _bump_vectors_version(conn: Any) -> None:
    """Readers that keep vectors in memory reload when this counter moves (see server.vectors)."""
    conn.execute(dedent("""
        INSERT INTO meta (key, value) VALUES ('vectors_version', '1')
        ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
    """))


def vectors_version(conn: Any) -> str:
    row = conn.execute("SELECT value FROM meta WHERE key = 'vectors_version'").fetchone()
    return row[0] if row else "0"


def all_vectors(conn: Any) -> list[Any]:
    """Every (chunk id, vector) of the index, for an in-memory scan."""
    if not has_vec_table(conn):
        return []
    return conn.execute("SELECT rowid, embedding FROM vec_chunks").fetchall()


def count_vectors(conn: Any) -> int:
    return conn.execute("SELECT count(*) FROM chunks WHERE embedded_at IS NOT NULL").fetchone()[0]


def filter_chunk_ids(conn: Any, ids: Sequence[int], source_id: str | None, tag: str | None) -> list[int]:
    """``ids`` (in their order) that still exist and belong to the source / carry the tag."""
    rows = conn.execute(dedent("""
        SELECT c.id FROM json_each(:ids) AS j
        JOIN chunks AS c ON c.id = j.value
        JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE (:source_id IS NULL OR c.source_id = :source_id)
          AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(f.tags) WHERE casefold(value) = casefold(:tag)))
        ORDER BY j.key
    """), {"ids": json.dumps([int(i) for i in ids]), "source_id": source_id, "tag": tag}).fetchall()
    return [row[0] for row in rows]


def replace_file(conn: Any, source_id: str, record: FileRecord, chunks: Sequence[dict[str, Any]],
                 now: str) -> None:
    """Swap one note's row and chunks in a single transaction: a crash leaves it old or new."""
    key = {"source_id": source_id, "path": record.path}
    with transaction(conn):
        _delete_vectors(conn, "source_id = :source_id AND path = :path", key)
        conn.execute("DELETE FROM chunks WHERE source_id = :source_id AND path = :path", key)
        conn.execute(dedent("""
            INSERT INTO files (source_id, path, title, tags, headings, links, front_matter, status,
                               status_note, sha256, size, mtime_ns, changed_at, changed_by, indexed_at)
            VALUES (:source_id, :path, :title, :tags, :headings, :links, :front_matter, :status,
                    :status_note, :sha256, :size, :mtime_ns, :changed_at, :changed_by, :indexed_at)
            ON CONFLICT (source_id, path) DO UPDATE SET
              title = excluded.title, tags = excluded.tags, headings = excluded.headings,
              links = excluded.links, front_matter = excluded.front_matter, status = excluded.status,
              status_note = excluded.status_note, sha256 = excluded.sha256, size = excluded.size,
              mtime_ns = excluded.mtime_ns, changed_at = excluded.changed_at,
              changed_by = excluded.changed_by, indexed_at = excluded.indexed_at
        """), {**key, "title": record.title, "tags": _json(record.tags), "headings": _json(record.headings),
               "links": _json(record.links), "front_matter": _json(record.front_matter),
               "status": record.status, "status_note": record.status_note, "sha256": record.sha256,
               "size": record.size, "mtime_ns": record.mtime_ns, "changed_at": record.changed_at,
               "changed_by": record.changed_by, "indexed_at": now})
        conn.executemany(dedent("""
            INSERT INTO chunks (source_id, path, chunk_idx, breadcrumb, anchor, line_start, line_end,
                                text, embed_sha)
            VALUES (:source_id, :path, :chunk_idx, :breadcrumb, :anchor, :line_start, :line_end,
                    :text, :embed_sha)
        """), [{**key, **chunk} for chunk in chunks])


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def touch_file(conn: Any, source_id: str, path: str, size: int, mtime_ns: int | None) -> None:
    """Content unchanged (same sha256), only size/mtime moved: remember them, keep the chunks."""
    conn.execute("UPDATE files SET size = :size, mtime_ns = :mtime_ns "
                 "WHERE source_id = :source_id AND path = :path",
                 {"source_id": source_id, "path": path, "size": size, "mtime_ns": mtime_ns})


def set_last_change(conn: Any, source_id: str, path: str, changed_at: str | None, changed_by: str | None) -> None:
    """Record when and by whom a note was last changed (git: its last commit) without touching its chunks."""
    conn.execute(dedent("""
        UPDATE files SET changed_at = :changed_at, changed_by = :changed_by
        WHERE source_id = :source_id AND path = :path
    """), {"source_id": source_id, "path": path, "changed_at": changed_at, "changed_by": changed_by})


def delete_file(conn: Any, source_id: str, path: str) -> None:
    """Delete a note: vectors explicitly, then the row (the cascade takes chunks and FTS rows)."""
    key = {"source_id": source_id, "path": path}
    with transaction(conn):
        _delete_vectors(conn, "source_id = :source_id AND path = :path", key)
        conn.execute("DELETE FROM files WHERE source_id = :source_id AND path = :path", key)


def pending_chunks(conn: Any, limit: int) -> list[Any]:
    """Chunks still waiting for a vector (oldest first), with the exact text to embed."""
    return conn.execute(dedent("""
        SELECT id, embed_sha, breadcrumb || char(10) || char(10) || text AS embed_text
        FROM chunks WHERE embedded_at IS NULL ORDER BY id LIMIT :limit
    """), {"limit": limit}).fetchall()


def count_pending(conn: Any) -> int:
    return conn.execute("SELECT count(*) FROM chunks WHERE embedded_at IS NULL").fetchone()[0]


def store_vectors(conn: Any, vectors: Iterable[tuple[int, bytes]], now: str) -> None:
    """Insert vectors for chunk ids and mark those chunks embedded, in one transaction."""
    rows = [{"id": chunk_id, "embedding": blob, "now": now} for chunk_id, blob in vectors]
    with transaction(conn):
        conn.executemany("DELETE FROM vec_chunks WHERE rowid = :id", rows)
        conn.executemany("INSERT INTO vec_chunks (rowid, embedding) VALUES (:id, :embedding)", rows)
        conn.executemany("UPDATE chunks SET embedded_at = :now WHERE id = :id", rows)
        _bump_vectors_version(conn)


def counts(conn: Any) -> dict[str, int]:
    """Row counts of the tables the idempotence checks compare."""
    out = {}
    for table in ("files", "chunks", "chunks_fts", "vec_chunks"):
        if table == "vec_chunks" and not has_vec_table(conn):
            out[table] = 0
            continue
        out[table] = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # fixed table names
    return out


def source_stats(conn: Any) -> dict[str, dict[str, int]]:
    """Per source: notes, chunks and chunks still waiting for vectors."""
    stats: dict[str, dict[str, int]] = {}
    for row in conn.execute("SELECT source_id, count(*) AS n FROM files WHERE status = 'ok' GROUP BY source_id"):
        stats.setdefault(row["source_id"], {"files": 0, "chunks": 0, "pending": 0})["files"] = row["n"]
    for row in conn.execute(dedent("""
        SELECT source_id, count(*) AS n, sum(embedded_at IS NULL) AS pending FROM chunks GROUP BY source_id
    """)):
        entry = stats.setdefault(row["source_id"], {"files": 0, "chunks": 0, "pending": 0})
        entry["chunks"], entry["pending"] = row["n"], row["pending"] or 0
    return stats


def notes_for_toc(conn: Any, source_id: str | None, tag: str | None) -> list[Any]:
    """Published notes with title, tags and headings, ordered by source and path."""
    return conn.execute(dedent("""
        SELECT source_id, path, title, tags, headings FROM files
        WHERE status = 'ok'
          AND (:source_id IS NULL OR source_id = :source_id)
          AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(files.tags) WHERE casefold(value) = casefold(:tag)))
        ORDER BY source_id, path
    """), {"source_id": source_id, "tag": tag}).fetchall()


# ---------------------------------------------------------------- search (read path)


def fts_search(conn: Any, match: str, limit: int, source_id: str | None, tag: str | None) -> list[int]:
    """Chunk ids matching the FTS5 expression ``match``, best BM25 first."""
    if source_id is None and tag is None:  # FTS5 ranks and limits alone: no join per matching row
        rows = conn.execute(dedent("""
            SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :match
            ORDER BY bm25(chunks_fts, 2.0, 1.0) LIMIT :limit
        """), {"match": match, "limit": limit}).fetchall()
        return [row[0] for row in rows]
    rows = conn.execute(dedent("""
        SELECT c.id FROM chunks_fts
        JOIN chunks AS c ON c.id = chunks_fts.rowid
        JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE chunks_fts MATCH :match
          AND (:source_id IS NULL OR c.source_id = :source_id)
          AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(f.tags) WHERE casefold(value) = casefold(:tag)))
        ORDER BY bm25(chunks_fts, 2.0, 1.0)
        LIMIT :limit
    """), {"match": match, "limit": limit, "source_id": source_id, "tag": tag}).fetchall()
    return [row[0] for row in rows]


def knn_search(conn: Any, vector: bytes, k: int, source_id: str | None, tag: str | None) -> list[int]:
    """Chunk ids nearest to ``vector`` (cosine), filtered by source/tag after the KNN scan."""
    if not has_vec_table(conn):
        return []
    filtered = source_id is not None or tag is not None
    rows = conn.execute(dedent("""
        WITH knn AS (
          SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH :vector AND k = :k
        )
        SELECT c.id FROM knn
        JOIN chunks AS c ON c.id = knn.rowid
        JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE (:source_id IS NULL OR c.source_id = :source_id)
          AND (:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(f.tags) WHERE casefold(value) = casefold(:tag)))
        ORDER BY knn.distance
    """), {"vector": vector, "k": min(4096, k * 20) if filtered else k, "source_id": source_id,
           "tag": tag}).fetchall()
    return [row[0] for row in rows][:k]


def chunk_details(conn: Any, ids: Sequence[int]) -> dict[int, Any]:
    """The display fields of the given chunks, keyed by id."""
    if not ids:
        return {}
    rows = conn.execute(dedent("""
        SELECT c.id, c.source_id, c.path, c.breadcrumb, c.anchor, c.line_start, c.line_end, c.text,
               f.title, f.tags
        FROM chunks AS c JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE c.id IN (SELECT value FROM json_each(:ids))
    """), {"ids": json.dumps(list(ids))}).fetchall()
    return {row["id"]: row for row in rows}


# ---------------------------------------------------------------- embedding cache (its own file)


def open_cache(path: Path) -> Any:
    """The embedding cache survives ``--full`` rebuilds: keyed by (model fingerprint, sha256 of input)."""
    conn = connect(path, vec=False)
    conn.execute(dedent("""
        CREATE TABLE IF NOT EXISTS embeddings (
          model TEXT NOT NULL, sha256 TEXT NOT NULL, vector BLOB NOT NULL,
          PRIMARY KEY (model, sha256)
        ) WITHOUT ROWID
    """))
    return conn


def cache_get(conn: Any, model: str, shas: Sequence[str]) -> dict[str, bytes]:
    rows = conn.execute(
        "SELECT sha256, vector FROM embeddings WHERE model = :model "
        "AND sha256 IN (SELECT value FROM json_each(:shas))",
        {"model": model, "shas": json.dumps(list(shas))},
    ).fetchall()
    return {row["sha256"]: bytes(row["vector"]) for row in rows}


def cache_put(conn: Any, model: str, vectors: dict[str, bytes]) -> None:
    with transaction(conn):
        conn.executemany(
            "INSERT OR REPLACE INTO embeddings (model, sha256, vector) VALUES (:model, :sha256, :vector)",
            [{"model": model, "sha256": sha, "vector": blob} for sha, blob in vectors.items()],
        )


# ---- render (read)


def notes_for_render(conn: Any) -> list[Any]:
    """Every published note with what its page, the tables of contents and tag pages show."""
    return conn.execute(dedent("""
        SELECT source_id, path, title, tags, headings, changed_at, sha256 FROM files
        WHERE status = :status
        ORDER BY source_id, path
    """), {"status": "ok"}).fetchall()
