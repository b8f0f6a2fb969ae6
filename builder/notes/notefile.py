"""One note as it is on disk now, found only inside its source's scope, and only when it is published.

The path an agent or a user gives is checked before anything is opened: relative,
no ``.``/``..`` parts, no hidden parts, inside the source's ``paths`` and
``include`` and not ``exclude``d. Then the real file behind it (symlinks
resolved) must still lie inside the source and be wanted by the scope under its
own path, as the folder walk of a build requires (:func:`builder.notes.sources.walk`);
it must be a regular file no larger than ``limits.max_note_bytes``, text, and
the build must publish it (:func:`builder.notes.publication.judge`, from the bytes read). Each failure is one
:class:`UserError` line that names the rule.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from builder.core.config import Config, SourceConfig
from builder.core.errors import UserError
from builder.notes.publication import judge
from builder.notes.sources import Scope, is_hidden

MAX_PATH_CHARS = 1000


@dataclass(frozen=True)
class NumberedHeading:
    """A heading as the reader numbers the note's lines (:class:`builder.notes.parse.Heading` counts from 0)."""

    level: int
    text: str
    anchor: str
    line: int  # 1-based


@dataclass(frozen=True)
class NoteFile:
    """A published note read from disk: its lines (1-based ``lines[0]`` is line 1) and headings."""

    source: str
    path: str
    lines: tuple[str, ...]
    headings: tuple[NumberedHeading, ...]
    sha256: str


def check_relative(path: str, what: str = "path") -> str:
    """``path`` when it is a plain relative POSIX path (no ``.``, ``..``, empty or hidden parts)."""
    if not path or len(path) > MAX_PATH_CHARS or "\0" in path:
        raise UserError(f"{what} must be 1 to {MAX_PATH_CHARS} characters without NUL")
    if path.startswith("/"):
        raise UserError(f"{what} {path[:80]!r} must be relative to the source, not absolute")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UserError(f"{what} {path[:80]!r} must not have empty, '.' or '..' parts")
    if any(is_hidden(part) for part in parts):
        raise UserError(f"{what} {path[:80]!r} has a hidden part (dot-files are never notes)")
    return path


def locate(config: Config, source: SourceConfig, path: str) -> Path:
    """The real file behind ``source:path``, when every rule of the module holds for it."""
    check_relative(path)
    scope = Scope.of(source)
    name = f"{source.id}:{path}"
    if not scope.wants(path):
        raise UserError(f"{name} is outside the source's scope (its paths, include and exclude in the config)")
    root = config.source_root(source)
    real_root = os.path.realpath(root)
    if not os.path.isdir(real_root):
        raise UserError(f"{source.id}: {root} does not exist" + (" (is it mounted?)" if source.kind == "folder"
                                                                  else " yet (run `notes-portal build`)"))
    real = os.path.realpath(root / path)
    if os.path.commonpath([real, real_root]) != real_root or real == real_root:
        raise UserError(f"{name} leads outside the source (a symbolic link)")
    real_rel = Path(os.path.relpath(real, real_root)).as_posix()
    if any(is_hidden(part) for part in real_rel.split("/")) or not scope.wants(real_rel):
        raise UserError(f"{name} is a link to {real_rel}, which is outside the source's scope")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise UserError(f"{name}: no such note") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{name} is not a file")
    if st.st_size > config.max_note_bytes:
        raise UserError(f"{name} is {st.st_size:,} bytes, over limits.max_note_bytes ({config.max_note_bytes:,})")
    return Path(real)


def read_note(config: Config, source: SourceConfig, path: str) -> NoteFile:
    """The note's current text and headings; a :class:`UserError` for anything the rules refuse."""
    real = locate(config, source, path)
    name = f"{source.id}:{path}"
    # O_NOFOLLOW: the file checked above must not have become a link since; O_NONBLOCK: nor a FIFO.
    fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise UserError(f"{name} is not a file")
        data = handle.read(config.max_note_bytes + 1)
    verdict = judge(path, data, max_bytes=config.max_note_bytes)  # the build's own decision
    note = verdict.note
    if verdict.status == "unpublished":
        raise UserError(f"{name} is not published (published: false in its front matter)")
    if note is None or not verdict.published:
        raise UserError(f"{name} is not published: {verdict.reason}")  # as the build's WARN line says
    lines = note.source_lines[:-1] if note.source_lines[-1] == "" else note.source_lines  # the last \n ends a line
    return NoteFile(source.id, path, lines,
                    tuple(NumberedHeading(h.level, h.text, h.anchor, h.line + 1) for h in note.headings),
                    hashlib.sha256(data).hexdigest())


def published_on_disk(config: Config, source: SourceConfig, path: str, *, published_sha256: str | None = None) -> bool:
    """Would a build publish the note ``source:path`` as it is on disk now (:func:`builder.notes.publication.judge`,
    from the same bytes)? For grep, which reads every file. A file that is gone, cannot be read or is not
    a regular file is not: what cannot be known is never shown. ``published_sha256``: the digest of the
    bytes the index holds this note published for; the same bytes (within today's size limit) are the
    same decision, without parsing them again (grep over a large collection matches thousands of notes)."""
    try:
        # O_NONBLOCK: a FIFO put where the note was must not block grep
        fd = os.open(config.source_root(source) / path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return False
            data = handle.read(config.max_note_bytes + 1)  # one byte more than the limit: over it
    except OSError:
        return False
    if (published_sha256 is not None and len(data) <= config.max_note_bytes
            and hashlib.sha256(data).hexdigest() == published_sha256):
        return True
    return judge(path, data, max_bytes=config.max_note_bytes).published


def find_section(note: NoteFile, section: str) -> tuple[NumberedHeading, int, int]:
    """The heading ``section`` names (its anchor, its text or a breadcrumb ending in it) and the
    1-based first and last line of its section (up to the next heading of the same or a higher level)."""
    wanted = " ".join(section.rpartition(" > ")[2].split()).casefold()
    found = next((h for h in note.headings if h.anchor == section), None) or next(
        (h for h in note.headings if " ".join(h.text.split()).casefold() == wanted), None)
    if found is None:
        anchors = ", ".join(h.anchor for h in note.headings[:30]) or "none"
        raise UserError(f"{note.source}:{note.path} has no section {section[:80]!r} (its anchors: {anchors})")
    later = [h.line for h in note.headings if h.line > found.line and h.level <= found.level]
    return found, found.line, (later[0] - 1 if later else len(note.lines))
