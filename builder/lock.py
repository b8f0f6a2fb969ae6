"""The one-writer lock: an OS lock (``fcntl.flock``) on ``sync.lock`` beside the index.

The kernel holds the lock for exactly as long as the holding process lives:
there is nothing stale to reclaim after a crash, however long a build runs, and
no two processes can both win. The file itself stays, and a build never writes
into it (a no-op build writes nothing at all): a second build finds who holds it
in the kernel's table of locks (``/proc/locks``) to say who is running.
A build that finds the lock taken exits 0 (cron's next run tries again); a
person at a terminal is told which build holds it.
"""

from __future__ import annotations

import contextlib
import fcntl
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
            self.holder = _holder(os.fstat(fd))
            os.close(fd)
            return self
        except BaseException:
            os.close(fd)
            raise
        self._fd, self.acquired = fd, True
        _HELD.add(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            _HELD.discard(self._fd)
            os.close(self._fd)  # closing the last descriptor releases the lock
            self._fd, self.acquired = None, False


def _holder(locked: os.stat_result) -> dict[str, object]:
    """``{pid, started_at}`` of the process holding an ``flock`` on the file ``locked``, from the
    kernel's ``/proc/locks`` (``1: FLOCK ADVISORY WRITE 4242 08:01:131 0 EOF``); ``{}`` when it
    cannot be told (no /proc, the holder gone meanwhile)."""
    device = f"{os.major(locked.st_dev):02x}:{os.minor(locked.st_dev):02x}:{locked.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            pids = [int(fields[4]) for line in table if len(fields := line.split()) > 5
                    and fields[1] == "FLOCK" and fields[5] == device and fields[4].isascii() and fields[4].isdigit()]
    except OSError:
        return {}
    if not pids:
        return {}
    holder: dict[str, object] = {"pid": pids[0]}
    try:
        ticks = int((Path("/proc") / str(pids[0]) / "stat").read_text().rsplit(")", 1)[1].split()[19])
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
        started = boot + ticks / os.sysconf("SC_CLK_TCK")
        holder["started_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started))
    except (OSError, ValueError, IndexError, StopIteration):
        pass
    return holder


def describe_holder(holder: dict[str, object]) -> str:
    """``another build (pid 1234, started 2026-12-01T05:00:00+0000) is running`` for a person to read."""
    details = [f"pid {holder['pid']}" if "pid" in holder else "",
               f"started {holder['started_at']}" if "started_at" in holder else ""]
    inside = ", ".join(d for d in details if d)
    return f"another build ({inside}) is running" if inside else "another build is running"
