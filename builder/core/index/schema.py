"""The index's schema (numbered steps), its ``meta`` table and its identity check.

Each schema step runs once, in one transaction, and is recorded in
``meta.schema_version``; a file from before a step gains it on the next build.
The identity (embedding space, chunker, text analysis) is written into ``meta``
when a generation is created and checked before every query and incremental
build: an index made another way answers ``reindex needed`` instead of mixing
two worlds.
"""

from __future__ import annotations

from collections.abc import Callable
from textwrap import dedent
from typing import TYPE_CHECKING

from builder.core.analysis import ANALYSIS_VERSION, stem_text
from builder.core.config import Config
from builder.core.errors import ReindexNeeded
from builder.core.index.connection import load_vec, sqlite_module, transaction

if TYPE_CHECKING:
    from sqlite3 import Connection

# Bump whenever builder/chunker.py (or builder/notes/parse.py) would cut a note differently: the next build
# then makes a new index (vectors of unchanged texts from the cache) instead of holding chunks of two
# kinds; the old one answers queries meanwhile.
# 2: chunks fit the local model's 512 tokens; 3: pieces name the H4–H6 they start under;
# 4: front matter YAML refuses is read line by line (its title, its ``published: false``); 5: chunks keep the
# places of the sections they hold after their first (``chunks.places``, step 15).
CHUNKER_VERSION = "5"
# What the stems column holds: the analysis's keys, laid out by chunk_stems (/2: the breadcrumb twice).
# An index whose stems were made otherwise has them made again when a build opens it.
STEMS_VERSION = f"{ANALYSIS_VERSION}/2"


def _add_stems(conn: Connection) -> None:
    """Step 3: the ``stems`` column (Czech/Slovak word keys, see :mod:`builder.core.analysis`) in
    ``chunks`` and ``chunks_fts``; an FTS5 table cannot gain a column, so it is made again."""
    conn.execute("ALTER TABLE chunks ADD COLUMN stems TEXT NOT NULL DEFAULT ''")
    for statement in _statements(_FTS_WITH_STEMS):
        conn.execute(statement)
    conn.execute(dedent(_UPDATE_TRIGGER))
    _fill_stems(conn)


# A query word of 3 or more letters is searched as a prefix ("pro"* finds "program"): FTS5's prefix
# index for 3 letters answers the short ones at once, a longer one reads the few terms it starts. An
# index for 2 and 4 letters too made writing the words of a first build 1.6× slower and the index a
# third bigger; it made only 4-letter prefixes faster, by ~2 ms at 100,000 chunks (BENCHMARKS, session 8).
_PREFIX_OPTION = "prefix='3'"
_FTS_TABLE = f"""
    CREATE VIRTUAL TABLE chunks_fts USING fts5(
      breadcrumb, text, stems,
      content='chunks', content_rowid='id',
      tokenize='unicode61 remove_diacritics 2',
      {_PREFIX_OPTION}
    )
"""


_FTS_WITH_STEMS = f"""
    DROP TRIGGER IF EXISTS chunks_ai;
    DROP TRIGGER IF EXISTS chunks_ad;
    DROP TRIGGER IF EXISTS chunks_au;
    DROP TABLE IF EXISTS chunks_fts;
    {_FTS_TABLE.strip()};
    CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
      INSERT INTO chunks_fts(rowid, breadcrumb, text, stems) VALUES (new.id, new.breadcrumb, new.text, new.stems);
    END;
    CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
      INSERT INTO chunks_fts(chunks_fts, rowid, breadcrumb, text, stems)
        VALUES ('delete', old.id, old.breadcrumb, old.text, old.stems);
    END;
"""
_UPDATE_TRIGGER = """
    CREATE TRIGGER chunks_au AFTER UPDATE OF breadcrumb, text, stems ON chunks BEGIN
      INSERT INTO chunks_fts(chunks_fts, rowid, breadcrumb, text, stems)
        VALUES ('delete', old.id, old.breadcrumb, old.text, old.stems);
      INSERT INTO chunks_fts(rowid, breadcrumb, text, stems) VALUES (new.id, new.breadcrumb, new.text, new.stems);
    END
"""


