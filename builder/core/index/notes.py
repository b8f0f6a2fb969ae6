"""Sources, notes and chunks: what the build writes and what the tables of contents read.

Vectors in ``vec_chunks`` do not cascade (sqlite-vec tables are not foreign-key
targets): every delete of chunks deletes their ``vec_chunks`` rows explicitly, in
the same transaction; their copies in ``chunk_vectors`` go by its foreign key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.core.index.batch import before_deleting, index_words
from builder.core.index.connection import dedent, transaction
from builder.core.index.schema import chunk_stems, has_vec_table

if TYPE_CHECKING:
    from sqlite3 import Connection, Row


# Rows of ``files`` (alias f) carrying the tag :tag, compared Unicode-casefolded; NULL: any note. The
# first is an index lookup (schema step 12); the second reads the note's tags, for an index the server
# reads before the build that adds the step (see tag_filter).
TAG_FILTER = ("(:tag IS NULL OR EXISTS (SELECT 1 FROM note_tags AS nt WHERE nt.tag_key = casefold(:tag) "
              "AND nt.source_id = f.source_id AND nt.path = f.path))")
TAG_FILTER_BEFORE_STEP_12 = ("(:tag IS NULL OR EXISTS (SELECT 1 FROM json_each(f.tags) "
                             "WHERE casefold(value) = casefold(:tag)))")


def tag_filter(conn: Connection) -> str:
    """The tag filter this index can run: :data:`TAG_FILTER`, or the slow one of an index before step 12."""
    has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'note_tags'").fetchone()
    return TAG_FILTER if has_table else TAG_FILTER_BEFORE_STEP_12


# ---------------------------------------------------------------- sources


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
    # folder sources: sources.stats_digest of the (path, size, mtime) of every file the index holds of it;
    # None when not known, or when one of them is recorded unread (it is read again once it can be)
    stats_digest: str | None = None


def get_sources(conn: Connection) -> dict[str, SourceRow]:
    """Every source the index knows, by id."""
    rows = conn.execute("SELECT * FROM sources ORDER BY source_id").fetchall()
    # no scope: a read-only pre-step-2 file (a Row's ``in`` looks at its values, so its keys are asked)
    return {r["source_id"]: SourceRow(r["source_id"], r["kind"], r["url"], r["branch"], r["indexed_rev"],
                                      r["last_sync_at"], r["last_error"], r["last_error_at"],
                                      tuple(json.loads(r["uncovered"])),
                                      r["scope"] if "scope" in r.keys() else None,  # noqa: SIM118
                                      r["stats_digest"] if "stats_digest" in r.keys() else None)  # noqa: SIM118
            for r in rows}


def upsert_source(conn: Connection, source_id: str, kind: str, url: str | None, branch: str | None) -> None:
    """Create the source's row, or update its kind, (redacted) URL and branch."""
    conn.execute(dedent("""
        INSERT INTO sources (source_id, kind, url, branch) VALUES (:source_id, :kind, :url, :branch)
        ON CONFLICT (source_id) DO UPDATE SET kind = excluded.kind, url = excluded.url,
                                              branch = excluded.branch
    """), {"source_id": source_id, "kind": kind, "url": url, "branch": branch})


_SOURCE_COLUMNS = frozenset({"indexed_rev", "last_sync_at", "last_error", "last_error_at", "uncovered", "scope",
                             "stats_digest"})


def update_source(conn: Connection, source_id: str, **values: Any) -> None:
    """Set some of indexed_rev, last_sync_at, last_error, last_error_at, uncovered (a list), scope,
    stats_digest."""
    if not values or not set(values) <= _SOURCE_COLUMNS:
        raise ValueError(f"update_source: bad columns {sorted(values)}")
    if "uncovered" in values:
        values["uncovered"] = json.dumps(list(values["uncovered"]), ensure_ascii=False)
    assignments = ", ".join(f"{name} = :{name}" for name in sorted(values))  # names from the allow-list
    conn.execute(f"UPDATE sources SET {assignments} WHERE source_id = :source_id",
                 {**values, "source_id": source_id})


