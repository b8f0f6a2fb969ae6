"""What changed in each source since the index last saw it: the scan half of a build.

A folder source is walked (size and mtime of every wanted file against the index's record); a git
source asks its remote for the head, brings our clone there and lists what ``git diff-tree`` says
changed since the indexed commit. Both answer a :class:`SourceChanges`, which
:func:`builder.sync.build` applies to the index.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core import index as db
from builder.core.config import Config, SourceConfig
from builder.notes.listings import Listings
from builder.notes.sources import (
    Broken,
    FileStat,
    Scope,
    Walk,
    is_hidden,
    stats_text,
    text_digest,
    uncovered_dirs,
    walk,
)
from builder.core.synclog import SyncLog

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.gitsource import GitError

MASS_REMOVAL = 10  # a folder scan may remove this many notes, or up to half of a source, without asking


@dataclass(frozen=True)
class SourceChanges:
    """What one source's scan found; empty lists and equal coverage mean a no-op."""

    source: SourceConfig
    changed: tuple[FileStat, ...]  # new or modified-looking files
    deleted: tuple[str, ...]
    uncovered: tuple[str, ...]
    coverage_changed: bool
    rev: str | None = None  # git: the commit the index will hold once applied
    refresh: bool = False  # git: the rev or the scope moved, so the source row must be rewritten
    authors: Mapping[str, str] = field(default_factory=dict)  # git: path → author of its last change
    warning: str | None = None  # indexed only in part: a stale git clone, folders that could not be listed
    undecodable: tuple[str, ...] = ()  # git: names that are not UTF-8 (escaped), which cannot be notes
    # what the index held when scanned: of every file, or (after a build that kept its stats) of the files
    # changed and gone only; None: not read
    states: Mapping[str, db.FileState] | None = None
    broken: Mapping[str, str] = field(default_factory=dict)  # folder: entries that cannot be read → why
    unread_dirs: tuple[str, ...] = ()  # folder: folders not listed ("" the root), whose notes stay as indexed
    # folder: the walk's stats_digest (None: the walk cannot stand for the source, a file or a folder in it could
    # not be read, or --full)
    stats_digest: str | None = None

    @property
    def empty(self) -> bool:
        return not self.changed and not self.deleted and not self.coverage_changed and not self.refresh

    @property
    def rereads(self) -> bool:
        """Are the files read from a commit of our clone (git), which the next build starts from again
        while this one leaves it unrecorded? Then a file that cannot be read is left for that build; a
        folder's file is what is on disk now, and one that cannot be read is one note's problem."""
        return self.rev is not None

    def applied(self, summary: db.FolderSummary | None, unreadable: bool, wrote: bool) -> dict[str, str]:
        """The source row's revision once this scan is applied (``summary``: a folder's, with its changes
        written; ``wrote``: a note was written, touched or removed): the commit and the scope it was read
        with (unless a file could not be read: the next build reads them again from the same commit), or a
        folder's digest of its indexed notes when anything was written. Empty: the row keeps its own."""
        if self.rev is not None:
            return {} if unreadable else {"indexed_rev": self.rev, "scope": scope_key(self.source)}
        return {"indexed_rev": summary.rev} if wrote and summary is not None else {}


class SourceFailed(Exception):
    """A source could not be scanned; ``str()`` is the redacted one-line reason for the WARN line."""


@dataclass(frozen=True)
class Delta:
    """How a folder's walk differs from the stats the last build kept of it (``index.FolderSummary.stats``)."""

    changed: tuple[FileStat, ...]  # files new, or whose size or mtime moved
    gone: frozenset[str]  # files the index holds that the walk did not find
    indexed: int  # files the index holds
    found: int  # files the walk found