def _fill_stems(conn: Connection) -> None:
    """Compute every chunk's stems with today's analysis and index them again (inside the caller's
    transaction; about 10 s per 100,000 chunks)."""
    rows = conn.execute("SELECT id, breadcrumb, text FROM chunks").fetchall()
    conn.execute("DROP TRIGGER IF EXISTS chunks_au")  # one 'rebuild' below instead of a re-index per row
    conn.executemany("UPDATE chunks SET stems = :stems WHERE id = :id",
                     [{"id": r[0], "stems": chunk_stems(r[1], r[2])} for r in rows])
    conn.execute(dedent(_UPDATE_TRIGGER))
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    set_meta(conn, {"text_analysis": STEMS_VERSION})


def chunk_stems(breadcrumb: str, text: str) -> str:
    """What the ``stems`` column holds for a chunk: the keys of its breadcrumb, twice, and of its
    text. A heading counts twice as much as the text in the exact columns (BM25 weights 2 and 1);
    counted twice here too, a section headed by the query's words in another form (``Konverzia
    reťazca`` for ``konverzie reťazcov``) ranks like one headed by them as typed."""
    return stem_text(f"{breadcrumb}\n{breadcrumb}\n{text}")


def has_stems(conn: Connection) -> bool:
    """Are this index's stems made by today's analysis (else a query must not use them)? Stems laid out
    before ``chunk_stems`` counted the breadcrumb twice hold the same keys: a query may use them until
    a build lays them out again (see :func:`migrate`)."""
    return _stems_made_by(conn) in (STEMS_VERSION, ANALYSIS_VERSION)


def _stems_made_by(conn: Connection) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = 'text_analysis'").fetchone()
    return row[0] if row is not None else None


def _add_chunk_vectors(conn: Connection) -> None:
    """Step 5: ``chunk_vectors``, each chunk's vector by its id. ``vec_chunks`` answers KNN scans; a
    point lookup there costs ~0.25 ms (measured at 100,000 vectors), so the server's compact
    in-memory copy re-scores its candidates from here (see server.vectors). Rows go with their
    chunk (a foreign key), filled from ``vec_chunks`` for an index from before this step."""
    conn.execute(dedent("""
        CREATE TABLE IF NOT EXISTS chunk_vectors (
          chunk_id  INTEGER PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE,
          embedding BLOB NOT NULL
        )
    """))
    if has_vec_table(conn):
        try:
            conn.execute("SELECT vec_version()")
        except sqlite_module().OperationalError:  # a build loads sqlite-vec only when it writes
            load_vec(conn)
        conn.execute(dedent("""
            INSERT OR REPLACE INTO chunk_vectors (chunk_id, embedding)
            SELECT v.rowid, v.embedding FROM vec_chunks AS v JOIN chunks AS c ON c.id = v.rowid
        """))


def _one_prefix_index(conn: Connection) -> None:
    """Step 7: ``chunks_fts`` made again with the one prefix index queries use (its triggers name the
    table, so they stay), and the words indexed again (~5 s per 100,000 chunks). ``files.links``,
    written since step 1 and never read (the renderer finds a note's links itself), is dropped where
    SQLite can (3.35 on; an older SQLite keeps it, unused and empty for new notes, for good). Each
    part only where it is still to do."""
    made = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]
    if _PREFIX_OPTION not in made:
        conn.execute("DROP TABLE chunks_fts")
        conn.execute(dedent(_FTS_TABLE))
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    columns = {row[1] for row in conn.execute("PRAGMA table_info(files)")}
    if "links" in columns and sqlite_module().sqlite_version_info >= (3, 35, 0):
        conn.execute("ALTER TABLE files DROP COLUMN links")


def _add_encoding(conn: Connection) -> None:
    """Step 8: ``files.encoding``, the code page the build read a note in when it was not UTF-8
    (a key of :data:`builder.core.textdecode.LEGACY_ENCODINGS`; NULL: UTF-8), so that ``grep`` reads
    it the same way. Notes indexed before this step say NULL until they change (or ``build --full``)."""
    if "encoding" not in {row[1] for row in conn.execute("PRAGMA table_info(files)")}:
        conn.execute("ALTER TABLE files ADD COLUMN encoding TEXT")


def _add_stats_digest(conn: Connection) -> None:
    """Step 14: ``sources.stats_digest``, a digest of the (path, size, mtime) of every file the index holds
    of a folder source (see :class:`builder.core.index.notes.SourceRow`): a no-op build compares its walk
    with it instead of reading every file's row. NULL until the source's next build keeps one."""
    if "stats_digest" not in {row[1] for row in conn.execute("PRAGMA table_info(sources)")}:
        conn.execute("ALTER TABLE sources ADD COLUMN stats_digest TEXT")