def delete_source(conn: Connection, source_id: str) -> None:
    """Remove a source that left the config: its vectors, chunks, files and the row itself."""
    with transaction(conn):
        before_deleting(conn, "source_id = :source_id", {"source_id": source_id})
        _delete_vectors(conn, "source_id = :source_id", {"source_id": source_id})
        conn.execute("DELETE FROM sources WHERE source_id = :source_id", {"source_id": source_id})
        _content_changed(conn, source_id, None)


# ---------------------------------------------------------------- files and chunks


class FileState(NamedTuple):  # a tuple: every build reads one per file of each scanned source
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
    front_matter: dict[str, Any]
    status: str
    status_note: str | None
    sha256: str
    size: int
    mtime_ns: int | None
    changed_at: str | None
    changed_by: str | None = None  # git sources: the author of the last commit that touched the note
    encoding: str | None = None  # the code page a note not in UTF-8 was read in (None: UTF-8)


UNREAD = ""  # the sha256 recorded for a file that could not be read (a skipped note: no content known)


def file_states(conn: Connection, source_id: str, paths: Iterable[str] | None = None) -> dict[str, FileState]:
    """Path → (sha256, size, mtime) of every file of the source that the index holds (``paths``: of those
    of them the index holds)."""
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: this runs over every note on every build
    if paths is None:
        rows = cursor.execute("SELECT path, sha256, size, mtime_ns FROM files WHERE source_id = :source_id",
                              {"source_id": source_id})
    else:
        rows = cursor.execute(dedent("""
            SELECT path, sha256, size, mtime_ns FROM files
            WHERE source_id = :source_id AND path IN (SELECT value FROM json_each(:paths))
        """), {"source_id": source_id, "paths": json.dumps(list(paths))})
    return {path: FileState(sha, size, mtime) for path, sha, size, mtime in rows}


class FolderSummary(NamedTuple):
    """What the index holds of a folder source, in two digests' worth of text (:func:`folder_summary`)."""

    rev: str  # the source's revision: a digest of the (path, sha256) pairs of its files
    # lines ``path\0size\0mtime_ns`` by path, joined by newlines: what ``builder.notes.sources.stats_text`` makes
    # of a walk that found the same files; None when a file is recorded unread (its size and mtime would not
    # show that it can be read now)
    stats: str | None


def folder_summary(conn: Connection, source_id: str) -> FolderSummary:
    """The :class:`FolderSummary` of a source, built by SQLite in one pass over its rows, without a Python
    object per row. (An aggregate keeps the order of a subquery's ORDER BY, which SQLite does not flatten
    into it; ``ORDER BY`` inside the aggregate would need SQLite 3.44.)"""
    pairs, stats, unread = conn.execute(dedent("""
        SELECT group_concat(path || char(0) || sha256 || char(10), ''),
               group_concat(path || char(0) || size || char(0) || coalesce(mtime_ns, 'None'), char(10)),
               max(sha256 = :unread)
        FROM (SELECT path, sha256, size, mtime_ns FROM files WHERE source_id = :source_id ORDER BY path)
    """), {"source_id": source_id, "unread": UNREAD}).fetchone()
    return FolderSummary(hashlib.sha256((pairs or "").encode()).hexdigest()[:12], None if unread else stats or "")


def _delete_vectors(conn: Connection, where: str, params: dict[str, Any]) -> None:
    """Delete the vectors of the chunks selected by ``where`` (a fixed condition with named parameters)."""
    if has_vec_table(conn):
        conn.execute(f"DELETE FROM vec_chunks WHERE rowid IN (SELECT id FROM chunks WHERE {where})", params)
        _bump(conn, "vectors_version")


# Counters in ``meta`` that move with the data, in the same transaction: ``vectors_version`` when
# vectors are stored or deleted (readers keeping vectors in memory reload, see server.vectors),
# ``content_version`` when anything a page shows changes (the site is re-rendered, see builder.render).
_COUNTERS = frozenset({"vectors_version", "content_version"})


