"""Watch mode: saves in a folder source become builds within about a second, git sources are polled,
and both commands (``notes-portal watch`` and ``serve --watch``) do it as a user starts them."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from builder.core.config import Config, load_config
from builder.job_runner import JobRunner
from builder.sync import build
from builder.watch import Watch, relevant, sources_touched
from tests.conftest import PROJECT, HashEmbedder, free_port, write_config, write_note
from tests.server_support import call, serving
from tests.sync_support import make_portal, wait_for

pytestmark = pytest.mark.slow

FTS_ONLY = "embedding:\n  provider: none\n"


def folder_config(tmp_path: Path, extra: str = "") -> Config:
    write_note(tmp_path / "notes", "a.md", "# A\n\nPrvní poznámka.\n")
    body = (f"index: data/index.sqlite\nsite:\n  output: site\n{FTS_ONLY}{extra}"
            "sources:\n  notes:\n    folder: notes\n    exclude: ['archiv/**']\n")
    return load_config(write_config(tmp_path, body))


def indexed(config: Config) -> set[str]:
    from builder.core import index as db

    conn = db.open_index(config.index, vec=False)
    try:
        return {row["path"] for row in conn.execute("SELECT path FROM files")}
    finally:
        conn.close()


def test_which_changes_can_change_the_index(tmp_path):
    config = folder_config(tmp_path)
    source, root = config.sources[0], str(config.sources[0].root)
    cases = {"a.md": True, "deep/folder/b.md": True, "moved-folder": True, "archiv/x.md": False,
             ".obsidian/workspace.json": False, "deep/.b.md.swp": False, "b.md~": False, "photo.png": False,
             ".": False}
    assert {rel: relevant(source, f"{root}/{rel}") for rel in cases} == cases
    assert relevant(source, str(tmp_path / "elsewhere.md")) is False
    assert sources_touched(config.sources, [f"{root}/a.md", f"{root}/photo.png", f"{root}/b.md"]) == ["notes"]
    assert sources_touched(config.sources, [f"{root}/photo.png"]) == []


def _running(config: Config) -> tuple[JobRunner, Watch]:
    runner = JobRunner(config, poll_s=0.05)
    runner.start()
    watch = Watch(config, runner.enqueue)
    watch.start()
    assert watch.ready.wait(10)
    return runner, watch


def test_a_saved_note_is_indexed_and_rendered_within_a_second_or_two(tmp_path):
    config = folder_config(tmp_path, "watch:\n  debounce: 0.1\n")
    assert build(config) == 0
    runner, watch = _running(config)
    try:
        wait_for(lambda: runner.status()["counts"]["succeeded"] == 1)  # the build at start
        started = time.monotonic()
        write_note(config.sources[0].root, "nova/b.md", "# B\n\nDruhá poznámka.\n")
        page = config.site.output / "notes" / "nova" / "b.html"
        wait_for(lambda: "nova/b.md" in indexed(config) and page.is_file(), timeout=10)
        took = time.monotonic() - started
        write_note(config.sources[0].root, "archiv/old.md", "# Old\n")  # out of scope: no build
        (config.sources[0].root / "a.md").unlink()
        wait_for(lambda: "a.md" not in indexed(config), timeout=10)
        time.sleep(0.5)
    finally:
        watch.stop()
        runner.stop()
    assert took < 3.0
    jobs = runner.status()["jobs"]
    assert [(j["source"], j["reason"], j["state"]) for j in reversed(jobs)] == [
        (None, "watch", "succeeded"), ("notes", "watch", "succeeded"), ("notes", "watch", "succeeded")]
    assert indexed(config) == {"nova/b.md"}


def test_a_burst_of_saves_costs_at_most_two_builds(tmp_path):
    config = folder_config(tmp_path, "watch:\n  debounce: 0.1\n")
    assert build(config) == 0
    runner, watch = _running(config)
    try:
        wait_for(lambda: runner.status()["counts"]["succeeded"] == 1)
        before = runner.builds
        for n in range(30):
            write_note(config.sources[0].root, f"burst/{n}.md", f"# Poznámka {n}\n\nText {n}.\n")
            time.sleep(0.01)
        wait_for(lambda: len(indexed(config)) == 31, timeout=15)
        time.sleep(0.5)
    finally:
        watch.stop()
        runner.stop()
    assert 1 <= runner.builds - before <= 2


def test_git_sources_are_polled_with_an_ordinary_build(tmp_path):
    portal = make_portal(tmp_path, extra="watch:\n  git_poll: 1\n")
    runs: list[str | None] = []

    def counting(config: Config, **kwargs: object) -> int:
        runs.append(kwargs.get("source_id"))  # type: ignore[arg-type]
        return build(config, embedder_factory=HashEmbedder, **kwargs)  # type: ignore[arg-type]

    watch = Watch(portal.config, lambda source, reason: None, build_function=counting)
    assert [s.id for s in watch.git] == ["travel", "journal"]
    assert watch.describe() == "watching 1 folder; asking 2 git sources every 1 s"
    watch.start()
    try:
        portal.up.write("hory/rysy.md", "# Rysy\n")
        portal.up.commit("rysy")
        portal.up.push()
        wait_for(lambda: "hory/rysy.md" in indexed(portal.config), timeout=10)
    finally:
        watch.stop()
    assert runs and set(runs) == {None}


def test_notes_portal_watch_builds_on_save_and_stops_on_sigterm(tmp_path):
    config = folder_config(tmp_path, "watch:\n  debounce: 0.1\n")
    proc = subprocess.Popen([sys.executable, "-m", "builder.cli", "watch", "--config", str(config.path)],
                            cwd=PROJECT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: config.index.exists() and "a.md" in indexed(config), timeout=30)  # the build at start
        time.sleep(1.5)  # the watches are in place well before this
        write_note(config.sources[0].root, "b.md", "# B\n\nUložená poznámka.\n")
        wait_for(lambda: "b.md" in indexed(config) and (config.site.output / "notes" / "b.html").is_file(),
                 timeout=10)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (0, b"")
    assert err.decode().splitlines()[0] == "notes-portal: watching 1 folder (Ctrl-C stops)"


def test_serve_watch_makes_a_saved_note_searchable(tmp_path):
    config = folder_config(tmp_path, "watch:\n  debounce: 0.1\n")
    assert build(config) == 0
    port = free_port()
    with serving(config.path, port, "--watch"):
        time.sleep(1.5)  # the watches are in place well before this
        write_note(config.sources[0].root, "c.md", "# C\n\nKvasinky a kvásek.\n")
        hits = wait_for(lambda: call(port, "GET", "/api/search?q=kvasinky&mode=bm25")[1]["hits"], timeout=10)
    assert [h["path"] for h in hits] == ["c.md"]
