"""Scope rules and the folder walk.

Precedence: ``paths`` (whitelist; a file outside every entry does not exist for
the index) → ``include`` (default ``*.md``) → ``exclude`` (wins over both).
Patterns are globs over POSIX paths relative to the source root: ``*`` stays in
one directory, ``**`` crosses directories, a pattern without ``/`` in include
or exclude matches the file name anywhere, and a pattern also covers
everything below it (``notes`` = ``notes/**``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from builder.core.config import SourceConfig
from builder.notes.listings import Known

if TYPE_CHECKING:
    from builder.notes.listings import Listings


@lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + _glob_body(pattern) + "(?:/.*)?$")


def _glob_body(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _any_of(patterns: Iterable[str]) -> re.Pattern[str] | None:
    """One regex matching what any of the globs matches (None: no glob)."""
    bodies = [_glob_body(p) for p in patterns]
    return re.compile("^(?:" + "|".join(bodies) + ")(?:/.*)?$") if bodies else None


def _globs_rule(patterns: tuple[str, ...]) -> str:
    """A regex body (for a lookahead at the start of a path) matching what any of the globs covers:
    each glob over the whole path, and a glob without "/" also over the file's name (the part after
    the last "/"); ``(?!)`` when there is none."""
    whole = [_glob_body(p) for p in patterns]
    by_name = [_glob_body(p) for p in patterns if "/" not in p and not p.startswith("**")]
    rules = [f"(?:{'|'.join(whole)})(?:/.*)?$"] if whole else []
    if by_name:
        rules.append(f"(?:.*/)?(?=[^/]*$)(?:{'|'.join(by_name)})$")
    return "|".join(rules) or "(?!)"


def matches(pattern: str, path: str) -> bool:
    """Does the glob ``pattern`` cover the relative POSIX ``path``?"""
    if "/" not in pattern and not pattern.startswith("**"):
        return bool(_glob_regex(pattern).match(path.rsplit("/", 1)[-1])) or bool(_glob_regex(pattern).match(path))
    return bool(_glob_regex(pattern).match(path))


@dataclass(frozen=True)
class Scope:
    paths: tuple[str, ...]
    include: tuple[str, ...]
    exclude: tuple[str, ...]

    @classmethod
    def of(cls, source: SourceConfig) -> Scope:
        return cls(source.paths, source.include, source.exclude)

    @cached_property
    def _paths(self) -> re.Pattern[str] | None:
        return None if "**" in self.paths else _any_of(self.paths)

    @cached_property
    def _wanted(self) -> re.Pattern[str]:
        # the whole rule as one regex: the walk asks it once per file of every build
        paths = "" if self._paths is None else f"(?=(?:{'|'.join(_glob_body(p) for p in self.paths)})(?:/.*)?$)"
        exclude = f"(?!{_globs_rule(self.exclude)})" if self.exclude else ""
        return re.compile(f"^{paths}(?={_globs_rule(self.include)}){exclude}")

    def covers(self, path: str) -> bool:
        """Is the path inside a ``paths`` entry (before include/exclude)?"""
        return self._paths is None or self._paths.match(path) is not None

    def wants(self, path: str) -> bool:
        """Is the file part of the index?"""
        return self._wanted.match(path) is not None

    @cached_property
    def _folder_excludes(self) -> tuple[str, ...]:
        """``exclude`` patterns that name whole folders (a path whose last part has no ``*``)."""
        return tuple(p for p in self.exclude if "/" in p and "*" not in p.rsplit("/", 1)[-1])

    @cached_property
    def _prefixes(self) -> tuple[str, ...]:
        """Each ``paths`` pattern's literal folders before its first wildcard (``""``: anywhere)."""
        prefixes = []
        for pattern in self.paths:
            literal = []
            for part in pattern.split("/"):
                if any(ch in part for ch in "*?["):
                    break
                literal.append(part)
            prefixes.append("/".join(literal))
        return tuple(prefixes)

    def may_contain(self, directory: str) -> bool:
        """Could any wanted file live below ``directory``? (prunes the walk; asked once per folder of every
        build, so what the patterns say is worked out once per scope)"""
        if self._folder_excludes and any(matches(p, directory) for p in self._folder_excludes):
            return False
        for prefix in self._prefixes:
            if not prefix or prefix == directory or prefix.startswith(directory + "/") \
                    or directory.startswith(prefix + "/"):
                return True
        return False


