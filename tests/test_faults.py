"""Faulty services, as real misbehaving servers on 127.0.0.1: each is handled as designed, nothing is
left half-written, and the next build after the service recovers converges without a manual step.

- Embedding providers: :class:`ProviderServer` is a real HTTP server speaking Ollama's
  ``POST /api/embed`` (``{"model", "input": [...], "truncate", "keep_alive"}`` →
  ``{"model", "embeddings": [[...]]}``) or the OpenAI-compatible ``POST /v1/embeddings``
  (``{"model", "input"}`` → ``{"data": [{"index", "embedding"}]}``) exactly, and misbehaves on
  demand: HTTP 500, vectors of the wrong dimensions, NaN, fewer vectors than inputs, an answer only
  after the client's ``embedding.timeout``. The failing build is the real CLI in a subprocess, the
  one after the fix runs in-process; both use the real provider code, and search the real app.
- Git remotes: real repositories served by ``git daemon`` on 127.0.0.1 behind :class:`FaultyRemote`, a
  TCP server that forwards each connection to the daemon, or accepts it and never answers, or
  accepts it and resets it (``SO_LINGER`` 0: an RST), for ``ls-remote`` or for the ``fetch`` after
  it; and a force-push that rewrites the history the index was built from.

Every test is bounded in time (``SIGALRM``): a build that hangs or spins fails instead of waiting.
"""

from __future__ import annotations

import json
import math
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from builder import gitsource, indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from server.app import create_app
from tests.conftest import DIMS, PROJECT, hashed_vector, write_config, write_note
from tests.git_support import (
    Daemon,
    Upstream,
    assert_index_is_exactly,
    git,
    log_lines,
    make_config,
    open_index,
    run,
    source_row,
)
from tests.render_support import site_snapshot

# a time bound on every test (SIGALRM), so that a build that hangs or spins fails instead of waiting
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("time_bound")]


def cli(config: Config, *args: str, timeout: float = 30) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m builder.cli ARGS --config …`` in a subprocess, and its wall time."""
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "builder.cli", *args, "--config", str(config.path)],
                          cwd=PROJECT, capture_output=True, text=True, check=False, timeout=timeout)
    return proc, time.monotonic() - started


def status_of(config: Config, source_id: str) -> dict[str, Any]:
    """The source's entry in ``notes-portal status --json``."""
    proc, _ = cli(config, "status", "--json")
    assert (proc.returncode, proc.stderr) == (0, "")
    return next(s for s in json.loads(proc.stdout)["sources"] if s["id"] == source_id)


def vector_state(config: Config) -> tuple[int, int, set[int], set[int]]:
    """(chunks, pending, ids of the chunks that have a vector, rowids of vec_chunks)."""
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    try:
        chunks = db.counts(conn)["chunks"]
        embedded = {r[0] for r in conn.execute("SELECT id FROM chunks WHERE embedded_at IS NOT NULL")}
        vectors = {r[0] for r in conn.execute("SELECT rowid FROM vec_chunks")}
        return chunks, db.count_pending(conn), embedded, vectors
    finally:
        conn.close()


def chunk_ids(config: Config) -> set[int]:
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    try:
        return {r[0] for r in conn.execute("SELECT id FROM chunks")}
    finally:
        conn.close()


# ---------------------------------------------------------------- embedding providers


