"""The site folder: atomic writes, the record of what the portal wrote, copies, removals.

The portal deletes only files it wrote, and it never forgets one: before a
file is written its path is appended to ``.render-journal``, so a render killed
half-way leaves a record of every page it may have put there. The next render
deletes each recorded page (and the manifest's) that is not part of the site any
more, and any temporary file of ours. The folder carries ``.notes-portal-site``
from the first render on; a folder that holds other files is never adopted
(see :func:`builder.core.config.check_site_folder`).
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.core.atomic import copy_atomic, write_atomic
from builder.core import templates, urls
from builder.core.config import SITE_MARKER
from builder.core.index import renderstate
from builder.core.index.renderstate import JSON_MANIFEST, MARSHAL_MANIFEST

# The manifest lives in <site>/.render-state (builder.core.index.renderstate, which reads it, and the
# older renderers' files, for the render and for ``status``: a save writes only what changed).
STATE = renderstate.STATE_FILE
# the manifest's big maps: the state file keeps them by shards, and a delta render reads the keys it needs
MAPS = ("notes", "pages", "titles", "into", "out", "wiki", "file_links")
JOURNAL = ".render-journal"
CACHE_DIR = ".render-cache"
STAMP = ".render-stamp"
OWN_DOT_FILES = frozenset({STATE, renderstate.JOURNAL_FILE, MARSHAL_MANIFEST, JSON_MANIFEST, JOURNAL, STAMP,
                           SITE_MARKER})
_TEMP = re.compile(r"^\..+\.\d+\.tmp$")  # write_atomic's temporary files (and those of renderers before it)
DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# An attachment this large is hard-linked into the site when the site is on its file system (no second
# copy on disk, no time spent copying); a smaller one, or one that cannot be linked, is copied. Either way
# the site holds a regular file: served by the server, opened from file://.
LINK_FROM_BYTES = 64 * 1024 * 1024


def store_manifest(site: Path, manifest: dict[str, Any], saved: dict[str, Any]) -> None:
    """Save ``manifest`` for the next render; ``saved``: what :func:`renderstate.read_manifest` returned before
    (only what differs from it is written). Any older renderer's manifest file is removed."""
    renderstate.write_state(site / STATE, manifest, saved, maps=MAPS)
    for older in (MARSHAL_MANIFEST, JSON_MANIFEST):
        (site / older).unlink(missing_ok=True)


def listed_pages(saved: dict[str, Any]) -> dict[str, str]:
    """The pages a saved manifest (see :func:`renderstate.read_manifest`) lists, whatever its version (an upgrade
    must not forget what an older renderer wrote)."""
    pages = saved.get("pages")
    return pages if isinstance(pages, dict) else {}


def claimed(site: Path) -> bool:
    """Did an earlier render mark ``site`` as the portal's (see :func:`claim`)?"""
    return (site / SITE_MARKER).is_file()


def unlisted_orphans(present: set[str]) -> set[str]:
    """What a render may remove from its own site folder when no readable manifest says what it
    wrote: every file inside a subfolder (notes, attachments, tags, assets: the portal's own
    namespaces, where an unpublished note's page must not survive), never a loose file at the top
    (a ``robots.txt`` put there by hand)."""
    return {rel for rel in present if "/" in rel}


def claim(site: Path) -> None:
    """Create the site folder, or adopt the one an earlier render made, and mark it as the portal's.
    (A folder holding files the portal did not write is refused before any build starts.)"""
    site.mkdir(parents=True, exist_ok=True)
    marker = site / SITE_MARKER
    if not marker.exists():
        marker.write_text("written by notes-portal: every file here is rebuilt, and removed when stale\n",
                          encoding="utf-8")


def disk_full(exc: OSError) -> bool:
    """Is ``exc`` the site's file system out of room (the render's failure, not one page's)?"""
    return exc.errno in DISK_FULL


def is_temporary(rel: str) -> bool:
    """Is ``rel`` (a path in the site folder) a temporary file of :func:`write_atomic`?"""
    return bool(_TEMP.match(rel.rpartition("/")[2]))


