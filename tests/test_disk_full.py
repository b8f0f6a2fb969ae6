"""A full disk under the index and under the site, then space freed: the next build converges alone.

Real parts only. The data directory (index, log, lock, embedding cache) or the site folder lives on
a real small filesystem: a tmpfs mounted by the test (root may mount; CI runs as root), filled with
a filler file. Where mounting is not permitted, the same scenario runs with ``RLIMIT_FSIZE`` on the
build's process instead (``SIGXFSZ`` ignored, so a write past the cap fails with EFBIG; set
``NOTES_PORTAL_TEST_NO_MOUNT=1`` to run that way here). The build that must fail is always the real
CLI in a subprocess, so its exit code and stderr are what cron would see. Embeddings come from the
stand-in Ollama of ``conftest.FakeOllama``, a real HTTP server on 127.0.0.1 speaking
``POST /api/embed``; the search server is the real Starlette app through ``TestClient``.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from server.app import create_app
from tests.conftest import PROJECT, FakeOllama, HashEmbedder, ollama_yaml
from tests.render_support import site_snapshot

# a time bound on every test (``SIGALRM``): a build that hangs or spins fails instead of stalling the suite
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("time_bound")]

MiB = 1024 * 1024
OLD_NOTES = {
    "recepty/caj.md": "# Čaj\n\nZelený čaj se spaří vodou o 80 °C, slovo starozrnko.\n",
    "hory/snezka.md": "# Sněžka\n\nVýstup z Pece pod Sněžkou, slovo starohora.\n",
    "index.md": "# Domů\n\n[Čaj](recepty/caj.md) a [Sněžka](hory/snezka.md).\n",
}


def new_notes(count: int = 40) -> dict[str, str]:
    """Notes that need far more room than is left, to index (FTS with prefix indexes, WAL frames) and
    to render; each has a word of its own, ``novotvar<n>``, and two chunks."""
    body = " ".join(f"věta{w} o ničem zvláštním" for w in range(120))
    return {f"nove/n{n:02}.md": f"# Nová {n}\n\nSlovo novotvar{n}.\n\n## Část\n\n{body}\n" for n in range(count)}


def capped(limit: int | None) -> Callable[[], None]:
    """A ``preexec_fn``: the child may write no file past ``limit`` bytes (EFBIG, not a SIGXFSZ kill)."""

    def apply() -> None:
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an ignored signal stays ignored across exec
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    return apply


class SmallDisk:
    """A small filesystem at ``path``: a tmpfs of ``size`` bytes; where this process may not mount, a
    plain directory and a cap on the size of every file the CLI writes (see :meth:`run_cli`)."""

    def __init__(self, path: Path, size: int) -> None:
        self.path = path
        path.mkdir(parents=True)
        self.filler = path / "filler"
        self.limit: int | None = None
        self.kind = "fsize"
        if os.environ.get("NOTES_PORTAL_TEST_NO_MOUNT") != "1":
            mount = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
                                   capture_output=True, check=False)
            self.kind = "tmpfs" if mount.returncode == 0 else "fsize"

    def free_bytes(self) -> int:
        st = os.statvfs(self.path)
        return st.f_bavail * st.f_frsize

    def fill(self, leave: int, fsize_limit: Callable[[], int]) -> None:
        """tmpfs: a filler file leaves exactly ``leave`` bytes free; fsize: the next CLI runs may write
        no file past ``fsize_limit()`` bytes."""
        if self.kind == "fsize":
            self.limit = fsize_limit()
            return
        with open(self.filler, "wb") as handle:
            while (room := self.free_bytes() - leave) > 0:
                try:
                    handle.write(b"\0" * min(room, MiB))
                    handle.flush()
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
        assert self.free_bytes() == leave

    def make_room(self) -> None:
        self.filler.unlink(missing_ok=True)
        self.limit = None

    def run_cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """``python -m builder.cli ARGS`` as cron runs it (under the file-size cap in fsize mode)."""
        return subprocess.run([sys.executable, "-m", "builder.cli", *args], cwd=PROJECT, capture_output=True,
                              text=True, check=False, timeout=60, preexec_fn=capped(self.limit))

    def close(self) -> None:
        if self.kind == "tmpfs" and subprocess.run(["umount", str(self.path)], capture_output=True,
                                                   check=False).returncode:
            # a server's read-only connection may still be open in an idle worker thread: detach now,
            # the kernel frees the tmpfs when the last file on it is closed
            subprocess.run(["umount", "--lazy", str(self.path)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Callable[[str, int], SmallDisk]]:
    made: list[SmallDisk] = []

    def make(name: str, size: int) -> SmallDisk:
        made.append(SmallDisk(tmp_path / name, size))
        return made[-1]

    try:
        yield make
    finally:
        for disk in made:
            disk.close()


@pytest.fixture
def ollama() -> Iterator[FakeOllama]:
    with FakeOllama() as server:
        yield server


def write_notes(root: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def portal(where: Path, notes: Path, url: str, *, index: str, site: str) -> Config:
    where.mkdir(parents=True, exist_ok=True)
    (where / "portal.yaml").write_text(
        f"site:\n  title: Poznámky\n  output: {site}\nindex: {index}\n{ollama_yaml(url)}"
        f"sources:\n  notes:\n    folder: {notes}\n", encoding="utf-8")
    return load_config(where / "portal.yaml")


def run_build(config: Config) -> int:
    """One build in this process, with the real HTTP provider (the stand-in Ollama behind it)."""
    return build(config, log=SyncLog(config.log_path, echo_info=False))


def clean_site(tmp_path: Path, notes: Path, url: str) -> dict[str, bytes]:
    """The site a fresh build of the same notes makes on a disk with room."""
    config = portal(tmp_path / "clean", notes, url, index="data/index.sqlite", site="site")
    assert run_build(config) == 0
    return site_snapshot(config.site.output)


def temp_files(site: Path) -> list[str]:
    return [p.name for p in site.rglob("*") if p.name.endswith(".tmp")]


def warn_lines(log: str) -> list[str]:
    """The messages of the WARN lines of a piece of ``sync.log`` (without time and level)."""
    return [line.split(" WARN ", 1)[1] for line in log.splitlines() if " WARN " in line]


def run_status(config: Config, disk: SmallDisk) -> str | None:
    """``notes-portal status --json``: the source's ``last_error``, or what the command said instead."""
    proc = disk.run_cli("status", "--json", "--config", str(config.path))
    if proc.returncode != 0:
        return f"exit {proc.returncode}: {proc.stderr.strip()}"
    return json.loads(proc.stdout)["sources"][0]["last_error"]


