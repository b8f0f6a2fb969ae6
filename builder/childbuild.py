"""A build in a child process, for the long-lived processes (``serve``, ``watch``) that run builds.

Their threads (uvicorn's, the query embedder's, the KNN scan's) may hold locks at any moment; a
build forks its parsing and render workers, and a child forked while another thread holds a lock
can wait for it forever. So those processes run each build as ``notes-portal build --wait`` in a
process of its own (started with ``exec``, which inherits no locks; the portal's code, never the
working folder's: :mod:`builder.core.interpreter`) and follow it through the lines
it prints: ``--progress`` makes the build print its phase and counts as JSON lines on stdout, and
its WARN lines reach stderr as usual. The child leaves when its parent does (its stdin closes): no
build outlives the server that started it, and the next one's job runner runs the job again.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from typing import IO

from builder.core.config import Config
from builder.core.embedding import EmbedderFactory
from builder.core.interpreter import child_environment, python_command
from builder.report import BuildReport
from builder.core.synclog import SyncLog

LEVELS = ("WARN ", "ERROR ")


def build_in_child(config: Config, *, full: bool = False, source_id: str | None = None, wait: bool = True,
                   report: BuildReport | None = None, log: SyncLog | None = None,
                   embedder_factory: EmbedderFactory | None = None) -> int:
    """Run :func:`builder.sync.build` as ``notes-portal build`` in a child process; returns its exit code.

    ``report`` follows the child's phase and counts; ``log`` gains the WARN and ERROR lines the child
    wrote to ``log/sync.log`` (they are not written again). The embedder is the config's own: a child
    cannot be handed a factory, so ``embedder_factory`` must be None."""
    if embedder_factory is not None:
        raise ValueError("a build in a child process embeds with the config's provider")
    command = python_command("-m", "builder.cli", "build", "--config", str(config.path), "--progress")
    command += ["--full"] * full + ["--wait"] * wait + (["--source", source_id] if source_id else [])
    errors: list[str] = []
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=child_environment()) as proc:  # closes the pipes
        assert proc.stdout is not None and proc.stderr is not None
        reader = threading.Thread(target=_collect, args=(proc.stderr, errors), daemon=True)
        reader.start()
        for phase, notes, chunks, removed in _progress_lines(proc.stdout):
            if report is not None:
                report.notes, report.chunks, report.removed = notes, chunks, removed
                report.enter(phase)
        code = proc.wait()
        reader.join()
    if log is not None:
        for line in errors:
            level, _, message = line.partition(" ")
            if level in ("WARN", "ERROR"):
                log.heard(level, message)
            elif code not in (0, 1, 3) and line.startswith("notes-portal: "):  # a user error: exit 2
                log.heard("ERROR", line.removeprefix("notes-portal: "))
        if code not in (0, 1, 2, 3) and errors:  # a crash: its last line says what
            log.heard("ERROR", f"the build process ended with exit code {code}: {errors[-1]}")
    return code


def _progress_lines(stream: IO[bytes]) -> Iterator[tuple[str, int, int, int]]:
    """(phase, notes, chunks, removed) of each progress line; other lines (a stray print) are skipped."""
    for raw in stream:
        try:
            line = json.loads(raw)
            yield str(line["phase"]), int(line["notes"]), int(line["chunks"]), int(line["removed"])
        except (ValueError, TypeError, KeyError):
            continue


def _collect(stream: IO[bytes], lines: list[str]) -> None:
    for raw in stream:
        lines.append(raw.decode("utf-8", errors="replace").rstrip("\n"))


def report_to_parent() -> BuildReport:
    """The child's side (``notes-portal build --progress``): a report printed as JSON lines on stdout,
    and a watch on stdin that ends this process when the parent is gone."""

    def tell(report: BuildReport) -> None:
        # a parent that stopped reading is gone: the stdin watch ends this process
        with contextlib.suppress(BrokenPipeError, ValueError):
            print(json.dumps({"phase": report.phase, "notes": report.notes, "chunks": report.chunks,
                              "removed": report.removed}), flush=True)

    threading.Thread(target=_leave_with_parent, name="notes-portal parent watch", daemon=True).start()
    return BuildReport(on_change=tell)


def _leave_with_parent() -> None:
    """Block on stdin, which only the parent holds open; its end means the parent is gone."""
    with contextlib.suppress(OSError):  # os.read, not sys.stdin: a daemon thread blocked in a buffered
        while os.read(0, 4096):           # read aborts the interpreter's exit
            pass
    import signal

    os.kill(os.getpid(), signal.SIGTERM)  # as a kill: the next build finds the index and site consistent
