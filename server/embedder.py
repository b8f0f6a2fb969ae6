"""The query embedder of the server: the configured provider, used by one thread, waited for briefly.

Every query vector is computed on one worker thread of its own (the in-process
model is not made for concurrent calls), with as many cores as the caller gives it
(see ``server.engine``: the free cores for a search alone on the server, else one,
while the search reads its words: the model lets go of the GIL). A request waits at most
``time_limit_s`` for it, and that wait is not counted in the SQL's time limit
(see ``server.reader.SqlClock``); a slow or failing
provider turns into a note and BM25-only results, never an error. What is known
about the provider (created or not, the last failure and the last success) is
kept for ``/api/health``, which never runs an inference itself.

The vectors of the latest queries are kept (``search.query_cache`` of them): a query's vector
depends only on its text and the model, so a query asked again (a page reloaded, an agent asking
twice, a second reader) is not embedded again, and the vector is there at once.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from builder.core.clock import now_iso
from builder.core.config import EmbeddingConfig
from builder.core.embedding import (
    Embedder,
    EmbedderFactory,
    EmbeddingError,
    make_embedder,
)


@dataclass
class _State:
    created: bool = False
    last_ok: bool | None = None  # the outcome of the latest attempt; None before the first
    last_error: str | None = None
    last_error_at: str | None = None
    last_success_at: str | None = None
    created_failed_at: float = float("-inf")  # time.monotonic() of the last failed creation


class QueryEmbedder:
    """Creates the provider on first use (retrying a failed creation after ``RETRY_AFTER_S``)
    and embeds queries on its own thread."""

    RETRY_AFTER_S = 30.0

    def __init__(self, config: EmbeddingConfig, factory: EmbedderFactory | None = None,
                 time_limit_s: float = 2.0, cache_size: int = 0) -> None:
        self.config = config
        self.factory = factory or (lambda embedding: make_embedder(embedding, for_queries=True))
        self.time_limit_s = time_limit_s
        self._embedder: Embedder | None = None
        self._state = _State()
        self._lock = threading.Lock()  # guards _state and _recent
        self.cache_size = cache_size
        self._recent: OrderedDict[str, bytes] = OrderedDict()  # text → vector, the latest used last
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="query-embedder")

    @property
    def multicore(self) -> bool:
        """Can the provider spread one query over several cores (the in-process model can, a server
        over HTTP cannot)? Known once the provider is made: False before the first query."""
        return isinstance(self._embedder, MultiCore)

    def embed(self, text: str, threads: int = 1) -> tuple[bytes | None, str | None]:
        """The query's vector, or None and the reason (None, None: embeddings are disabled)."""
        return self.submit(text, threads)()

    def submit(self, text: str, threads: int = 1) -> Callable[[], tuple[bytes | None, str | None]]:
        """Start embedding ``text`` now, on ``threads`` cores when the provider is :attr:`multicore`;
        the function returned waits for :meth:`embed`'s answer (the time limit counts from now), so
        a search can read its words meanwhile."""
        if not self.config.enabled:
            return lambda: (None, None)
        known = self.cached(text)
        if known is not None:
            return lambda: (known, None)
        job = self._worker.submit(self._embed, text, threads)
        started = time.monotonic()

        def result() -> tuple[bytes | None, str | None]:
            try:
                return job.result(timeout=max(0.0, started + self.time_limit_s - time.monotonic())), None
            except FutureTimeout:
                job.cancel()  # still queued: never started, so it costs nothing; running: it finishes alone
                reason = f"the query embedder took longer than {self.time_limit_s:g} s"
                self._failed(reason)
                return None, reason
            except _Failed as failed:
                return None, str(failed)

        return result

    def _embed(self, text: str, threads: int) -> bytes:
        embedder = self._provider()
        try:
            if isinstance(embedder, MultiCore):
                embedder.use_threads(threads)  # on this thread, the one that embeds: OpenMP keeps it per thread
            vector = embedder.embed_query(text)
        except EmbeddingError as exc:
            raise self._failed(str(exc)) from None
        except Exception as exc:  # a provider's own bug or a dropped connection: degrade, loudly
            raise self._failed(f"{type(exc).__name__}: {exc}") from None
        with self._lock:
            self._state.last_ok, self._state.last_success_at = True, now_iso()
            if self.cache_size > 0:
                self._recent[text] = vector
                while len(self._recent) > self.cache_size:
                    self._recent.popitem(last=False)  # the one used longest ago
        return vector

    def cached(self, text: str) -> bytes | None:
        """The vector of ``text`` if it is among the latest queries' (it counts as used now)."""
        with self._lock:
            vector = self._recent.get(text)
            if vector is not None:
                self._recent.move_to_end(text)
            return vector

    def _provider(self) -> Embedder:
        if self._embedder is not None:
            return self._embedder
        with self._lock:
            recent = time.monotonic() - self._state.created_failed_at < self.RETRY_AFTER_S
            reason = self._state.last_error
        if recent:
            raise _Failed(reason or "the embedder could not be created")
        try:
            made = self.factory(self.config)
        except Exception as exc:  # a broken provider degrades to FTS-only, loudly
            with self._lock:
                self._state.created_failed_at = time.monotonic()
            raise self._failed(f"{type(exc).__name__}: {exc}") from None
        if made is None:
            raise self._failed("no embedder for this provider")
        self._embedder = made
        with self._lock:
            self._state.created = True
        return made

    def _failed(self, reason: str) -> _Failed:
        with self._lock:
            self._state.last_ok, self._state.last_error, self._state.last_error_at = False, reason, now_iso()
        return _Failed(reason)

    def state(self) -> dict[str, Any]:
        """What ``/api/health`` shows about the provider, from what queries found (no inference)."""
        with self._lock:
            s = self._state
            reachable = s.last_ok if self.config.enabled else None
            return {"provider": self.config.provider, "created": s.created, "reachable": reachable,
                    "error": s.last_error if reachable is False else None, "last_error": s.last_error,
                    "last_error_at": s.last_error_at, "last_success_at": s.last_success_at}


@runtime_checkable
class MultiCore(Protocol):
    """A provider that can compute the next vectors on several threads (:class:`LocalEmbedder`)."""

    def use_threads(self, count: int) -> None: ...


class _Failed(Exception):
    """A query embedding that did not happen; the message is the reason shown to the user."""