def status_numbers(config: Config) -> tuple[int, int, str | None]:
    proc = subprocess.run([sys.executable, "-m", "builder.cli", "status", "--json", "--config", str(config.path)],
                          cwd=PROJECT, capture_output=True, text=True, check=False, timeout=60)
    assert (proc.returncode, proc.stderr) == (0, "")
    (source,) = json.loads(proc.stdout)["sources"]
    return source["files"], source["pending_vectors"], source["last_error"]


def search(client: TestClient, query: str) -> tuple[int, list[str]]:
    """The notes the words of ``query`` find (the BM25 half: exact whatever the vectors say)."""
    response = client.get("/api/search", params={"q": query, "mode": "bm25"})
    if response.status_code != 200:
        return response.status_code, [response.text[:100]]
    return response.status_code, [hit["path"] for hit in response.json()["hits"]]


def new_server(config: Config) -> TestClient:
    return TestClient(create_app(config, embedder_factory=HashEmbedder), raise_server_exceptions=False)


def indexed_paths(config: Config) -> tuple[str, set[str]]:
    """``PRAGMA integrity_check`` and the notes the index holds."""
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    try:
        return (conn.execute("PRAGMA integrity_check").fetchall()[0][0],
                {r["path"] for r in conn.execute("SELECT path FROM files")})
    finally:
        conn.close()


def assert_index_holds_exactly(config: Config, notes: dict[str, str]) -> None:
    """The index file is sound and holds exactly these notes, every chunk with its vector."""
    conn = db.connect(indexfile.resolve(config.index))
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall()[0][0] == "ok"
        assert db.fts_integrity_error(conn) is None
        files = {r["path"]: r["sha256"] for r in conn.execute("SELECT path, sha256 FROM files")}
        assert files == {p: hashlib.sha256(t.encode()).hexdigest() for p, t in notes.items()}
        chunk_ids = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        assert {r[0] for r in conn.execute("SELECT DISTINCT path FROM chunks")} == set(notes)
        assert {r[0] for r in conn.execute("SELECT rowid FROM vec_chunks")} == chunk_ids
        assert db.count_pending(conn) == 0 and db.counts(conn)["chunks_fts"] == len(chunk_ids)
    finally:
        conn.close()


