"""Helpers of the server tests: the app on a real socket (uvicorn in a thread), one GET on a connection
of its own, ``notes-portal serve`` in a child process on a given port and a JSON call to it, the ids
on a page."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from starlette.types import ASGIApp

from tests.conftest import PROJECT, listens
from tests.sync_support import wait_for


@contextmanager
def live_server(app: ASGIApp, lifespan: str = "off") -> Iterator[tuple[str, int]]:
    """``app`` served by uvicorn on 127.0.0.1 (a free port) in a thread; yields (host, port).
    ``lifespan="on"`` runs the app's lifespan (the MCP session manager runs in it)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan=lifespan))
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


@contextmanager
def serving(config_path: Path, port: int, *flags: str) -> Iterator[subprocess.Popen[bytes]]:
    """``notes-portal serve`` in a child process, answering on 127.0.0.1:``port``."""
    proc = subprocess.Popen([sys.executable, "-m", "builder.cli", "serve", "--no-mcp", "--port", str(port), *flags,
                             "--config", str(config_path)], cwd=PROJECT, env=os.environ.copy(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: proc.poll() is None and listens(proc.pid, port) and _answers(port), timeout=60, step=0.1)
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def call(port: int, method: str, path: str, body: bytes | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """One request to 127.0.0.1:``port``: its status and its JSON body."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method,
                                     headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def ids_in(page: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page))