def _add_places(conn: Connection) -> None:
    """Step 15: ``chunks.places``, where the sections a chunk holds after its first begin in its text (JSON
    ``[[offset, breadcrumb, anchor], …]``, :class:`builder.chunker.Place`): a search hit links to the one
    its words are in. ``[]`` in chunks cut before it; CHUNKER_VERSION 5 has every note cut again."""
    if "places" not in {row[1] for row in conn.execute("PRAGMA table_info(chunks)")}:
        conn.execute("ALTER TABLE chunks ADD COLUMN places TEXT NOT NULL DEFAULT '[]'")


def _add_note_tags(conn: Connection) -> None:
    """Step 12: each note's tags, casefolded, in a table of their own (kept by triggers on ``files``), so a
    tag filter is an index lookup, not ``json_each`` of every note's tags with a casefold per tag."""
    for statement in _NOTE_TAGS:  # one by one: executescript would commit the step's transaction
        conn.execute(dedent(statement))


_NOTE_TAGS = (
    """
    CREATE TABLE IF NOT EXISTS note_tags (
      tag_key   TEXT NOT NULL,  -- casefold() of the tag as written
      source_id TEXT NOT NULL,
      path      TEXT NOT NULL,
      PRIMARY KEY (tag_key, source_id, path)
    ) WITHOUT ROWID
    """,
    "CREATE INDEX IF NOT EXISTS note_tags_note ON note_tags (source_id, path)",
    """
    CREATE TRIGGER IF NOT EXISTS files_tags_ai AFTER INSERT ON files BEGIN
      INSERT OR IGNORE INTO note_tags SELECT casefold(value), new.source_id, new.path FROM json_each(new.tags);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS files_tags_au AFTER UPDATE OF tags, source_id, path ON files BEGIN
      DELETE FROM note_tags WHERE source_id = old.source_id AND path = old.path;
      INSERT OR IGNORE INTO note_tags SELECT casefold(value), new.source_id, new.path FROM json_each(new.tags);
    END
    """,
    """
    CREATE TRIGGER IF NOT EXISTS files_tags_ad AFTER DELETE ON files BEGIN
      DELETE FROM note_tags WHERE source_id = old.source_id AND path = old.path;
    END
    """,
    """
    INSERT OR IGNORE INTO note_tags
      SELECT casefold(j.value), f.source_id, f.path FROM files AS f, json_each(f.tags) AS j
    """,
)


SCHEMA_STEPS: tuple[str | Callable[[Connection], None], ...] = (
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
    # 3: word keys for Czech and Slovak inflection next to the exact text
    _add_stems,
    # 4: the words the full-text index holds, with how many chunks hold each (for typo suggestions)
    """
    CREATE VIRTUAL TABLE IF NOT EXISTS chunks_vocab USING fts5vocab(chunks_fts, 'col');
    """,
    # 5: each chunk's vector in a plain table too, for exact re-scoring by id
    _add_chunk_vectors,
    # 6: new chunks' words go into chunks_fts by the writer, many notes per statement (see
    # notes.WriteBatch), not by a trigger per chunk; deletes and updates keep their triggers
    """
    DROP TRIGGER IF EXISTS chunks_ai;
    """,
    # 7: one prefix index (3 letters) instead of three, and no ``files.links``
    _one_prefix_index,
    # 8: the code page a note not in UTF-8 was read in (NULL: UTF-8), for grep
    _add_encoding,
    # 9: which note each move of ``content_version`` was for (see notes.content_changes)
    """
    CREATE TABLE IF NOT EXISTS content_log (
      version   INTEGER PRIMARY KEY,  -- the content_version this change moved meta to
      source_id TEXT NOT NULL,
      path      TEXT                  -- NULL: the whole source (it left the config)
    );
    """,
    # 10: FTS5 gathers 16 MB of new words in memory before it writes them out as a segment (1 MB by
    # default): fewer, larger segments for its merges to join; a first build's index stage at 10,000
    # notes 8.7 -> 8.0 s (bench/ab.py build --first, docs/BENCHMARKS.md); FTS5 keeps the setting
    """
    INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('hashsize', 16777216);
    """,
    # 11: the chunks waiting for vectors, found without a scan of every chunk (a search says how far
    # the vectors have got while they are backfilled: notes.vector_progress)
    """
    CREATE INDEX IF NOT EXISTS chunks_waiting ON chunks(id) WHERE embedded_at IS NULL;
    """,
    # 12: each note's tags in a table of their own, for tag filters (see _add_note_tags)
    _add_note_tags,
    # 13: step 11's index was step 1's idx_chunks_pending again: every write of a chunk kept both
    """
    DROP INDEX IF EXISTS chunks_waiting;
    """,
    # 14: a digest of every folder source's file stats, for the no-op build (see _add_stats_digest)
    _add_stats_digest,
    # 15: where the sections a chunk holds after its first begin (see _add_places)
    _add_places,
)



