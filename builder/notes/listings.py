"""Folder listings kept between builds: a no-op build lists only the folders that changed.

A folder's listing is trusted again while the folder is the same one (device and inode) with the
same mtime and ctime, as git trusts its untracked cache: creating, removing or renaming an entry
moves the folder's mtime. Three guards keep a file system that is lax about it from hiding a note
for long:

- a listing taken within ``RACY_NS`` of the folder's last change is not trusted (the change may
  have come in the same clock tick, after the listing);
- an eleventh of the folders, another eleventh each minute, is listed again on every build: builds
  every N minutes meet every eleventh within eleven builds for any N but a multiple of 11 (11 is
  prime: every cron step, 1, 5, 15, 60 or 1440 minutes, cycles through all of them), so a change no
  mtime shows is seen within eleven minutes of cron's every-minute build;
- a folder holding a symbolic link, or an entry that is neither a file nor a folder, is listed
  every time (a link's target can change with nothing else changing).

Files are still ``stat``-ed every build (an edit in place moves no folder's mtime). A build with
``force`` (``--full``) trusts nothing. The file is written only when a listing changed, so a
no-op build writes nothing; a file that cannot be read, or fails its checksum, is ignored (every
folder is listed, and the file written again).
"""

from __future__ import annotations

import marshal
import os
import time
import zlib
from pathlib import Path
from typing import NamedTuple

from builder.core.atomic import write_atomic

RACY_NS = 2_000_000_000  # coarse file-system clocks (FAT: 2 s)
ROTATION = 11  # prime: see the module
LISTINGS_FORMAT = 2


class Known(NamedTuple):
    """A trusted listing: the names of a folder's subfolders and files (no link, nothing else)."""

    dirs: list[str]
    files: list[str]


# A folder's kept listing: (st_dev, st_ino, st_mtime_ns, st_ctime_ns) of the folder, the clock just
# before it was listed, its subfolders' names, its files' names; a tuple as marshal gives it back.
_Listing = tuple[int, int, int, int, int, list[str], list[str]]


class Listings:
    """The kept listings of one source's folders, keyed by their path relative to the source's root."""

    def __init__(self, path: Path, root: str, *, trust: bool = True, minute: int | None = None) -> None:
        """``trust``: False lists every folder (``--full``); ``minute``: the rotation's minute (the clock's)."""
        self.path = path
        self.root = root
        self._kept: dict[str, _Listing] = self._load() if trust else {}
        self._seen: dict[str, _Listing] = {}
        self._changed = not trust
        self._minute = time.time_ns() // 60_000_000_000 if minute is None else minute

    def _load(self) -> dict[str, _Listing]:
        try:
            raw = self.path.read_bytes()
            payload = raw[4:]
            if int.from_bytes(raw[:4], "little") != zlib.crc32(payload):
                return {}  # torn or damaged: list every folder
            data = marshal.loads(payload)  # our own file, as the render's manifest shards
            if data["format"] == LISTINGS_FORMAT and data["root"] == self.root:
                folders: dict[str, _Listing] = data["folders"]
                return folders
        except Exception:  # a cache: whatever is wrong with it, every folder is listed
            pass
        return {}  # no file yet, or not one this version wrote

    def listed(self, directory: str, rel: str) -> list[os.DirEntry[str]] | Known:
        """The entries of ``directory``: its kept listing where it can be trusted, else ``os.scandir``'s.
        Raises OSError as ``os.scandir`` does."""
        st = os.stat(directory)
        identity = (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)
        kept = self._kept.get(rel)
        # asked for every folder of every build: the kept tuple is read by position, not unpacked
        if kept is not None and kept[:4] == identity and st.st_mtime_ns < kept[4] - RACY_NS \
                and (zlib.crc32(rel.encode("utf-8", "surrogateescape")) + self._minute) % ROTATION:
            self._seen[rel] = kept
            return Known(kept[5], kept[6])
        listed_ns = time.time_ns()
        with os.scandir(directory) as listing:
            entries = list(listing)
        self._remember(rel, identity, listed_ns, entries)
        return entries

    def _remember(self, rel: str, identity: tuple[int, int, int, int], listed_ns: int,
                  entries: list[os.DirEntry[str]]) -> None:
        dirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            if entry.name[0] == ".":
                continue  # never notes (sources.is_hidden); a new one moves the mtime all the same
            try:
                if entry.is_symlink() or not (entry.is_dir() or entry.is_file()):
                    return  # listed every time
                (dirs if entry.is_dir() else files).append(entry.name)
            except OSError:
                return
        kept = self._kept.get(rel)
        if kept is not None and kept[:4] == identity and (kept[5], kept[6]) == (dirs, files) \
                and (identity[2] < kept[4] - RACY_NS or identity[2] >= listed_ns - RACY_NS):
            # listed again by the rotation, unchanged; or not to be trusted now either (a folder changed
            # just now, or whose mtime is ahead of this clock): nothing to write
            self._seen[rel] = kept
        else:
            self._seen[rel] = (*identity, listed_ns, dirs, files)
            self._changed = True

    def save(self) -> None:
        """Write the listings of the folders this walk visited, if any differs from the kept ones."""
        if not self._changed and self._seen.keys() == self._kept.keys():
            return
        try:
            payload = marshal.dumps({"format": LISTINGS_FORMAT, "root": self.root, "folders": self._seen})
            write_atomic(self.path, zlib.crc32(payload).to_bytes(4, "little") + payload)
        except OSError:
            pass  # a cache: the next build lists every folder again