# ---------------------------------------------------------------- the index's disk

@pytest.mark.parametrize("leave, serving, opens", [
    # With the server reading, the index's -shm exists: with 64 KiB left some new notes still fit,
    # their chunks wait for vectors, and the embedding cache is opened on the full disk.
    pytest.param(64 * 1024, True, True, id="nearly-full-while-serving"),
    pytest.param(64 * 1024, False, True, id="nearly-full"),
    pytest.param(0, True, True, id="last-byte-while-serving"),
    # No reader holds the index open and there is no room for its -shm: the build cannot even open it.
    pytest.param(0, False, False, id="last-byte"),
])
def test_a_full_index_disk_keeps_the_old_index_serving_and_the_next_build_converges(
        leave: int, serving: bool, opens: bool, tmp_path: Path,
        small_disk: Callable[[str, int], SmallDisk], ollama: FakeOllama) -> None:
    """The build that runs out of room exits 3 with a WARN, the index stays sound with the old notes and
    a running server answers from it; with room again the next build converges (no note changed)."""
    notes = tmp_path / "notes"
    write_notes(notes, OLD_NOTES)
    disk = small_disk("datafs", 4 * MiB)
    if disk.kind == "fsize" and leave == 0:
        pytest.skip("a file-size cap has no 'last byte': this case needs a tmpfs")
    config = portal(tmp_path, notes, ollama.url, index="datafs/data/index.sqlite", site="site")
    assert run_build(config) == 0
    server = new_server(config) if serving else None
    if server:
        assert search(server, "starohora") == (200, ["hory/snezka.md"])  # its connection stays open
    log_before = config.log_path.read_text(encoding="utf-8")
    added = new_notes()
    write_notes(notes, added)

    index_file = indexfile.resolve(config.index)
    disk.fill(leave, fsize_limit=lambda: index_file.stat().st_size + 64 * 1024)
    proc = disk.run_cli("build", "--config", str(config.path))
    log = config.log_path.read_text(encoding="utf-8")[len(log_before):]
    status_meanwhile = run_status(config, disk)
    assert "Traceback" not in proc.stderr
    if server:  # meanwhile the running server answers from the old index
        assert search(server, "starohora") == (200, ["hory/snezka.md"])
        assert search(server, "novotvar7") == (200, [])

    disk.make_room()  # no note changed since
    sound, held = indexed_paths(config)  # nothing half-written: each note is in whole or not at all
    assert sound == "ok" and set(OLD_NOTES) <= held <= set(OLD_NOTES) | set(added)
    assert run_build(config) == 0
    assert_index_holds_exactly(config, {**OLD_NOTES, **added})
    assert search(server or new_server(config), "novotvar7") == (200, ["nove/n07.md"])
    assert site_snapshot(config.site.output) == clean_site(tmp_path, notes, ollama.url)
    assert status_numbers(config) == (43, 0, None)

    # What the failing build told cron and `status` (checked last: the known defects are here):
    # exit 3, nothing on stderr but the WARN lines it logged, the first saying why the notes wait;
    # `status` shows that reason too, unless the build said it could not even record it.
    reason = "database or disk is full" if disk.kind == "tmpfs" else "disk I/O error"
    expected = f"notes: indexing failed (OperationalError: {reason}); the next build tries again"
    if not opens:
        expected = ("cannot open the index for writing (disk I/O error); the previous index keeps serving and "
                    "the next build tries again")
    warned = warn_lines(log)
    unrecorded = not opens or f"notes: cannot record the failure in the index ({reason})" in warned
    assert (proc.returncode, proc.stderr, warned[:1]) == (3, "".join(f"WARN {w}\n" for w in warned), [expected])
    if opens:
        assert status_meanwhile == (None if unrecorded else expected.removeprefix("notes: "))


