"""``map`` over forked worker processes when there is enough work, else in this process.

The build parses notes and the render renders them this way on every core. A pool is made with what
every job shares (a render's context, a build's limits: ``shared``), and each job is called as
``fn(shared, item)``, in this process or in a worker. Workers are forked, so they inherit ``shared``
instead of unpickling it (a render's link resolver is big); only the items and the results cross
between processes. The one module global, :data:`_WORKER`, is assigned only in a forked worker.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar

S = TypeVar("S")  # what every job shares
T = TypeVar("T")  # an item
R = TypeVar("R")  # a job's result

PARALLEL_MIN = 150  # below this many items a process pool costs more than it saves
JOBS_PER_ROUND_TRIP = 8  # fewer round trips to a worker, yet a short wait for the last one


class Pool(Generic[S]):
    """A lazily started pool of forked workers (at most ``workers``; default: the cores, up to 4), whose
    jobs are called with ``shared`` (see the module docstring)."""

    def __init__(self, workers: int | None, shared: S) -> None:
        self.workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
        if not hasattr(os, "fork"):  # (multiprocessing is imported only when a pool is started)
            self.workers = 1
        self.shared = shared
        self.executor: Any = None

    def share(self, shared: S) -> None:
        """Call the jobs from now on with ``shared``: only before the workers are forked (they keep what
        they inherited)."""
        if self.executor is not None:
            raise RuntimeError("the pool's workers are forked: they would not see what it shares now")
        self.shared = shared

    def __enter__(self) -> Pool[S]:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self.executor is not None:  # on an error, work not yet started is dropped, not waited for
            self.executor.shutdown(cancel_futures=kind is not None)

    def map(self, fn: Callable[[S, T], R], items: list[T]) -> list[R]:
        """``[fn(shared, item) for item in items]``."""
        return self.start(fn, items)()

    def start(self, fn: Callable[[S, T], R], items: list[T]) -> Callable[[], list[R]]:
        """Start ``map``; call the result for its list. In workers, this process is free meanwhile."""
        if self.workers < 2 or len(items) < PARALLEL_MIN:
            results = [fn(self.shared, item) for item in items]
            return lambda: results
        pending = self._executor().map(partial(_in_worker, fn), items, chunksize=JOBS_PER_ROUND_TRIP)
        return lambda: list(pending)

    def imap(self, fn: Callable[[S, T], R], items: list[T]) -> Iterator[R]:
        """``fn(shared, item)`` for each item, in order, each as soon as it is ready (this process can use
        one result while the workers make the next)."""
        if self.workers < 2 or len(items) < PARALLEL_MIN:
            return (fn(self.shared, item) for item in items)
        found: Iterator[R] = self._executor().map(partial(_in_worker, fn), items, chunksize=JOBS_PER_ROUND_TRIP)
        return found

    def _executor(self) -> Any:
        if self.executor is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # forked: the initializer's arguments are inherited, never pickled
            self.executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"),
                                                initializer=_worker_start, initargs=(os.getpid(), self.shared))
        return self.executor


_WORKER: list[Any] = []  # in a forked worker only: the pool's ``shared``, set by _worker_start


def _in_worker(fn: Callable[[Any, T], R], item: T) -> R:
    return fn(_WORKER[0], item)


def _worker_start(parent: int, shared: object) -> None:
    """In each worker: keep the pool's ``shared`` for its jobs, collect garbage as usual (workers make
    short-lived objects), and die with the process that forked it. A build killed by a signal (the OOM
    killer, a timeout) would otherwise leave its workers blocked on their pipes for ever, holding the
    index's files open."""
    _WORKER[:] = [shared]
    gc.enable()
    _die_with(parent)