def _bump(conn: Connection, counter: str) -> None:
    if counter not in _COUNTERS:
        raise ValueError(f"unknown counter {counter!r}")
    conn.execute(dedent("""
        INSERT INTO meta (key, value) VALUES (:counter, '1')
        ON CONFLICT (key) DO UPDATE SET value = CAST(value AS INTEGER) + 1
    """), {"counter": counter})


CONTENT_LOG_KEEP = 10_000  # changes remembered by content_log (a render further behind renders everything)


def _content_changed(conn: Connection, source_id: str, path: str | None) -> None:
    """Move ``content_version`` for a change of note ``path`` (None: of every note of the source) and
    log which note it was, so that a render can ask what changed since it last ran."""
    _bump(conn, "content_version")
    conn.execute(dedent("""
        INSERT INTO content_log (version, source_id, path)
        VALUES ((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'content_version'), :source_id, :path)
    """), {"source_id": source_id, "path": path})
    conn.execute(dedent("""
        DELETE FROM content_log
        WHERE version <= (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'content_version') - :keep
    """), {"keep": CONTENT_LOG_KEEP})


def replace_file(conn: Connection, source_id: str, record: FileRecord, chunks: Sequence[dict[str, Any]],
                 now: str) -> None:
    """Swap one note's row and chunks in a single transaction: a crash leaves it old or new."""
    key = {"source_id": source_id, "path": record.path}
    with transaction(conn):
        before_deleting(conn, "source_id = :source_id AND path = :path", key)
        _delete_vectors(conn, "source_id = :source_id AND path = :path", key)
        conn.execute("DELETE FROM chunks WHERE source_id = :source_id AND path = :path", key)
        conn.execute(dedent("""
            INSERT INTO files (source_id, path, title, tags, headings, front_matter, status,
                               status_note, sha256, size, mtime_ns, changed_at, changed_by, encoding, indexed_at)
            VALUES (:source_id, :path, :title, :tags, :headings, :front_matter, :status,
                    :status_note, :sha256, :size, :mtime_ns, :changed_at, :changed_by, :encoding, :indexed_at)
            ON CONFLICT (source_id, path) DO UPDATE SET
              title = excluded.title, tags = excluded.tags, headings = excluded.headings,
              front_matter = excluded.front_matter, status = excluded.status,
              status_note = excluded.status_note, sha256 = excluded.sha256, size = excluded.size,
              mtime_ns = excluded.mtime_ns, changed_at = excluded.changed_at,
              changed_by = excluded.changed_by, encoding = excluded.encoding, indexed_at = excluded.indexed_at
        """), {**key, "title": record.title, "tags": _json(record.tags), "headings": _json(record.headings),
               "front_matter": _json(record.front_matter),
               "status": record.status, "status_note": record.status_note, "sha256": record.sha256,
               "size": record.size, "mtime_ns": record.mtime_ns, "changed_at": record.changed_at,
               "changed_by": record.changed_by, "encoding": record.encoding, "indexed_at": now})
        conn.executemany(dedent("""
            INSERT INTO chunks (source_id, path, chunk_idx, breadcrumb, anchor, line_start, line_end,
                                text, embed_sha, stems, places)
            VALUES (:source_id, :path, :chunk_idx, :breadcrumb, :anchor, :line_start, :line_end,
                    :text, :embed_sha, :stems, :places)
        """), [{**key, "places": "[]", **chunk} if "stems" in chunk else
               {**key, "places": "[]", **chunk, "stems": chunk_stems(chunk["breadcrumb"], chunk["text"])}
               for chunk in chunks])
        index_words(conn, key)
        _content_changed(conn, source_id, record.path)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def touch_file(conn: Connection, source_id: str, path: str, size: int, mtime_ns: int | None,
               changed_at: str | None) -> None:
    """Content unchanged (same sha256), only size/mtime moved: remember them and the note's date (what
    a fresh build would show), keep the chunks."""
    key = {"source_id": source_id, "path": path}
    with transaction(conn):
        moved = conn.execute("UPDATE files SET changed_at = :changed_at WHERE source_id = :source_id "
                             "AND path = :path AND changed_at IS NOT :changed_at",
                             {**key, "changed_at": changed_at}).rowcount
        conn.execute("UPDATE files SET size = :size, mtime_ns = :mtime_ns "
                     "WHERE source_id = :source_id AND path = :path", {**key, "size": size, "mtime_ns": mtime_ns})
        if moved:
            _content_changed(conn, source_id, path)


