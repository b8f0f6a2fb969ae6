"""The Starlette app: the built site under ``/``, ``/api/search``, ``/api/health``, ``/search``.

Queries only read: the index is opened read-only, one connection per thread,
with a time limit. Anything a user can type gets a 200 or a 4xx, never a 500.
"""

from __future__ import annotations

import hmac
from collections.abc import Sequence
import threading
import time
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import (
    BaseHTTPMiddleware,
    DispatchFunction,
    RequestResponseEndpoint,
)
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from builder.core import index as db
from builder.core.config import Config
from builder.core.embedding import Embedder, EmbedderFactory, make_embedder
from builder.core.errors import IndexMissing, ReindexNeeded, UserError
from server.reader import IndexReader, QueryTimeout
from server.search import SearchResult, check_limit, check_mode, provenance, search
from server.site import SiteFiles
from server.vectors import MIN_VECTORS, VectorMemory

MAX_Q = 500
SECURITY_HEADERS = {
    "Content-Security-Policy": ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                                "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}


class QueryEmbedder:
    """The configured provider, created on first use; a failure is remembered and retried later."""

    RETRY_AFTER_S = 30.0

    def __init__(self, config: Config, factory: EmbedderFactory | None = None) -> None:
        self.config = config
        self.factory = factory or (lambda embedding: make_embedder(embedding, for_queries=True))
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._error: str | None = None
        self._failed_at = 0.0

    def get(self) -> tuple[Embedder | None, str | None]:
        if not self.config.embedding.enabled:
            return None, None
        with self._lock:
            if self._embedder is None and time.monotonic() - self._failed_at > self.RETRY_AFTER_S:
                try:
                    made = self.factory(self.config.embedding)
                    self._embedder = _Serialized(made) if made is not None else None
                    self._error = None
                except Exception as exc:  # a broken provider degrades to FTS-only, loudly
                    self._error, self._failed_at = f"{type(exc).__name__}: {exc}", time.monotonic()
            return self._embedder, self._error


class _Serialized:
    """One query embedding at a time: the in-process model is not made for concurrent calls."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._lock = threading.Lock()
        self.fingerprint = embedder.fingerprint

    def embed_query(self, text: str) -> bytes:
        with self._lock:
            return self._embedder.embed_query(text)

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]:
        with self._lock:
            return self._embedder.embed_passages(texts)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


@dataclass(frozen=True)
class SearchParams:
    query: str
    limit: int
    mode: str
    source: str | None
    tag: str | None


def _params(request: Request, config: Config) -> SearchParams:
    """Validated query parameters; raises UserError with the message for a 400."""
    q = request.query_params.get("q")
    if q is None or not q.strip():
        raise UserError("parameter q is required")
    if len(q) > MAX_Q:
        raise UserError(f"parameter q is longer than {MAX_Q} characters")
    limit = check_limit(request.query_params.get("limit", "10"))
    mode = check_mode(request.query_params.get("mode", "hybrid"))
    source = request.query_params.get("source") or None
    if source is not None and source not in {s.id for s in config.sources}:
        raise UserError(f"unknown source {source[:40]!r}")
    return SearchParams(q, limit, mode, source, request.query_params.get("tag") or None)


def create_app(config: Config, *, embedder_factory: EmbedderFactory | None = None, time_limit_s: float = 2.0,
               min_vectors: int = MIN_VECTORS) -> Starlette:
    """The portal's web app for ``config``; ``embedder_factory`` replaces the provider in tests.

    An index with at least ``min_vectors`` vectors is scanned from memory (see server.vectors).
    """
    # numpy must be imported here, once: a first import racing in two request threads (the vector
    # loader and the query embedder) fails with "partially initialized module" and degrades search.
    import numpy  # noqa: F401

    reader = IndexReader(config.index, time_limit_s=time_limit_s)
    embedder = QueryEmbedder(config, embedder_factory)
    memory = VectorMemory(reader.open_fresh, min_vectors=min_vectors)
    from server.pages import SearchPage

    page = SearchPage(config)

    def run_search(params: SearchParams) -> SearchResult:
        emb, err = embedder.get() if params.mode != "bm25" else (None, None)
        with reader.connection() as conn:
            def nearest(vector: bytes, k: int) -> list[int] | None:
                return memory.nearest(conn, reader.thread_identity(), vector, k)

            return search(conn, config, params.query, limit=params.limit, source=params.source,
                          tag=params.tag, mode=params.mode, embedder=emb, embedder_error=err, nearest=nearest)

    def api_search(request: Request) -> Response:
        started = time.perf_counter()
        try:
            result = run_search(_params(request, config))
        except ReindexNeeded as exc:
            return _error(409, str(exc))
        except IndexMissing as exc:
            return _error(503, str(exc))
        except QueryTimeout as exc:
            return _error(503, str(exc))
        except UserError as exc:
            return _error(400, str(exc))
        body = result.to_json()
        body["took_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return JSONResponse(body)

    def api_health(request: Request) -> Response:
        return JSONResponse(_health(config, reader, embedder))

    def search_page(request: Request) -> Response:
        query = request.query_params.get("q", "")
        if not query.strip():
            return HTMLResponse(page.render(query="", notes=[], hits=None))
        try:
            result = run_search(_params(request, config))
        except ReindexNeeded as exc:
            return HTMLResponse(page.render(query=query, notes=[str(exc)], hits=[]), status_code=409)
        except (IndexMissing, QueryTimeout) as exc:
            return HTMLResponse(page.render(query=query, notes=[str(exc)], hits=[]), status_code=503)
        except UserError as exc:
            return HTMLResponse(page.render(query=query[:MAX_Q], notes=[str(exc)], hits=[]), status_code=400)
        hits = [{"url": h.url, "title": h.title, "breadcrumb": h.breadcrumb, "snippet": h.snippet,
                 "provenance": provenance(h)} for h in result.hits]
        return HTMLResponse(page.render(query=query, notes=list(result.notes), hits=hits))

    routes = [
        Route("/api/search", api_search),
        Route("/api/health", api_health),
        Route("/search", search_page),
        Route("/{path:path}", SiteFiles(config.site.output, [s.id for s in config.sources]).serve),
    ]
    middleware = [Middleware(BaseHTTPMiddleware, dispatch=_guard(config.api_key))]
    app = Starlette(routes=routes, middleware=middleware)
    app.state.vector_memory = memory
    return app


def _guard(api_key: str | None) -> DispatchFunction:
    """API-key check for /api/* (constant-time) and security headers on every response."""

    async def dispatch(request: Request, call_next: RequestResponseEndpoint) -> Response:
        if api_key and request.url.path.startswith("/api/") and not _authorized(request, api_key):
            response: Response = _error(401, "missing or wrong API key (X-API-Key or Authorization: Bearer)")
        else:
            response = await call_next(request)
        for name, value in SECURITY_HEADERS.items():  # a response's own policy (an SVG's sandbox) is kept
            response.headers.setdefault(name, value)
        return response

    return dispatch


def _authorized(request: Request, api_key: str) -> bool:
    offered = request.headers.get("x-api-key")
    auth = request.headers.get("authorization", "")
    if offered is None and auth.lower().startswith("bearer "):
        offered = auth[7:].strip()
    return offered is not None and hmac.compare_digest(offered.encode(), api_key.encode())


def _health(config: Config, reader: IndexReader, embedder: QueryEmbedder) -> dict[str, Any]:
    health: dict[str, Any] = {"index": False, "embedding": {"provider": config.embedding.provider}}
    try:
        with reader.connection() as conn:
            counts = db.counts(conn)
            sources = db.get_sources(conn)
            if counts["chunks_fts"] != counts["chunks"]:
                health["error"] = (f"the full-text index holds {counts['chunks_fts']} of {counts['chunks']} chunks: "
                                   "rebuild it with `notes-portal build --full`")
            health.update(index=True, counts=counts,
                          pending_vectors=db.count_pending(conn) if config.embedding.enabled else 0,
                          sources={sid: {"last_sync_at": row.last_sync_at, "indexed_rev": row.indexed_rev,
                                         "last_error": row.last_error} for sid, row in sources.items()})
    except (IndexMissing, QueryTimeout) as exc:
        health["error"] = str(exc)
    emb, err = embedder.get()
    reachable = None
    if config.embedding.enabled:
        try:
            reachable = emb is not None and bool(emb.embed_query("health check"))
        except Exception as exc:  # reported, not raised: health must always answer
            err = str(exc)
            reachable = False
    health["embedding"].update(reachable=reachable, error=err if not reachable else None)
    health["status"] = "ok" if health["index"] and reachable is not False and "error" not in health else "degraded"
    return health
