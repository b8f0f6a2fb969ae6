"""Text from notes made safe for a terminal and a log: control characters shown, never obeyed.

A note's name, title or text can hold ESC sequences (colours, cursor moves, OSC 52 clipboard writes),
carriage returns that overwrite a line, or bidirectional overrides that reorder it. Everything the
CLI prints and ``log/sync.log`` holds passes through :func:`printable`; HTML escaping is the
renderer's and the server's business, JSON escapes C0 controls itself.
"""

from __future__ import annotations

import io
import re
from typing import TextIO

BOLD, NORMAL = "\x1b[1m", "\x1b[22m"  # the one style the CLI prints itself (a search's marked words)
# C0 and C1 controls but tab and newline, DEL, and the bidirectional embeddings, overrides and isolates
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_UNPRINTABLE_BUT_BOLD = re.compile(f"({re.escape(BOLD)}|{re.escape(NORMAL)})|{_UNPRINTABLE.pattern}")


def printable(text: str, *, bold: bool = False) -> str:
    """``text`` with each control character as its ``\\uXXXX`` escape (valid inside JSON strings too);
    ``bold`` lets :data:`BOLD` and :data:`NORMAL` through (they only change the weight of text)."""
    if bold:
        return _UNPRINTABLE_BUT_BOLD.sub(lambda m: m[1] or f"\\u{ord(m[0]):04x}", text)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


class PrintableStream(io.TextIOBase):
    """A text stream that writes through :func:`printable` (bold allowed) to another one."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(printable(text, bold=True))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding
