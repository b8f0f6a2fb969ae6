"""``/mcp``: the MCP tools (:mod:`server.mcp`) over Streamable HTTP in the web app, behind the API key when
one is set.

The app mounts a :class:`LazyEndpoint` made with its own searcher (index reader, query embedder, vectors in
memory) and its asker (whose slots cap the answers in flight), so the tools, ``/api/search`` and
``/api/answer`` share them. The MCP SDK (pydantic and the rest) makes a process that imports it much bigger
(docs/BENCHMARKS.md, "The MCP SDK imported on the first MCP request"), so a server whose users only browse
and search never pays for it: this module does not import it, and the endpoint imports :mod:`server.mcp`
and starts the SDK's session manager, inside the web app's lifespan, when a client first calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from builder.core.config import Config
from server.auth import ApiKey

if TYPE_CHECKING:
    from anyio.abc import TaskGroup

    from server.answer import Asker
    from server.engine import Searcher
    from server.mcp import HttpEndpoint

PATH = "/mcp"


class LazyEndpoint:
    """An ASGI app that makes the real endpoint (``make``) on its first request and runs it in the
    task group of :meth:`running` (the web app's lifespan) until the app stops."""

    def __init__(self, make: Callable[[], HttpEndpoint]) -> None:
        self._make = make
        self._endpoint: HttpEndpoint | None = None
        self._group: TaskGroup | None = None
        self._lock: anyio.Lock | None = None
        self._stop: anyio.Event | None = None

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._group, self._lock, self._stop = group, anyio.Lock(), anyio.Event()
            try:
                yield
            finally:
                self._stop.set()  # the endpoint's own context ends, then the group
                self._group = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = self._endpoint or await self._start()
        await endpoint(scope, receive, send)

    async def _start(self) -> HttpEndpoint:
        if self._group is None or self._lock is None or self._stop is None:
            raise RuntimeError("the MCP endpoint runs only inside the web app's lifespan")
        group, stop = self._group, self._stop
        async with self._lock:
            if self._endpoint is None:
                endpoint = await anyio.to_thread.run_sync(self._make)  # the imports, off the event loop
                ready = anyio.Event()

                async def run() -> None:
                    async with endpoint.running():
                        ready.set()
                        await stop.wait()

                group.start_soon(run)
                await ready.wait()
                self._endpoint = endpoint
        return self._endpoint


def lazy_endpoint(config: Config, searcher: Searcher, asker: Asker | None, *, host: str) -> LazyEndpoint:
    """The tools over Streamable HTTP with the web app's searcher and asker, made on the first MCP request
    (see :func:`server.mcp.endpoint` for what it serves and what ``host`` decides)."""

    def make() -> HttpEndpoint:
        from server.mcp import endpoint

        return endpoint(config, searcher, asker, host=host)

    return LazyEndpoint(make)


class Guarded:
    """``app`` for requests that carry the key (or its sign-in cookie); 401 with ``message`` for the others."""

    def __init__(self, key: ApiKey, app: ASGIApp, message: str) -> None:
        self.key, self.app, self.message = key, app, message

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self.key.allows(Request(scope)):
            denied = JSONResponse({"error": self.message}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await denied(scope, receive, send)
            return
        await self.app(scope, receive, send)


HOW_TO = ("this is the MCP endpoint (Streamable HTTP): an MCP client POSTs JSON-RPC messages here, "
          "starting with initialize; a GET opens a stream only within the session that returns "
          "(Mcp-Session-Id). See docs/AGENTS.md")


class SessionStreams:
    """``app``, but a GET without a session (``curl http://…/mcp``) gets a short answer saying how to use
    the endpoint instead of an event stream that never ends (MCP: 400 for a request that needs a session)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and "mcp-session-id" not in Request(scope).headers:
            await JSONResponse({"error": HOW_TO}, status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


def mcp_route(key: ApiKey, endpoint: ASGIApp, denied_message: str) -> Route:
    """The ``/mcp`` route (POST requests, GET streams within a session, DELETE to end one), guarded by ``key``."""
    return Route(PATH, Guarded(key, SessionStreams(endpoint), denied_message), methods=["GET", "POST", "DELETE"])