class ProviderServer:
    """A real embedding server on 127.0.0.1 speaking ``protocol`` (``ollama`` or ``openai``) exactly;
    ``fault`` makes it misbehave: ``500``, ``dims``, ``nan``, ``fewer``, ``slow``, or ``500-after-one``
    (the first request is answered, every later one fails)."""

    SLOW_S = 6.0

    def __init__(self, protocol: str, dims: int = DIMS) -> None:
        self.protocol, self.dims = protocol, dims
        self.fault: str | None = None
        self.inputs: list[list[str]] = []  # the input texts of every request, in order
        self.off_protocol: list[dict[str, Any]] = []  # requests the real protocol would not accept
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                expected_path = "/api/embed" if outer.protocol == "ollama" else "/v1/embeddings"
                if self.path != expected_path:
                    return self._send(404, {"error": f"no route {self.path}"})
                fields = ({"model", "input", "truncate", "keep_alive"} if outer.protocol == "ollama"
                          else {"model", "input"})
                if set(body) != fields or not isinstance(body["input"], list):
                    outer.off_protocol.append(body)
                    return self._send(400, {"error": "unexpected request"})
                outer.inputs.append(list(body["input"]))
                self._answer(body)

            def _answer(self, body: dict[str, Any]) -> None:
                fault = outer.fault
                if fault == "500-after-one":
                    fault = "500" if len(outer.inputs) > 1 else None
                if fault == "500":
                    return self._send(500, outer.server_error())
                if fault == "slow":
                    time.sleep(outer.SLOW_S)
                dims = 16 if fault == "dims" else outer.dims
                vectors: list[list[float | None]] = [hashed_vector(t, dims).tolist() for t in body["input"]]
                if fault == "nan":  # Ollama (Go) has no NaN in JSON: a Python server's literal NaN; llama.cpp's null
                    for vector in vectors:
                        vector[3] = math.nan if outer.protocol == "ollama" else None
                if fault == "fewer":
                    vectors = vectors[:-1]
                if outer.protocol == "ollama":
                    payload: dict[str, Any] = {"model": body["model"], "embeddings": vectors,
                                               "total_duration": 1_000_000, "load_duration": 1000,
                                               "prompt_eval_count": 8 * len(body["input"])}
                else:
                    payload = {"object": "list", "model": body["model"],
                               "data": [{"object": "embedding", "index": i, "embedding": v}
                                        for i, v in enumerate(vectors)],
                               "usage": {"prompt_tokens": 8, "total_tokens": 8}}
                self._send(200, payload)

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()  # json allows NaN: the "nan" fault relies on it
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting (the "slow" fault): nothing to answer
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.endpoint = self.url if protocol == "ollama" else f"{self.url}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def server_error(self) -> dict[str, Any]:
        if self.protocol == "ollama":
            return {"error": "llama runner process has terminated: signal: killed"}
        return {"error": {"message": "llama runner crashed", "type": "server_error", "code": 500}}

    def yaml(self, *, timeout: float, batch: int) -> str:
        return (f"embedding:\n  provider: {self.protocol}\n  endpoint: {self.endpoint}\n  model: test-embed:1\n"
                f"  dims: {self.dims}\n  batch: {batch}\n  timeout: {timeout}\n")

    def __enter__(self) -> ProviderServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def provider_reason(provider: ProviderServer, fault: str, texts: int) -> str:
    """The one-line reason the real provider code gives for ``fault`` on a request of ``texts`` texts."""
    name, endpoint = provider.protocol, provider.endpoint
    return {
        "500": f"{name} at {endpoint}: HTTP 500 {json.dumps(provider.server_error())}",
        "500-after-one": f"{name} at {endpoint}: HTTP 500 {json.dumps(provider.server_error())}",
        "dims": f"{name} returned vectors of 16 dimensions, the config says dims: {DIMS}",
        "nan": f"{name} returned vectors with NaN or infinite values",
        "fewer": f"{name} at {endpoint}: expected {texts} embeddings in the answer",
        "slow": f"{name} at {endpoint}: no answer within 0.5 s",
    }[fault]