class FileStat(NamedTuple):  # a tuple: a walk makes one per file, ~2x cheaper than a frozen dataclass
    path: str  # relative POSIX path
    size: int
    mtime_ns: int


def stats_text(stats: Iterable[tuple[str, int, int | None]]) -> str:
    """Files' (path, size, mtime_ns) as lines ``path\0size\0mtime_ns`` sorted by path, joined by newlines:
    the same text for the same files whatever their order (and the text ``index.folder_summary`` makes of the
    files the index holds)."""
    return "\n".join(sorted(f"{path}\0{size}\0{mtime_ns}" for path, size, mtime_ns in stats))  # "\0" sorts first


def text_digest(text: str) -> str:
    """The digest of a :func:`stats_text`: a walk's equal to the one the index keeps of a source
    (``SourceRow.stats_digest``) means that nothing in it changed, without reading every file's row."""
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


_NEVER_NOTES = {"node_modules", "__pycache__"}


def is_hidden(name: str) -> bool:
    """Dot-entries (.git, .obsidian, the portal's own .portal) and dependency caches are never notes."""
    return name.startswith(".") or name in _NEVER_NOTES


@dataclass(frozen=True)
class Walk:
    """What a folder walk found, and what it could not read (a read error is never an empty folder)."""

    files: dict[str, FileStat]
    broken: dict[str, Broken]  # wanted names that cannot be read as a file (each one note's problem)
    unread_dirs: dict[str, str]  # folder that could not be listed ("" is the root) → why: its notes are unknown


class Broken(NamedTuple):
    """A wanted entry that is not a readable file: a symbolic link loop, a link to nothing, a stat error."""

    stat: FileStat  # of the entry itself (the link, not its target): the same on every walk until it changes
    reason: str


def _listed(directory: str, rel: str) -> list[os.DirEntry[str]] | Known:
    """``directory``'s entries as ``os.scandir`` gives them (the signature of ``Listings.listed``)."""
    with os.scandir(directory) as listing:
        return list(listing)


