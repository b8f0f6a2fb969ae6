"""The build step: lock → scan each source → index what changed → embed → (swap).

Runs from cron every minute. When nothing changed it prints nothing, writes
nothing (not the index, not the log) and imports neither the markdown parser,
numpy, Jinja2 nor the embedding model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from builder import indexfile
from builder.core import index as db
from builder.core.clock import iso_from_ns, now_iso
from builder.core.config import Config, SourceConfig
from builder.core.embedding import EmbedderFactory
from builder.lock import BuildLock
from builder.redact import redact_url
from builder.render.stamp import site_is_stale
from builder.sources import FileStat, Scope, is_hidden, uncovered_dirs, walk
from builder.synclog import SyncLog

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.gitsource import GitError

EXIT_OK, EXIT_REINDEX, EXIT_PARTIAL = 0, 1, 3


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
    warning: str | None = None  # git: indexed from a stale clone because the remote failed

    @property
    def empty(self) -> bool:
        return not self.changed and not self.deleted and not self.coverage_changed and not self.refresh


class SourceFailed(Exception):
    """A source could not be scanned; ``str()`` is the redacted one-line reason for the WARN line."""


def build(config: Config, *, full: bool = False, source_id: str | None = None,
          embedder_factory: EmbedderFactory | None = None, log: SyncLog | None = None,
          render: bool = True) -> int:
    """Run one build; returns the process exit code (0 ok, 1 reindex needed, 3 partial).

    ``render=False`` refreshes only the index (the site is left as it is).
    """
    log = log or SyncLog(config.log_path)
    selected = [config.source(source_id)] if source_id else list(config.sources)
    with BuildLock(config.lock_path, log.warn) as lock:
        if not lock.acquired:
            return EXIT_OK
        current = indexfile.resolve(config.index)
        if full or current is None:
            return _full_build(config, embedder_factory, log, render)
        conn = db.connect(current, vec=False)
        try:
            db.check_identity(conn, config)
            code, changed = _incremental(conn, config, selected, source_id is None, embedder_factory, log)
            if render and (changed or site_is_stale(config)):
                code = max(code, _render(config, conn, full=False, log=log))
            return code
        finally:
            conn.close()


def _render(config: Config, conn: Connection, *, full: bool, log: SyncLog) -> int:
    """Bring the site up to date; a site that cannot be written never fails the indexing."""
    from builder.render.site import render_site

    try:
        render_site(config, conn, full=full, log=log)
    except OSError as exc:
        log.warn(f"site: cannot write {config.site.output} ({exc.strerror or exc}); the index is up to date")
        return EXIT_PARTIAL
    return EXIT_OK


def _full_build(config: Config, embedder_factory: EmbedderFactory | None, log: SyncLog, render: bool) -> int:
    """Build a complete new index file beside the old one, then swap it in atomically."""
    new_path = indexfile.new_generation(config.index)
    conn = db.connect(new_path)
    try:
        db.migrate(conn)
        with db.transaction(conn):
            db.set_meta(conn, {**db.expected_identity(config), "sqlite_vec_version": db.vec_version(conn),
                               "created_at": now_iso()})
        if config.embedding.enabled:
            db.ensure_vec_table(conn, config.embedding.dims)
        code, _ = _incremental(conn, config, list(config.sources), True, embedder_factory, log, force=True)
        db.checkpoint(conn)
    except BaseException:
        conn.close()
        indexfile.discard(new_path)
        raise
    indexfile.swap_in(config.index, new_path)
    log.info(f"full build swapped in {new_path.name}")
    try:
        return max(code, _render(config, conn, full=True, log=log)) if render else code
    finally:
        conn.close()


def _incremental(conn: Connection, config: Config, selected: list[SourceConfig], all_sources: bool,
                 embedder_factory: EmbedderFactory | None, log: SyncLog, force: bool = False) -> tuple[int, bool]:
    """Index what changed; returns (exit code, whether any note entered, changed or left)."""
    code = EXIT_OK
    db.migrate(conn)  # an index from before a schema step gains it here; a single SELECT when current
    known = db.get_sources(conn)
    heads = _remote_heads(config, selected)
    scans: list[SourceChanges] = []
    for source in selected:
        row = known.get(source.id)
        try:
            if source.kind == "git":
                scan = _scan_git(conn, config, source, row, heads[source.id], force, log)
            else:
                scan = _scan(conn, source, row, force)
        except (OSError, SourceFailed) as exc:
            reason = str(exc) if isinstance(exc, SourceFailed) else f"cannot read the source ({exc})"
            log.warn(f"{source.id}: {reason}")
            _record_error(conn, source, reason)
            code = EXIT_PARTIAL
            continue
        if scan.warning:
            log.warn(f"{source.id}: {scan.warning}")
            _record_error(conn, source, scan.warning)
            code = EXIT_PARTIAL
        elif scan.empty and row is not None and row.last_error:
            with db.transaction(conn):
                db.update_source(conn, source.id, last_error=None)
        scans.append(scan)
    stale = [sid for sid in known if all_sources and sid not in {s.id for s in config.sources}]
    pending = db.count_pending(conn) if config.embedding.enabled else 0
    changed = bool(stale) or not all(s.empty for s in scans)
    if not changed and not pending:
        return code, False  # the every-minute case: nothing to say, nothing written
    _load_vec(conn, config)
    for sid in stale:
        db.delete_source(conn, sid)
        log.info(f"{sid}: source removed from the config, its notes left the index")
    for scan in scans:
        if not scan.empty:
            try:
                _apply(conn, config, scan, log)
            except Exception as exc:  # one source's failure must not stop the others
                log.warn(f"{scan.source.id}: indexing failed ({type(exc).__name__}: {exc})")
                code = EXIT_PARTIAL
    if config.embedding.enabled and db.count_pending(conn):
        from builder.embed_run import embed_pending

        embed_pending(conn, config, embedder_factory, log)
    return code, changed


def _load_vec(conn: Connection, config: Config) -> None:
    db.load_vec(conn)
    if config.embedding.enabled:
        db.ensure_vec_table(conn, config.embedding.dims)


def _scan(conn: Connection, source: SourceConfig, row: db.SourceRow | None, force: bool) -> SourceChanges:
    assert source.root is not None
    scope = Scope.of(source)
    if not source.root.is_dir():
        raise OSError(f"directory {source.root} is gone")
    found = walk(source.root, scope)
    states = {} if force else db.file_states(conn, source.id)
    changed = tuple(stat for path, stat in sorted(found.items())
                    if path not in states or states[path].size != stat.size
                    or states[path].mtime_ns != stat.mtime_ns)
    deleted = tuple(sorted(set(states) - set(found)))
    uncovered = tuple(uncovered_dirs(source.root, scope))
    previous = row.uncovered if row else ()
    return SourceChanges(source, changed, deleted, uncovered,
                         coverage_changed=row is None or uncovered != previous)


def _remote_heads(config: Config, selected: list[SourceConfig]) -> dict[str, str | GitError]:
    """Every git source's remote head (or its GitError), asked in parallel: one ls-remote each."""
    git_sources = [s for s in selected if s.kind == "git"]
    if not git_sources:
        return {}
    from builder.gitsource import remote_heads

    answers = remote_heads([(s.url or "", s.branch) for s in git_sources], config.git_timeout)
    return {s.id: answer for s, answer in zip(git_sources, answers)}