def existing_files(site: Path) -> set[str]:
    """Every file in the site folder (relative POSIX paths) except the renderer's own records."""
    found: set[str] = set()
    stack = [(os.fspath(site), "")]  # str paths: a Path per folder costs more than its listing
    while stack:
        directory, prefix = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except FileNotFoundError:
            continue
        for entry in entries:
            rel = f"{prefix}{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                if rel != CACHE_DIR:
                    stack.append((entry.path, f"{rel}/"))
            elif rel not in OWN_DOT_FILES:
                found.add(rel)
    return found


# A folder whose time was taken this close to its last change may change again within the same tick of
# the file system's clock (coarse: a few milliseconds; 2 s on some file systems) without its time moving.
SETTLED_NS = 2_000_000_000
FolderTimes = dict[str, list[int]]  # a site folder (relative POSIX path, "" the site) → [mtime_ns, taken_ns]


def folder_times(site: Path, folders: Iterable[str] | None = None, previous: FolderTimes | None = None) -> FolderTimes:
    """The modification time of every folder of the site (``folders``: of these only; one gone is left
    out) and when it was taken: a file added to or removed from a folder moves its time, so the next
    delta render learns that every page is still on disk from a ``stat`` per folder instead of a listing
    of every file (:func:`unchanged_files`). Not the site's own folder (the renderer's records change it
    after this), nor the renderer's cache. A folder whose time ``previous`` took and has not moved since
    keeps that record (a render that changed nothing saves nothing)."""
    taken = time.time_ns()
    previous = previous or {}

    def record(rel: str, mtime: int) -> list[int]:
        before = previous.get(rel)
        return before if before is not None and before[0] == mtime else [mtime, taken]

    found: FolderTimes = {}
    root = os.fspath(site)
    if folders is not None:
        for rel in folders:
            try:
                found[rel] = record(rel, os.stat(f"{root}/{rel}").st_mtime_ns)
            except OSError:
                continue
        return found
    stack = [(root, "")]
    while stack:
        directory, prefix = stack.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                rel = f"{prefix}{entry.name}"
                if entry.is_dir(follow_symlinks=False) and rel != CACHE_DIR:
                    found[rel] = record(rel, entry.stat(follow_symlinks=False).st_mtime_ns)
                    stack.append((entry.path, f"{rel}/"))
    return found


@dataclass(frozen=True)
class CheckedTimes:
    """The last render's folder times (:func:`folder_times`), every one found true by this render's start
    (:func:`unchanged_files`, :func:`stray_files`), which began at ``listed_at`` (``time.time_ns()``)."""

    folders: FolderTimes
    listed_at: int


def retimed(site: Path, checked: CheckedTimes, written: Iterable[str], removed: Iterable[str]) -> FolderTimes:
    """The site's folders' times after a render that found ``checked`` true at its start and then wrote
    ``written`` and removed ``removed``: those of the folders it wrote or removed files in and their parents (a
    folder it made, or emptied and removed: left out), taken again; those of the others kept, without a listing
    of the site. A folder timed too soon after its change, listed whole by the start and unchanged since,
    is recorded as of that listing when it came :data:`SETTLED_NS` after the change (any later change moves
    its time), so the next render trusts its time instead of listing it again."""
    folders = checked.folders
    soon = {rel for rel, (mtime, taken) in folders.items() if mtime >= taken - SETTLED_NS}
    touched = set(soon)
    for rel in (*written, *removed):
        while rel := rel.rpartition("/")[0]:  # not the site's own folder: never timed
            touched.add(rel)
    now = folder_times(site, touched, previous=folders)
    for rel in soon:
        found = now.get(rel)
        if found is not None and found[0] == folders[rel][0] and checked.listed_at - found[0] >= SETTLED_NS:
            now[rel] = [found[0], checked.listed_at]
    return {**{rel: kept for rel, kept in folders.items() if rel not in touched}, **now}


def unchanged_files(site: Path, files: list[str], folders: FolderTimes) -> set[str] | None:
    """The files of the site when every file of ``files`` (the last render's) is still there, else None:
    ``files`` and :func:`stray_files`."""
    strays = stray_files(site, files, folders)
    return None if strays is None else strays.union(files)