@dataclass(frozen=True)
class FolderWalk:
    """A folder source's walk, compared with what the index keeps of it without reading its rows
    (:func:`walk_folder`, which may run in a process of its own): exactly one of nothing changed (``same``),
    how it differs from the stats the last build kept (``delta``), or the whole walk, for a comparison with
    every file's row (``walk``)."""

    uncovered: tuple[str, ...]  # folders with markdown outside every ``paths`` entry
    # the walk's stats_digest (None: the walk cannot stand for the source, a file or a folder in it could not
    # be read, or --full)
    stats_digest: str | None
    same: bool = False
    delta: Delta | None = None
    walk: Walk | None = None


def walk_folder(source: SourceConfig, row: db.SourceRow | None, force: bool, *, held: bool | None = None,
                listings: Path | None = None, kept_stats: Path | None = None) -> FolderWalk:
    """Walk a folder source and compare the walk with what the index keeps of it, reading no row of the
    index: when the digest of the walk's :func:`stats_text` is the one the index keeps, nothing changed; when
    the file ``kept_stats`` holds the stats whose digest that is (kept by the last build that wrote the
    source), the files whose lines differ are the changes. Raises :class:`SourceFailed` when the folder is not there.
    ``held``: whether an index holds notes of the source (default: this one has its row). ``listings``:
    the file of the source's folder listings kept between builds (:mod:`builder.notes.listings`)."""
    assert source.root is not None
    scope = Scope.of(source)
    if not os.path.isdir(source.root):
        held = row is not None if held is None else held
        kept = "its notes stay as they were indexed" if held else "nothing is indexed from it"
        raise SourceFailed(f"folder {source.root} does not exist (not mounted, moved or renamed?); {kept}")
    folders = Listings(listings, str(source.root), trust=not force) if listings is not None else None
    scanned = walk(source.root, scope, folders)
    if folders is not None:
        folders.save()
    uncovered = tuple(uncovered_dirs(source.root, scope))
    text = None if force or scanned.broken or scanned.unread_dirs else stats_text(scanned.files.values())
    digest = None if text is None else text_digest(text)
    if digest is not None and row is not None and row.stats_digest == digest:
        # the every-minute case: every file as the index holds it, shown without reading every file's row
        return FolderWalk(uncovered, digest, same=True)
    now = _lines(text) if text is not None else None
    before = _kept_lines(kept_stats, row) if now is not None else None
    if now is None or before is None:
        return FolderWalk(uncovered, digest, walk=scanned)
    # a few files changed since a build that kept the index's stats: only their rows need be read
    changed = {line.partition("\0")[0] for line in now - before}
    gone = frozenset({line.partition("\0")[0] for line in before - now} - changed)
    delta = Delta(tuple(scanned.files[path] for path in changed), gone, len(before), len(scanned.files))
    return FolderWalk(uncovered, digest, delta=delta)


