"""Builds of ``serve`` and ``watch`` run in a child process (builder/childbuild.py): a process whose
threads may hold locks never forks a build's workers."""

from __future__ import annotations

import fcntl
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import builder.core.forkpool
import builder.sync
from builder.childbuild import build_in_child
from builder.core.config import load_config
from builder.job_runner import JobRunner
from builder.report import BuildReport
from builder.core.synclog import SyncLog
from tests.conftest import PROJECT, write_config, write_note


def _portal(tmp_path: Path, extra: str = "", embedding: str = "embedding:\n  provider: none\n"):
    write_note(tmp_path / "notes", "caj.md", "# Čaj\n\nTeh tarik se přelévá.\n")
    write_note(tmp_path / "notes", "hory/snezka.md", "# Sněžka\n\nPowerbanka a čelovka.\n")
    return load_config(write_config(tmp_path, f"index: data/index.sqlite\n{embedding}"
                                              f"sources:\n  notes:\n    folder: notes\n{extra}"))


def test_a_job_s_build_runs_in_a_child_and_the_job_follows_its_phases_and_counts(tmp_path, monkeypatch):
    config = _portal(tmp_path)

    def in_this_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("the build ran in the job runner's process")

    monkeypatch.setattr(builder.sync, "build", in_this_process)
    monkeypatch.setattr(builder.core.forkpool.Pool, "__init__", in_this_process)
    phases: list[str] = []
    runner = JobRunner(config, build_function=build_in_child)
    original = runner.queue.progress
    monkeypatch.setattr(runner.queue, "progress", lambda job, phase, *counts: (phases.append(phase),
                                                                               original(job, phase, *counts)))
    job = runner.enqueue(None, "test")["job"]
    assert runner.run_due() == 1
    done = runner.job(job["id"])
    assert (done["state"], done["error"], done["counts"]) == ("succeeded", None,
                                                              {"notes": 2, "chunks": 2, "removed": 0})
    assert [p for i, p in enumerate(phases) if i == 0 or phases[i - 1] != p] == ["scan", "index", "render"]
    assert (config.site.output / "notes" / "hory" / "snezka.html").is_file()


def test_the_child_s_warnings_reach_the_caller_s_log_and_its_exit_code_is_returned(tmp_path):
    config = _portal(tmp_path, extra=f"  travel:\n    git: file://{tmp_path}/missing.git\n")
    log = SyncLog(config.log_path, echo_info=False)
    report = BuildReport()
    assert build_in_child(config, report=report, log=log) == 3
    warnings = [line.split(" ", 2)[2] for line in log.lines if line.split(" ", 2)[1] == "WARN"]
    assert len(warnings) == 1 and warnings[0].startswith("travel: git ls-remote failed")
    assert (report.phase, report.notes) == ("render", 2)
    # the child wrote the line to log/sync.log once; the caller kept it without writing it again
    assert config.log_path.read_text(encoding="utf-8").count("travel: git ls-remote failed") == 1


def test_a_user_error_of_the_child_is_one_error_line(tmp_path):
    config = _portal(tmp_path)
    log = SyncLog(config.log_path, echo_info=False)
    assert build_in_child(config, source_id="nowhere", log=log) == 2
    assert [line.split(" ", 2)[1:] for line in log.lines] == [
        ["ERROR", "unknown source 'nowhere' (configured: notes)"]]


@pytest.mark.slow
def test_the_child_leaves_when_its_parent_is_killed(tmp_path):
    config = _portal(tmp_path)
    config.build_lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(config.build_lock_path, "a") as held:  # the child's build waits for the build lock, held here
        fcntl.flock(held, fcntl.LOCK_EX)
        parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
            from builder.childbuild import build_in_child
            from builder.core.config import load_config
            build_in_child(load_config({str(config.path)!r}))
            """)], cwd=PROJECT)
        deadline = time.monotonic() + 30
        while (child := _child_of(parent.pid)) is None or not _waits_for_a_lock(child):
            assert time.monotonic() < deadline, "the child's build never waited for the build lock"
            time.sleep(0.05)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(child), "the build outlived the process that started it"


def _waits_for_a_lock(pid: int) -> bool:
    try:
        return "flock" in (Path("/proc") / str(pid) / "wchan").read_text() or \
            "locks" in (Path("/proc") / str(pid) / "wchan").read_text()
    except OSError:
        return False


def _child_of(pid: int) -> int | None:
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                return int(entry.name)
    return None


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has ended; only its exit status waits for its (dead) parent's reaper