def stray_files(site: Path, files: list[str], folders: FolderTimes) -> set[str] | None:
    """What the site holds besides ``files`` (the last render's; a temporary file of a killed write) when
    every file of ``files`` is still there, else None.

    A folder whose time has not moved since :func:`folder_times` took it holds what it held; the site's own
    folder (the renderer's records change it every render), and a folder whose time was taken within
    :data:`SETTLED_NS` of its change, are listed instead: only what those hold besides ``files`` is found."""
    unsure = {""}
    root = os.fspath(site)
    for rel, (mtime, taken) in folders.items():
        if not rel:
            continue
        try:
            now = os.stat(f"{root}/{rel}", follow_symlinks=False).st_mtime_ns
        except OSError:
            return None
        if now != mtime:
            return None
        if mtime >= taken - SETTLED_NS:
            unsure.add(rel)
    expected: dict[str, set[str]] = {rel: set() for rel in unsure}
    for rel in files:
        folder = rel.rpartition("/")[0]
        if folder in expected:
            expected[folder].add(rel)
        elif folder not in folders:
            return None  # a folder whose time was not taken: nothing known of it
    strays: set[str] = set()
    for folder, wanted in expected.items():
        prefix = f"{folder}/" if folder else ""
        try:
            with os.scandir(site / folder) as entries:
                held = {f"{prefix}{e.name}" for e in entries if not e.is_dir(follow_symlinks=False)}
        except OSError:
            return None
        if not held.issuperset(wanted):
            return None
        strays |= held - wanted - OWN_DOT_FILES
    return strays


class Journal:
    """``.render-journal``: the paths this render is about to write, appended before each write."""

    def __init__(self, site: Path) -> None:
        self.path = site / JOURNAL
        self._handle: Any = None

    def recorded(self) -> set[str]:
        """Paths recorded by renders that did not finish (the journal is emptied when one does)."""
        try:
            return {line for line in self.path.read_text(encoding="utf-8").splitlines() if line}
        except (OSError, UnicodeDecodeError):
            return set()

    def add(self, rel: str) -> None:
        if self._handle is None:
            self._handle = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 (open until close())
        self._handle.write(rel + "\n")
        self._handle.flush()  # in the kernel before the page exists: a SIGKILL cannot lose it

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def clear(self) -> None:
        """The manifest now lists every page: nothing left to remember."""
        self.close()
        self.path.unlink(missing_ok=True)


