"""Writing a file whole or not at all: a reader sees the old file or the new one, never half of either.

The site's pages (:mod:`builder.render.output`), the render's caches and the folder listings a no-op build
keeps (:mod:`builder.listings`) are written this way.
"""

from __future__ import annotations

import hashlib
import os
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


def temporary_name(name: str) -> str:
    """The temporary file of ``name`` while :func:`write_atomic` writes it: short whatever the name (a page
    name of 245 bytes is legal; with a dot, a pid and ``.tmp`` around it, it would not be)."""
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
    return f".{digest}.{os.getpid()}.tmp"