def set_last_change(conn: Connection, source_id: str, path: str, changed_at: str | None,
                    changed_by: str | None) -> None:
    """Record when and by whom a note was last changed (git: its last commit) without touching its chunks."""
    with transaction(conn):
        conn.execute(dedent("""
            UPDATE files SET changed_at = :changed_at, changed_by = :changed_by
            WHERE source_id = :source_id AND path = :path
        """), {"source_id": source_id, "path": path, "changed_at": changed_at, "changed_by": changed_by})
        _content_changed(conn, source_id, path)


def delete_file(conn: Connection, source_id: str, path: str) -> None:
    """Delete a note: vectors explicitly, then the row (the cascade takes chunks and FTS rows)."""
    key = {"source_id": source_id, "path": path}
    with transaction(conn):
        before_deleting(conn, "source_id = :source_id AND path = :path", key)
        _delete_vectors(conn, "source_id = :source_id AND path = :path", key)
        conn.execute("DELETE FROM files WHERE source_id = :source_id AND path = :path", key)
        _content_changed(conn, source_id, path)


# ---------------------------------------------------------------- vectors


def pending_chunks(conn: Connection, limit: int, after: int = 0) -> list[Row]:
    """Chunks still waiting for a vector (oldest first, ids above ``after``), with the exact text to embed."""
    return conn.execute(dedent("""
        SELECT id, embed_sha, breadcrumb || char(10) || char(10) || text AS embed_text
        FROM chunks WHERE embedded_at IS NULL AND id > :after ORDER BY id LIMIT :limit
    """), {"limit": limit, "after": after}).fetchall()


def waiting_shas(conn: Connection, limit: int, after: int = 0) -> list[tuple[int, str]]:
    """(id, embed_sha) of chunks still waiting for a vector, ids above ``after``, in id order."""
    return [(row[0], row[1]) for row in conn.execute(dedent("""
        SELECT id, embed_sha FROM chunks WHERE embedded_at IS NULL AND id > :after ORDER BY id LIMIT :limit
    """), {"limit": limit, "after": after})]


def count_chunks(conn: Connection) -> int:
    """How many chunks the index holds."""
    return int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])


def count_chunks_up_to(conn: Connection, limit: int, source: str | None = None) -> int:
    """How many chunks the index holds (only ``source``'s, when given), counted no further than ``limit``."""
    statement = ("SELECT count(*) FROM (SELECT 1 FROM chunks LIMIT :limit)" if source is None else
                 "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE source_id = :source LIMIT :limit)")
    return int(conn.execute(statement, {"source": source, "limit": limit}).fetchone()[0])


def count_pending(conn: Connection) -> int:
    """How many chunks still wait for a vector."""
    return int(conn.execute("SELECT count(*) FROM chunks WHERE embedded_at IS NULL").fetchone()[0])


def store_current_vectors(conn: Connection, vectors: Iterable[tuple[int, str, bytes]], now: str) -> int:
    """Store (chunk id, embed_sha, vector) for the chunks that still wait with that exact text, in one
    transaction; a chunk a build deleted or re-cut while its vector was computed is left out. Returns
    how many were stored."""
    stored: list[dict[str, Any]] = []
    with transaction(conn):
        for chunk_id, sha, blob in vectors:
            cursor = conn.execute(dedent("""
                UPDATE chunks SET embedded_at = :now WHERE id = :id AND embed_sha = :sha AND embedded_at IS NULL
            """), {"id": chunk_id, "sha": sha, "now": now})
            if cursor.rowcount:
                stored.append({"id": chunk_id, "embedding": blob})
        if stored:
            conn.executemany("DELETE FROM vec_chunks WHERE rowid = :id", stored)
            conn.executemany("INSERT INTO vec_chunks (rowid, embedding) VALUES (:id, :embedding)", stored)
            conn.executemany("INSERT OR REPLACE INTO chunk_vectors (chunk_id, embedding) VALUES (:id, :embedding)",
                             stored)
            _bump(conn, "vectors_version")
    return len(stored)


