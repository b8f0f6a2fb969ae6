"""The MCP server: the tools of :mod:`server.mcp_tools` over stdio (``notes-portal mcp``,
:func:`run_stdio`) and over Streamable HTTP at ``/mcp`` of the web app (:func:`endpoint`, which
:mod:`server.mcp_http` calls on the first MCP request), on the official ``mcp`` SDK.

The one module of the project that imports the SDK (tests/test_architecture.py): the web app imports it
only when a client first calls ``/mcp``. Over HTTP it is given the app's own searcher and asker, so the
tools, ``/api/search`` and ``/api/answer`` share the index reader, the query embedder and the vectors in
memory; over stdio it makes its own.

Every call is answered, never dropped: bad arguments, paths outside a source, unpublished notes, a
missing index are a tool error (``isError``) whose text is one line and whose structured content is
the CLI's JSON error (``{"schema", "command", "error", "exit_code"}``).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import (
    StreamableHTTPASGIApp,
    StreamableHTTPSessionManager,
)
from mcp.server.transport_security import TransportSecuritySettings

from builder.core import index as db
from builder.core.config import Config
from builder.core.errors import IndexUnreadable, UserError
from builder.core.package import version
from server import read_commands
from server.mcp_tools import ASK_INSTRUCTIONS, INSTRUCTIONS, Tool, tools

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from server.answer import Asker
    from server.engine import Searcher

QUERY_TIME_LIMIT_S = 5.0  # stdio: a query's SQL …
EMBED_TIME_LIMIT_S = 10.0  # … and the wait for its vector (the first one may load the model)
LOOPBACK = ("127.0.0.1", "localhost", "::1")
log = logging.getLogger("notes_portal.mcp")


def make_server(config: Config, read_path: read_commands.ReadPath) -> Server:
    """The low-level MCP server with the tools of :func:`tools` (``ask`` among them when an answer provider
    is configured) over ``read_path``."""
    known = tools(config)
    ids = [s.id for s in config.sources]
    listed = [types.Tool(name=t.name, title=t.title, description=t.description, input_schema=t.input_schema(),
                         annotations=types.ToolAnnotations(title=t.title, read_only_hint=True,
                                                           destructive_hint=False, idempotent_hint=True,
                                                           open_world_hint=False))
              for t in known.values()]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = known.get(params.name)
        if tool is None:
            return _failed(params.name, UserError(f"unknown tool {params.name[:40]!r} (tools: {', '.join(known)})"))
        return await anyio.to_thread.run_sync(partial(answer, tool, read_path, params.arguments))

    return Server("notes-portal", version=version(), title="notes-portal",
                  instructions=INSTRUCTIONS.format(count=len(ids), sources=", ".join(ids))
                  + (ASK_INSTRUCTIONS if "ask" in known else ""),
                  on_list_tools=list_tools, on_call_tool=call_tool)


def answer(tool: Tool, read_path: read_commands.ReadPath, arguments: dict[str, Any] | None) -> types.CallToolResult:
    """One tool call: its data as JSON text and structured content, or an error result."""
    command = "read" if tool.name == "read_note" else tool.name
    try:
        try:
            data = tool.call(read_path, arguments)
        except db.sqlite_module().DatabaseError as exc:
            raise IndexUnreadable(exc) from None
        except OSError as exc:
            raise UserError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
    except UserError as exc:
        return _failed(command, exc)
    except Exception as exc:  # a bug of ours: the client still gets an answer, the log the traceback
        log.exception("tool %s failed", tool.name)
        return _failed(command, UserError(f"internal error ({type(exc).__name__}: {exc})"))
    return types.CallToolResult(content=[types.TextContent(type="text", text=_json_text(data))],
                                structured_content=data)


def _failed(command: str, exc: UserError) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))],
                                structured_content=read_commands.error_body(command, exc), is_error=True)


def _json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)


def run_stdio(config: Config) -> None:
    """``notes-portal mcp``: serve the tools on stdin/stdout until the client closes them."""
    from server.embedder import QueryEmbedder
    from server.reader import IndexReader
    from server.engine import Searcher
    from server.vectors import VectorMemory

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="notes-portal mcp: %(message)s")
    reader = IndexReader(config.index, time_limit_s=QUERY_TIME_LIMIT_S)
    embedder = QueryEmbedder(config.embedding, time_limit_s=EMBED_TIME_LIMIT_S, cache_size=config.query_cache)
    searcher = Searcher(config, reader, embedder, VectorMemory(reader.open_fresh))
    server = make_server(config, read_commands.for_server(searcher))

    async def serve() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(serve)


class HttpEndpoint:
    """The tools over Streamable HTTP (stateless, JSON answers) as an ASGI app, with :meth:`running`
    for the web app's lifespan (the SDK's session manager runs for as long as the app does)."""

    def __init__(self, server: Server, security: TransportSecuritySettings) -> None:
        self.manager = StreamableHTTPSessionManager(app=server, json_response=True, stateless=True,
                                                    security_settings=security)
        self.app = StreamableHTTPASGIApp(self.manager)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.manager.run():
            yield


def endpoint(config: Config, searcher: Searcher, asker: Asker | None, *, host: str = "127.0.0.1") -> HttpEndpoint:
    """The tools over Streamable HTTP with the web app's searcher and asker (made on the first MCP request:
    see :mod:`server.mcp_http`).

    Served on a loopback address, requests must name it in ``Host`` (and ``Origin``, when sent):
    a web page cannot reach the tools through DNS rebinding. On the LAN the API key is the guard.
    """
    if host in LOOPBACK:
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    else:
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return HttpEndpoint(make_server(config, read_commands.for_server(searcher, asker)), security)
