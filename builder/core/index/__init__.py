"""The SQLite index: every SQL statement the index sees is in this package.

One file holds ``files``, ``chunks``, ``chunks_fts`` (FTS5, external content:
new chunks' words put in by the writer, deletes and updates by triggers),
``vec_chunks`` (sqlite-vec ``vec0``, ``rowid = chunks.id``) and
``chunk_vectors`` (the same vectors by chunk id, for exact re-scoring).
Its modules: :mod:`.connection` (opening it), :mod:`.schema` (numbered schema
steps, ``meta`` and the identity check), :mod:`.notes` (what the build writes,
what tables of contents read), :mod:`.batch` (many notes per transaction),
:mod:`.queries` (what a search reads), :mod:`.carry` (notes a ``--full`` build keeps from
the previous generation). Callers
use the names re-exported here: ``from builder.core import index as db``.
:mod:`.jobqueue` holds the SQL of the sync job queue, a small database of its
own (``jobs.sqlite``) beside the index, and :mod:`.renderstate` that of the
render's manifest (``<site>/.render-state``); each is imported by its full name.
"""

from builder.core.index.batch import WriteBatch, merge_words, word_segments
from builder.core.index.carry import carry_notes
from builder.core.index.connection import (
    checkpoint,
    connect,
    load_vec,
    open_index,
    read_snapshot,
    snapshot_only,
    sqlite_module,
    transaction,
    vec_version,
)
from builder.core.index.notes import (
    UNREAD,
    FileRecord,
    FileState,
    NoteRow,
    SourceRow,
    code_pages,
    content_changes,
    content_token,
    count_chunks,
    count_chunks_up_to,
    count_pending,
    counts,
    delete_file,
    delete_source,
    file_states,
    FolderSummary,
    folder_summary,
    file_status,
    file_statuses,
    get_sources,
    note_headings,
    notes_for_render,
    notes_for_toc,
    pending_chunks,
    replace_file,
    set_last_change,
    source_stats,
    store_current_vectors,
    store_vectors,
    touch_file,
    update_source,
    upsert_source,
    vector_progress,
    vectors_version,
    waiting_shas,
)
from builder.core.index.queries import (
    StoredChunk,
    chunk_details,
    count_vectors,
    database_file,
    filter_chunk_ids,
    frequent_words,
    fts_search,
    has_chunk_vectors,
    has_vocabulary,
    has_word_or_key,
    iter_chunk_vectors,
    tag_chunk_ids,
    key_chunk_counts,
    knn_search,
    stored_chunk,
    tag_exists,
    tag_names,
    vector_candidates,
    vectors_of,
    words_starting,
)
from builder.core.index.schema import (
    CHUNKER_VERSION,
    check_identity,
    chunk_stems,
    ensure_vec_table,
    expected_identity,
    fts_integrity_error,
    get_meta,
    has_stems,
    has_vec_table,
    identity_diffs,
    migrate,
    set_meta,
)

__all__ = [
    "carry_notes", "check_identity", "checkpoint", "chunk_details", "chunk_stems", "stored_chunk", "StoredChunk",
    "CHUNKER_VERSION", "code_pages",
    "connect",
    "content_changes", "content_token",
    "count_chunks", "count_chunks_up_to", "count_pending", "count_vectors", "counts", "database_file", "delete_file",
    "delete_source",
    "ensure_vec_table", "expected_identity", "identity_diffs", "file_states", "file_status", "file_statuses",
    "FileRecord", "FileState",
    "filter_chunk_ids", "FolderSummary", "folder_summary", "frequent_words", "fts_integrity_error", "fts_search",
    "get_meta", "get_sources",
    "has_stems",
    "has_chunk_vectors", "has_vec_table", "has_vocabulary", "has_word_or_key", "iter_chunk_vectors", "key_chunk_counts",
    "knn_search", "load_vec", "merge_words", "migrate",
    "note_headings", "NoteRow", "notes_for_render", "notes_for_toc", "open_index", "pending_chunks", "read_snapshot",
    "replace_file", "set_last_change", "set_meta", "snapshot_only", "source_stats", "SourceRow",
    "sqlite_module", "store_current_vectors", "store_vectors", "tag_chunk_ids", "tag_exists", "tag_names",
    "touch_file", "transaction",
    "UNREAD",
    "update_source", "upsert_source", "vec_version", "vector_candidates", "vector_progress",
    "vectors_of", "vectors_version", "waiting_shas", "word_segments", "words_starting", "WriteBatch",
]