def _scope_key(source: SourceConfig) -> str:
    return json.dumps([source.paths, source.include, source.exclude])


def _scan_git(conn: Connection, config: Config, source: SourceConfig, row: db.SourceRow | None,
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
    if indexed == head and row is not None and row.scope == _scope_key(source) and git.clone_state(root) == head:
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
    same_scope = row is not None and row.scope == _scope_key(source)
    states = db.file_states(conn, source.id) if row is not None else {}
    since = indexed if indexed and same_scope and git.is_ancestor(root, indexed, rev, timeout) else None
    if since:
        diff = git.diff_files(root, since, rev, timeout)
        candidates, gone = diff.changed, set(diff.deleted)
    else:
        if indexed and same_scope:
            log.info(f"{source.id}: {indexed[:12]} is not in the history of {rev[:12]} (force-pushed?): "
                     "full re-scan")
        candidates, gone = git.list_files(root, rev, timeout), set(states)
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
                         refresh=not same_scope or row is None or row.indexed_rev != rev, authors=authors)


def _record_error(conn: Connection, source: SourceConfig, reason: str) -> None:
    """Remember why the source failed (``status`` shows it); its indexed_rev and notes stay."""
    with db.transaction(conn):
        db.upsert_source(conn, source.id, source.kind, redact_url(source.url), source.branch)
        db.update_source(conn, source.id, last_error=reason, last_error_at=now_iso())