def scan_folder(conn: Connection, source: SourceConfig, row: db.SourceRow | None, force: bool,
                walked: FolderWalk) -> SourceChanges:
    """A folder source's changes from its walk (:func:`walk_folder`): every file whose size or mtime
    differs from what the index holds (``force``: every file, and every removal, however many), and the
    files gone, unless they are most of the source (they stay, with a warning, and the rest goes in) or
    the walk found nothing at all (an unmounted folder: the source fails). A note that cannot be read is
    one note's problem (recorded as skipped, read again once it changes or can be read); a folder that
    cannot be listed keeps its notes. The index's rows are read of the files that differ only, unless the
    walk has to be compared with every one."""
    coverage_changed = row is None or walked.uncovered != row.uncovered
    if walked.same:
        return SourceChanges(source, (), (), walked.uncovered, coverage_changed, stats_digest=walked.stats_digest)
    broken: dict[str, Broken] = {}
    unread_dirs: dict[str, str] = {}
    if walked.delta is not None:
        delta = walked.delta
        states = db.file_states(conn, source.id, {stat.path for stat in delta.changed} | delta.gone)
        changed, gone = list(delta.changed), delta.gone.intersection(states)  # what no row holds is gone already
        held_notes, found_any = delta.indexed, delta.found > 0
    else:
        assert walked.walk is not None
        found, broken, unread_dirs = walked.walk.files, walked.walk.broken, walked.walk.unread_dirs
        states = db.file_states(conn, source.id)
        held_notes, found_any = len(states), bool(found)
        if force:
            changed = [*found.values(), *(b.stat for b in broken.values())]
        else:
            changed = [stat for path, stat in found.items() if _looks_changed(source, states.get(path), stat)]
            changed += [b.stat for path, b in broken.items()
                        if states.get(path) != db.FileState(db.UNREAD, b.stat.size, b.stat.mtime_ns)]
        gone = frozenset(set(states) - set(found) - set(broken))
    unread = tuple(sorted(unread_dirs))
    deleted = tuple(sorted(path for path in gone if not any(_below(path, folder) for folder in unread)))
    # an empty walk is an unmounted folder's (one that met only unreadable notes is a mounted one's)
    if not force and deleted and not (found_any or broken):
        raise SourceFailed(f"the scan would remove {len(deleted)} of the {held_notes} notes the index holds "
                           f"(is {source.root} mounted and complete?); nothing was removed. If they are really "
                           f"gone, run `notes-portal build --full --source {source.id}`")
    warnings = []
    if unread:
        more = f" and {len(unread) - 1} more" if len(unread) > 1 else ""
        first = unread[0]
        warnings.append(f"cannot read {first or '.'}/: {unread_dirs[first]}{more}; "
                        "its notes stay as they were indexed")
    if not force and len(deleted) > max(MASS_REMOVAL, held_notes // 2):  # a share half mounted, a sync cut short
        warnings.append(f"the scan would remove {len(deleted)} of the {held_notes} notes the index holds (is "
                        f"{source.root} mounted and complete?); they stay as they were indexed, the other changes "
                        f"were indexed. If they are really gone, run `notes-portal build --full --source {source.id}`")
        deleted = ()
    warning = "; ".join(warnings) or None
    return SourceChanges(source, tuple(sorted(changed)), deleted, walked.uncovered, coverage_changed,
                         warning=warning, states=states,
                         broken={path: b.reason for path, b in broken.items()}, unread_dirs=unread,
                         stats_digest=walked.stats_digest)


def _kept_lines(path: Path | None, row: db.SourceRow | None) -> set[str] | None:
    """The lines of what the index holds of a folder source (``index.FolderSummary.stats``) as the last build that
    wrote them kept them in ``path``; None unless their digest is the one the index keeps (a build that
    died before keeping them, an index carried or put back, a file lost or edited)."""
    if path is None or row is None or row.stats_digest is None:
        return None
    try:
        text = path.read_bytes().decode("utf-8", "surrogateescape")
    except OSError:
        return None
    if text_digest(text) != row.stats_digest:
        return None
    return _lines(text)


def _lines(text: str) -> set[str] | None:
    """The lines of a :func:`stats_text`, each a file's; None when a file's name holds a newline, so that
    the lines cannot be told apart (a name never holds a NUL: two a line)."""
    lines = text.split("\n") if text else []
    return set(lines) if text.count("\0") == 2 * len(lines) else None


def _looks_changed(source: SourceConfig, state: db.FileState | None, stat: FileStat) -> bool:
    """Does the walk's file differ from the index's record? A note recorded as unreadable is read again
    when it changes, or when it can be read now (a chmod moves neither its size nor its mtime)."""
    if state is None or state.size != stat.size or state.mtime_ns != stat.mtime_ns:
        return True
    return state.sha256 == db.UNREAD and source.root is not None and _readable(source.root / stat.path)


def _readable(path: Path) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False


def _below(path: str, folder: str) -> bool:
    return not folder or path.startswith(folder + "/")


def source_heads(config: Config, selected: list[SourceConfig]) -> dict[str, str | GitError]:
    """Every git source's remote head (or its GitError), asked in parallel: one ls-remote each."""
    git_sources = [s for s in selected if s.kind == "git"]
    if not git_sources:
        return {}
    from builder.gitsource import remote_heads as ask

    answers = ask([(s.url or "", s.branch) for s in git_sources], config.git_timeout)
    return {s.id: answer for s, answer in zip(git_sources, answers, strict=True)}


def scope_key(source: SourceConfig) -> str:
    """What a git source's listing depends on besides its commit (kept beside ``indexed_rev``)."""
    return json.dumps([source.paths, source.include, source.exclude])


def scan_git(conn: Connection, config: Config, source: SourceConfig, row: db.SourceRow | None,
              head: str | GitError, force: bool, log: SyncLog) -> SourceChanges:
    """A git source's changes since ``indexed_rev``; when the remote head is that rev, nothing more."""
    from builder import gitsource as git

    root = config.source_root(source)
    row = None if force else row  # --full: a fresh listing of every file
    indexed = row.indexed_rev if row is not None else None
    warning = None
    if isinstance(head, git.GitError):
        stale = git.clone_state(root) if force else None
        if stale is None:
            raise SourceFailed(str(head))
        # --full must not drop a source because its host is down: index the clone we have
        head, warning = stale, f"{head}; indexed our existing clone at {stale[:12]}"
    if indexed == head and row is not None and row.scope == scope_key(source) and git.clone_state(root) == head:
        return SourceChanges(source, (), (), row.uncovered, coverage_changed=False)  # the every-minute case
    try:
        return replace(_git_changes(conn, config, source, row, indexed, head, log), warning=warning)
    except git.GitError as exc:
        raise SourceFailed(str(exc)) from None
    except OSError as exc:
        raise SourceFailed(f"cannot update our clone ({exc})") from None


def _git_changes(conn: Connection, config: Config, source: SourceConfig, row: db.SourceRow | None,
                 indexed: str | None, head: str, log: SyncLog) -> SourceChanges:
    """Bring our clone to ``head``; the changed files come from ``git diff-tree indexed..head``, or from
    a full listing on a first build, ``--full`` (``row`` is None), a changed scope or rewritten history."""
    from builder import gitsource as git

    root, timeout, scope = config.source_root(source), config.git_timeout, Scope.of(source)
    checkout = git.ensure_checkout(root, source.url or "", source.branch, head, timeout)
    if checkout.repaired:
        log.info(f"{source.id}: {checkout.repaired}")
    rev = checkout.rev
    same_scope = row is not None and row.scope == scope_key(source)
    states = db.file_states(conn, source.id)  # --full in place holds them too: what is gone must go
    since = indexed if indexed and same_scope and git.is_ancestor(root, indexed, rev, timeout) else None
    if since:
        diff = git.diff_files(root, since, rev, timeout)
        gone = set(diff.deleted)
    else:
        if indexed and same_scope:
            log.info(f"{source.id}: {indexed[:12]} is not in the history of {rev[:12]} (force-pushed?): "
                     "full re-scan")
        diff, gone = git.list_files(root, rev, timeout), set(states)
    candidates = diff.changed
    wanted = sorted(p for p in candidates
                    if scope.wants(p) and not any(is_hidden(part) for part in p.split("/")))
    gone = {p for p in gone if p in states} - set(wanted)
    changed, authors = [], {}
    if wanted:
        head_change, changes = git.last_changes(root, rev, since, timeout)
        for path in wanted:
            change = changes.get(path, head_change)  # a file only a merge changed: the head commit
            try:
                size = (root / path).stat().st_size
            except OSError:
                size = -1  # _apply warns when it cannot read it
            changed.append(FileStat(path, size, change.at_ns))
            authors[path] = change.author
    uncovered = tuple(uncovered_dirs(root, scope))
    previous = row.uncovered if row else ()
    return SourceChanges(source, tuple(changed), tuple(sorted(gone)), uncovered,
                         coverage_changed=row is None or uncovered != previous, rev=rev,
                         refresh=not same_scope or row is None or row.indexed_rev != rev, authors=authors,
                         undecodable=tuple(name for name in diff.undecodable if scope.wants(name)),
                         states=states)  # read once: the index writes use it