@pytest.mark.parametrize("leave", [
    pytest.param(64 * 1024, id="nearly-full"),
    pytest.param(0, id="last-byte"),
])
def test_a_server_started_while_the_index_disk_is_full_answers_from_the_index(
        leave: int, tmp_path: Path, small_disk: Callable[[str, int], SmallDisk], ollama: FakeOllama) -> None:
    """A server (re)started while the index's disk is full still answers from the index; so does `status`."""
    notes = tmp_path / "notes"
    write_notes(notes, OLD_NOTES)
    disk = small_disk("datafs", 4 * MiB)
    if disk.kind == "fsize":
        pytest.skip("a file-size cap limits a build's process, not a server's reads: this case needs a tmpfs")
    config = portal(tmp_path, notes, ollama.url, index="datafs/data/index.sqlite", site="site")
    assert run_build(config) == 0
    disk.fill(leave, fsize_limit=lambda: 0)
    client = new_server(config)  # started now: no connection to the index is open yet
    found = search(client, "starohora")
    health = client.get("/api/health")
    index_ok = health.json().get("index") if health.status_code == 200 else None
    status = run_status(config, disk)
    assert (found, health.status_code, index_ok, status) == ((200, ["hory/snezka.md"]), 200, True, None)


# ---------------------------------------------------------------- the site's disk


@pytest.mark.parametrize("leave", [pytest.param(64 * 1024, id="nearly-full"), pytest.param(0, id="last-byte")])
def test_a_full_site_disk_leaves_no_half_pages_and_the_next_build_converges(
        leave: int, tmp_path: Path, small_disk: Callable[[str, int], SmallDisk], ollama: FakeOllama) -> None:
    """The render that runs out of room exits 3 with `site: cannot write …`, leaves every page whole (old
    or new) and no temp file, the index has the new notes; with room the next build's site is a clean one."""
    notes = tmp_path / "notes"
    write_notes(notes, OLD_NOTES)
    disk = small_disk("sitefs", 16 * MiB)  # the site holds the 5.5 MB diagram library too
    if disk.kind == "fsize":  # a cap small enough to stop a page would stop the index and the log first
        pytest.skip("a file-size cap applies to every file the build writes: the site's case needs a tmpfs")
    config = portal(tmp_path, notes, ollama.url, index="data/index.sqlite", site="sitefs/site")
    site = config.site.output
    assert run_build(config) == 0
    old_site = site_snapshot(site)
    server = new_server(config)
    log_before = config.log_path.read_text(encoding="utf-8")
    added = new_notes()
    write_notes(notes, added)
    clean = clean_site(tmp_path, notes, ollama.url)

    disk.fill(leave, fsize_limit=lambda: 0)
    # `--vectors now`: the new notes' vectors are embedded before the command returns, not by a process
    # racing the checks below
    proc = disk.run_cli("build", "--vectors", "now", "--config", str(config.path))
    log = config.log_path.read_text(encoding="utf-8")[len(log_before):]
    expected = (f"site: cannot write {site} (No space left on device); the index is up to date; "
                "the next build renders it again")
    assert (proc.returncode, proc.stderr, warn_lines(log)) == (3, f"WARN {expected}\n", [expected])
    assert "INFO notes: indexed 40 files / 80 chunks, removed 0 files" in log
    assert temp_files(site) == []  # no half-written page left behind
    for rel, data in site_snapshot(site).items():  # every page whole: the old one or the new one
        assert data in (old_site.get(rel), clean.get(rel)), rel
    # the index took the new notes, but a hit never leads to a missing page: those wait for their pages
    assert search(server, "novotvar7") == (200, []) and not (site / "notes/nove/n07.html").exists()
    assert status_numbers(config)[0] == 43
    assert server.get("/notes/hory/snezka.html").status_code == 200
    assert status_numbers(config) == (43, 0, None)

    disk.make_room()  # no note changed since
    assert run_build(config) == 0
    assert site_snapshot(site) == clean
    assert temp_files(site) == []
    assert_index_holds_exactly(config, {**OLD_NOTES, **added})
    assert server.get("/notes/nove/n07.html").status_code == 200
    assert search(server, "novotvar7") == (200, ["nove/n07.md"])


def test_the_fallback_cap_makes_writes_fail_with_efbig(tmp_path: Path) -> None:
    """The RLIMIT_FSIZE fallback: a write past the cap fails with EFBIG instead of killing the process."""
    code = textwrap.dedent(f"""
        import errno
        try:
            with open({str(tmp_path / 'big')!r}, 'wb') as handle:
                handle.write(b'x' * 8192)
        except OSError as exc:
            raise SystemExit(7 if exc.errno == errno.EFBIG else 1)
    """)
    assert subprocess.run([sys.executable, "-c", code], preexec_fn=capped(4096), timeout=30,
                          check=False).returncode == 7
