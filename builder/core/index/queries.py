"""The read path's SQL: BM25 over ``chunks_fts``, KNN over ``vec_chunks``, hit details."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple

from builder.core.index.connection import dedent
from builder.core.index.notes import TAG_FILTER, tag_filter
from builder.core.index.schema import has_table, has_vec_table

if TYPE_CHECKING:
    from sqlite3 import Connection, Row


MAX_VECTOR_CANDIDATES = 4096


def vector_candidates(k: int, filtered: bool) -> int:
    """How many nearest vectors to fetch so that ``k`` remain after a source/tag filter drops some."""
    return min(MAX_VECTOR_CANDIDATES, k * 20) if filtered else k


# Column weights of bm25(chunks_fts): the breadcrumb (title and headings) counts twice the text; the
# stems (word keys of both, the breadcrumb's twice: schema.chunk_stems) once, so a note with the exact
# form scores in more columns than one with another form of the word.
_BM25 = "bm25(chunks_fts, 2.0, 1.0, 1.0)"
_BM25_BEFORE_STEMS = "bm25(chunks_fts, 2.0, 1.0)"  # an index from before schema step 3, read-only


FILTER_WIDEN = 8  # a filtered search first looks among this many times the hits it needs


def tag_chunk_ids(conn: Connection, tag: str, source_id: str | None) -> str | None:
    """The ids of the chunks of the notes tagged ``tag`` (in ``source_id``), a JSON list for
    :func:`fts_search`'s ``within``, worked out once a search; None when they are over one in
    :data:`FILTER_WIDEN` of all chunks (the best of all matches then holds enough of them) or the index
    has no tags' table."""
    if not has_table(conn, "note_tags"):
        return None
    ids, count = conn.execute(dedent("""
        SELECT json_group_array(c.id), count(*)
        FROM note_tags AS t JOIN chunks AS c ON c.source_id = t.source_id AND c.path = t.path
        WHERE t.tag_key = casefold(:tag) AND (:source_id IS NULL OR c.source_id = :source_id)
    """), {"tag": tag, "source_id": source_id}).fetchone()
    top = conn.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0
    return None if count * FILTER_WIDEN > top else str(ids)


def fts_search(conn: Connection, match: str, limit: int, source_id: str | None, tag: str | None,
               stems: bool = True, within: str | None = None) -> list[tuple[int, float]]:
    """Chunks matching the FTS5 expression ``match``: (id, BM25 score, larger is better), best first
    (equal scores, copies of a text among them: the smaller id first). ``within`` (:func:`tag_chunk_ids`)
    lists the only chunks to return, in place of ``source_id`` and ``tag``."""
    rank = _BM25 if stems else _BM25_BEFORE_STEMS  # a fixed choice of two constants, never user text
    if within is not None:
        # FTS5 walks the matches and the list filters them (`+rowid`: as `rowid IN`, FTS5 would run the
        # MATCH once per listed id); only the rows kept are scored
        rows = conn.execute(dedent(f"""
            SELECT rowid, -{rank} AS score FROM chunks_fts
            WHERE chunks_fts MATCH :match AND +rowid IN (SELECT value FROM json_each(:within))
            ORDER BY score DESC, rowid LIMIT :limit
        """), {"match": match, "limit": limit, "within": within}).fetchall()
        return [(row[0], row[1]) for row in rows]
    if source_id is not None or tag is not None:
        # Joined per matching chunk, a filter costs 3-4x the words alone (a common word: 20 → 70-80 ms
        # at 10,000 notes); the best of all matches, filtered afterwards, is the same answer when it
        # holds enough of the source's or tag's chunks, or every match.
        wide = fts_search(conn, match, limit * FILTER_WIDEN, None, None, stems)
        kept = set(filter_chunk_ids(conn, [chunk_id for chunk_id, _ in wide], source_id, tag))
        if len(kept) >= limit or len(wide) < limit * FILTER_WIDEN:
            return [hit for hit in wide if hit[0] in kept][:limit]
    if source_id is None and tag is None:  # FTS5 ranks and limits alone: no join per matching row
        # ordered by the alias, not bm25() again: p95 46 against 54 ms, p50 the same (BENCHMARKS, ab.py search)
        rows = conn.execute(dedent(f"""
            SELECT rowid, -{rank} AS score FROM chunks_fts WHERE chunks_fts MATCH :match
            ORDER BY score DESC, rowid LIMIT :limit
        """), {"match": match, "limit": limit}).fetchall()
        return [(row[0], row[1]) for row in rows]
    rows = conn.execute(dedent(f"""
        SELECT c.id, -{rank} AS score FROM chunks_fts
        JOIN chunks AS c ON c.id = chunks_fts.rowid
        JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE chunks_fts MATCH :match
          AND (:source_id IS NULL OR c.source_id = :source_id)
          AND {tag_filter(conn)}
        ORDER BY score DESC, c.id
        LIMIT :limit
    """), {"match": match, "limit": limit, "source_id": source_id, "tag": tag}).fetchall()
    return [(row[0], row[1]) for row in rows]


