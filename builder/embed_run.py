"""Vectors after pages and words: the chunks a build left waiting (``embedded_at IS NULL``) get theirs.

A build makes its changes browsable and searchable by words first. Holding the build lock it gives
the new chunks only the vectors the cache already has (:func:`fill_from_cache`: no model, thousands
a second), so renames, ``--full`` rebuilds and upgrades stay complete. The text the model has never
seen is embedded after the build lock is released (:func:`backfill`), by one process at a time
(``embed.lock``): an edit saved meanwhile is indexed and rendered by the next build at once, which
writes beside the backfill (SQLite's writers take turns, each transaction short). Each batch's
vectors go to the cache as soon as they are computed, so a backfill that is killed resumes where
it stopped. ``notes-portal build`` starts the backfill in a process of its own
(:func:`start_backfill`) and returns; ``notes-portal embed`` runs it in the foreground.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

from builder import indexfile
from builder.core import index as db
from builder.core.clock import now_iso
from builder.core.config import Config
from builder.core.errors import EXIT_OK, EXIT_PARTIAL
from builder.core.embedding import (
    EmbedderFactory,
    EmbeddingError,
    fingerprint,
    make_embedder,
)
from builder.embed_cache import EmbeddingCache
from builder.lock import BuildLock
from builder.core.synclog import SyncLog

if TYPE_CHECKING:
    from sqlite3 import Connection

PAGE = 256  # chunks read at a time; their vectors are stored a provider batch at a time
CACHE_PAGE = 4096  # chunks looked up in the cache at a time by a build


def _progress_bar(total: int) -> Any:
    """A progress bar on stderr for long runs in a terminal; a no-op object otherwise."""
    if total >= 64 and sys.stderr.isatty():
        from tqdm import tqdm

        try:  # a terminal that reports no width (some pseudo-terminals) would get an empty bar
            ncols = None if os.get_terminal_size(sys.stderr.fileno()).columns else 80
        except OSError:
            ncols = 80
        return tqdm(total=total, unit="chunk", desc="embedding", file=sys.stderr, leave=False, ncols=ncols)

    class _Silent:
        def update(self, n: int) -> None: ...

        def close(self) -> None: ...

    return _Silent()


def _check(vectors: list[bytes], expected: int, dims: int) -> None:
    """A provider must answer one vector of ``dims`` float32 per text: else the chunks without one
    would stay pending and be asked for again forever, or vec0 would refuse the batch."""
    if len(vectors) != expected:
        raise EmbeddingError(f"the provider returned {len(vectors)} vectors for {expected} texts")
    wrong = next((len(v) // 4 for v in vectors if len(v) != dims * 4), None)
    if wrong is not None:
        raise EmbeddingError(f"the provider returned vectors of {wrong} dimensions, the config says dims: {dims}")


def fill_from_cache(conn: Connection, config: Config, log: SyncLog) -> bool:
    """Give every waiting chunk whose text the cache knows its vector (no model). False when the
    vectors could not be stored (a full disk): the build is then partial."""
    model = fingerprint(config.embedding)
    try:
        cache = EmbeddingCache(config.cache_path)
    except db.sqlite_module().Error as exc:  # e.g. no room for its WAL files on a full disk
        log.warn(f"cannot open the embedding cache ({exc}); the chunks wait for vectors and the next build retries")
        return False
    reused = 0
    try:
        after = 0
        while rows := db.waiting_shas(conn, CACHE_PAGE, after=after):
            after = rows[-1][0]
            cached = cache.get(model, [sha for _, sha in rows])
            hits = [(chunk_id, sha, cached[sha]) for chunk_id, sha in rows if sha in cached]
            if hits:
                reused += db.store_current_vectors(conn, hits, now_iso())
    except db.sqlite_module().Error as exc:
        log.warn(f"cannot store vectors in the index ({exc}); the chunks wait for vectors and the next build retries")
        return False
    finally:
        cache.close()
    if reused:
        log.info(f"embedded {reused} chunks from the cache")
    return True


def backfill(config: Config, *, embedder_factory: EmbedderFactory | None = None, log: SyncLog | None = None,
             budget_s: float | None = None, wait: bool = False) -> int:
    """Embed the waiting chunks of the current index (following a ``--full`` swap), one page at a time,
    until none waits or ``budget_s`` has passed. Another backfill running: return at once (or with
    ``wait``, run after it). A provider that fails leaves the chunks waiting (a WARN; the next build's
    backfill tries again): only vectors that cannot be stored make this partial."""
    log = log or SyncLog(config.log_path)
    if not config.embedding.enabled:
        return EXIT_OK
    with BuildLock(config.embed_lock_path, wait=wait) as lock:
        if not lock.acquired:
            return EXIT_OK
        return _backfill(config, embedder_factory, log, budget_s)


def _backfill(config: Config, embedder_factory: EmbedderFactory | None, log: SyncLog,
              budget_s: float | None) -> int:
    deadline = None if budget_s is None else time.monotonic() + budget_s
    model = fingerprint(config.embedding)
    embedder: Any = None
    computed = reused = 0
    code = EXIT_OK
    path = indexfile.resolve(config.index)
    if path is None:
        return EXIT_OK
    try:
        cache = EmbeddingCache(config.cache_path)
        conn = db.connect(path)
    except db.sqlite_module().Error as exc:
        log.warn(f"cannot open the index or the embedding cache ({exc}); the chunks wait for vectors and the "
                 "next build retries")
        return EXIT_PARTIAL
    bar = _progress_bar(db.count_pending(conn))
    try:
        after, stored_in_pass = 0, 0
        while deadline is None or time.monotonic() < deadline:
            now = indexfile.resolve(config.index)
            if now is not None and now != path:  # a --full build swapped in a new index: fill that one
                conn.close()
                path, conn, after = now, db.connect(now), 0
            rows = db.pending_chunks(conn, PAGE, after=after)
            if not rows:  # one more pass for chunks a build wrote meanwhile below ``after``, if this one did any
                if after == 0 or not stored_in_pass:
                    break
                after, stored_in_pass = 0, 0
                continue
            after = rows[-1]["id"]
            cached = cache.get(model, [r["embed_sha"] for r in rows])
            waiting: dict[str, list[int]] = {}  # each distinct text once (copied notes share their chunks' text)
            for r in rows:
                waiting.setdefault(r["embed_sha"], []).append(r["id"])
            texts = {r["embed_sha"]: r["embed_text"] for r in rows}
            missing = [sha for sha in waiting if sha not in cached]
            known = [(chunk_id, sha, cached[sha]) for sha, ids in waiting.items() if sha in cached for chunk_id in ids]
            stored = db.store_current_vectors(conn, known, now_iso()) if known else 0
            reused += stored
            bar.update(len(known))
            if missing and embedder is None:
                embedder = (embedder_factory or make_embedder)(config.embedding)
            for start in range(0, len(missing), config.embedding.batch):
                if deadline is not None and time.monotonic() >= deadline:
                    break
                part = missing[start:start + config.embedding.batch]
                vectors = embedder.embed_passages([texts[sha] for sha in part])
                _check(vectors, len(part), config.embedding.dims)
                cache.put(model, dict(zip(part, vectors, strict=True)))  # kept even if this process dies now
                new = db.store_current_vectors(conn, [(chunk_id, sha, vector) for sha, vector in
                                                      zip(part, vectors, strict=True) for chunk_id in waiting[sha]],
                                               now_iso())
                computed += len(part)
                reused += max(new - len(part), 0)  # copies of a text computed once
                stored += new
                bar.update(sum(len(waiting[sha]) for sha in part))
            stored_in_pass += stored
    except db.sqlite_module().Error as exc:  # the index could not take them (a full disk)
        code = EXIT_PARTIAL
        log.warn(f"cannot store vectors in the index ({exc}); the chunks wait for vectors and the next build retries")
    except Exception as exc:  # a provider's failure, of any kind, leaves chunks pending: never a crash
        reason = str(exc) if isinstance(exc, EmbeddingError) else f"{type(exc).__name__}: {exc}"
        left = db.count_pending(conn)
        log.warn(f"embeddings unavailable ({reason}): {left} chunks wait for vectors; the next build retries")
    finally:
        bar.close()
        left = _left(conn) if code == EXIT_OK and deadline is not None and time.monotonic() >= deadline else 0
        conn.close()
        cache.close()
    if computed or reused:
        rest = f"; {left} wait for the next backfill (the time budget is spent)" if left else ""
        log.info(f"embedded {computed + reused} chunks ({computed} computed, {reused} from the cache){rest}")
    return code


def _left(conn: Connection) -> int:
    try:
        return db.count_pending(conn)
    except db.sqlite_module().Error:
        return 0


def start_backfill(config: Config) -> bool:
    """Start ``notes-portal embed --background`` in a process of its own when chunks wait for vectors
    and no backfill is running; it outlives this process (cron's build, a job's child build)."""
    if not config.embedding.enabled:
        return False
    with BuildLock(config.embed_lock_path) as lock:  # a look only: released at once, the child takes it again
        if not lock.acquired:
            return False
    from builder.core.interpreter import child_environment, python_command

    subprocess.Popen(python_command("-m", "builder.cli", "embed", "--background", "--config", str(config.path)),
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, env=child_environment())
    return True