def migrate(conn: Connection) -> None:
    """Apply the schema steps this file has not seen yet, each once and in its own transaction."""
    conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    current = int(row[0]) if row else 0
    for number, step in enumerate(SCHEMA_STEPS, start=1):
        if number > current:
            with transaction(conn):
                if callable(step):
                    step(conn)
                else:
                    for statement in _statements(step):
                        conn.execute(statement)
                set_meta(conn, {"schema_version": str(number)})
    row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    if row is not None and int(row[0]) >= 3 and _stems_made_by(conn) != STEMS_VERSION:  # made otherwise
        with transaction(conn):
            _fill_stems(conn)


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


def ensure_vec_table(conn: Connection, dims: int) -> None:
    """Create ``vec_chunks`` for ``dims``-dimensional cosine vectors (dims is a validated int)."""
    conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS vec_chunks USING vec0("
                 f"embedding float[{int(dims)}] distance_metric=cosine)")


def has_table(conn: Connection, name: str) -> bool:
    """Does this index have the table ``name`` (a schema step, or ``vec_chunks``, may be missing)?"""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = :name", {"name": name}).fetchone() is not None


def has_vec_table(conn: Connection) -> bool:
    """Does this index have its vector table (an index built with ``provider: none`` has none)?"""
    return has_table(conn, "vec_chunks")


def get_meta(conn: Connection) -> dict[str, str]:
    """Every ``meta`` key and value."""
    return {row["key"]: row["value"] for row in conn.execute("SELECT key, value FROM meta")}


def set_meta(conn: Connection, values: dict[str, str]) -> None:
    """Insert or overwrite ``meta`` keys (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO meta (key, value) VALUES (:key, :value) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        [{"key": k, "value": v} for k, v in values.items()],
    )


def expected_identity(config: Config) -> dict[str, str]:
    """What ``meta`` must say for this config's queries to be answerable."""
    fit = "model-512" if config.embedding.provider == "local" else "chars"  # see builder.chunker
    return {**config.embedding.identity(), "chunker_version": CHUNKER_VERSION, "chunk_fit": fit}


def identity_diffs(conn: Connection, config: Config, *, space_only: bool = False) -> list[str]:
    """How the index was made otherwise than ``config`` and this code ask for (``[]``: the same way);
    ``space_only``: only what defines the embedding space (not how the notes were cut into chunks)."""
    meta = get_meta(conn)
    space = config.embedding.identity()
    wanted = space if space_only else expected_identity(config)
    diffs = [f"{key} is {meta.get(key)!r} in the index but {value!r} "
             f"{'in the config' if key in space else 'in this version of notes-portal'}"
             for key, value in wanted.items() if meta.get(key) != value]
    made = int(meta.get("schema_version") or 0)
    if not space_only and made > len(SCHEMA_STEPS):  # a newer notes-portal laid it out (a downgrade)
        diffs.append(f"schema_version is {made} in the index but this version of notes-portal knows "
                     f"{len(SCHEMA_STEPS)} steps")
    return diffs


def check_identity(conn: Connection, config: Config) -> None:
    """Raise :class:`ReindexNeeded` when the index's vectors live in another embedding space than
    ``config`` asks for. Chunks cut by another chunker (after an upgrade) still answer queries; the
    next build replaces them by itself."""
    diffs = identity_diffs(conn, config, space_only=True)
    if diffs:
        raise ReindexNeeded(f"reindex needed: {'; '.join(diffs)}; run `notes-portal build --full`")


def fts_integrity_error(conn: Connection) -> str | None:
    """FTS5's own ``integrity-check`` of ``chunks_fts`` against its content table: None when sound.
    Needs a writable connection (the check is spelled as an INSERT)."""
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
    except sqlite_module().DatabaseError as exc:
        return str(exc)
    return None