FAULTS = ["500", "dims", "nan", "fewer", "slow", "500-after-one"]


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
@pytest.mark.parametrize("fault", FAULTS)
def test_a_misbehaving_provider_leaves_chunks_pending_search_says_so_and_the_next_build_fills_them(
        fault: str, protocol: str, tmp_path: Path, notes_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A provider outage is no source failure: exit 0, one WARN, the chunks stored without vectors (none
    half-stored, no orphan), search FTS-only and saying why; fixed, the next build fills every vector."""
    with ProviderServer(protocol) as provider:
        config = load_config(write_config(tmp_path, f"index: data/index.sqlite\n"
                                          f"{provider.yaml(timeout=0.5, batch=2)}"
                                          "sources:\n  notes:\n    folder: notes\n"))
        provider.fault = fault
        proc, elapsed = cli(config, "build", "--vectors", "now")  # the vectors in this build's process
        # the first batch of 2 is answered by "500-after-one"; every other fault fails the first request
        stored = 2 if fault == "500-after-one" else 0
        pending = 5 - stored
        warning = (f"embeddings unavailable ({provider_reason(provider, fault, 2)}): {pending} chunks wait for "
                   "vectors; the next build retries")
        assert (proc.returncode, proc.stderr) == (0, f"WARN {warning}\n")  # an outage degrades search, no more
        assert elapsed < ProviderServer.SLOW_S - 1  # the timeout cut the wait; the server was never waited for
        assert [len(texts) for texts in provider.inputs] == [2] * (2 if stored else 1)  # asked once: no spin
        lines = log_lines(config)
        assert [line for line in lines if line.startswith("WARN")] == [f"WARN {warning}"]
        assert "INFO notes: indexed 3 files / 5 chunks, removed 0 files" in lines
        assert ("INFO embedded 2 chunks (2 computed, 0 from the cache)" in lines) == bool(stored)
        chunks, waiting, embedded, vectors = vector_state(config)
        assert (chunks, waiting, len(embedded)) == (5, pending, stored)
        assert vectors == embedded  # a vector for each embedded chunk, none for a pending one, no orphan
        status = status_of(config, "notes")
        assert (status["files"], status["chunks"], status["pending_vectors"]) == (3, 5, pending)

        client = TestClient(create_app(config))  # the real provider embeds the query, and fails as well
        answer = client.get("/api/search", params={"q": "powerbanka"})
        assert answer.status_code == 200
        body = answer.json()
        assert body["notes"] == [f"embeddings unavailable ({provider_reason(provider, fault, 1)}): FTS-only results",
                                 f"search by meaning is still being prepared: {5 - pending} of 5 sections have "
                                 "their vectors; the others are found by words only"]
        assert body["vectors"] == {"ready": 5 - pending, "total": 5}
        assert [(h["path"], h["ranks"]) for h in body["hits"]] == [("cestovani/snezka.md",
                                                                    {"bm25": 1, "vector": None})]

        assert provider.off_protocol == []
        provider.fault = None  # the server is fixed; no note changed
        asked = len(provider.inputs)
        capsys.readouterr()
        assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0  # the real provider, in-process
        assert capsys.readouterr().err == ""  # not a WARN
        assert log_lines(config)[-1] == f"INFO embedded {pending} chunks ({pending} computed, 0 from the cache)"
        assert [len(texts) for texts in provider.inputs[asked:]] == ([2, 1] if stored else [2, 2, 1])
        chunks, waiting, embedded, vectors = vector_state(config)
        assert (waiting, vectors) == (0, chunk_ids(config)) and embedded == vectors and chunks == 5
        body = client.get("/api/search", params={"q": "powerbanka"}).json()
        assert body["notes"] == [] and body["hits"][0]["path"] == "cestovani/snezka.md"
        assert body["hits"][0]["ranks"]["vector"] is not None


# ---------------------------------------------------------------- git remotes


class FaultyRemote:
    """A TCP server on 127.0.0.1 in front of a ``git daemon``. Each connection gets the next mode of
    ``plan``, then ``mode``: ``forward`` (pipe it to the daemon), ``hang`` (accept, never answer) or
    ``reset`` (read the client's request, then close with ``SO_LINGER`` 0: an RST)."""

    def __init__(self, daemon_port: int) -> None:
        self.daemon_port = daemon_port
        self.plan: list[str] = []
        self.mode = "forward"
        self.served: list[str] = []  # the mode each accepted connection got, in order
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            mode = self.plan.pop(0) if self.plan else self.mode
            self.served.append(mode)
            self.held.append(conn)
            if mode == "forward":
                upstream = socket.create_connection(("127.0.0.1", self.daemon_port))
                self.held.append(upstream)
                for a, b in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()
            elif mode == "reset":
                conn.settimeout(0.3)
                try:  # read git's request ("git-upload-pack /notes.git\0host=…") until it waits for us
                    while conn.recv(4096):
                        pass
                except OSError:
                    pass
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()
            # "hang": keep the connection open and say nothing

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
            sink.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for conn in self.held:
            conn.close()
        self.sock.close()


@pytest.fixture
def faulty_remote(git_daemon: Daemon) -> Iterator[FaultyRemote]:
    remote = FaultyRemote(int(git_daemon.url.rsplit(":", 1)[1]))
    yield remote
    remote.close()


def bm25_paths(config: Config, query: str) -> list[tuple[str, str]]:
    from server.search import search

    conn = open_index(config)
    try:
        return [(h.source, h.path) for h in search(conn, config, query, mode="bm25").hits]
    finally:
        conn.close()


@pytest.mark.parametrize("fault, command", [("hang", "ls-remote"), ("reset", "ls-remote"),
                                            ("hang", "fetch"), ("reset", "fetch")])
def test_a_remote_that_hangs_or_resets_keeps_the_source_as_indexed_and_the_next_build_catches_up(
        fault: str, command: str, tmp_path: Path, notes_dir: Path, faulty_remote: FaultyRemote) -> None:
    """Exit 3 with one WARN naming the git call; the source keeps its indexed notes, rev and clone, the
    folder source is indexed; once the remote answers again the next build catches up."""
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# Alfa\n\nslovo alfaslovo\n")
    up.write("sub/b.md", "# Beta\n\nslovo betaslovo\n")
    old_rev = up.commit("first")
    up.push()
    url = f"git://127.0.0.1:{faulty_remote.port}/notes.git"
    config = make_config(tmp_path, f"repo:\n  git: {url}\nnotes:\n  folder: notes\n", timeout=1)
    assert run(config) == 0
    old_notes = up.notes()

    up.write("a.md", "# Alfa\n\nslovo alfaslovo, nově omegaslovo\n")
    up.write("c.md", "# Gama\n\nslovo gamaslovo\n")
    up.commit("second")
    up.push()
    write_note(notes_dir, "nova.md", "# Nová\n\nnovinka\n")
    faulty_remote.plan, faulty_remote.mode = (["forward"] if command == "fetch" else []), fault
    faulty_remote.served.clear()
    lines_before = len(log_lines(config))
    started = time.monotonic()
    assert run(config) == 3
    assert time.monotonic() - started < 1 + 3  # git.timeout, plus the build's own work
    assert faulty_remote.served == (["forward", fault] if command == "fetch" else [fault])  # no retry loop
    reason = "no answer within 1 s" if fault == "hang" else "read error: Connection reset by peer"
    error = f"git {command} failed ({reason})"
    lines = log_lines(config)[lines_before:]
    assert [line for line in lines if line.startswith("WARN")] == [f"WARN repo: {error}"]
    assert "INFO notes: indexed 1 files / 1 chunks, removed 0 files" in lines  # the other source went on
    conn = open_index(config)
    assert_index_is_exactly(conn, "repo", old_notes)  # the source keeps what the index had
    conn.close()
    status = status_of(config, "repo")
    assert (status["indexed_rev"], status["last_error"], status["files"]) == (old_rev, error, 2)
    assert gitsource.clone_state(config.source_root(config.source("repo"))) == old_rev  # our clone untouched
    assert bm25_paths(config, "novinka") == [("notes", "nova.md")]
    assert bm25_paths(config, "alfaslovo") == [("repo", "a.md")]
    assert bm25_paths(config, "gamaslovo") == bm25_paths(config, "omegaslovo") == []

    faulty_remote.mode = "forward"  # the remote recovers
    assert run(config) == 0
    conn = open_index(config)
    assert_index_is_exactly(conn, "repo", up.notes())
    conn.close()
    status = status_of(config, "repo")
    assert (status["indexed_rev"], status["last_error"], status["files"]) == (up.head(), None, 3)
    assert bm25_paths(config, "omegaslovo") == [("repo", "a.md")]
    assert (config.site.output / "repo" / "c.html").is_file()


def test_a_force_push_rescans_the_source_and_the_index_and_site_equal_the_rewritten_tree(
        tmp_path: Path, git_daemon: Daemon) -> None:
    """History rewritten under the indexed rev: a full re-scan (INFO line), and then the index and the
    site equal a clean build of the rewritten tree (the deleted notes' pages gone)."""
    up = Upstream(tmp_path, "notes")
    up.write("a.md", "# Alfa\n\nslovo alfaslovo, odkaz na [betu](b.md)\n")
    up.write("b.md", "# Beta\n\nslovo betaslovo\n")
    up.write("sub/c.md", "# Gama\n\nslovo gamaslovo\n")
    first = up.commit("first", author="Alice", when="2024-01-01T10:00:00+00:00")
    up.write("d.md", "# Delta\n\nslovo deltaslovo\n")
    up.write("b.md", "# Beta\n\nslovo betaslovo, doplněno\n")
    up.commit("second", author="Bob", when="2024-02-01T10:00:00+00:00")
    up.push()
    url = f"{git_daemon.url}/notes.git"
    config = make_config(tmp_path, f"repo:\n  git: {url}\n", timeout=10)
    assert run(config) == 0
    site = config.site.output
    assert {"repo/b.html", "repo/d.html"} <= set(site_snapshot(site))
    old_rev = source_row(config, "repo").indexed_rev

    git("reset", "--quiet", "--hard", first, cwd=up.work)  # rewrite: drop "second", delete b, change c
    up.remove("b.md")
    up.write("a.md", "# Alfa\n\nslovo alfaslovo\n")
    up.write("sub/c.md", "# Gama\n\nnové znění, slovo zetaslovo\n")
    up.write("e.md", "# Epsilon\n\nslovo epsilonslovo\n")
    new_rev = up.commit("rewritten", author="Dana", when="2024-03-01T10:00:00+00:00")
    up.push(force=True)
    lines_before = len(log_lines(config))
    assert run(config) == 0
    lines = log_lines(config)[lines_before:]
    assert lines[0] == (f"INFO repo: {old_rev[:12]} is not in the history of {new_rev[:12]} "
                        "(force-pushed?): full re-scan")
    assert not [line for line in lines if line.startswith("WARN")]
    conn = open_index(config)
    assert set(up.notes()) == {"a.md", "sub/c.md", "e.md"}
    assert_index_is_exactly(conn, "repo", up.notes(), gone_words=("betaslovo", "deltaslovo", "gamaslovo"))
    assert {r[0]: r[1] for r in conn.execute("SELECT path, changed_by FROM files")} == {
        "a.md": "Dana", "sub/c.md": "Dana", "e.md": "Dana"}
    conn.close()
    assert source_row(config, "repo").indexed_rev == new_rev
    assert bm25_paths(config, "betaslovo") == bm25_paths(config, "deltaslovo") == []
    assert bm25_paths(config, "zetaslovo") == [("repo", "sub/c.md")]

    fresh = tmp_path / "fresh"  # a clean build of the rewritten remote, for comparison
    fresh.mkdir()
    clean = make_config(fresh, f"repo:\n  git: {url}\n", timeout=10)
    assert run(clean) == 0
    rewritten = site_snapshot(site)
    assert "repo/b.html" not in rewritten and "repo/d.html" not in rewritten and "repo/e.html" in rewritten
    assert rewritten == site_snapshot(clean.site.output)