def walk(root: Path, scope: Scope, listings: Listings | None = None) -> Walk:
    """Every wanted file under ``root`` with size and mtime. Hidden entries are skipped. A symlink is
    followed only when it resolves inside the root and the scope wants its target's own path too
    (a link must not carry an excluded file past ``paths``/``exclude``); each real directory is
    visited once. An entry that cannot be read is reported by itself: a wanted name in ``broken``,
    a folder (or what may be one) in ``unread_dirs``; the rest of the walk goes on. ``listings``: the
    folders' listings kept from the last walk, trusted where they can be (:mod:`builder.notes.listings`)."""
    real_root = os.path.realpath(root)
    found: dict[str, FileStat] = {}
    broken: dict[str, Broken] = {}
    unread: dict[str, str] = {}
    seen_dirs = {""}  # the real paths of the folders walked, relative to the real root
    stack = [(str(root), "", "")]  # (folder, its path as seen, its real path), both relative to the root
    may_contain, wants, stat, new_stat = scope.may_contain, scope.wants, os.stat, tuple.__new__
    listed = listings.listed if listings is not None else _listed
    while stack:
        directory, rel_dir, real_dir = stack.pop()
        try:
            entries = listed(directory, rel_dir)
        except OSError as exc:
            unread[rel_dir] = exc.strerror or str(exc)
            continue
        if isinstance(entries, Known):  # a kept listing of plain folders and files (no link)
            # the hot loop of every build (one pass per file of the collection): names are joined
            # once, and a folder's real path is looked at only when a link led to it
            prefix = f"{rel_dir}/" if rel_dir else ""
            real_prefix = f"{real_dir}/" if real_dir else ""
            linked = real_dir != rel_dir
            for name in entries.dirs:
                rel = prefix + name
                if name not in _NEVER_NOTES and may_contain(rel) and (not linked or may_contain(real_prefix + name)):
                    seen_dirs.add(real_prefix + name)
                    stack.append((f"{directory}/{name}", rel, real_prefix + name))
            base = f"{directory}/"
            for name in entries.files:
                rel = prefix + name
                if wants(rel) and (not linked or wants(real_prefix + name)) and name not in _NEVER_NOTES:
                    try:
                        st = stat(base + name)
                    except FileNotFoundError:
                        continue  # gone since the listing: its folder's mtime says so next time
                    except OSError as exc:
                        broken[rel] = Broken(_own_stat(base + name, rel), _why(exc))
                        continue
                    found[rel] = new_stat(FileStat, (rel, st.st_size, st.st_mtime_ns))
            continue
        for entry in entries:
            name = entry.name
            if name[0] == "." or name in _NEVER_NOTES:  # is_hidden(), inline: once per entry of every build
                continue
            rel = f"{rel_dir}/{name}" if rel_dir else name
            real = f"{real_dir}/{name}" if real_dir else name
            try:
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    if os.path.commonpath([target, real_root]) != real_root or target == real_root:
                        continue
                    real = Path(os.path.relpath(target, real_root)).as_posix()
                    if any(is_hidden(part) for part in real.split("/")) or real in seen_dirs:
                        continue
                if entry.is_dir():
                    # a folder's real path is its parent's and its name: only a link needs resolving
                    # (realpath is an lstat per level of every folder: 80,000 for a Grav tree of 10,000)
                    if may_contain(rel) and (real == rel or may_contain(real)):
                        seen_dirs.add(real)
                        stack.append((entry.path, rel, real))
                elif entry.is_file():
                    if wants(rel) and (real == rel or wants(real)):
                        st = entry.stat()
                        found[rel] = FileStat(rel, st.st_size, st.st_mtime_ns)
                elif entry.is_symlink() and wants(rel) and wants(real):
                    broken[rel] = Broken(_own_stat(entry.path, rel), f"a symbolic link to {real}, which does not exist")
            except FileNotFoundError:
                continue  # gone since its folder was listed
            except OSError as exc:
                if wants(rel):
                    broken[rel] = Broken(_own_stat(entry.path, rel), _why(exc))
                elif exc.errno != errno.ELOOP and may_contain(rel):
                    unread[rel] = exc.strerror or str(exc)  # a link to a folder that cannot be reached, maybe
    return Walk(found, broken, unread)


def _own_stat(path: str, rel: str) -> FileStat:
    try:
        st = os.lstat(path)
    except OSError:
        return FileStat(rel, -1, 0)
    return FileStat(rel, st.st_size, st.st_mtime_ns)


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a loop of symbolic links"
    return exc.strerror or str(exc)


def uncovered_dirs(root: Path, scope: Scope) -> list[str]:
    """Top-level directories holding files that ``include`` would take but no ``paths`` entry covers."""
    if "**" in scope.paths:
        return []
    out = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        if is_hidden(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        if not scope.covers(entry.name) and _has_uncovered_note(Path(entry.path), entry.name, scope):
            out.append(entry.name)
    return out


def _has_uncovered_note(directory: Path, rel_dir: str, scope: Scope) -> bool:
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = [d for d in dirnames if not is_hidden(d)]
        rel_base = rel_dir + dirpath[len(str(directory)):].replace(os.sep, "/")
        for name in filenames:
            rel = f"{rel_base}/{name}"
            if any(matches(p, rel) for p in scope.include) and not scope.covers(rel) \
                    and not any(matches(p, rel) for p in scope.exclude):
                return True
    return False
