"""Every child process of the portal runs the portal's code, never a module of the folder the user runs it
from (issue 44): the background backfill a build starts, the builds ``serve`` queues, ``watch``'s builds and
grep's Python engine all start in safe-path mode (builder/core/interpreter.py).

Each test runs the real CLI, through its installed entry point, from a folder holding a hostile
``builder.py``, ``builder/``, ``server/`` and ``yaml.py``, each of which leaves a marker when imported, and
checks that no marker appears and that the work was done. Before the fix ``python -m builder.cli`` put that
folder first on the children's path: the backfill never made a vector, the queued builds failed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder.core import index as db
from builder.core.interpreter import PROJECT, child_environment
from tests.conftest import FakeOllama, free_port, listens, ollama_yaml, write_config, write_note


SYNC_KEY = "s" * 40
LAYOUTS = {"packages": ("builder/__init__.py", "builder/cli/__init__.py", "builder/cli/__main__.py",
                        "server/__init__.py", "builder.py", "yaml.py"),
           "modules": ("builder.py", "server.py", "yaml.py", "numpy/__init__.py")}


def cli() -> list[str]:
    """The installed entry point (its own folder, not the working folder, is first on its path)."""
    script = Path(sysconfig.get_path("scripts")) / "notes-portal"
    if script.is_file():
        return [str(script)]
    return [sys.executable, "-P", "-c", "import sys; from builder.cli import main; sys.exit(main())"]


def hostile_folder(tmp_path: Path, layout: str = "packages") -> tuple[Path, Path]:
    """(the working folder, the folder its modules leave their markers in)."""
    folder, markers = tmp_path / "work", tmp_path / "imported"
    for rel in LAYOUTS[layout]:
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / rel.replace("/", ".")
        path.write_text(f"import os\nos.makedirs({str(markers)!r}, exist_ok=True)\n"
                        f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    return folder, markers


def imported(markers: Path) -> list[str]:
    return sorted(p.name for p in markers.iterdir()) if markers.is_dir() else []


@pytest.fixture
def portal(tmp_path: Path) -> Iterator[Path]:
    write_note(tmp_path / "notes", "caj.md", "# Čaj\n\nTeh tarik se přelévá.\n")
    write_note(tmp_path / "notes", "hory/snezka.md", "# Sněžka\n\nPowerbanka a čelovka.\n")
    with FakeOllama() as ollama:
        yield write_config(tmp_path, "index: data/index.sqlite\nsite:\n  output: site\n" + ollama_yaml(ollama.url)
                           + f"server:\n  sync_key: {SYNC_KEY}\nwatch:\n  debounce: 0.1\n"
                           "sources:\n  notes:\n    folder: notes\n")


def vectors_done(config: Path, chunks: int) -> None:
    """Wait until the index holds ``chunks`` chunks, every one with its vector (the backfill's work)."""
    deadline = time.monotonic() + 60
    while True:
        conn = db.connect(next((config.parent / "data").glob("index*.sqlite")))
        try:
            counts = (db.count_chunks(conn), db.count_pending(conn))
        finally:
            conn.close()
        if counts == (chunks, 0):
            return
        assert time.monotonic() < deadline, f"the backfill never finished: (chunks, pending) = {counts}"
        time.sleep(0.1)


def log_says(log: Path, line: str) -> None:
    """Wait until ``log`` holds ``line`` (a child writes it after the work the test saw done)."""
    deadline = time.monotonic() + 30
    while line not in (log.read_text(encoding="utf-8") if log.is_file() else ""):
        assert time.monotonic() < deadline, f"{log} never said {line!r}"
        time.sleep(0.1)


def wait_for(path: Path, what: str) -> None:
    deadline = time.monotonic() + 60
    while not path.is_file():
        assert time.monotonic() < deadline, f"{what}: {path} never appeared"
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_build_and_its_background_backfill_run_the_portal_s_code(portal, tmp_path, layout):
    folder, markers = hostile_folder(tmp_path, layout)
    done = subprocess.run([*cli(), "build", "--config", str(portal)], cwd=folder, capture_output=True, text=True,
                          timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "site/notes/hory/snezka.html").is_file()
    vectors_done(portal, 2)
    # The backfill commits its vectors before it logs them: wait for the line rather than read it once.
    log_says(tmp_path / "data/log/sync.log", "INFO embedded 2 chunks (2 computed, 0 from the cache)")
    assert imported(markers) == []


@pytest.mark.slow
def test_a_build_queued_through_serve_runs_the_portal_s_code(portal, tmp_path):
    folder, markers = hostile_folder(tmp_path)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with subprocess.Popen([*cli(), "serve", "--config", str(portal), "--port", str(port), "--no-mcp"], cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
        try:
            deadline = time.monotonic() + 30
            while not listens(proc.pid, port):
                assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
            request = urllib.request.Request(f"{base}/api/sync", method="POST", headers={"X-API-Key": SYNC_KEY})
            with urllib.request.urlopen(request, timeout=10) as answer:
                job_url = json.loads(answer.read())["url"]
            deadline = time.monotonic() + 60
            while True:
                status = urllib.request.Request(f"{base}{job_url}", headers={"X-API-Key": SYNC_KEY})
                with urllib.request.urlopen(status, timeout=10) as answer:
                    job = json.loads(answer.read())
                if job["state"] in ("succeeded", "failed"):
                    break
                assert time.monotonic() < deadline, f"the job never ended: {job}"
                time.sleep(0.1)
            assert (job["state"], job["error"], job["counts"]) == ("succeeded", None,
                                                                   {"notes": 2, "chunks": 2, "removed": 0})
            assert (tmp_path / "site/notes/caj.html").is_file()
            vectors_done(portal, 2)  # the job's build started the backfill
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    assert imported(markers) == []


@pytest.mark.slow
def test_watch_s_builds_run_the_portal_s_code(portal, tmp_path):
    folder, markers = hostile_folder(tmp_path)
    with subprocess.Popen([*cli(), "watch", "--config", str(portal)], cwd=folder,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        try:
            wait_for(tmp_path / "site/notes/caj.html", "the build watch queues at its start")
            time.sleep(0.5)  # the watches are in place
            write_note(tmp_path / "notes", "novy.md", "# Nový\n\nUloženo za běhu.\n")
            wait_for(tmp_path / "site/notes/novy.html", "the build of a save")
            vectors_done(portal, 3)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
    assert imported(markers) == []


@pytest.mark.slow
def test_grep_s_python_engine_runs_the_portal_s_code(portal, tmp_path):
    folder, markers = hostile_folder(tmp_path)
    empty = tmp_path / "bin"  # no ripgrep on the PATH: grep runs its Python engine in a child
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    assert shutil.which("rg", path=str(empty)) is None
    done = subprocess.run([*cli(), "grep", "tarik", "--config", str(portal)], cwd=folder, capture_output=True,
                          text=True, timeout=60, env=env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "notes:caj.md:3:Teh tarik se přelévá.\n", "")
    assert imported(markers) == []


@pytest.mark.parametrize(("given", "child"), [
    (None, PROJECT), ("", PROJECT), ("/opt/lib", f"{PROJECT}:/opt/lib"), (":/opt/lib::", f"{PROJECT}:/opt/lib"),
    (f"/opt/lib:{PROJECT}", f"{PROJECT}:/opt/lib")])
def test_a_child_s_path_is_the_checkout_then_the_caller_s_entries_never_an_empty_one(given, child):
    """An empty entry of PYTHONPATH is the working folder, even in safe-path mode."""
    environ = {"HOME": "/home/me"} if given is None else {"HOME": "/home/me", "PYTHONPATH": given}
    assert child_environment(environ) == {"HOME": "/home/me", "PYTHONPATH": child}
