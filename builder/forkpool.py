"""``map`` over forked worker processes when there is enough work, else in this process.

The build parses notes and the render renders them this way on every core. Workers are forked, so
they inherit what the caller set up (a render's context, the chunker's tokenizer) instead of
unpickling it; only the items and the results cross between processes.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

PARALLEL_MIN = 150  # below this many items a process pool costs more than it saves
JOBS_PER_ROUND_TRIP = 8  # fewer round trips to a worker, yet a short wait for the last one


class Pool:
    """A lazily started pool of forked workers (at most ``workers``; default: the cores, up to 4)."""

    def __init__(self, workers: int | None) -> None:
        self.workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
        if not hasattr(os, "fork"):  # (multiprocessing is imported only when a pool is started)
            self.workers = 1
        self.executor: Any = None

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self.executor is not None:  # on an error, work not yet started is dropped, not waited for
            self.executor.shutdown(cancel_futures=kind is not None)

    def map(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        """``[fn(item) for item in items]``."""
        return self.start(fn, items)()

    def start(self, fn: Callable[[Any], Any], items: list[Any]) -> Callable[[], list[Any]]:
        """Start ``map``; call the result for its list. In workers, this process is free meanwhile."""
        if self.workers < 2 or len(items) < PARALLEL_MIN:
            results = [fn(item) for item in items]
            return lambda: results
        pending = self._executor().map(fn, items, chunksize=JOBS_PER_ROUND_TRIP)
        return lambda: list(pending)

    def imap(self, fn: Callable[[Any], Any], items: list[Any]) -> Iterator[Any]:
        """``fn(item)`` for each item, in order, each as soon as it is ready (this process can use one
        result while the workers make the next)."""
        if self.workers < 2 or len(items) < PARALLEL_MIN:
            return (fn(item) for item in items)
        return self._executor().map(fn, items, chunksize=JOBS_PER_ROUND_TRIP)

    def _executor(self) -> Any:
        if self.executor is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                                initializer=_worker_start, initargs=(os.getpid(),))
        return self.executor


def _worker_start(parent: int) -> None:
    """In each worker: collect garbage as usual (workers make short-lived objects), and die with the
    process that forked it. A build killed by a signal (the OOM killer, a timeout) would otherwise
    leave its workers blocked on their pipes for ever, holding the index's files open."""
    gc.enable()
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # it died before the worker asked
            os._exit(1)