def knn_search(conn: Connection, vector: bytes, k: int, source_id: str | None,
               tag: str | None) -> list[tuple[int, float]]:
    """Chunks nearest to ``vector`` by sqlite-vec's scan, filtered by source/tag afterwards:
    (id, cosine similarity), nearest first; equal distances (copies) the smaller id first, as
    BM25 and the server's vectors in memory order them (the fusion breaks its ties by rank)."""
    if not has_vec_table(conn):
        return []
    filtered = source_id is not None or tag is not None
    rows = conn.execute(dedent(f"""
        WITH knn AS (
          SELECT rowid, distance FROM vec_chunks WHERE embedding MATCH :vector AND k = :k
        )
        SELECT c.id, 1.0 - knn.distance FROM knn
        JOIN chunks AS c ON c.id = knn.rowid
        JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE (:source_id IS NULL OR c.source_id = :source_id)
          AND {tag_filter(conn)}
        ORDER BY knn.distance, c.id
    """), {"vector": vector, "k": vector_candidates(k, filtered), "source_id": source_id,
           "tag": tag}).fetchall()
    return [(row[0], row[1]) for row in rows][:k]


def filter_chunk_ids(conn: Connection, ids: Sequence[int], source_id: str | None, tag: str | None) -> list[int]:
    """``ids`` (in their order) that still exist and belong to the source / carry the tag."""
    rows = conn.execute(dedent(f"""
        SELECT c.id FROM json_each(:ids) AS j
        JOIN chunks AS c ON c.id = j.value
        JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE (:source_id IS NULL OR c.source_id = :source_id)
          AND {tag_filter(conn)}
        ORDER BY j.key
    """), {"ids": json.dumps([int(i) for i in ids]), "source_id": source_id, "tag": tag}).fetchall()
    return [row[0] for row in rows]


def chunk_details(conn: Connection, ids: Sequence[int]) -> dict[int, Row]:
    """The display fields of the given chunks, keyed by id, and whether each still waits for its vector."""
    if not ids:
        return {}
    # an index cut before schema step 15 still answers until a build replaces it: its chunks hold no places
    places = "c.places" if _has_places(conn) else "'[]' AS places"
    rows = conn.execute(dedent(f"""
        SELECT c.id, c.source_id, c.path, c.chunk_idx, c.breadcrumb, c.anchor, c.line_start, c.line_end, c.text,
               {places}, f.title, f.tags, c.embedded_at IS NULL AS waiting
        FROM chunks AS c JOIN files AS f ON f.source_id = c.source_id AND f.path = c.path
        WHERE c.id IN (SELECT value FROM json_each(:ids))
    """), {"ids": json.dumps(list(ids))}).fetchall()
    return {row["id"]: row for row in rows}


def _has_places(conn: Connection) -> bool:
    return any(row[1] == "places" for row in conn.execute("PRAGMA table_info(chunks)"))


class StoredChunk(NamedTuple):
    """A chunk's breadcrumb (its first section's) and text, as the answer's passages send them."""

    breadcrumb: str
    text: str


def stored_chunk(conn: Connection, source_id: str, path: str, anchor: str, line_start: int) -> StoredChunk | None:
    """The chunk a search hit shows (a note's chunk by its first section's anchor and its first line), or
    None when a build has replaced it since."""
    row = conn.execute(dedent("""
        SELECT breadcrumb, text FROM chunks
        WHERE source_id = :source_id AND path = :path AND anchor = :anchor AND line_start = :line_start
        ORDER BY chunk_idx LIMIT 1
    """), {"source_id": source_id, "path": path, "anchor": anchor, "line_start": line_start}).fetchone()
    return None if row is None else StoredChunk(str(row[0]), str(row[1]))


def database_file(conn: Connection) -> str:
    """The file behind ``conn`` (its main database)."""
    return str(conn.execute("PRAGMA database_list").fetchone()[2])


def has_vocabulary(conn: Connection) -> bool:
    """Does this index have ``chunks_vocab`` (schema step 4)?"""
    return has_table(conn, "chunks_vocab")


def words_starting(conn: Connection, prefix: str, lengths: tuple[int, int],
                   limit: int) -> list[tuple[str, int]]:
    """Words of the notes' text and headings (folded, as FTS5 holds them) that begin with ``prefix``
    and have from ``lengths[0]`` to ``lengths[1]`` letters, with the number of chunks holding each
    (not the stems column: its keys are not words)."""
    rows = conn.execute(dedent("""
        SELECT term, sum(doc) FROM chunks_vocab
        WHERE term >= :prefix AND term < :prefix || char(1114111) AND col IN ('breadcrumb', 'text')
          AND length(term) BETWEEN :shortest AND :longest
        GROUP BY term ORDER BY term LIMIT :limit
    """), {"prefix": prefix, "shortest": lengths[0], "longest": lengths[1], "limit": limit}).fetchall()
    return [(row[0], int(row[1])) for row in rows]


