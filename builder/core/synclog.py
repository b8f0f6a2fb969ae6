"""``log/sync.log``: one line per event, appended only when a build has something to say."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from builder.core.terminal import printable


class SyncLog:
    """Collects and writes event lines; creates nothing until the first line."""

    def __init__(self, path: Path, echo_info: bool | None = None) -> None:
        self.path = path
        self.echo_info = sys.stderr.isatty() if echo_info is None else echo_info
        self.lines: list[str] = []

    def _write(self, level: str, message: str) -> None:
        message = printable(" ".join(message.split()))  # one line, no control character of a note's name
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {level} {message}"
        self.lines.append(line)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
        if level != "INFO" or self.echo_info:
            print(f"{level} {message}", file=sys.stderr)

    def heard(self, level: str, message: str) -> None:
        """A line another process (a build in a child) already wrote to the log: kept in ``lines`` for
        the caller, not written again."""
        self.lines.append(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {level} {printable(' '.join(message.split()))}")

    def info(self, message: str) -> None:
        self._write("INFO", message)

    def warn(self, message: str) -> None:
        self._write("WARN", message)

    def error(self, message: str) -> None:
        self._write("ERROR", message)
