"""Fill vectors for chunks with ``embedded_at IS NULL``: cache first, the model only for new text.

The cache key is (model fingerprint, sha256 of the exact input text), so a
rename, a ``--full`` rebuild or an unchanged chunk costs no model call. When the
provider fails, the chunks stay pending and the next build tries again.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core.clock import now_iso
from builder.core.config import Config
from builder.core.embedding import (
    EmbedderFactory,
    EmbeddingError,
    fingerprint,
    make_embedder,
)
from builder.embed_cache import EmbeddingCache
from builder.synclog import SyncLog

if TYPE_CHECKING:
    from sqlite3 import Connection

PAGE = 256


def _progress(total: int) -> Any:
    """A progress bar on stderr for long runs in a terminal; a no-op object otherwise."""
    if total >= 64 and sys.stderr.isatty():
        import os

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


def embed_pending(conn: Connection, config: Config, embedder_factory: EmbedderFactory | None,
                  log: SyncLog) -> bool:
    """Give every pending chunk its vector; log what the model had to compute. False when vectors
    could not be stored (a provider that is down only degrades search: that is not a failure here)."""
    stored = True
    model = fingerprint(config.embedding)
    try:
        cache = EmbeddingCache(config.cache_path)
    except db.sqlite_module().Error as exc:  # e.g. no room for its WAL files on a full disk
        log.warn(f"cannot open the embedding cache ({exc}); the chunks wait for vectors and the next build retries")
        return False
    embedder = None
    computed = reused = 0
    total = db.count_pending(conn)
    bar = _progress(total)
    try:
        while rows := db.pending_chunks(conn, PAGE):
            cached = cache.get(model, [r["embed_sha"] for r in rows])
            hits = [(r["id"], cached[r["embed_sha"]]) for r in rows if r["embed_sha"] in cached]
            if hits:
                db.store_vectors(conn, hits, now_iso())
                reused += len(hits)
                bar.update(len(hits))
            waiting: dict[str, list[int]] = {}  # each distinct text once (copied notes share their chunks' text)
            for r in rows:
                if r["embed_sha"] not in cached:
                    waiting.setdefault(r["embed_sha"], []).append(r["id"])
            texts = {r["embed_sha"]: r["embed_text"] for r in rows if r["embed_sha"] in waiting}
            if waiting and embedder is None:
                embedder = (embedder_factory or make_embedder)(config.embedding)
            shas = list(waiting)
            for start in range(0, len(shas), config.embedding.batch):
                part = shas[start:start + config.embedding.batch]
                assert embedder is not None  # made above (embeddings are enabled, so there is one)
                vectors = embedder.embed_passages([texts[sha] for sha in part])
                _check(vectors, len(part), config.embedding.dims)
                cache.put(model, dict(zip(part, vectors, strict=True)))
                stored_now = [(chunk_id, v) for sha, v in zip(part, vectors, strict=True) for chunk_id in waiting[sha]]
                db.store_vectors(conn, stored_now, now_iso())
                computed += len(part)
                reused += len(stored_now) - len(part)
                bar.update(len(stored_now))
    except db.sqlite_module().Error as exc:  # the index could not take them (a full disk)
        stored = False
        log.warn(f"cannot store vectors in the index ({exc}); the chunks wait for vectors and the next build retries")
    except Exception as exc:  # a provider's failure, of any kind, leaves chunks pending: never a crash
        reason = str(exc) if isinstance(exc, EmbeddingError) else f"{type(exc).__name__}: {exc}"
        left = db.count_pending(conn)
        log.warn(f"embeddings unavailable ({reason}): {left} chunks wait for vectors; the next build retries")
    finally:
        bar.close()
        cache.close()
    if computed or reused:
        log.info(f"embedded {computed + reused} chunks ({computed} computed, {reused} from the cache)")
    return stored
