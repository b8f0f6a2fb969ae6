"""Is a note published? One answer, from the note's bytes, for every reader.

The build (:mod:`builder.ingest`, so ``serve``'s and ``watch``'s builds too), ``read`` and ``grep`` (the CLI
and the MCP tools, :mod:`builder.notes.notefile`) hand :func:`judge` the bytes they read, and it answers as the
build does, whatever the bytes hold: a UTF-8 byte order mark, a note in a Central European code page
(:func:`builder.core.textdecode.decode_note`), CRLF or CR line ends, front matter fences with trailing
spaces or closed by ``...``, front matter without its closing fence or that YAML refuses
(:func:`builder.notes.parse.parse_note`: a ``published: false`` line still hides the note). What the site and
search show comes from the index the build wrote with it; the answer pipeline's passages are the index's
chunks, which only a published note has. Before, ``grep`` looked for the front matter in the file's first
three bytes, and showed a note whose ``published: false`` followed a byte order mark.

"Unknown" is never "published": a note that cannot be named, is over ``limits.max_note_bytes``, holds
binary data, refuses to be read (YAML aliases) or cannot be parsed is not published (``skipped``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from builder.core.textdecode import decode_note
from builder.core.urls import name_problem

if TYPE_CHECKING:
    from builder.notes.parse import Note


@dataclass(frozen=True)
class Decision:
    """What the build makes of one note's bytes: its ``files.status`` (``ok`` when it is published,
    ``unpublished``, ``skipped``), why it is not published, the warnings of its reading, and the parsed
    note (None when it was not parsed) with the code page it was read in."""

    status: str
    reason: str | None = None
    warnings: tuple[str, ...] = ()
    note: Note | None = field(default=None, repr=False)
    encoding: str = "utf-8"

    @property
    def published(self) -> bool:
        return self.status == "ok"


BINARY_PROBE = 65536  # a NUL in a note's first bytes makes it binary data, not a note


def judge(path: str, data: bytes, *, max_bytes: int, size: int | None = None) -> Decision:
    """The build's decision about the note ``path`` (relative to its source) holding ``data``; never raises.
    ``size``: the file's, when ``data`` is only its beginning (a reader stops after ``max_bytes + 1``)."""
    size = len(data) if size is None else size
    unnamed = name_problem(path)
    if unnamed is not None:  # its page could not exist: a note the site cannot show is not searchable either
        return _skipped(f"cannot be named: {unnamed}; rename it; not indexed")
    if size > max_bytes or len(data) > max_bytes:
        return _skipped(f"{size / 1e6:.1f} MB is over limits.max_note_bytes ({max_bytes:,} bytes); not indexed")
    if b"\x00" in data[:BINARY_PROBE]:
        return _skipped("binary data, not a text note; not indexed")
    decoded = decode_note(data)
    warnings: tuple[str, ...] = (f"{path}: {decoded.warning}",) if decoded.warning else ()

    from builder.notes.parse import NoteRefused, parse_note

    try:
        note = parse_note(path, decoded.text)
    except Exception as exc:  # one note's failure is its own, never its source's
        if isinstance(exc, RecursionError):
            reason = "nested too deeply for the markdown parser; not indexed"
        elif isinstance(exc, NoteRefused):
            reason = str(exc)
        else:
            reason = f"cannot be parsed ({type(exc).__name__}: {exc}); not indexed"
        return Decision("skipped", reason, (*warnings, f"{path}: {reason}"), encoding=decoded.encoding)
    warnings += note.warnings
    if not note.published:
        return Decision("unpublished", "published: false", warnings, note, decoded.encoding)
    return Decision("ok", None, warnings, note, decoded.encoding)


def _skipped(reason: str) -> Decision:
    return Decision("skipped", reason)
