"""Writing a file whole or not at all: a reader sees the old file or the new one, never half of either.

The site's pages (:mod:`builder.render.output`), the render's caches and the folder listings a no-op build
keeps (:mod:`builder.notes.listings`) are written this way; the attachments the site publishes are copied or
linked this way (:func:`copy_atomic`), never read into memory.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write via a temp file and ``os.replace``: a reader sees the old file or the new one."""
    temp = path.with_name(temporary_name(path.name))
    raw = data.encode("utf-8") if isinstance(data, str) else data
    # the handle is closed by the ``with`` below; opened before it, a failed open has nothing to remove
    try:
        handle = open(temp, "wb")  # noqa: SIM115
    except FileNotFoundError:  # first file of a new folder: cheaper than a mkdir before every write
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(temp, "wb")  # noqa: SIM115
    try:
        with handle:
            handle.write(raw)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)  # a full disk must not leave half a page behind
        raise


def copy_atomic(source: Path, path: Path, *, link: bool = False) -> None:
    """``source``'s bytes at ``path``, whole or not at all, never held in this process's memory: a hard link
    when ``link`` and the file system allows one (the same file, no byte copied), else a copy the kernel
    makes (``shutil.copyfile``: ``sendfile`` on Linux), which a site on another file system, a file system
    without hard links, or a file of another owner (``fs.protected_hardlinks``) gets."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(temporary_name(path.name))
    try:
        if not (link and _linked(source, temp)):
            shutil.copyfile(source, temp)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)  # a full disk must not leave half a file behind
        raise


def _linked(source: Path, temp: Path) -> bool:
    try:
        os.link(source, temp)
    except FileExistsError:  # a temporary file a killed process of the same pid left
        temp.unlink()
        return _linked(source, temp)
    except OSError:  # EXDEV, EPERM, EMLINK, ENOTSUP…: copied instead
        return False
    return True


def temporary_name(name: str) -> str:
    """The temporary file of ``name`` while :func:`write_atomic` writes it: short whatever the name (a page
    name of 245 bytes is legal; with a dot, a pid and ``.tmp`` around it, it would not be)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return f".{digest}.{os.getpid()}.tmp"