def _apply(conn: Connection, config: Config, scan: SourceChanges, log: SyncLog) -> None:
    from builder.ingest import ingest, sha256_bytes

    source = scan.source
    root = config.source_root(source)
    db.upsert_source(conn, source.id, source.kind, redact_url(source.url), source.branch)
    states = db.file_states(conn, source.id)
    notes = chunks = touched = 0
    for stat in scan.changed:
        try:
            data = (root / stat.path).read_bytes()
        except OSError as exc:
            log.warn(f"{source.id}: {stat.path}: cannot read ({exc.strerror or exc})")
            continue
        old = states.get(stat.path)
        author = scan.authors.get(stat.path)
        if old is not None and old.sha256 == sha256_bytes(data):
            db.touch_file(conn, source.id, stat.path, stat.size, stat.mtime_ns)
            if author is not None:  # same content, but the history that last touched it moved
                db.set_last_change(conn, source.id, stat.path, iso_from_ns(stat.mtime_ns), author)
            touched += 1
            continue
        result = ingest(stat.path, data, mtime_ns=stat.mtime_ns, changed_at=iso_from_ns(stat.mtime_ns),
                        max_bytes=config.max_note_bytes)
        for warning in result.warnings:
            log.warn(f"{source.id}: {warning}")
        record = result.record if author is None else replace(result.record, changed_by=author)
        db.replace_file(conn, source.id, record, result.chunks, now_iso())
        notes += 1
        chunks += len(result.chunks)
    for path in scan.deleted:
        db.delete_file(conn, source.id, path)
    if notes or scan.deleted:
        log.info(f"{source.id}: indexed {notes} files / {chunks} chunks, removed {len(scan.deleted)} files")
    if notes or scan.deleted or scan.coverage_changed:
        if scan.uncovered:
            log.info(f"{source.id}: coverage: markdown outside every paths entry in: "
                     + ", ".join(f"{d}/" for d in scan.uncovered))
        elif scan.coverage_changed and "**" not in source.paths:
            log.info(f"{source.id}: coverage: every directory with markdown is covered")
    with db.transaction(conn):
        values: dict[str, Any] = {"uncovered": scan.uncovered}
        if not scan.warning:
            values["last_error"] = None
        if source.kind == "git":
            values.update(indexed_rev=scan.rev, scope=_scope_key(source), last_sync_at=now_iso())
        elif notes or scan.deleted or touched:
            values.update(indexed_rev=_folder_rev(conn, source.id), last_sync_at=now_iso())
        db.update_source(conn, source.id, **values)


def _folder_rev(conn: Connection, source_id: str) -> str:
    """A folder's revision: a digest of its indexed (path, sha256) pairs."""
    digest = hashlib.sha256()
    for path, state in sorted(db.file_states(conn, source_id).items()):
        digest.update(f"{path}\0{state.sha256}\n".encode())
    return digest.hexdigest()[:12]
