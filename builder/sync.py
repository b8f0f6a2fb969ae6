"""The build step: lock → scan each source (:mod:`builder.scan`) → index what changed → embed → (swap).

Runs from cron every minute. When nothing changed it prints nothing, writes
nothing (not the index, not the log) and imports neither the markdown parser,
numpy, Jinja2 nor the embedding model.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder import indexfile
from builder.core import index as db
from builder.core.clock import iso_from_ns, now_iso
from builder.core.config import Config, SourceConfig
from builder.core.embedding import EmbedderFactory, passage_fits
from builder.core.errors import EXIT_OK, EXIT_PARTIAL
from builder.lock import BuildLock, describe_holder
from builder.core.redact import redact_url
from builder.render.stamp import site_is_stale
from builder.report import BuildReport
from builder.core.forkpool import fork_each
from builder.scan import (
    FolderWalk,
    SourceChanges,
    SourceFailed,
    scan_folder,
    scan_git,
    source_heads,
    walk_folder,
)
from builder.core.synclog import SyncLog
from builder.core.atomic import write_atomic
from builder.notes.sources import text_digest

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.ingest import ChangedFile, Ingested
    from builder.notes.sources import FileStat

WRITE_BATCH_S = 0.5  # the index commits a source's changes every half second, not once per note
INGEST_BATCH = 1024  # changed files read at a time, parsed while the batch before is stored (two in memory)


@dataclass(frozen=True)
class Indexed:
    """What one pass over the sources did."""

    code: int  # EXIT_OK or EXIT_PARTIAL
    changed: bool  # a note entered, changed or left the index
    failed: tuple[str, ...] = ()  # sources whose changes could not be scanned or applied
    carried: int = 0  # a new generation: notes carried over from the previous index (their last good state)
    uncarried: tuple[str, ...] = ()  # a new generation: sources whose last good notes could not be carried over
    waiting: int = 0  # chunks waiting for vectors the cache did not have (embedded after the build lock)


def build(config: Config, *, full: bool = False, source_id: str | None = None,
          embedder_factory: EmbedderFactory | None = None, log: SyncLog | None = None,
          render: bool = True, wait: bool = False, report: BuildReport | None = None,
          vectors: str = "now") -> int:
    """Run one build; returns the process exit code (0 ok, 1 reindex needed, 3 partial).

    Holding the build lock it indexes what changed (new chunks get the vectors the cache has) and
    renders; then, the lock released, the chunks still waiting get their vectors (``vectors``:
    ``"now"`` in this process, ``"background"`` in a process of its own that outlives this one,
    ``"later"`` not at all: the next build's). ``render=False`` refreshes only the index. When another
    build holds the lock, this one returns 0 at once, or with ``wait`` runs after it. ``report``
    follows its progress.
    """
    log = log or SyncLog(config.log_path)
    report = report or BuildReport()
    built = _build_locked(config, full, source_id, embedder_factory, log, render, wait, report)
    if built is None or not built.waiting or not config.embedding.enabled:
        return built.code if built is not None else EXIT_OK
    from builder import embed_run

    if vectors == "background":
        if embed_run.start_backfill(config) and sys.stderr.isatty():
            print(f"notes-portal: the site and search by words are ready; {built.waiting:,} sections wait for their "
                  "vectors, embedded in the background (`notes-portal status` shows how far)", file=sys.stderr)
        return built.code
    if vectors == "now":
        report.enter("embed")
        return max(built.code, embed_run.backfill(config, embedder_factory=embedder_factory, log=log))
    return built.code


@dataclass(frozen=True)
class _Built:
    code: int
    waiting: int  # chunks left waiting for vectors (the cache did not have them)


def _build_locked(config: Config, full: bool, source_id: str | None, embedder_factory: EmbedderFactory | None,
                  log: SyncLog, render: bool, wait: bool, report: BuildReport) -> _Built | None:
    """The build's part that holds the build lock: scan, index, render. None: another build holds it."""
    selected = [config.source(source_id)] if source_id else list(config.sources)
    with BuildLock(config.build_lock_path, wait=wait) as lock:
        if not lock.acquired:
            if sys.stderr.isatty():  # a person typed it; cron's next run simply tries again
                print(f"notes-portal: {describe_holder(lock.holder)}; this build leaves the work to it "
                      "(use --wait to run after it)", file=sys.stderr)
            return None
        report.enter("scan")
        current = indexfile.resolve(config.index)
        for leftover in indexfile.remove_leftovers(config.index):  # of a --full build that was killed
            log.info(f"removed {leftover}, left by a build that did not finish")
        if current is None or (full and source_id is None):
            return _full_build(config, embedder_factory, log, render, report)
        try:
            conn = db.connect(current, vec=False)
        except db.sqlite_module().OperationalError as exc:  # a full disk leaves no room for its -shm file
            log.warn(f"cannot open the index for writing ({exc}); the previous index keeps serving and the "
                     "next build tries again")
            return _Built(EXIT_PARTIAL, 0)
        try:
            diffs = db.identity_diffs(conn, config)
            if not diffs:
                # --full --source X rescans X in place: its notes as they are now, removals included,
                # whatever the other sources do (a new generation would need every source)
                indexed = _incremental(conn, config, selected, source_id is None, embedder_factory, log, report,
                                       force=full)
                if render and (indexed.changed or site_is_stale(config, db.content_token(conn))):
                    report.enter("render")
                    code = max(indexed.code, _update_site(config, conn, full=False, log=log, indexed=indexed))
                    return _Built(code, indexed.waiting)
                return _Built(indexed.code, indexed.waiting)
            if config.embedding.enabled and not full:  # embedding every note again is a person's decision
                db.check_identity(conn, config)
        finally:
            conn.close()
        # Nothing to embed (provider none), or only the chunks are cut otherwise (an upgrade: the
        # embedding cache holds the vectors of every chunk whose text stays): make a new index while
        # the old one keeps serving.
        log.info(f"the index was made otherwise ({'; '.join(diffs)}); building a new one")
        return _full_build(config, embedder_factory, log, render, report)


def _update_site(config: Config, conn: Connection, *, full: bool, log: SyncLog, indexed: Indexed) -> int:
    """Bring the site up to date; a site that cannot be written never fails the indexing."""
    from builder.render.site import render_site

    try:
        render_site(config, conn, full=full, log=log)
    except OSError as exc:
        state = "the index is up to date" if not indexed.failed else "the index holds what could be indexed"
        log.warn(f"site: cannot write {config.site.output} ({exc.strerror or exc}); {state}; "
                 "the next build renders it again")
        return EXIT_PARTIAL
    return EXIT_OK


def _full_build(config: Config, embedder_factory: EmbedderFactory | None, log: SyncLog, render: bool,
                report: BuildReport) -> _Built:
    """Build a complete new index file beside the old one, then swap it in atomically. What cannot be
    read again (a failing source, a folder its scan could not list) keeps its last good notes, carried
    over from the old index; only when they cannot be carried does the old index keep serving instead."""
    previous = indexfile.resolve(config.index)
    new_path = indexfile.new_generation(config.index)
    conn = db.connect(new_path)
    try:
        db.migrate(conn)
        with db.transaction(conn):
            db.set_meta(conn, {**db.expected_identity(config), "sqlite_vec_version": db.vec_version(conn),
                               "created_at": now_iso(), "generation": new_path.name})
        if config.embedding.enabled:
            db.ensure_vec_table(conn, config.embedding.dims)
        indexed = _incremental(conn, config, list(config.sources), True, embedder_factory, log, report, force=True,
                               carry_from=previous)
        db.checkpoint(conn)
        if indexed.uncarried:
            log.warn(f"full build not swapped in: the notes of {', '.join(indexed.uncarried)} could neither be "
                     "indexed nor kept from the previous index; the previous index keeps serving")
            raise _Abandoned
    except BaseException as exc:
        conn.close()
        indexfile.discard(new_path)
        if isinstance(exc, _Abandoned):
            return _Built(EXIT_PARTIAL, 0)
        raise
    indexfile.swap_in(config.index, new_path)
    log.info(f"full build swapped in {new_path.name}")
    try:
        if not render:
            return _Built(indexed.code, indexed.waiting)
        report.enter("render")
        # carried notes keep their pages: a full render would read them again from where they cannot be read
        code = max(indexed.code, _update_site(config, conn, full=not indexed.carried, log=log, indexed=indexed))
        return _Built(code, indexed.waiting)
    finally:
        conn.close()


class _Abandoned(Exception):
    """A full build that must not replace the index it was meant to replace."""


def _incremental(conn: Connection, config: Config, selected: list[SourceConfig], all_sources: bool,
                 embedder_factory: EmbedderFactory | None, log: SyncLog, report: BuildReport,
                 force: bool = False, carry_from: Path | None = None) -> Indexed:
    """Index what changed in the selected sources (``force``: every file of them, every removal).
    ``carry_from`` (a new generation's build): the previous index, whose notes of what could not be
    read now are carried into this one."""
    code = EXIT_OK
    failed: list[str] = []
    db.migrate(conn)  # an index from before a schema step gains it here; a single SELECT when current
    known = db.get_sources(conn)
    held = set(known) | (_sources_of(carry_from) if carry_from is not None else set())
    heads = source_heads(config, selected)
    walks = _walk_folders(config, selected, known, held, force)
    scans: list[SourceChanges] = []
    for source in selected:
        row = known.get(source.id)
        try:
            if source.kind == "git":
                scan = scan_git(conn, config, source, row, heads[source.id], force, log)
            else:
                scan = scan_folder(conn, source, row, force, walks[source.id]())
        except (OSError, SourceFailed) as exc:
            reason = str(exc) if isinstance(exc, SourceFailed) else f"cannot read the source ({exc})"
            log.warn(f"{source.id}: {reason}")
            _record_error(conn, source, reason, log)
            code = EXIT_PARTIAL
            failed.append(source.id)
            continue
        if scan.warning:
            log.warn(f"{source.id}: {scan.warning}")
            _record_error(conn, source, scan.warning, log)
            code = EXIT_PARTIAL
        elif scan.empty and row is not None and row.last_error:
            with db.transaction(conn):
                db.update_source(conn, source.id, last_error=None)
        if _walk_to_keep(scan, row):  # once after an upgrade, or after a build that could not keep its own
            _keep_stats(conn, config, source.id)
        scans.append(scan)
    stale = [sid for sid in known if all_sources and sid not in {s.id for s in config.sources}]
    changed = bool(stale) or not all(s.empty for s in scans)
    carry = carry_from is not None and (bool(failed) or any(s.unread_dirs for s in scans))
    if not changed and not carry:  # the every-minute case: nothing to say, nothing written
        return Indexed(code, False, tuple(failed), waiting=_waiting(conn, config))
    report.enter("index")
    _load_vec(conn, config)
    for sid in stale:
        db.delete_source(conn, sid)
        config.listings_path(sid).unlink(missing_ok=True)
        config.kept_stats_path(sid).unlink(missing_ok=True)
        log.info(f"{sid}: source removed from the config, its notes left the index")
    written = 0
    for scan in scans:
        if not scan.empty:
            try:
                with db.WriteBatch(conn, WRITE_BATCH_S):
                    applied = _apply(conn, config, scan, log, report)
                written += applied.chunks
                if applied.failed:
                    code = EXIT_PARTIAL
            except Exception as exc:  # one source's failure must not stop the others
                reason = f"indexing failed ({type(exc).__name__}: {exc}); the next build tries again"
                log.warn(f"{scan.source.id}: {reason}")
                _record_error(conn, scan.source, reason, log)
                code = EXIT_PARTIAL
                failed.append(scan.source.id)
    carried: int = 0
    uncarried: tuple[str, ...] = ()
    if carry_from is not None and carry:
        wanted: dict[str, tuple[str, ...] | None] = {s.source.id: s.unread_dirs for s in scans if s.unread_dirs}
        wanted.update((sid, None) for sid in failed)
        carried, uncarried = _carry(conn, carry_from, wanted, log)
    if written:
        _merge_words(conn, written, log)
    if config.embedding.enabled and db.count_pending(conn):
        from builder.embed_run import fill_from_cache

        if not fill_from_cache(conn, config, log):
            code = EXIT_PARTIAL
    return Indexed(code, changed, tuple(failed), carried, uncarried, _waiting(conn, config))


def _waiting(conn: Connection, config: Config) -> int:
    """Chunks waiting for vectors (a count over schema step 11's partial index; 0 before that step)."""
    if not config.embedding.enabled:
        return 0
    try:
        return db.count_pending(conn)
    except db.sqlite_module().Error:  # an index the build could not even read: nothing to backfill now
        return 0


def _carry(conn: Connection, previous: Path, wanted: Mapping[str, tuple[str, ...] | None],
           log: SyncLog) -> tuple[int, tuple[str, ...]]:
    """Carry the previous index's notes of ``wanted`` (see :func:`db.carry_notes`) into this new one:
    how many, and the sources whose notes could not be carried (the previous index could not be read)."""
    try:
        carried = db.carry_notes(conn, previous, wanted)
    except db.sqlite_module().Error as exc:
        log.warn(f"cannot read the previous index ({exc}) to keep the notes of {', '.join(wanted)}")
        return 0, tuple(wanted)
    for source_id, notes in carried.items():
        if notes:
            log.info(f"{source_id}: kept {notes} notes as the previous index held them")
    return sum(carried.values()), ()


def _sources_of(path: Path) -> set[str]:
    """The sources an index file holds (none when it cannot be read: carrying their notes says so)."""
    try:
        conn = db.connect(path, readonly=True, vec=False)
        try:
            return set(db.get_sources(conn))
        finally:
            conn.close()
    except db.sqlite_module().Error:
        return set()


def _walk_folders(config: Config, selected: list[SourceConfig], known: Mapping[str, db.SourceRow], held: set[str],
                  force: bool) -> dict[str, Callable[[], FolderWalk]]:
    """Each selected folder source's walk (:func:`_walk`), all at the same time, each in a process of its own
    (the walks are the every-minute build's cost, one ``stat`` per file): source id → a call that returns it
    or raises what it raised."""
    folders = [source for source in selected if source.kind != "git"]
    walks = fork_each(partial(_walk, config, known, held, force), folders)
    return dict(zip((source.id for source in folders), walks, strict=True))


def _walk(config: Config, known: Mapping[str, db.SourceRow], held: set[str], force: bool,
          source: SourceConfig) -> FolderWalk:
    """A folder source's walk, compared with what the index keeps of it."""
    return walk_folder(source, known.get(source.id), force, held=source.id in held,
                       listings=config.listings_path(source.id), kept_stats=config.kept_stats_path(source.id))


def _walk_to_keep(scan: SourceChanges, row: db.SourceRow | None) -> bool:
    """Should the walk's digest be kept, a scan that changes nothing having found the index without it?
    Every file the index holds of the source is then one the walk found, with its size and mtime (a scan
    that warns may have kept notes the walk did not find; a note recorded unread is read again once it can
    be, which its size and mtime would not show). A scan from the kept stats is never empty: their digest is
    the index's, not the walk's."""
    return (scan.empty and scan.stats_digest is not None and row is not None and row.stats_digest != scan.stats_digest
            and not scan.warning and scan.states is not None
            and not any(s.sha256 == db.UNREAD for s in scan.states.values()))


def _keep_stats(conn: Connection, config: Config, source_id: str) -> None:
    """Record the digest of what the index holds of a folder source, and keep the stats themselves."""
    with db.transaction(conn):
        stats = db.folder_summary(conn, source_id).stats
        db.update_source(conn, source_id, stats_digest=None if stats is None else text_digest(stats))
    _save_stats(config.kept_stats_path(source_id), stats)


def _save_stats(path: Path, stats: str | None) -> None:
    """Keep what the index now holds of a folder source (``index.FolderSummary.stats``) for the next build's scan,
    which trusts it only while its digest is the one the index keeps (``scan.walk_folder``): a file written
    before the batch that records that digest commits, or left by a build that died, is not trusted."""
    if stats is not None:
        with contextlib.suppress(OSError):  # a cache: the next build reads every file's row instead
            write_atomic(path, stats.encode("utf-8", "surrogateescape"))


def _merge_words(conn: Connection, written: int, log: SyncLog) -> None:
    """Merge the full-text index into one segment after a build that wrote at least half of its
    chunks (a first build, ``--full``, a large new source): there the merge costs a few percent of
    the build, and every query is faster for it. Smaller builds leave it to FTS5's own merging.
    The chunks are counted no further than twice ``written``: a one-note build must not read them all."""
    if db.count_chunks_up_to(conn, 2 * written + 1) > 2 * written:
        return
    try:
        db.merge_words(conn)
    except db.sqlite_module().Error as exc:  # a full disk, a lock: the index stays as it was, slower to query
        log.warn(f"the full-text index could not be merged ({exc}); searches work, a little slower")


def _load_vec(conn: Connection, config: Config) -> None:
    db.load_vec(conn)
    if config.embedding.enabled:
        db.ensure_vec_table(conn, config.embedding.dims)


def _record_error(conn: Connection, source: SourceConfig, reason: str, log: SyncLog) -> None:
    """Remember why the source failed (``status`` and ``/api/health`` show it); its indexed_rev and notes
    stay. When even that cannot be written (a full disk), the WARN line already said it."""
    try:
        with db.transaction(conn):
            db.upsert_source(conn, source.id, source.kind, redact_url(source.url), source.branch)
            db.update_source(conn, source.id, last_error=reason, last_error_at=now_iso())
    except db.sqlite_module().Error as exc:
        log.warn(f"{source.id}: cannot record the failure in the index ({exc})")


@dataclass(frozen=True)
class Applied:
    """What writing one source's changes did."""

    failed: int  # changed files that could not be indexed
    chunks: int  # chunks written


@dataclass
class _Progress:
    """One source's changes as they are written: the removals and the counts."""

    deleted: list[str]  # files to remove: those the scan found gone, and those gone since
    unreadable: list[str] = field(default_factory=list)  # to read again next build (SourceChanges.rereads)
    notes: int = 0  # notes written (a note that could not be read counts: its row says so)
    chunks: int = 0
    touched: int = 0  # notes whose text stayed the same (their dates moved)


def _apply(conn: Connection, config: Config, scan: SourceChanges, log: SyncLog, report: BuildReport) -> Applied:
    """Write one source's changes into the index: each batch of changed files is classified (read, and
    kept, touched or left out) and parsed by the pool's workers while the batch before is stored; then
    the removals and the source's row."""
    from builder.core.forkpool import Pool
    from builder.ingest import Limits, ingest_all

    source = scan.source
    db.upsert_source(conn, source.id, source.kind, redact_url(source.url), source.branch)
    db.update_source(conn, source.id, stats_digest=None)  # committed with the first note written: see _finish
    states = scan.states if scan.states is not None else db.file_states(conn, source.id)
    done = _Progress(list(scan.deleted))
    for name in scan.undecodable:
        log.warn(f"{source.id}: {name}: the file name is not valid UTF-8, so it cannot be indexed; rename it")
    fits: Callable[[str], bool] | None = None
    with Pool(None, Limits(config.max_note_bytes)) as pool:
        parsing: tuple[list[ChangedFile], Iterator[Ingested]] | None = None
        for start in range(0, len(scan.changed), INGEST_BATCH):
            todo = _classify(conn, config, scan, states, scan.changed[start:start + INGEST_BATCH], done, log)
            if todo and fits is None and config.embedding.provider == "local":
                fits = passage_fits(config.embedding)  # loads the model's tokenizer once, and only for new text
                pool.share(Limits(config.max_note_bytes, fits))  # before the first batch forks the workers
            # the workers parse this batch while this process stores the one before
            ahead = (todo, ingest_all(pool, todo))
            if parsing is not None:
                _store(conn, scan, *parsing, done, log)
            parsing = ahead
        if parsing is not None:
            _store(conn, scan, *parsing, done, log)
    _finish(conn, scan, done, log, report,
            kept_stats=config.kept_stats_path(source.id) if scan.rev is None else None)
    return Applied(failed=len(done.unreadable) + len(scan.undecodable), chunks=done.chunks)


def _classify(conn: Connection, config: Config, scan: SourceChanges, states: Mapping[str, db.FileState],
              stats: tuple[FileStat, ...], done: _Progress, log: SyncLog) -> list[ChangedFile]:
    """The files of ``stats`` to parse, read; the others settled here: one that cannot be read (left for the
    next build, or recorded as unread: it leaves the site until it changes or can be read), one gone since
    the scan (removed), one whose text is the same (its dates touched)."""
    from builder.ingest import ChangedFile, read_bounded, sha256_bytes, unread

    source, root = scan.source, config.source_root(scan.source)
    todo: list[ChangedFile] = []
    for stat in stats:
        why = scan.broken.get(stat.path)
        data, size, whole_sha = b"", 0, None
        try:
            if why is None:
                data, size, whole_sha = read_bounded(root / stat.path, config.max_note_bytes)
        except OSError as exc:
            if scan.rereads:
                log.warn(f"{source.id}: {stat.path}: cannot read ({exc.strerror or exc}); the next build tries again")
                done.unreadable.append(stat.path)
                continue
            if not os.path.lexists(root / stat.path):  # deleted since the scan
                if stat.path in states:
                    done.deleted.append(stat.path)
                continue
            why = exc.strerror or str(exc)
        at = iso_from_ns(stat.mtime_ns)
        if why is not None:  # one note's problem: it leaves the site until it changes or can be read
            skipped = unread(stat.path, stat.size, stat.mtime_ns, at, why)
            log.warn(f"{source.id}: {skipped.warnings[0]}")
            db.replace_file(conn, source.id, skipped.record, (), now_iso())
            done.notes += 1
            continue
        old = states.get(stat.path)
        if old is not None and old.sha256 == (whole_sha or sha256_bytes(data)) and old.size == size:
            db.touch_file(conn, source.id, stat.path, stat.size, stat.mtime_ns, at)
            author = scan.authors.get(stat.path)
            if author is not None:  # same content, but the history that last touched it moved
                db.set_last_change(conn, source.id, stat.path, at, author)
            done.touched += 1
            continue
        todo.append(ChangedFile(stat.path, data, stat.mtime_ns, at, size, whole_sha))
    return todo


def _store(conn: Connection, scan: SourceChanges, todo: list[ChangedFile], results: Iterator[Ingested],
           done: _Progress, log: SyncLog) -> None:
    """Write the parsed notes (and their chunks) of one batch."""
    for file, result in zip(todo, results, strict=True):
        for warning in result.warnings:
            log.warn(f"{scan.source.id}: {warning}")
        author = scan.authors.get(file.path)
        record = result.record if author is None else replace(result.record, changed_by=author)
        db.replace_file(conn, scan.source.id, record, result.chunks, now_iso())
        done.notes += 1
        done.chunks += len(result.chunks)


def _finish(conn: Connection, scan: SourceChanges, done: _Progress, log: SyncLog, report: BuildReport, *,
            kept_stats: Path | None = None) -> None:
    """Remove the files gone, say what was written and what the scope leaves out, and record the source's
    row: its revision (:meth:`builder.scan.SourceChanges.applied`) and its error, if any."""
    source = scan.source
    for path in done.deleted:
        db.delete_file(conn, source.id, path)
    report.indexed(done.notes, done.chunks, len(done.deleted))
    if done.notes or done.deleted:
        log.info(f"{source.id}: indexed {done.notes} files / {done.chunks} chunks, "
                 f"removed {len(done.deleted)} files")
    if done.notes or done.deleted or scan.coverage_changed:
        if scan.uncovered:
            log.info(f"{source.id}: coverage: markdown outside every paths entry in: "
                     + ", ".join(f"{d}/" for d in scan.uncovered))
        elif scan.coverage_changed and "**" not in source.paths:
            log.info(f"{source.id}: coverage: every directory with markdown is covered")
    stats: str | None = None
    with db.transaction(conn):
        values: dict[str, Any] = {"uncovered": scan.uncovered}
        if done.unreadable:  # a git source keeps its indexed_rev, so the next build reads these again
            values.update(last_error=f"cannot read {len(done.unreadable)} changed files (such as "
                                     f"{done.unreadable[0]}); the next build tries again", last_error_at=now_iso())
        elif not scan.warning:
            values["last_error"] = None
        summary = db.folder_summary(conn, source.id) if scan.rev is None else None
        revision = scan.applied(summary, bool(done.unreadable), bool(done.notes or done.deleted or done.touched))
        if revision:
            values.update(revision, last_sync_at=now_iso())
        if summary is not None and not scan.warning:  # a folder: what its next walk is compared with
            stats = summary.stats
            values["stats_digest"] = None if stats is None else text_digest(stats)
        db.update_source(conn, source.id, **values)
    if kept_stats is not None:
        _save_stats(kept_stats, stats)
