"""The Starlette app: the built site under ``/``, ``/api/search``, ``/api/health``, ``/search``, ``/auth``,
``/api/answer`` (only with ``answer:`` in the config, see :mod:`server.answer`), ``/mcp`` (the MCP tools,
see :mod:`server.mcp_http`), and the webhooks and sync API of :mod:`server.sync_api`, which only queue jobs.

Queries only read: the index is opened read-only through a small connection pool,
with a time limit on the SQL. The query is embedded while its words are searched, with
its own time limit (the wait for it is not the SQL's), and a slow or failing embedder
only makes the answer BM25-only. Anything a user can
type gets a 200, a redirect or a 4xx, never a 500.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import quote, urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from builder.core import urls
from builder.core.config import Config
from builder.core.embedding import EmbedderFactory
from builder.core.errors import IndexMissing, IndexUnreadable, ReindexNeeded, UserError
from server import translate
from server.auth import COOKIE, COOKIE_MAX_AGE_S, ApiKey, back_to, read_form
from server.embedder import QueryEmbedder
from server.health import health
from server.mcp_http import lazy_endpoint, mcp_route
from server.query import MAX_QUERY_CHARS
from server.reader import IndexReader, QueryTimeout
from server.answer import Answer, make_asker
from server.search import SearchResult, check_limit, check_mode
from server.engine import Searcher
from server.site_files import SiteFiles
from server.sync_api import SyncDesk, sync_routes
from server.vectors import MIN_VECTORS, VectorMemory

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
# A page with a mermaid diagram, and only such a page (site_files.py knows it by its first lines), may have inline
# styles: mermaid writes a <style> element into each diagram's SVG and style attributes on its nodes, made in the
# browser and different for every diagram, so no hash or nonce can allow them one by one. A note's own styles are
# still removed by the sanitizer (builder/render/markdown.py). Scripts stay the site's files alone: no inline
# script, no eval (mermaid needs neither).
DIAGRAM_CSP = CSP.replace("style-src 'self';", "style-src 'self' 'unsafe-inline';")
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "X-Frame-Options": "DENY",
}
ASK_KEY = "auth.ask"  # the sign-in form's words (builder.core.messages), in the site's language
BUSY_RETRY_S = 5  # the Retry-After of a busy answer
KEY_MISSING = "missing or wrong API key (X-API-Key, Authorization: Bearer, or sign in at /auth)"


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


@dataclass(frozen=True)
class SearchParams:
    query: str
    limit: int
    mode: str
    source: str | None
    tag: str | None
    correct: bool = True  # replace a word no note holds by a close one (``correct=0``: as typed)


_SWITCH = {"1": True, "true": True, "0": False, "false": False}


def _params(request: Request, config: Config) -> SearchParams:
    """Validated query parameters; raises UserError with the message for a 400."""
    q = request.query_params.get("q")
    if q is None or not q.strip():
        raise UserError("parameter q is required")
    if len(q) > MAX_QUERY_CHARS:
        raise UserError(f"parameter q is longer than {MAX_QUERY_CHARS} characters")
    limit = check_limit(request.query_params.get("limit", "10"))
    mode = check_mode(request.query_params.get("mode", "hybrid"))
    source = request.query_params.get("source") or None
    if source is not None and source not in {s.id for s in config.sources}:
        raise UserError(f"unknown source {source[:40]!r}")
    correct = request.query_params.get("correct") or "1"
    if correct.lower() not in _SWITCH:
        raise UserError(f"parameter correct must be 1 or 0 (true or false), not {correct[:20]!r}")
    return SearchParams(q, limit, mode, source, request.query_params.get("tag") or None, _SWITCH[correct.lower()])


def _status_of(exc: UserError) -> int:
    """The HTTP status of a search that ended in a user-facing error."""
    if isinstance(exc, ReindexNeeded):
        return 409
    if isinstance(exc, (IndexMissing, IndexUnreadable, QueryTimeout)):
        return 503
    return 400


class Portal:
    """The read path for one configuration (index reader, query embedder, vectors in memory, the
    key) and the endpoints that use it."""

    def __init__(self, config: Config, embedder_factory: EmbedderFactory | None, time_limit_s: float,
                 embed_time_limit_s: float, min_vectors: int) -> None:
        from server.live_pages import SearchPage

        self.config = config
        self.reader = IndexReader(config.index, time_limit_s=time_limit_s)
        self.embedder = QueryEmbedder(config.embedding, embedder_factory, time_limit_s=embed_time_limit_s,
                                      cache_size=config.query_cache)
        self.memory = VectorMemory(self.reader.open_fresh, min_vectors=min_vectors)
        self.searcher = Searcher(config, self.reader, self.embedder, self.memory)
        self.key = ApiKey(config.api_key)
        self.pages = SearchPage(config)
        self.site = SiteFiles(config.site.output, [s.id for s in config.sources], diagram_csp=DIAGRAM_CSP)
        self.asker = make_asker(config) if config.answer.enabled else None

    def routes(self) -> list[Route]:
        """Every route; each one that queries the index is guarded by the key. ``/api/answer`` exists only
        when an answer provider is configured."""
        asking = [Route("/api/answer", self.api_answer)] if self.asker else []
        return [
            Route("/api/search", guarded(self.key, self.api_search, self.api_denied)),
            *asking,
            Route("/api/health", guarded(self.key, self.api_health, self.api_denied)),
            Route("/search", guarded(self.key, self.search_page, self.page_denied)),
            Route("/auth", self.auth, methods=["GET", "POST"]),
            Route("/{path:path}", self.site.serve),
        ]

    def run_search(self, params: SearchParams) -> SearchResult:
        """The search (see :class:`server.engine.Searcher`), less hits whose page is not on the site."""
        return self._on_the_site(self.searcher.search(params.query, limit=params.limit, source=params.source,
                                                      tag=params.tag, mode=params.mode, correct=params.correct))

    def _on_the_site(self, result: SearchResult) -> SearchResult:
        """Only hits whose page is on the site: a build indexes a new note before it renders its page,
        and a hit must never lead to a 404 (the next search, after the render, finds it)."""
        site = self.config.site.output

        def present(url: str) -> bool:
            return (site / urls.site_file(url)).is_file()

        hits = tuple(replace(h, more=tuple(m for m in h.more if present(m.url)),
                             copies=tuple(c for c in h.copies if present(c.url)))
                     for h in result.hits if present(h.url))
        return result if hits == result.hits else replace(result, hits=hits)

    def api_search(self, request: Request) -> Response:
        """``GET /api/search``: the hits as JSON."""
        started = time.perf_counter()
        try:
            result = self.run_search(_params(request, self.config))
        except UserError as exc:
            return _error(_status_of(exc), str(exc))
        body = result.to_json()
        body["took_ms"] = round((time.perf_counter() - started) * 1000, 1)
        return JSONResponse(body)

    def answer(self, params: SearchParams) -> tuple[Answer, SearchResult | None]:
        """The checked answer to ``params.query`` (see :mod:`server.answer`) and the search it was written
        from; ``busy`` at once, without a search, when every answer slot is taken. Raises UserError as a
        search does."""
        from server import answer

        assert self.asker is not None
        with self.asker.slot() as free:
            return self._answer(params) if free else (answer.BUSY, None)

    def _answer(self, params: SearchParams) -> tuple[Answer, SearchResult]:
        """The search and the checked answer (in a slot the caller holds)."""
        from server import answer

        assert self.asker is not None
        result = self.run_search(replace(params, limit=answer.SEARCH_LIMIT, mode="hybrid", tag=None))
        with self.reader.connection() as lease:
            sources = answer.passages(lease.conn, result.hits)
        return answer.ask(params.query, result, sources, self.asker), result

    async def api_answer(self, request: Request) -> Response:
        """``GET /api/answer?q=…[&source=…]``: the checked answer as JSON; when the provider cannot answer,
        ``unavailable`` with the search's hits under ``search``. When every slot is taken: 503 ``busy``,
        answered on the event loop, without a thread (a flood of questions takes none from search)."""
        from server import answer

        if not self.key.allows(request):
            return self.api_denied(request)
        assert self.asker is not None
        try:
            params = _params(request, self.config)
            with self.asker.slot() as free:
                if not free:
                    return JSONResponse(answer.BUSY.to_json(), status_code=503,
                                        headers={"Retry-After": str(BUSY_RETRY_S)})
                reply, result = await run_in_threadpool(self._answer, params)
        except UserError as exc:
            return _error(_status_of(exc), str(exc))
        body = reply.to_json()
        if reply.status == "unavailable":
            body["search"] = result.to_json()
        return JSONResponse(body)

    def api_health(self, request: Request) -> Response:
        """``GET /api/health``: see :func:`server.health.health`."""
        return JSONResponse(health(self.config, self.reader, self.embedder, self.memory))

    def search_page(self, request: Request) -> Response:
        """``GET /search``: the results page for browsers without JavaScript; ``ask=1`` (the Ask button, where
        an answer provider is configured) shows the checked answer above the hits."""
        from server.live_pages import page_answer, page_hits

        query = request.query_params.get("q", "")
        if not query.strip():
            return HTMLResponse(self.pages.render(query="", notes=[], hits=None))
        try:
            result = self.run_search(_params(request, self.config))
        except UserError as exc:
            return HTMLResponse(self.pages.render(query=query[:MAX_QUERY_CHARS], notes=[str(exc)], hits=[]),
                                status_code=_status_of(exc))
        hits = page_hits(result, self.config.site.language)
        # the words as typed, with the page's other parameters (mode, source, tag, limit) kept
        kept = {k: v for k, v in request.query_params.items() if k != "ask"}
        as_typed = f"search?{urlencode({**kept, 'correct': '0'})}" if result.corrected else None
        asked = None
        if self.asker is not None and request.query_params.get("ask") == "1":
            try:
                asked = page_answer(self.answer(_params(request, self.config))[0], self.config.site.language)
            except UserError as exc:  # the index went away or timed out since the search: say so, no 500
                asked = {"status": "failed", "parts": [], "message": self.pages.say("ask.failed") + str(exc),
                         "problems": []}
        return HTMLResponse(self.pages.render(query=query, notes=self.pages.notes(result), hits=hits,
                                              weak=result.weak and bool(hits), as_typed=as_typed, answer=asked))

    async def auth(self, request: Request) -> Response:
        """``GET /auth``: the sign-in form; ``POST /auth``: check the key, set the cookie, go back."""
        if not self.key.required:
            return RedirectResponse(back_to(request.query_params.get("next")), status_code=303)
        if request.method != "POST":
            return self._sign_in_form(ASK_KEY, back_to(request.query_params.get("next")), 200)
        form = await read_form(request)
        if form is None:
            return self._sign_in_form("auth.too_large", "./", 413)
        next_url = back_to(form.get("next"))
        if not self.key.matches(form.get("key")):
            return self._sign_in_form("auth.wrong", next_url, 401)
        response = RedirectResponse(next_url, status_code=303)
        response.set_cookie(COOKIE, self.key.cookie_value(), max_age=COOKIE_MAX_AGE_S, path="/", httponly=True,
                            samesite="strict", secure=request.url.scheme == "https")
        return response

    def api_denied(self, request: Request) -> Response:
        """What an API request without the key gets."""
        return _error(401, KEY_MISSING)

    def page_denied(self, request: Request) -> Response:
        """What the results page without the key gets: the sign-in form, which leads back to it."""
        here = quote(request.url.path) + (f"?{request.url.query}" if request.url.query else "")
        return self._sign_in_form(ASK_KEY, back_to(here), 401)

    def _sign_in_form(self, message: str, next_url: str, status: int) -> Response:
        """The sign-in form saying ``message`` (a key of builder.core.messages)."""
        return HTMLResponse(self.pages.render_auth(message=self.pages.say(message), next_url=next_url),
                            status_code=status)


def create_app(config: Config, *, embedder_factory: EmbedderFactory | None = None, time_limit_s: float = 2.0,
               embed_time_limit_s: float = 2.0, min_vectors: int = MIN_VECTORS,
               mcp: bool = True, host: str = "127.0.0.1", jobs: SyncDesk | None = None) -> Starlette:
    """The portal's web app for ``config``; ``embedder_factory`` replaces the provider in tests.

    ``time_limit_s`` bounds a query's SQL, ``embed_time_limit_s`` the wait for its vector.
    An index with at least ``min_vectors`` vectors is scanned from memory (see server.vectors).
    ``mcp`` serves the MCP tools at ``/mcp`` behind the key (see server.mcp_http; the SDK is imported on the
    first MCP request); ``host`` is the address the app is served on: on a loopback address, ``/mcp`` answers
    only requests that name it (see server.mcp.endpoint).
    ``jobs`` queues builds for the webhooks and the sync API (see server.sync_api); without it they answer 503.
    """
    # numpy must be imported here, once: a first import racing in two request threads (the vector
    # loader and the query embedder) fails with "partially initialized module" and degrades search.
    import numpy  # noqa: F401

    if config.dictionary is not None:  # read now, not in the first English query's time (~0.1 s)
        threading.Thread(target=translate.load, args=(config.dictionary,), name="dictionary", daemon=True).start()
    portal = Portal(config, embedder_factory, time_limit_s, embed_time_limit_s, min_vectors)
    routes = portal.routes()
    endpoint = lazy_endpoint(config, portal.searcher, portal.asker, host=host) if mcp else None
    routes[:0] = sync_routes(config, jobs)
    if endpoint is not None:
        routes.insert(0, mcp_route(portal.key, endpoint, KEY_MISSING))
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders)],
                    lifespan=(lambda _: endpoint.running()) if endpoint is not None else None)
    app.state.vector_memory = portal.memory
    app.state.reader = portal.reader
    return app


Endpoint = Callable[[Request], Response]


def guarded(key: ApiKey, endpoint: Endpoint, denied: Endpoint) -> Endpoint:
    """``endpoint`` for requests that carry the key (or its sign-in cookie), ``denied`` for the others."""

    def check(request: Request) -> Response:
        return endpoint(request) if key.allows(request) else denied(request)

    return check


class SecurityHeaders:
    """The security headers on every response; a response's own Content-Security-Policy
    (an SVG's sandbox) is kept."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, secured if scope["type"] == "http" else send)
