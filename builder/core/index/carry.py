"""Notes carried from the previous index generation into a new one: what a ``--full`` build could not
read again (a source that failed, a folder its scan could not list) keeps its last good state
instead of leaving the index, or of keeping the whole new index from being swapped in."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING, Any

from builder.core.index.connection import connect, transaction
from builder.core.index.notes import _content_changed, _delete_vectors
from builder.core.index.schema import STEMS_VERSION, chunk_stems, get_meta

if TYPE_CHECKING:
    from sqlite3 import Connection

_CUT = ("chunker_version", "chunk_fit")  # how notes were cut into chunks: carried chunks cut otherwise are re-read


def carry_notes(conn: Connection, previous: Path, wanted: Mapping[str, tuple[str, ...] | None]) -> dict[str, int]:
    """Copy notes of the index file ``previous`` into ``conn``'s: for each wanted source, every note and the
    source's row (``None``), or only its notes below the given folders (``""``: the whole source), with
    their chunks and the chunks' words. Vectors are left to fill (the embedding cache holds them). When
    ``previous`` cut its notes into chunks otherwise, each carried note is marked changed (size -1) and a
    git source's revision forgotten, so the next build that reaches the source indexes them again.
    Returns the number of notes carried per source; raises the database's error when it cannot read."""
    old = connect(previous, readonly=True, vec=False)
    try:
        reread = any(get_meta(old).get(key) != get_meta(conn).get(key) for key in _CUT)
        fresh_stems = get_meta(old).get("text_analysis") != STEMS_VERSION
        file_columns = _shared_columns(old, conn, "files", ())
        chunk_columns = _shared_columns(old, conn, "chunks", ("id", "embedded_at"))
        carried: dict[str, int] = {}
        with transaction(conn):
            for source_id, folders in wanted.items():
                files = [dict(row) for row in old.execute(
                    f"SELECT {', '.join(file_columns)} FROM files WHERE source_id = :source_id",
                    {"source_id": source_id})]
                if folders is not None:
                    files = [f for f in files if any(not d or f["path"].startswith(d + "/") for d in folders)]
                if folders is None:
                    _carry_source_row(old, conn, source_id, reread)
                elif not files:
                    continue
                carried[source_id] = _carry_files(old, conn, source_id, files, file_columns, chunk_columns,
                                                  reread=reread, fresh_stems=fresh_stems)
                _content_changed(conn, source_id, None)
        return carried
    finally:
        old.close()


def _shared_columns(old: Connection, new: Connection, table: str, leave: tuple[str, ...]) -> list[str]:
    """The columns of ``table`` both files have (an older schema lacks some, a step dropped others)."""
    had = {row[1] for row in old.execute(f"PRAGMA table_info({table})")}
    return [row[1] for row in new.execute(f"PRAGMA table_info({table})") if row[1] in had and row[1] not in leave]


def _carry_source_row(old: Connection, conn: Connection, source_id: str, reread: bool) -> None:
    """The source's row as the previous index had it, keeping the failure this build recorded; the
    notes this build may have written of it before it failed make way for the carried ones."""
    row = old.execute("SELECT * FROM sources WHERE source_id = :source_id", {"source_id": source_id}).fetchone()
    key = {"source_id": source_id}
    _delete_vectors(conn, "source_id = :source_id", key)
    conn.execute("DELETE FROM files WHERE source_id = :source_id", key)
    if row is None:
        return
    values = dict(row)
    forget = reread and values["kind"] == "git"
    conn.execute(dedent("""
        INSERT INTO sources (source_id, kind, url, branch, indexed_rev, last_sync_at, uncovered, scope)
        VALUES (:source_id, :kind, :url, :branch, :indexed_rev, :last_sync_at, :uncovered, :scope)
        ON CONFLICT (source_id) DO UPDATE SET indexed_rev = excluded.indexed_rev,
          last_sync_at = excluded.last_sync_at, uncovered = excluded.uncovered, scope = excluded.scope,
          stats_digest = NULL
    """), {**key, "kind": values["kind"], "url": values["url"], "branch": values["branch"],
           "indexed_rev": None if forget else values["indexed_rev"], "last_sync_at": values["last_sync_at"],
           "uncovered": values["uncovered"], "scope": None if forget else values.get("scope")})


def _carry_files(old: Connection, conn: Connection, source_id: str, files: list[dict[str, Any]],
                 file_columns: list[str], chunk_columns: list[str], *, reread: bool, fresh_stems: bool) -> int:
    if reread:
        files = [{**f, "size": -1} for f in files]
    names = ", ".join(file_columns)
    conn.executemany(f"INSERT INTO files ({names}) VALUES ({', '.join(':' + c for c in file_columns)})",
                     files)
    first = (conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0) + 1
    paths = {f["path"] for f in files}
    chunks = [dict(row) for row in old.execute(
        f"SELECT {', '.join(chunk_columns)} FROM chunks WHERE source_id = :source_id ORDER BY id",
        {"source_id": source_id}) if row["path"] in paths]
    columns = [*chunk_columns, "stems"] if "stems" not in chunk_columns else chunk_columns
    for chunk in chunks:
        if fresh_stems or "stems" not in chunk:
            chunk["stems"] = chunk_stems(chunk["breadcrumb"], chunk["text"])
    conn.executemany(f"INSERT INTO chunks ({', '.join(columns)}) "
                     f"VALUES ({', '.join(':' + c for c in columns)})", chunks)
    conn.execute("INSERT INTO chunks_fts (rowid, breadcrumb, text, stems) "
                 "SELECT id, breadcrumb, text, stems FROM chunks WHERE id >= :first", {"first": first})
    return len(files)