def vector_progress(conn: Connection) -> tuple[int, int] | None:
    """(chunks with a vector, all chunks) while some still wait for theirs, else None. Cheap when
    none waits (schema step 11's partial index); all chunks are counted only while some wait."""
    pending = count_pending(conn)
    if not pending:
        return None
    total = count_chunks(conn)
    return total - pending, total


def store_vectors(conn: Connection, vectors: Iterable[tuple[int, bytes]], now: str) -> None:
    """Insert vectors for chunk ids and mark those chunks embedded, in one transaction."""
    rows = [{"id": chunk_id, "embedding": blob, "now": now} for chunk_id, blob in vectors]
    with transaction(conn):
        conn.executemany("DELETE FROM vec_chunks WHERE rowid = :id", rows)
        conn.executemany("INSERT INTO vec_chunks (rowid, embedding) VALUES (:id, :embedding)", rows)
        conn.executemany("INSERT OR REPLACE INTO chunk_vectors (chunk_id, embedding) VALUES (:id, :embedding)",
                         rows)
        conn.executemany("UPDATE chunks SET embedded_at = :now WHERE id = :id", rows)
        _bump(conn, "vectors_version")


def vectors_version(conn: Connection) -> str:
    """A counter that moves whenever vectors are stored or deleted."""
    row = conn.execute("SELECT value FROM meta WHERE key = 'vectors_version'").fetchone()
    return row[0] if row else "0"


def content_token(conn: Connection) -> str:
    """Names what the index holds for the pages: this generation and its ``content_version``. Equal
    tokens mean the same notes, titles, headings and dates (the site rendered from one is current)."""
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'content_version')"))
    return f"{rows.get('generation', '')}#{rows.get('content_version', '0')}"


def content_changes(conn: Connection, since: str) -> list[tuple[str, str]] | None:
    """The notes (source id, path) written, touched or deleted since the index's content token was
    ``since`` (see :func:`content_token`), or None when the index cannot tell: another generation,
    changes older than :data:`CONTENT_LOG_KEEP`, or a whole source removed."""
    generation, _, version = since.rpartition("#")
    rows = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'content_version')"))
    if generation != rows.get("generation", "") or not (version.isascii() and version.isdigit()):
        return None
    now, then = int(rows.get("content_version", "0")), int(version)
    if now < then or now - then > CONTENT_LOG_KEEP:
        return None
    cursor = conn.cursor()
    cursor.row_factory = None
    found = cursor.execute("SELECT source_id, path FROM content_log WHERE version > :then",
                           {"then": then}).fetchall()
    if len(found) != now - then or any(path is None for _, path in found):  # not every change logged
        return None
    return sorted(set(found))


# ---------------------------------------------------------------- counts and listings


_COUNTS = {  # what each figure counts; chunks_fts: the rows FTS5 actually indexed (not its content table)
    "files": "SELECT count(*) FROM files",
    "chunks": "SELECT count(*) FROM chunks",
    "chunks_fts": "SELECT count(*) FROM chunks_fts_docsize",
    "vec_chunks": "SELECT count(*) FROM vec_chunks",
}


def counts(conn: Connection) -> dict[str, int]:
    """Rows of notes, chunks, FTS5-indexed chunks and vectors."""
    return {name: 0 if name == "vec_chunks" and not has_vec_table(conn) else int(conn.execute(sql).fetchone()[0])
            for name, sql in _COUNTS.items()}


def source_stats(conn: Connection) -> dict[str, dict[str, int]]:
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


def notes_for_toc(conn: Connection, source_id: str | None, tag: str | None) -> list[Row]:
    """Published notes with title, tags and headings, ordered by source and path."""
    return conn.execute(dedent(f"""
        SELECT source_id, path, title, tags, headings FROM files AS f
        WHERE status = 'ok'
          AND (:source_id IS NULL OR source_id = :source_id)
          AND {tag_filter(conn)}
        ORDER BY source_id, path
    """), {"source_id": source_id, "tag": tag}).fetchall()