class Output:
    """Decides which files need writing (by fingerprint) and records the new manifest's page table.

    A page counts as current only when the old manifest has its fingerprint, the file is there
    (``present``) and no unfinished render may have rewritten it since (``suspect``: the journal's
    paths): a render that was killed, or ran out of disk, is repaired by the next one."""

    def __init__(self, site: Path, old_pages: dict[str, str], present: set[str], suspect: set[str],
                 journal: Journal) -> None:
        self.site = site
        self.old = old_pages
        self.present = present
        self.suspect = suspect
        self.journal = journal
        self.pages: dict[str, str] = {}
        self.written: list[str] = []
        self.unchanged = 0

    def current(self, url: str) -> bool:
        """Is the file the old manifest lists for ``url`` there, as that manifest describes it?"""
        rel = urls.site_file(url)
        return url in self.old and rel in self.present and rel not in self.suspect

    def wants(self, url: str, fingerprint: str) -> bool:
        """Record ``url``'s fingerprint; True when the file must be (re)written."""
        self.pages[url] = fingerprint
        if self.old.get(url) == fingerprint and self.current(url):
            self.unchanged += 1
            return False
        return True

    def kept(self, url: str, may_differ: bool) -> bool:
        """Keep ``url`` as it is without fingerprinting it (its inputs are known to be unchanged)."""
        if may_differ or not self.current(url):
            return False
        self.pages[url] = self.old[url]
        self.unchanged += 1
        return True

    def listed_with(self, first: str, folder: str) -> list[str]:
        """``first`` and the files under ``folder`` the last render wrote with it (a source's tree or table of
        contents and its pieces), ``first`` first; none when it wrote no ``first``."""
        if first not in self.old:
            return []
        return [first, *sorted(url for url in self.old if url.startswith(folder))]

    def kept_all(self, page_urls: list[str], may_differ: bool) -> bool:
        """Keep every one of ``page_urls`` as it is (see :meth:`kept`): all of them, or none."""
        if may_differ or not page_urls or not all(self.current(url) for url in page_urls):
            return False
        for url in page_urls:
            self.kept(url, False)
        return True

    def write(self, url: str, data: str | bytes) -> None:
        rel = urls.site_file(url)
        self.journal.add(rel)
        write_atomic(self.site / rel, data)
        self.written.append(rel)

    def copy(self, url: str, source: Path, *, link: bool = False) -> None:
        """``source`` (an attachment, a static file) at ``url``, never read into memory (see
        :func:`builder.core.atomic.copy_atomic`)."""
        rel = urls.site_file(url)
        self.journal.add(rel)
        copy_atomic(source, self.site / rel, link=link)
        self.written.append(rel)

    def drop(self, url: str) -> None:
        """``url`` is not part of the site after all (it could not be written): an old copy goes."""
        self.pages.pop(url, None)

    def keep(self, page_urls: Iterable[str]) -> None:
        """Pages whose note could not be read this time keep their previous version."""
        for url in page_urls:
            if self.current(url):
                self.pages[url] = self.old[url]

    def files(self) -> set[str]:
        """The files of every page this render produced or kept (relative to the site folder)."""
        return {urls.site_file(url) for url in self.pages}

    def remove_stale(self, listed: dict[str, str], recorded: set[str], produced: set[str]) -> list[str]:
        """Delete the files the portal wrote (listed in the old manifest, recorded in the journal,
        or left as temporary files) that this render did not produce (``produced``: see
        :meth:`files`); never anything else."""
        ours = {urls.site_file(url) for url in listed} | recorded
        doomed = {rel for rel in self.present if rel not in produced
                  and (rel in ours or is_temporary(rel))}
        removed = []
        for rel in sorted(doomed):
            path = self.site / rel
            path.unlink(missing_ok=True)
            removed.append(rel)
            _prune_dirs(path.parent, self.site)
        return removed

    def save_manifest(self, manifest: dict[str, Any], saved: dict[str, Any]) -> None:
        """Store ``manifest`` (see :func:`store_manifest`) unless it is what ``saved`` holds and
        that is in the state file (a render that wrote nothing compares the two; one that wrote
        files leaves finding what changed to the store)."""
        if self.written or manifest != saved or not (self.site / STATE).is_file():
            store_manifest(self.site, manifest, saved)


def _prune_dirs(directory: Path, site: Path) -> None:
    while directory != site and site in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def copy_static(out: Output, files: Iterable[tuple[str, Path]]) -> None:
    """``templates/static/`` (``files``: see :func:`builder.core.templates.static_files`) → ``<site>/static/``;
    a file is read only when it changed (the bundled mermaid is 5.5 MB)."""
    for rel, path in files:
        url = urls.static_url(rel)
        if out.wants(url, templates.file_digest(path)):
            out.copy(url, path)


def copy_attachments(out: Output, wanted: dict[str, Path]) -> list[tuple[str, str]]:
    """Files next to the notes that some page links to (url → source file), copied when new or changed
    (their size and mtime: no file is read to tell), in bounded memory whatever their size: one of
    :data:`LINK_FROM_BYTES` or more is hard-linked when it can be. Returns those that could not be
    written, each with the reason (they are left out: the links to them lead nowhere); a full disk is the
    render's failure."""
    failed = []
    for url, source in sorted(wanted.items()):
        try:
            st = source.stat()
        except OSError:
            continue  # vanished since it was resolved: the next build reports the broken link
        if not out.wants(url, f"{st.st_size}:{st.st_mtime_ns}"):
            continue
        try:
            out.copy(url, source, link=st.st_size >= LINK_FROM_BYTES)
        except FileNotFoundError:
            out.drop(url)  # vanished meanwhile: as above
        except OSError as exc:
            if disk_full(exc):
                raise
            out.drop(url)
            failed.append((url, exc.strerror or str(exc)))
    return failed
