"""The factory of ``/mcp`` for ``notes-portal serve``: the MCP tools over Streamable HTTP, made on the
first MCP request.

The MCP SDK (pydantic and the rest) makes a process that imports it much bigger (docs/BENCHMARKS.md,
"The MCP SDK imported on the first MCP request"), so a server whose users only browse and search never
pays for it: :class:`LazyEndpoint` imports
:mod:`builder.cli.mcp_server` and starts the SDK's session manager, inside the web app's lifespan,
when a client first calls.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from builder.core.config import Config

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from starlette.types import Receive, Scope, Send

    from server.answer import Asker
    from server.mcp_mount import McpEndpoint
    from server.engine import Searcher


class LazyEndpoint:
    """An ASGI app that makes the real endpoint (``make``) on its first request and runs it in the
    task group of :meth:`running` (the web app's lifespan) until the app stops."""

    def __init__(self, make: Callable[[], McpEndpoint]) -> None:
        self._make = make
        self._endpoint: McpEndpoint | None = None
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

    async def _start(self) -> McpEndpoint:
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


def http_endpoint(config: Config, *, host: str = "127.0.0.1") -> Callable[[Searcher, Asker | None], Any]:
    """The factory ``create_app(config, mcp=…)`` calls with the web app's searcher and asker (see
    :func:`builder.cli.mcp_server.endpoint` for what it serves)."""

    def factory(searcher: Searcher, asker: Asker | None) -> LazyEndpoint:
        def make() -> McpEndpoint:
            from builder.cli.mcp_server import endpoint

            return endpoint(config, searcher, asker, host=host)

        return LazyEndpoint(make)

    return factory