def _die_with(parent: int) -> None:
    """In a forked process: be killed when ``parent`` dies (Linux), or end now if it has already."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal

        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            return
        if os.getppid() != parent:  # it died before the child asked
            os._exit(1)


def fork_each(fn: Callable[[T], R], items: list[T]) -> list[Callable[[], R]]:
    """``fn(item)`` for every item at once: the first in this process, each of the others in a process
    forked for it (in this one where there is no ``fork``, or it fails). Each result comes as a call that
    returns what ``fn`` returned or raises what it raised. A forked job that ends without its result (killed,
    or a result that cannot be pickled back) runs again in this process. For a few long jobs whose results
    are small or few (a walk per source): each result is pickled back through a pipe."""
    if len(items) < 2 or not hasattr(os, "fork"):
        return [_outcome(fn, item) for item in items]
    children: list[_Child[T]] = []
    try:
        for item in items[1:]:
            children.append(_forked(fn, item))
        outcomes = [_outcome(fn, items[0])]
        while children:
            outcomes.append(_collected(fn, children.pop(0)))
        return outcomes
    finally:  # after an error here no child is left unreaped (one still writing meets a closed pipe)
        for child in children:
            if child.pid is not None:
                os.close(child.pipe)
                os.waitpid(child.pid, 0)


@contextmanager
def meanwhile(fn: Callable[[T], R], item: T) -> Iterator[Callable[[], R]]:
    """``fn(item)`` in a process forked for it while this one goes on (run here on the first ask where there
    is no ``fork``, or it fails): yields the call that waits for its result, or raises what it raised, as
    :func:`fork_each`'s. Leaving the block without asking ends the process (a job no longer wanted). For one
    job whose result is small: it is pickled back through a pipe."""
    child = _forked(fn, item) if hasattr(os, "fork") else _Child(item)
    got: list[Callable[[], R]] = []
    asked = False

    def result() -> R:
        nonlocal asked
        if not asked:
            asked = True  # from here _collected owns the process (it reaps it however the ask ends)
            got.append(_collected(fn, child))
        return got[0]()

    try:
        yield result
    finally:
        if not asked and child.pid is not None:
            _end(child.pid, child.pipe)


def _end(pid: int, pipe: int | None) -> None:
    """Kill and reap a forked job no longer wanted (its pipe closed first, unless already closed)."""
    import signal

    if pipe is not None:
        os.close(pipe)
    os.kill(pid, signal.SIGKILL)  # one that has ended (not yet reaped) takes it harmlessly
    os.waitpid(pid, 0)


@dataclass(frozen=True)
class _Child(Generic[T]):
    """A job of :func:`fork_each`: its item, and the process running it and the pipe its outcome comes
    through (``pid`` None: no process could be forked, the job runs in this one)."""

    item: T
    pid: int | None = None
    pipe: int = -1


def _forked(fn: Callable[[T], R], item: T) -> _Child[T]:
    """Start ``fn(item)`` in a forked process."""
    read, write = os.pipe()
    parent = os.getpid()
    try:
        pid = os.fork()
    except OSError:
        os.close(read)
        os.close(write)
        return _Child(item)
    if pid == 0:  # the child: one job, its outcome down the pipe, out without the parent's clean-up
        try:
            os.close(read)
            _die_with(parent)
            with os.fdopen(write, "wb") as pipe:
                pipe.write(_pickled(fn, item))
        finally:
            os._exit(0)
    os.close(write)
    return _Child(item, pid, read)


def _collected(fn: Callable[[T], R], child: _Child[T]) -> Callable[[], R]:
    """The outcome of a job of :func:`fork_each`: its process's, or the job's run here when it has none."""
    import pickle

    if child.pid is None:
        return _outcome(fn, child.item)
    try:
        with os.fdopen(child.pipe, "rb") as pipe:
            data = pipe.read()
    except BaseException:  # interrupted while waiting: the process is not left behind
        _end(child.pid, None)
        raise
    os.waitpid(child.pid, 0)
    try:
        done, value = pickle.loads(data)
    except Exception:  # killed, or a result that cannot be unpickled: the job runs here
        return _outcome(fn, child.item)
    return _returning(value) if done else _raising(value)


def _pickled(fn: Callable[[T], R], item: T) -> bytes:
    """What a forked job sends back: (True, its result) or (False, what it raised); nothing when its result
    cannot be pickled (the parent then runs the job itself)."""
    import pickle

    try:
        result = fn(item)
    except Exception as exc:  # reported to the parent, which raises it
        try:
            return pickle.dumps((False, exc))
        except Exception:  # one that cannot be pickled: its message
            return pickle.dumps((False, RuntimeError(str(exc))))
    try:
        return pickle.dumps((True, result))
    except Exception:
        return b""


def _outcome(fn: Callable[[T], R], item: T) -> Callable[[], R]:
    """``fn(item)`` run here, as a call that returns its result or raises what it raised."""
    try:
        return _returning(fn(item))
    except Exception as exc:  # raised again by the call
        return _raising(exc)


def _returning(value: R) -> Callable[[], R]:
    return lambda: value


def _raising(exc: BaseException) -> Callable[[], Any]:
    def call() -> Any:
        raise exc
    return call
