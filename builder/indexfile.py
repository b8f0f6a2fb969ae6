"""Index generations: ``index.sqlite`` is a symlink to the current generation file.

A ``--full`` build writes a complete new generation beside the old one and
swaps the symlink atomically (``rename``), so readers keep using the old file
until the new one is whole. Each generation has its own WAL files, so no WAL
is ever shared between two databases.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path


def resolve(index: Path) -> Path | None:
    """The real file behind the configured index path, or None when there is no index yet."""
    if not index.exists():
        return None
    return Path(os.path.realpath(index))


def new_generation(index: Path) -> Path:
    """A fresh, unused file name for a new generation next to ``index``."""
    index.parent.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    n = 0
    while True:  # two generations in one second from one process must not collide
        path = index.with_name(f"{index.stem}-{stamp}-{os.getpid()}-{n}{index.suffix}")
        if not any(Path(f"{path}{suffix}").exists() for suffix in ("", "-wal", "-shm", "-journal")):
            return path
        n += 1


def _generation_name(index: Path) -> re.Pattern[str]:
    """The names :func:`new_generation` gives (and nothing a user would name a file)."""
    return re.compile(rf"^{re.escape(index.stem)}-\d{{8}}T\d{{6}}-\d+-\d+{re.escape(index.suffix)}$")


def remove_leftovers(index: Path) -> list[str]:
    """Remove generation files (and their WAL files) that ``index`` does not point at: a ``--full``
    build killed before its swap leaves them. Only call this holding the build lock; returns the
    names removed."""
    current = resolve(index)
    removed = []
    try:
        entries = list(os.scandir(index.parent))
    except FileNotFoundError:
        return []
    for entry in entries:
        name = entry.name
        base = name.removesuffix("-wal").removesuffix("-shm").removesuffix("-journal")
        is_generation = _generation_name(index).match(base) is not None
        if (is_generation and (current is None or base != current.name)) or name == f".{index.name}.swap":
            Path(entry.path).unlink(missing_ok=True)
            removed.append(name)
    return sorted(removed)


def discard(path: Path) -> None:
    """Remove a generation file and its WAL companions."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def swap_in(index: Path, generation: Path) -> None:
    """Point ``index`` at ``generation`` in one rename; then remove the previous generation."""
    previous = resolve(index)
    was_plain_file = previous is not None and not index.is_symlink()
    temp = index.with_name(f".{index.name}.swap")
    temp.unlink(missing_ok=True)
    os.symlink(generation.name, temp)
    os.replace(temp, index)
    if was_plain_file:  # the renamed-over file lives on for its readers; its WAL files carry our name
        for suffix in ("-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
    elif previous is not None and previous != generation.resolve():
        discard(previous)