def note_headings(conn: Connection, source_id: str, path: str) -> list[dict[str, Any]]:
    """One note's headings (``level``, ``text``, ``anchor``, 1-based ``line``), in order."""
    row = conn.execute("SELECT headings FROM files WHERE source_id = :source_id AND path = :path",
                       {"source_id": source_id, "path": path}).fetchone()
    return list(json.loads(row[0])) if row else []


def file_status(conn: Connection, source_id: str, path: str) -> tuple[str, str] | None:
    """The index's ``status`` (``ok``, ``unpublished``, ``skipped``) and ``sha256`` of one file, or None
    when the index does not hold it."""
    row = conn.execute("SELECT status, sha256 FROM files WHERE source_id = :source_id AND path = :path",
                       {"source_id": source_id, "path": path}).fetchone()
    return (row["status"], row["sha256"]) if row else None


def code_pages(conn: Connection) -> dict[tuple[str, str], str]:
    """(source, path) → the code page the build read the note in, for every note not in UTF-8."""
    if "encoding" not in {row[1] for row in conn.execute("PRAGMA table_info(files)")}:
        return {}  # an index from before schema step 8 (a reader does not migrate it)
    return {(r[0], r[1]): r[2] for r in conn.execute(
        "SELECT source_id, path, encoding FROM files WHERE encoding IS NOT NULL AND status = 'ok'")}


def file_statuses(conn: Connection) -> dict[tuple[str, str], tuple[str, str]]:
    """(source, path) → the index's ``status`` and ``sha256`` of every file it holds (:func:`file_status`
    for all of them in one query: grep asks about many)."""
    return {(r[0], r[1]): (r[2], r[3]) for r in conn.execute("SELECT source_id, path, status, sha256 FROM files")}


# The front matter keys that date a note, in order of preference (Hugo, Jekyll, Obsidian spellings).
CREATED_KEYS = ("date", "created")
UPDATED_KEYS = ("updated", "lastmod", "modified")


class NoteRow(NamedTuple):
    """One note as :func:`notes_for_render` returns it."""

    source_id: str
    path: str
    title: str
    tags: str  # JSON list
    headings: str  # JSON list of {anchor, level, line, text}
    changed_at: str | None
    changed_by: str | None
    sha256: str
    created: Any  # the front matter's value as written (any JSON type), or None
    updated: Any


def notes_for_render(conn: Connection, keys: Iterable[tuple[str, str]] | None = None) -> list[NoteRow]:
    """Every published note (or those of ``keys``, (source id, path) pairs) with what its page, the
    tables of contents and tag pages show; ``created`` and ``updated`` are the front matter's own
    dates as written (or NULL), ``changed_at`` and ``changed_by`` the last change the build saw
    (git: the last commit touching the note; else its file)."""
    def first_of(names: tuple[str, ...]) -> str:
        # json_extract only where the text names a key (the front matter is stored by json.dumps, which
        # writes ASCII names as they are): a render reads every note, most of them without dates
        named = " OR ".join(f"instr(front_matter, '\"{name}\"')" for name in names)
        found = ", ".join(f"json_extract(front_matter, '$.{name}')" for name in names)
        return f"CASE WHEN {named} THEN coalesce({found}, NULL) END"

    columns = {r[1] for r in conn.execute("PRAGMA table_info(files)")}
    author = "changed_by" if "changed_by" in columns else "NULL AS changed_by"  # an index before schema step 2
    chosen = "" if keys is None else dedent("""
        AND (source_id, path) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')
                                  FROM json_each(:keys))""")
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: this runs over every note on every render
    rows = cursor.execute(dedent(f"""
        SELECT source_id, path, title, tags, headings, changed_at, {author}, sha256,
               {first_of(CREATED_KEYS)} AS created, {first_of(UPDATED_KEYS)} AS updated
        FROM files
        WHERE status = :status {chosen}
        ORDER BY source_id, path
    """), {"status": "ok", "keys": json.dumps(sorted(keys or ()))})
    return list(map(NoteRow._make, rows))

