"""One file on disk → what the index stores about it (record + chunks), never an exception.

Bad input becomes a status and a warning: binary data, invalid UTF-8, a note
over the size limit, a name too long for its page, broken front matter, ``published: false``
(:func:`builder.notes.publication.judge` decides, as it does for every reader).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.core.index import UNREAD, FileRecord, chunk_stems
from builder.notes.publication import judge

if TYPE_CHECKING:
    from builder.core.forkpool import Pool


@dataclass(frozen=True)
class Ingested:
    record: FileRecord
    chunks: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...]


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _record(path: str, data: bytes, size: int, mtime_ns: int | None, changed_at: str | None,
            status: str = "ok", note: str | None = None, *, sha256: str | None = None, **fields: Any) -> FileRecord:
    return FileRecord(path=path, title=fields.get("title", Path(path).stem), tags=fields.get("tags", ()),
                      headings=fields.get("headings", ()),
                      front_matter=fields.get("front_matter", {}), status=status, status_note=note,
                      sha256=sha256 or sha256_bytes(data), size=size, mtime_ns=mtime_ns, changed_at=changed_at,
                      encoding=fields.get("encoding"))


def read_bounded(path: Path, max_bytes: int) -> tuple[bytes, int, str | None]:
    """A note file's bytes as the build reads them, in bounded memory whatever the file holds: all of it
    when it is within ``max_bytes``, else its first ``max_bytes + 1`` (enough to know it is over the
    limit), with its whole size and its sha256 computed piece by piece (None for a file within the limit:
    the caller hashes the bytes it has)."""
    with open(path, "rb") as handle:
        data = handle.read(max_bytes + 1)
        if len(data) <= max_bytes:
            return data, len(data), None
        digest = hashlib.sha256(data)
        size = len(data)
        while piece := handle.read(1 << 20):
            digest.update(piece)
            size += len(piece)
    return data, size, digest.hexdigest()


def ingest(path: str, data: bytes, *, mtime_ns: int | None, changed_at: str | None,
           max_bytes: int, fits: Callable[[str], bool] | None = None, size: int | None = None,
           sha256: str | None = None) -> Ingested:
    """Parse and chunk one note given its bytes; problems become a status and warnings. Whether it is
    published is :func:`builder.notes.publication.judge`'s answer, as for every reader. ``fits`` (see
    :func:`builder.chunker.chunk_note`) sizes chunks by the embedding model's own tokens. ``size`` and
    ``sha256``: the whole file's, when ``data`` is only its beginning (:func:`read_bounded`)."""
    size = len(data) if size is None else size
    verdict = judge(path, data, max_bytes=max_bytes, size=size)
    note = verdict.note
    if note is None:
        return Ingested(_record(path, data, size, mtime_ns, changed_at, "skipped", verdict.reason, sha256=sha256),
                        (), verdict.warnings or (f"{path}: {verdict.reason}",))
    if not verdict.published:
        return Ingested(_record(path, data, size, mtime_ns, changed_at, "unpublished", verdict.reason), (),
                        verdict.warnings)

    from builder.chunker import chunk_note

    try:
        chunks = chunk_note(note, fits)
    except Exception as exc:  # one note's failure is its own, never its source's
        reason = ("nested too deeply for the markdown parser; not indexed" if isinstance(exc, RecursionError)
                  else f"cannot be parsed ({type(exc).__name__}: {exc}); not indexed")
        return Ingested(_record(path, data, size, mtime_ns, changed_at, "skipped", reason), (),
                        (*verdict.warnings, f"{path}: {reason}"))
    fields: dict[str, Any] = dict(title=note.title, tags=note.tags, front_matter=note.front_matter,
                  encoding=verdict.encoding if verdict.encoding != "utf-8" else None,
                  headings=tuple({"level": h.level, "text": h.text, "anchor": h.anchor, "line": h.line + 1}
                                 for h in note.headings))
    rows = tuple({"chunk_idx": c.idx, "breadcrumb": c.breadcrumb, "anchor": c.anchor,
                  "line_start": c.line_start, "line_end": c.line_end, "text": c.text,
                  "embed_sha": sha256_text(c.embed_text), "stems": chunk_stems(c.breadcrumb, c.text),
                  "places": json.dumps(c.places, ensure_ascii=False)}
                 for c in chunks)  # the word keys here too: this runs on every core, the writer on one
    return Ingested(_record(path, data, size, mtime_ns, changed_at, **fields), rows, verdict.warnings)


def unread(path: str, size: int, mtime_ns: int | None, changed_at: str | None, reason: str) -> Ingested:
    """A note whose bytes could not be read: skipped (no page, no chunks), its content unknown
    (:data:`UNREAD`), until it changes or can be read."""
    note = f"cannot be read ({reason}); skipped until it changes or can be read"
    record = replace(_record(path, b"", size, mtime_ns, changed_at, "skipped", note), sha256=UNREAD)
    return Ingested(record, (), (f"{path}: {note}",))


@dataclass(frozen=True)
class ChangedFile:
    """A changed file as the build read it, to be ingested."""

    path: str
    data: bytes  # all of it, or its beginning when it is over the size limit (read_bounded)
    mtime_ns: int | None
    changed_at: str | None
    size: int | None = None  # the file's, when data is only its beginning
    sha256: str | None = None  # the whole file's, then


@dataclass(frozen=True)
class Limits:
    """What every note of a build is read and chunked with (the shared part of its parsing pool)."""

    max_bytes: int  # limits.max_note_bytes
    fits: Callable[[str], bool] | None = None  # does a chunk's text fit the embedding model's input?


def ingest_all(pool: Pool[Limits], files: list[ChangedFile]) -> Iterator[Ingested]:
    """:func:`ingest` of each file, in order, each as soon as it is ready: on ``pool``'s forked
    workers (every core) when there are many, started at once, so this process can store the notes
    of an earlier call while they parse these."""
    return pool.imap(_ingest_job, files)


def _ingest_job(limits: Limits, file: ChangedFile) -> Ingested:
    return ingest(file.path, file.data, mtime_ns=file.mtime_ns, changed_at=file.changed_at,
                  max_bytes=limits.max_bytes, fits=limits.fits, size=file.size, sha256=file.sha256)
