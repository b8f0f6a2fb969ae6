"""``/mcp``: the MCP tools over Streamable HTTP in the web app, behind the API key when one is set.

The tools are not made here: grep and read_note read the sources' files, which the read path never
imports, so the command that starts the server (``builder/cli``) injects a factory. The app calls it
with its own searcher (index reader, query embedder, vectors in memory) and its asker (whose slots cap
the answers in flight), so the tools, ``/api/search`` and ``/api/answer`` share them, mounts what it
returns at ``/mcp`` and runs it for as long as the app runs (its lifespan).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from server.auth import ApiKey
from server.engine import Searcher

if TYPE_CHECKING:
    from server.answer import Asker

PATH = "/mcp"


class McpEndpoint(Protocol):
    """An ASGI app answering MCP requests, and the context its work runs in."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None: ...

    def running(self) -> AbstractAsyncContextManager[None]: ...


McpFactory = Callable[[Searcher, "Asker | None"], McpEndpoint]


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


def mcp_route(key: ApiKey, endpoint: McpEndpoint, denied_message: str) -> Route:
    """The ``/mcp`` route (POST requests, GET streams within a session, DELETE to end one), guarded by ``key``."""
    return Route(PATH, Guarded(key, SessionStreams(endpoint), denied_message), methods=["GET", "POST", "DELETE"])
