"""The server on real sockets: uvicorn in a thread on 127.0.0.1, several client threads at once.

What TestClient cannot show: a response whose declared Content-Length disagrees with the
bytes sent is cut off by the HTTP layer, and requests really run in parallel with a build.
"""

from __future__ import annotations

import http.client
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from starlette.types import ASGIApp

from server.app import create_app


@contextmanager
def live_server(app: ASGIApp) -> Iterator[tuple[str, int]]:
    """``app`` served by uvicorn on 127.0.0.1 (a free port) in a thread; yields (host, port)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.started, "uvicorn did not start"
    try:
        yield sock.getsockname()
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@dataclass(frozen=True)
class Fetched:
    status: int
    declared: int | None  # Content-Length
    body: bytes


def fetch(address: tuple[str, int], path: str, timeout: float = 20.0) -> Fetched:
    """One GET on a new connection; raises when the connection breaks (a short body included)."""
    conn = http.client.HTTPConnection(*address, timeout=timeout)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read()
        length = response.getheader("Content-Length")
        return Fetched(response.status, int(length) if length is not None else None, body)
    finally:
        conn.close()


def test_a_page_replaced_while_it_is_fetched_arrives_whole(config_for):
    """A build replaces pages with os.replace; each response is one version, whole, with its own length
    (Starlette's FileResponse took the size from one file and the bytes from the next)."""
    config = config_for()
    config.site.output.mkdir(parents=True)
    page = config.site.output / "page.html"
    versions = [b"<p>" + b"a" * 300_000 + b"</p>", b"<p>" + b"b" * 3_000 + b"</p>"]
    page.write_bytes(versions[0])
    stop = threading.Event()

    def replace_forever() -> None:
        temp = config.site.output / ".page.html.tmp"
        n = 0
        while not stop.is_set():
            n += 1
            temp.write_bytes(versions[n % 2])
            os.replace(temp, page)

    outcomes: list[str] = []

    def client() -> None:
        for _ in range(40):
            try:
                got = fetch(address, "/page.html")
            except (OSError, http.client.HTTPException) as exc:
                outcomes.append(f"broken: {type(exc).__name__}")
                continue
            whole = got.status == 200 and got.body in versions and got.declared == len(got.body)
            outcomes.append("ok" if whole else f"wrong: {got.status} {got.declared} {len(got.body)}")

    with live_server(create_app(config)) as address:
        writer = threading.Thread(target=replace_forever)
        writer.start()
        clients = [threading.Thread(target=client) for _ in range(8)]
        try:
            for thread in clients:
                thread.start()
            for thread in clients:
                thread.join()
        finally:
            stop.set()
            writer.join()
    assert len(outcomes) == 320
    assert [o for o in outcomes if o != "ok"] == []

