"""The one-writer lock: an OS lock (``fcntl.flock``) on ``sync.lock`` beside the index.

The kernel holds the lock for exactly as long as the holding process lives:
there is nothing stale to reclaim after a crash, however long a build runs, and
no two processes can both win. The file itself stays; the holder writes its
``{pid, started_at}`` into it so that a second build can say who is running.
A build that finds the lock taken exits 0 (cron's next run tries again); a
person at a terminal is told which build holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path

_HELD: set[int] = set()  # the descriptors of the locks this process holds


def _forget_in_child() -> None:
    """A forked child (a worker parsing or rendering for the build) closes its copies of the lock:
    were the build killed, a child left behind must not keep the lock held for every later build."""
    for fd in _HELD:
        with contextlib.suppress(OSError):
            os.close(fd)  # the parent's own descriptor keeps the lock: flock belongs to the open file
    _HELD.clear()


os.register_at_fork(after_in_child=_forget_in_child)


class BuildLock:
    """Context manager; ``acquired`` is False when another build holds the lock, then ``holder``
    says which (``{"pid": …, "started_at": …}`` as that build wrote it, or ``{}``)."""

    def __init__(self, path: Path, *, wait: bool = False) -> None:
        self.path = path
        self.wait = wait
        self.acquired = False
        self.holder: dict[str, object] = {}
        self._fd: int | None = None

    def __enter__(self) -> BuildLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if self.wait else fcntl.LOCK_NB))
        except BlockingIOError:
            self.holder = _read_holder(fd)
            os.close(fd)
            return self
        except BaseException:
            os.close(fd)
            raise
        self._fd, self.acquired = fd, True
        _HELD.add(fd)
        record = json.dumps({"pid": os.getpid(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        os.ftruncate(fd, 0)
        os.pwrite(fd, record.encode(), 0)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            _HELD.discard(self._fd)
            os.close(self._fd)  # closing the last descriptor releases the lock
            self._fd, self.acquired = None, False


def _read_holder(fd: int) -> dict[str, object]:
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except (OSError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def describe_holder(holder: dict[str, object]) -> str:
    """``another build (pid 1234, started 2026-12-01T05:00:00+0000) is running`` for a person to read."""
    details = [f"pid {holder['pid']}" if "pid" in holder else "",
               f"started {holder['started_at']}" if "started_at" in holder else ""]
    inside = ", ".join(d for d in details if d)
    return f"another build ({inside}) is running" if inside else "another build is running"
