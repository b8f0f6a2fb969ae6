"""The sync job runner: one thread that runs the queued jobs (:mod:`builder.core.index.jobqueue`), one build at a time.

``notes-portal serve`` starts it beside the web app and hands the app the runner as its *sync desk*
(``enqueue``, ``job``, ``status``): a request only queues work, the build runs here. ``notes-portal
watch`` feeds it from file events. Each job is one ordinary build of its source through
:func:`builder.sync.build` with ``wait=True``, so a job and cron's build never run at once: whichever
comes second waits for the build lock. A failed attempt is tried again after :data:`BACKOFF_S`, at
most three times. Only one runner per data folder runs jobs (an OS lock on ``jobs.lock``); the one
that takes it first queues again the jobs that a killed process left running.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from builder.core.config import Config
from builder.core.embedding import EmbedderFactory
from builder.core.errors import JobsUnavailable, UserError
from builder.core.index.jobqueue import Job, JobQueue
from builder.lock import BuildLock
from builder.report import BuildReport
from builder.core.errors import EXIT_OK
from builder.sync import build
from builder.core.synclog import SyncLog

BACKOFF_S = (10.0, 60.0, 300.0)  # the wait before the first, second and third retry
DIED = "the process running this job stopped before it finished"
BuildFunction = Callable[..., int]  # builder.sync.build's signature


class JobRunner:
    """Runs the jobs of ``config``'s queue in a background thread (:meth:`start`), and is the desk
    through which the web app and the watcher ask for them."""

    def __init__(self, config: Config, *, embedder_factory: EmbedderFactory | None = None,
                 build_function: BuildFunction = build, backoff: Sequence[float] = BACKOFF_S,
                 poll_s: float = 1.0) -> None:
        self.config = config
        self.queue = JobQueue(config.jobs_path)
        self.embedder_factory = embedder_factory
        self.build_function = build_function
        self.backoff = tuple(backoff)
        self.poll_s = poll_s
        self.builds = 0  # builds this runner started
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ the desk (called from request threads)

    def enqueue(self, source: str | None, reason: str, delivery: str | None = None) -> dict[str, Any]:
        """Ask for a build of ``source`` (None: every source); see :meth:`JobQueue.enqueue`.
        Returns ``{job, new, duplicate}``."""
        if source is not None:
            self.config.source(source)  # an unknown id is a ConfigError, never a job
        done = self.queue.enqueue(source, reason, delivery)
        self._wake.set()
        return {"job": done.job, "new": done.new, "duplicate": done.duplicate}

    def job(self, job_id: str) -> dict[str, Any] | None:
        return self.queue.job(job_id)

    def status(self) -> dict[str, Any]:
        return self.queue.status()

    # ------------------------------------------------------------ running

    def start(self) -> None:
        """Run jobs in a daemon thread until :meth:`stop`."""
        self._thread = threading.Thread(target=self._loop, name="notes-portal sync jobs", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop after the current job (waiting at most ``timeout`` seconds for it; an unfinished job is
        queued again by the next runner)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def run_due(self) -> int:
        """Run every job that is due, in this thread; returns how many attempts ran (for one-shot use)."""
        ran = 0
        while (job := self.queue.claim()) is not None:
            self.run(job)
            ran += 1
        return ran

    def _loop(self) -> None:
        complained = False
        while not self._stop.is_set():
            try:
                with BuildLock(self.config.data_dir / "jobs.lock") as lock:
                    if lock.acquired:  # else another process runs this queue: try again later
                        self._serve()
                        return
            except (OSError, JobsUnavailable) as exc:
                if not complained:
                    print(f"notes-portal: sync jobs paused: {exc}", file=sys.stderr)
                    complained = True
            self._stop.wait(self.poll_s)

    def _serve(self) -> None:
        """Holding the runner lock: requeue what a dead runner left, then run jobs as they come."""
        self.queue.recover(DIED)
        while not self._stop.is_set():
            job = self.queue.claim()
            if job is None:
                self._wake.wait(self.poll_s)
                self._wake.clear()
                continue
            self.run(job)

    def run(self, job: Job) -> str:
        """One attempt at ``job`` (claimed); returns its state afterwards."""
        if job.source is not None and job.source not in {s.id for s in self.config.sources}:
            return self.queue.finish(job.id, f"source {job.source!r} is no longer in the config")
        log = SyncLog(self.config.log_path)
        report = BuildReport(on_change=lambda r: self._progress(job.id, r))
        self.builds += 1
        try:
            code = self.build_function(self.config, source_id=job.source, wait=True, report=report, log=log,
                                       embedder_factory=self.embedder_factory)
            error = None if code == EXIT_OK else _failure(code, log)
        except UserError as exc:
            error = str(exc)
        except Exception as exc:  # a bug must end this attempt, not the runner
            error = f"{type(exc).__name__}: {exc}"
        retry_in = self.backoff[min(job.attempts, len(self.backoff)) - 1] if self.backoff else None
        state = self.queue.finish(job.id, error, retry_in)
        if error is not None:
            what = f"source {job.source}" if job.source else "every source"
            then = f"tried again in {retry_in:g} s" if state == "queued" else "it stays failed"
            log.warn(f"sync job {job.id} ({what}), attempt {job.attempts}: {error}; {then}")
        return state

    def _progress(self, job_id: str, report: BuildReport) -> None:
        with contextlib.suppress(JobsUnavailable):  # the job's progress is for show; the build goes on
            self.queue.progress(job_id, report.phase, report.notes, report.chunks, report.removed)


def _failure(code: int, log: SyncLog) -> str:
    """Why a build that ended with ``code`` failed: its WARN lines."""
    warnings = [line.split(" ", 2)[2] for line in log.lines if line.split(" ", 2)[1] in ("WARN", "ERROR")]
    return "; ".join(warnings[:3]) or f"the build ended with exit code {code}"
