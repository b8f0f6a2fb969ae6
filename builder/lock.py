"""The one-writer lock: ``O_EXCL`` file with ``{pid, started_at}``.

A live holder means another build is running: the caller exits 0 silently.
A stale lock (dead pid, or older than 30 minutes) is reclaimed with a WARN.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

STALE_AFTER_S = 30 * 60


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _stale_reason(path: Path) -> str | None:
    """Why the lock at ``path`` may be taken over, or None while its holder is alive."""
    try:
        age = time.time() - path.stat().st_mtime
        holder = json.loads(path.read_text(encoding="utf-8") or "null")
    except FileNotFoundError:
        return "vanished"
    except (OSError, ValueError):
        # A holder writes its pid right after creating the file; give it a moment.
        return None if age < 60 else "unreadable lock file"
    pid = holder.get("pid") if isinstance(holder, dict) else None
    if not isinstance(pid, int):
        return None if age < 60 else "lock file without a pid"
    if not _pid_alive(pid):
        return f"pid {pid} is not running"
    if age > STALE_AFTER_S:
        return f"held by pid {pid} for {age / 60:.0f} min"
    return None


class BuildLock:
    """Context manager; ``acquired`` is False when another live build holds the lock."""

    def __init__(self, path: Path, warn: Callable[[str], None]) -> None:
        self.path = path
        self.warn = warn
        self.acquired = False

    def _try_create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, handle)
        return True

    def __enter__(self) -> BuildLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._try_create():
            self.acquired = True
            return self
        reason = _stale_reason(self.path)
        if reason is None:
            return self
        self.path.unlink(missing_ok=True)
        if self._try_create():
            self.acquired = True
            if reason != "vanished":
                self.warn(f"reclaimed stale lock {self.path.name} ({reason})")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.acquired:
            self.path.unlink(missing_ok=True)
            self.acquired = False