def frequent_words(conn: Connection, prefix: str, shortest: int, limit: int) -> list[tuple[str, int]]:
    """The ``limit`` words beginning with ``prefix`` (at least ``shortest`` letters) that the most
    chunks hold, with that number, most frequent first (equal counts: in word order); the columns
    as in :func:`words_starting`."""
    rows = conn.execute(dedent("""
        SELECT term, sum(doc) AS chunks FROM chunks_vocab
        WHERE term >= :prefix AND term < :prefix || char(1114111) AND col IN ('breadcrumb', 'text')
          AND length(term) >= :shortest
        GROUP BY term ORDER BY chunks DESC, term LIMIT :limit
    """), {"prefix": prefix, "shortest": shortest, "limit": limit}).fetchall()
    return [(row[0], int(row[1])) for row in rows]


def has_word_or_key(conn: Connection, prefix: str, key: str) -> bool:
    """Does any chunk hold a word beginning with ``prefix`` or the word key ``key`` (stems column)?"""
    row = conn.execute(dedent("""
        SELECT 1 FROM chunks_vocab
        WHERE (term >= :prefix AND term < :prefix || char(1114111) AND col IN ('breadcrumb', 'text'))
           OR (term = :key AND col = 'stems')
        LIMIT 1
    """), {"prefix": prefix, "key": key}).fetchone()
    return row is not None


def key_chunk_counts(conn: Connection, keys: Iterable[str]) -> dict[str, int]:
    """How many chunks hold each word key in the stems column (keys no chunk holds are left out)."""
    rows = conn.execute(dedent("""
        SELECT term, doc FROM chunks_vocab
        WHERE term IN (SELECT value FROM json_each(:keys)) AND col = 'stems'
    """), {"keys": json.dumps(sorted(set(keys)))}).fetchall()
    return {row[0]: int(row[1]) for row in rows}


def has_chunk_vectors(conn: Connection) -> bool:
    """Does this index keep its vectors by id too (schema step 5; the next build adds it)?"""
    return has_table(conn, "chunk_vectors")


def iter_chunk_vectors(conn: Connection, batch: int = 4096) -> Iterator[tuple[int, bytes]]:
    """Every (chunk id, vector bytes) of ``chunk_vectors`` in id order, ``batch`` at a time."""
    cursor = conn.execute("SELECT chunk_id, embedding FROM chunk_vectors ORDER BY chunk_id")
    while rows := cursor.fetchmany(batch):
        for row in rows:
            yield row[0], bytes(row[1])


def vectors_of(conn: Connection, chunk_ids: Iterable[int]) -> list[tuple[int, bytes]]:
    """The vectors of ``chunk_ids`` (those that have one), by id lookups."""
    rows = conn.execute(dedent("""
        SELECT chunk_id, embedding FROM chunk_vectors
        WHERE chunk_id IN (SELECT value FROM json_each(:ids))
    """), {"ids": json.dumps(list(chunk_ids))}).fetchall()
    return [(row[0], bytes(row[1])) for row in rows]


def count_vectors(conn: Connection) -> int:
    """How many chunks have their vector."""
    return int(conn.execute("SELECT count(*) FROM chunks WHERE embedded_at IS NOT NULL").fetchone()[0])


def tag_names(conn: Connection) -> list[tuple[str, int]]:
    """Every tag of a published note with how many notes carry it, the most used first."""
    rows = conn.execute(dedent("""
        SELECT min(value) AS tag, count(DISTINCT f.source_id || char(0) || f.path) AS notes
        FROM files AS f, json_each(f.tags)
        WHERE f.status = 'ok'
        GROUP BY casefold(value)
        ORDER BY notes DESC, tag
    """)).fetchall()
    return [(row[0], row[1]) for row in rows]


def tag_exists(conn: Connection, tag: str) -> bool:
    """Does a published note carry ``tag`` (compared as the tag filter compares)?"""
    if tag_filter(conn) != TAG_FILTER:  # an index from before schema step 12
        return conn.execute(dedent(f"""
            SELECT 1 FROM files AS f WHERE f.status = 'ok' AND {tag_filter(conn)} LIMIT 1
        """), {"tag": tag}).fetchone() is not None
    return conn.execute(dedent("""
        SELECT 1 FROM note_tags AS nt JOIN files AS f ON f.source_id = nt.source_id AND f.path = nt.path
        WHERE nt.tag_key = casefold(:tag) AND f.status = 'ok' LIMIT 1
    """), {"tag": tag}).fetchone() is not None
