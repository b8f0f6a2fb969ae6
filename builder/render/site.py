"""The render: bring the site folder up to date with the index, incrementally.

Incremental by fingerprints. The manifest (kept in ``<site>/.render-state``, see
:mod:`builder.core.index.renderstate`) records, for every file this renderer wrote, a hash of
everything that went into it, and for every note the links found in its body with what they
resolved to. A build re-renders a note when its text changed or one of
its links now resolves differently (a target appeared, moved or vanished); a note page also
when its backlinks, title, tags, dates or the picture of its links (notes up to two links away,
:mod:`builder.render.graph`) changed; other pages when the data they show changed. No page shows
what every other note is: the navigation tree is one script per source (:mod:`builder.render.tree`)
and a source's table of contents is assembled from cached folder fragments (:mod:`builder.render.toc`).
Anything not written by this run and listed in the old manifest is deleted. Every file is
written atomically (temp file + ``os.replace``). A renderer or template change (see
:mod:`builder.render.stamp`), ``--full``, or ``site.title``/``render.allow_html`` changes
re-render everything; such big renders reuse the highlighted code kept in
``<site>/.render-cache/`` (:mod:`builder.render.highlight`), and notes with the same text are
rendered once where their links allow (:mod:`builder.render.notepages`).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core import templates, urls
from builder.core.config import Config
from builder.core.forkpool import PARALLEL_MIN, Pool
from builder.core.index import renderstate
from builder.render import (
    bodycache,
    delta,
    drawing,
    graph,
    highlight,
    manifest,
    notepages,
    output,
    pages,
    toc,
    tree,
)
from builder.render.links import Resolver, SourceNotes
from builder.render.stamp import RENDER_VERSION, code_files, linked_state, write_stamp
from builder.notes.sources import Scope
from builder.core.synclog import SyncLog

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.render.markdown import Body


# A render of this many notes forks workers; then reading and writing the site's stored highlighted code
# pays off (a small render reads it only for a code block it does not remember: CodeBlocks.use).
BIG_RENDER = PARALLEL_MIN
# What a render that does not trust the last one's state leaves unread of it (its save writes them whole): the
# notes' entries, the site's files, the links between notes, titles, wikilink tables and links to files (their size
# at 100,000 notes: docs/BENCHMARKS.md). The pages it lists and the folder times are read: what to remove, and when.
UNTRUSTED = ("notes", "files", "into", "out", "wiki", "titles", "file_links")
# What only the delta render reads of the state (the full render makes them anew; its save reads them, to write
# only what changed): the links between notes both ways and the wikilink tables.
DELTA_ONLY = ("into", "out", "wiki")


@dataclass(frozen=True)
class RenderReport:
    """What one render did; ``written``/``removed`` are paths relative to the site folder."""

    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    notes_rendered: int  # note pages written
    broken_links: int
    seconds: float


def _code_fingerprint(config: Config, files: list[Path]) -> str:
    """Everything that shapes every page: the renderer's code and templates (their bytes), the
    markdown libraries' versions and the site settings."""
    import markdown_it
    import mdit_py_plugins
    import nh3
    import pygments

    from builder.render.mathml import converter_version

    code = hashlib.sha256(RENDER_VERSION.encode())
    for path in files:
        code.update(f"{path.name}\0{templates.file_digest(path)}\0".encode())
    versions = [markdown_it.__version__, mdit_py_plugins.__version__, pygments.__version__,
                getattr(nh3, "__version__"), converter_version()]  # noqa: B009 (nh3's stubs do not declare it)
    code.update(json.dumps([config.site.title, config.site.language, config.allow_html, versions,
                            [s.id for s in config.sources],
                            *templates.ask_settings(config.answer)]).encode())
    return code.hexdigest()


# ---------------------------------------------------------------- the render


MAX_PASSES = 3  # renders of one build: a note page that fails leaves the next pass without its note
MASS_FAILURE = 8  # more note pages than this (and half of them) failing to be written: the site's failure


class _PagesFailed(Exception):
    """Note pages that could not be made: the render runs again without their notes."""

    def __init__(self, reasons: dict[str, str]) -> None:
        super().__init__(f"{len(reasons)} note pages failed")
        self.reasons = reasons


class _Deferred(SyncLog):
    """A render pass's log lines, written when the pass stands (a pass that is run again drops them)."""

    def __init__(self, log: SyncLog) -> None:
        super().__init__(log.path, log.echo_info)
        self.target = log
        self.pending: list[tuple[str, str]] = []

    def _write(self, level: str, message: str) -> None:
        self.pending.append((level, message))

    def replay(self) -> None:
        for level, message in self.pending:
            {"INFO": self.target.info, "WARN": self.target.warn}.get(level, self.target.error)(message)
        self.pending.clear()


def render_site(config: Config, conn: Connection, *, full: bool, log: SyncLog,
                workers: int | None = None) -> RenderReport:
    """Bring ``config.site.output`` up to date with the index behind ``conn`` (``full``: rewrite all).

    The unit of failure is one note: a note whose page cannot be named, made or written is left out
    with a WARN line (its old page removed, as if it were unpublished); a full disk fails the render."""
    started = time.perf_counter()
    claimed = output.claimed(config.site.output)
    skip: dict[str, str] = {}
    with _no_cycle_collection():
        for attempt in range(1, MAX_PASSES + 1):
            deferred = _Deferred(log)
            try:
                return _render_site(config, conn, full=full, log=deferred, workers=workers, started=started,
                                    claimed=claimed, skip=skip, last=attempt == MAX_PASSES)
            except _PagesFailed as failed:
                deferred.pending.clear()
                skip.update(failed.reasons)
            finally:
                deferred.replay()
        raise AssertionError("the last pass never raises _PagesFailed")


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cycle collector off for the render, as it was after. The render keeps ~10^6 objects alive (the
    manifest, the notes) and makes no reference cycles worth collecting, so the collector would only rescan
    them again and again (what that cost is in docs/BENCHMARKS.md). Forked workers turn it on again
    (:func:`builder.core.forkpool._worker_start`): they make short-lived objects."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@contextmanager
def _cycles_collected() -> Iterator[None]:
    """Within :func:`_no_cycle_collection`: the cycle collector on for the objects made from here, blind to those
    made before (frozen: the render's long-lived objects are not scanned again). The templates leave reference
    cycles behind each page they render (Jinja's contexts); uncollected, those of the tables of contents, tag
    pages and sitemaps of 100,000 notes stayed to the render's end (docs/BENCHMARKS.md)."""
    if gc.isenabled():
        yield
        return
    gc.freeze()
    gc.enable()
    try:
        yield
    finally:
        gc.disable()
        gc.unfreeze()


def _render_site(config: Config, conn: Connection, *, full: bool, log: SyncLog, workers: int | None,
                 started: float, claimed: bool, skip: dict[str, str], last: bool) -> RenderReport:
    """One pass of the render, leaving out the notes of ``skip`` (key → why); a note page that fails
    raises :class:`_PagesFailed` unless this is the ``last`` pass."""
    site = config.site.output
    output.claim(site)
    content = db.content_token(conn)
    files = code_files(site / output.CACHE_DIR / "imports.json")
    env_fp = _code_fingerprint(config, files)
    if not full and claimed and not skip:
        edits = _delta_render(config, conn, env_fp, files, log, started)
        if edits is not None:
            return edits
    saved = renderstate.read_manifest(site, UNTRUSTED if full else DELTA_ONLY)
    previous = renderstate.current_manifest(saved)
    trust = not full and previous.get("env") == env_fp
    if not trust:
        for key in UNTRUSTED:
            saved.pop(key, None)
    journal = output.Journal(site)
    spill: bodycache.Spill | None = None
    try:  # the journal's file is closed however the render ends (a full disk, a failing page)
        recorded = journal.recorded()
        present, timed = _site_files(site, previous if trust else {})
        out = output.Output(site, previous.get("pages", {}) if trust else {}, present, recorded, journal)
        notes = _notes_to_render(config, conn, skip, log)
        resolver = _resolver_of_notes(config, notes)
        universe = manifest.universe(config, notes)
        old = previous.get("notes", {}) if trust else {}
        same = manifest.same_universe(previous.get("universe"), universe) if trust else frozenset()
        names = manifest.names_moved(previous.get("titles"), notes, same) if trust else {}
        entries, stale = manifest.recheck(notes, old, same, resolver, names)
        big = len(stale) >= BIG_RENDER
        spill = bodycache.Spill(site) if big and len(stale) >= bodycache.SPILL_MIN else None
        run = _Pass(config, log, env_fp, content, files, trust, previous, universe, big, out,
                    _context(config, notes, resolver, big, files, spill), spill, timed)
        try:
            rendered = _render_notes(run, notes, entries, stale, workers, last)
        finally:
            journal.close()
        lost = output.unlisted_orphans(out.present) if claimed and not output.listed_pages(saved) else set()
        return _end_pass(run, notes, rendered, saved, recorded | lost, skip, started)
    finally:
        journal.close()
        if spill is not None:
            spill.remove()


def _site_files(site: Path, previous: dict[str, Any]) -> tuple[set[str], output.CheckedTimes | None]:
    """Every file of the site, and the last render's folder times when they told it (``previous``: the last
    render's manifest, when trusted): a ``stat`` a folder (:func:`builder.render.output.unchanged_files`);
    else a listing of every folder, and None (the render's end then takes every folder's time again)."""
    files, folders = previous.get("files"), previous.get("folders")
    if isinstance(files, list) and isinstance(folders, dict):
        checked = output.CheckedTimes(folders, time.time_ns())
        found = output.unchanged_files(site, files, folders)
        if found is not None:
            return found, checked
    return output.existing_files(site), None


@dataclass(frozen=True)
class _Pass:
    """What every part of one full render pass reads."""

    config: Config
    log: SyncLog
    env_fp: str  # the fingerprint of everything that shapes every page (_code_fingerprint)
    content: str  # the index content rendered (builder.core.index.content_token)
    files: list[Path]  # the renderer's code files (the stamp's)
    trust: bool  # the last render's manifest holds for this one (same renderer and settings, not --full)
    previous: dict[str, Any]  # the last render's manifest
    universe: manifest.Universe  # what finding a link's target depends on, by source (manifest.universe)
    big: bool  # enough notes to render for the forked workers and the stored code blocks and bodies
    out: output.Output
    ctx: notepages.Context
    spill: bodycache.Spill | None  # a render of many bodies keeps their HTML on disk while it runs
    timed: output.CheckedTimes | None  # the last render's folder times, found true at this one's start (_site_files)


@dataclass(frozen=True)
class _Rendered:
    """What the note bodies and pages of a pass made, and the pages besides them."""

    entries: manifest.Entries  # every rendered note's manifest entry
    bodies: dict[str, notepages.Outcome]  # the bodies rendered now, by note key
    links: graph.Links
    broken: int  # broken links of the notes rendered now
    made: SitePages
    failed: set[str]  # notes whose page failed on the last pass (left out)
    note_pages: int  # note pages written
    trees: dict[str, str]  # source → the digest its navigation tree was made from (_tree_digests)


def _delta_render(config: Config, conn: Connection, env_fp: str, files: list[Path], log: SyncLog,
                  started: float) -> RenderReport | None:
    """The render of the changed notes alone (:mod:`builder.render.delta`), or None: the full render must run
    (the delta render declined, or failed: a shortcut must never cost a build, and the full render repairs
    what it wrote)."""
    try:
        edits = delta.render_edits(config, conn, env_fp=env_fp, files=files, log=log)
    except OSError:
        raise  # as an OSError of the full render (the site cannot be written): see builder.sync._update_site
    except Exception as exc:
        log.warn(f"render: the render of the changed notes alone failed ({type(exc).__name__}: {exc}); "
                 "rendering the whole site")
        return None
    if edits is None:
        return None
    seconds = time.perf_counter() - started
    _log_render(log, edits.written, edits.notes_rendered, edits.pages, edits.removed, edits.broken_links, seconds)
    return RenderReport(edits.written, edits.removed, edits.unchanged, edits.notes_rendered, edits.broken_links,
                        seconds)


def _notes_to_render(config: Config, conn: Connection, skip: dict[str, str], log: SyncLog) -> list[pages.NoteInfo]:
    """The published notes, less those left out (a WARN each): those of ``skip`` and those that cannot be named."""
    notes = pages.published_notes(config, [pages.note_from_row(r) for r in db.notes_for_render(conn)])
    left_out = {**_unnamed(notes), **skip}
    for note in notes:
        if note.key in left_out:
            log.warn(f"{note.source_id}: {note.path}: {left_out[note.key]}")
    return [n for n in notes if n.key not in left_out]


def _context(config: Config, notes: list[pages.NoteInfo], resolver: Resolver, big: bool, files: list[Path],
             spill: bodycache.Spill | None) -> notepages.Context:
    """What rendering the render's ``notes`` needs besides them (jobs name them by position); a ``big`` render
    starts from the stored code blocks (before the workers fork: they inherit them) and keeps note bodies, a small
    one reads the blocks on a miss; the page workers read the bodies' HTML back from ``spill``."""
    site = config.site.output
    blocks = highlight.CodeBlocks()
    kept: Path | None = None  # the note bodies kept between big renders (builder.render.bodycache)
    if big:
        blocks.load(highlight.blocks_file(site))
        kept = bodycache.cache_file(site, files, config.allow_html, config.site.language)
    else:
        blocks.use(highlight.blocks_file(site))
    jinja = templates.Templates(templates.TEMPLATE_DIR, config.site.title, templates.asset_version(),
                                tuple(s.id for s in config.sources), templates.ask_target(config.answer),
                                config.site.language)
    return notepages.Context(resolver, {s.id: config.source_root(s) for s in config.sources}, config.allow_html,
                             jinja, time.strftime("%Y-%m-%d %H:%M"), site, blocks, kept_bodies=kept,
                             spill=spill.path if spill is not None else None, max_note_bytes=config.max_note_bytes,
                             notes=notes)


def _render_notes(run: _Pass, notes: list[pages.NoteInfo], entries: manifest.Entries, stale: list[pages.NoteInfo],
                  workers: int | None, last: bool) -> _Rendered:
    """Render the bodies of the ``stale`` notes, then every note page that may differ from the last render's (on
    the workers, while this process makes the other pages)."""
    old: manifest.Entries = run.previous.get("notes", {}) if run.trust else {}
    out = run.out
    with Pool(workers, run.ctx) as pool:
        bodies = _bodies(pool, stale, run.spill, entries)
        broken = manifest.log_broken(stale, bodies, entries, run.log)
        links = graph.Links(notes, entries)
        moved, before = graph.moved(stale, set(old) - {n.key for n in notes}, old, entries)
        affected = _affected(notes, stale, old, entries, out, links.ball(moved, 2, before)) if run.trust else None
        backlinks = manifest.backlinks(notes, entries, affected)
        pictures: dict[str, graph.Local] = {}

        def fingerprint(note: pages.NoteInfo) -> str:
            pictures[note.key] = links.local(note.key)
            return manifest.note_fp(run.env_fp, note, entries[note.key], backlinks.get(note.key, []),
                                    pictures[note.key].digest())

        pending = [n for n in notes if n.key in entries and not out.kept(n.url, affected is None or n.key in affected)
                   and out.wants(n.url, fingerprint(n))]
        bodies.update(_bodies(pool, [n for n in pending if n.key not in bodies], run.spill))
        page_jobs = _page_jobs(run.ctx.notes, pending, bodies, backlinks, pictures)
        for job in page_jobs:
            out.journal.add(urls.site_file(run.ctx.notes[job[0]].url))
        # the workers write note pages while this process makes the others
        note_pages = pool.start(notepages.page_job_at, page_jobs)
        out.keep(n.url for n in notes if n.key not in entries)
        dirty = manifest.dirty(notes, stale, old, entries, moved) if run.trust else None
        trees = _tree_digests(run.universe, [n.key for n in notes if n.key not in entries])
        kept = run.previous.get("trees") if run.trust else None  # a str from an older render: no tree holds
        held = frozenset(sid for sid, digest in trees.items() if isinstance(kept, dict) and kept.get(sid) == digest)
        with _cycles_collected():
            made = _site_pages(run.ctx, out, run.env_fp, [n for n in notes if n.key in entries],
                               {s.id: s.kind for s in run.config.sources}, dirty,
                               SiteData(entries, links, held, run.previous.get("tag_members", {}) if run.trust else {}))
        failed = _note_pages(out, note_pages(), len(page_jobs), last, run.log)
    return _Rendered(entries, bodies, links, broken, made, failed, len(page_jobs), trees)


def _end_pass(run: _Pass, notes: list[pages.NoteInfo], done: _Rendered, saved: dict[str, Any], unlisted: set[str],
              skip: dict[str, str], started: float) -> RenderReport:
    """Copy the static files and attachments, remove what this render did not write (listed in the last
    manifest, or ``unlisted`` files of an unfinished or lost one), keep the code blocks and bodies of a big
    render, and save the manifest and the stamp."""
    config, out, ctx = run.config, run.out, run.ctx
    output.copy_static(out, templates.static_files())
    manifest.log_unwritten(output.copy_attachments(out, manifest.attachments(done.entries, ctx.roots)), run.log)
    produced = out.files()
    removed = out.remove_stale(output.listed_pages(saved), unlisted, produced)
    if run.big and ctx.kept_bodies is not None:
        ctx.blocks.save(highlight.blocks_file(config.site.output),
                        (k for entry in done.entries.values() for k in entry.get("highlights", ())))
        bodycache.save(ctx.kept_bodies, lambda: _new_bodies(notes, done.bodies, run.spill),
                       {bodycache.key(n) for n in notes})
    # read now, for the save to write only what changed (the render held no copy of them)
    kept = renderstate.read_state(config.site.output / output.STATE, only=DELTA_ONLY) if run.trust else {}
    saved.update(kept)
    memory = delta.remember(config, run.content, notes, done.entries, done.links, done.made.recent,
                            done.made.home.context, len(done.made.urls), produced,
                            output.retimed(config.site.output, run.timed, out.written, removed) if run.timed is not None
                            else output.folder_times(config.site.output, previous=saved.get("folders")),
                            retry={*skip, *done.failed}, kept={**kept, "titles": saved.get("titles", {})})
    out.save_manifest({"version": renderstate.MANIFEST_VERSION, "env": run.env_fp, "universe": run.universe,
                       "trees": done.trees, "tag_members": done.made.tag_members, **memory, "pages": out.pages,
                       "notes": done.entries}, saved)
    out.journal.clear()  # the manifest lists every page now
    write_stamp(config, run.files, run.content, linked_state(delta.linked_files(ctx.resolver, memory["file_links"])))
    seconds = time.perf_counter() - started
    _log_render(run.log, out.written, done.note_pages, len(done.made.urls), removed, done.broken, seconds)
    return RenderReport(tuple(out.written), tuple(removed), out.unchanged, done.note_pages, done.broken, seconds)


def _tree_digests(universe: manifest.Universe, unread: list[str]) -> dict[str, str]:
    """Source → the digest of what its navigation tree lists: its notes with a page, each path and title (its
    ``universe``), less those that could not be read (``unread``, note keys: their pages stay, but a fresh render
    would leave them out)."""
    left_out: dict[str, list[str]] = {}
    for key in unread:
        left_out.setdefault(key.partition(":")[0], []).append(key)
    return {source_id: manifest.sha(digest, *left_out.get(source_id, ())) for source_id, digest in universe.items()}


def _unnamed(notes: list[pages.NoteInfo]) -> dict[str, str]:
    """Notes whose page cannot be a file, each with the reason: a name too long (in an index from before
    it was checked: see :func:`builder.core.urls.name_problem`), or the folder of other pages (a folder
    ``x.html/`` beside ``x.md``: which of the two is refused must not depend on which was written first)."""
    folders: set[str] = set()
    for note in notes:
        rel = urls.site_file(note.url)
        cut = rel.rfind("/")
        while cut > 0 and rel[:cut] not in folders:  # a folder known: so are those above it
            folders.add(rel[:cut])
            cut = rel.rfind("/", 0, cut)
    found = {}
    for note in notes:
        problem = urls.name_problem(note.path)
        if problem is not None:
            found[note.key] = f"cannot be named: {problem}; rename it; left out of the site"
        elif (rel := urls.site_file(note.url)) in folders:
            found[note.key] = (f"cannot be named: its page {rel} is the folder of other pages; "
                               "rename the note or the folder")
    return found


def _note_pages(out: output.Output, written: list[notepages.Written], attempted: int, last: bool,
                log: SyncLog) -> set[str]:
    """Record the note pages written; those that failed make the render run again without their notes
    (:class:`_PagesFailed`), or on the ``last`` pass are left out here (WARN; returned). When most of
    many pages fail to be written, the site is what fails (a file system gone read-only, a lost mount)."""
    failed = [w for w in written if w.error]
    out.written.extend(w.rel for w in written if not w.error)
    oserrors = [w for w in failed if w.errno is not None]
    if len(oserrors) > MASS_FAILURE and 2 * len(oserrors) > attempted:
        first = oserrors[0]
        raise OSError(first.errno, os.strerror(first.errno or 0), str(out.site / first.rel))
    reasons = {w.key: f"{w.error}; the note is left out" for w in failed}
    if failed and not last:
        raise _PagesFailed(reasons)
    for w in failed:
        source_id, _, path = w.key.partition(":")
        log.warn(f"{source_id}: {path}: {reasons[w.key]}")
        out.drop(w.url)
    return set(reasons)


def _log_render(log: SyncLog, written: Iterable[str], note_pages: int, page_count: int, removed: Iterable[str],
                broken: int, seconds: float) -> None:
    written, removed = list(written), list(removed)
    if written or removed:
        log.info(f"render: {len(written)} files written ({note_pages} note pages of {page_count} pages), "
                 f"{len(removed)} removed, {broken} broken links, {seconds:.2f} s")


def _affected(notes: list[pages.NoteInfo], stale: list[pages.NoteInfo], old: manifest.Entries,
              entries: manifest.Entries, out: output.Output, pictured: set[str]) -> set[str]:
    """Notes whose page may differ from the last render's: see :func:`builder.render.manifest.affected`,
    plus ``pictured`` (their picture of links moved), pages that are missing or that an unfinished
    render touched (written whole, backlinks too) and notes whose date moved (a touched file, a new
    commit: same text), whose entries take the new date."""
    found = manifest.affected(notes, stale, old, entries) | pictured
    found |= {n.key for n in notes if not out.current(n.url)}
    for note in notes:
        if note.key in entries and entries[note.key].get("dates") != note.dates:
            entries[note.key] = {**entries[note.key], "dates": note.dates}
            found.add(note.key)
    return found


def _bodies(pool: Pool[notepages.Context], notes: list[pages.NoteInfo], spill: bodycache.Spill | None = None,
            entries: manifest.Entries | None = None) -> dict[str, notepages.Outcome]:
    """Note key → its rendered body (:class:`builder.render.notepages.Outcome`); one job per text. The
    code blocks a worker highlighted join the render's (``pool.shared.blocks``). With ``spill``, the bodies go
    to disk in batches as they arrive, and each keeps in memory only what its page needs besides its HTML (see
    :class:`builder.render.bodycache.Spill`); ``entries``: where the manifest entry of each note rendered goes,
    made from its whole body."""
    if not notes:
        return {}
    position = _positions(pool.shared.notes, notes)
    groups = notepages.same_text_groups(notes)
    bodies: dict[str, notepages.Outcome] = {}
    made: manifest.Entries = {}
    batch: list[tuple[str, Body, tuple[str, ...]]] = []

    def spilled() -> None:
        if spill is not None and spill.write(batch):
            for key, body, _ in batch:
                bodies[key] = replace(bodies[key], body=bodycache.spilled(body), highlights=(), blocks=None)
        batch.clear()

    jobs = [[position[n.key] for n in group] for group in groups]
    for group, outcomes in zip(groups, pool.imap(notepages.body_job_at, jobs), strict=True):
        for note, outcome in zip(group, outcomes, strict=True):
            if outcome.blocks:
                pool.shared.blocks.remember(outcome.blocks)
            bodies[note.key] = outcome
            if outcome.body is None:
                continue
            if entries is not None:
                made[note.key] = manifest.entry(note, outcome.body, outcome.highlights)
            if spill is not None:
                batch.append((note.key, outcome.body, outcome.highlights))
                if len(batch) >= bodycache.SPILL_BATCH:
                    spilled()
    spilled()
    if entries is not None:
        entries.update((n.key, made[n.key]) for n in notes if n.key in made)
    return bodies


def _page_jobs(notes: Sequence[pages.NoteInfo], pending: list[pages.NoteInfo], bodies: dict[str, notepages.Outcome],
               backlinks: dict[str, list[pages.NoteInfo]],
               pictures: dict[str, graph.Local]) -> list[tuple[int, Body, list[int], graph.Local]]:
    """The jobs of :func:`builder.render.notepages.page_job_at` for the ``pending`` notes that have a body: each
    note and its backlinks by their position in ``notes`` (the render's)."""
    position = _positions(notes)
    return [(position[n.key], body, [position[b.key] for b in backlinks.get(n.key, ())], pictures[n.key])
            for n in pending if (body := bodies[n.key].body)]


def _positions(notes: Sequence[pages.NoteInfo], of: list[pages.NoteInfo] | None = None) -> dict[str, int]:
    """Note key → where the note is in ``notes`` (the render's, which its forked workers hold too: a job names its
    notes so, instead of sending them); with ``of``, of those notes only (a note added: no map of every note for
    the one body it renders)."""
    wanted = None if of is None else {note.key for note in of}
    return {note.key: number for number, note in enumerate(notes) if wanted is None or note.key in wanted}


def _new_bodies(notes: list[pages.NoteInfo], bodies: dict[str, notepages.Outcome],
                spill: bodycache.Spill | None) -> Iterator[tuple[str, Body, tuple[str, ...]]]:
    """The bodies rendered by this render (worth keeping for the next full one), read back from ``spill`` where
    they went."""
    for note in notes:
        outcome = bodies.get(note.key)
        if outcome is None or not outcome.new or outcome.body is None:
            continue
        if outcome.body.html != bodycache.SPILLED:
            yield bodycache.key(note), outcome.body, outcome.highlights
        elif spill is not None and (found := spill.body(note.key)) is not None:
            yield bodycache.key(note), *found


@dataclass(frozen=True)
class SiteData:
    """What the pages besides note pages are made from, besides the notes."""

    entries: manifest.Entries  # the manifest entries of this render (broken links)
    links: graph.Links
    same_trees: frozenset[str]  # the sources whose listed notes' paths and titles are as in the last render: their
    # navigation trees hold
    tag_members: dict[str, str]  # tag slug → the digest of its notes at the last render (_tag_members), if trusted


@dataclass(frozen=True)
class SitePages:
    """What :func:`_site_pages` made that the render remembers."""

    urls: list[str]  # every page of the site
    home: Any  # the home page (a builder.core.templates.Page)
    recent: list[pages.NoteInfo]  # the notes it lists as recently changed
    tag_members: dict[str, str]  # tag slug → the digest of its notes (_tag_members)


def _site_pages(ctx: notepages.Context, out: output.Output, env_fp: str, notes: list[pages.NoteInfo],
                kinds: dict[str, str], dirty: manifest.Dirty | None, data: SiteData) -> SitePages:
    """Each source's pages, tag pages, home, broken links, search, 404 and the sitemap; returns every
    page URL and the home page. ``dirty`` (:class:`builder.render.manifest.Dirty`) names the pages that may have
    changed; None: any may have. Big pages are fingerprinted from their inputs, never built to compare."""
    render = ctx.templates.render
    by_source: dict[str, list[pages.NoteInfo]] = {sid: [] for sid in kinds}
    for note in notes:
        by_source[note.source_id].append(note)
    source_urls = []
    for sid, members in by_source.items():
        source_urls += _source_pages(ctx, out, env_fp, sid, kinds[sid], members, dirty, data)
    toc.prune_sources(ctx.site, set(kinds))
    groups = pages.tag_groups(notes)
    tag_members = _tag_members(groups)
    tag_urls: list[str] = []
    for slug, (name, members) in groups.items():
        paged = pages.paged_urls(f"tags/{slug}/index.html", len(members))
        tag_urls += paged
        if out.kept_all(list(paged), dirty is None or slug in dirty.tags
                        or data.tag_members.get(slug) != tag_members[slug]):
            continue
        fingerprint = _tag_fp(env_fp, slug, name, members)
        wanted = {url for number, url in enumerate(paged) if out.wants(url, manifest.sha(fingerprint, str(number)))}
        for page in pages.tag_pages(slug, name, members) if wanted else ():
            if page.url in wanted:
                out.write(page.url, render(page, ctx.built_at))
    broken = sum(len(data.entries[n.key].get("broken", ())) for n in notes)
    broken_urls = pages.paged_urls(urls.BROKEN_LINKS_URL, sum(bool(data.entries[n.key].get("broken")) for n in notes))
    if not out.kept_all(list(broken_urls), dirty is None or dirty.broken):
        for page in pages.broken_links_pages(notes, data.entries):
            if out.wants(page.url, manifest.sha(env_fp, page.data())):
                out.write(page.url, render(page, ctx.built_at))
    recent = pages.recent_notes(notes)
    home = pages.home_page(list(kinds.items()), notes, groups, broken, recent)
    fixed = [pages.tags_page(groups), home, *pages.fixed_pages()]
    for page in fixed:
        if out.wants(page.url, manifest.sha(env_fp, page.data())):
            out.write(page.url, render(page, ctx.built_at))
    page_urls = sorted([n.url for n in notes] + source_urls + tag_urls + list(broken_urls)
                       + [p.url for p in fixed if p.kind != "404"])
    for url, text in pages.sitemaps(page_urls):
        if out.wants(url, manifest.sha(env_fp, text)):
            out.write(url, text)
    return SitePages(page_urls, home, recent, tag_members)


def _tag_members(groups: dict[str, tuple[str, list[pages.NoteInfo]]]) -> dict[str, str]:
    """Tag slug → the digest of its notes: a tag that a note left, or that a removed note was on, has another."""
    return {slug: manifest.sha(*(n.key for n in members)) for slug, (_, members) in groups.items()}


def _tag_fp(env_fp: str, slug: str, name: str, members: list[pages.NoteInfo]) -> str:
    """The fingerprint of a tag page: what it shows of each note (see :func:`pages.tag_companions`)."""
    lines = []
    for note in members:
        shown, more = pages.tag_companions(note, slug)
        lines.append(f"{note.url}\x1f{note.title}\x1f{more}\x1f" + "\x1f".join(shown))
    return manifest.sha(env_fp, name, *lines)


def _source_pages(ctx: notepages.Context, out: output.Output, env_fp: str, source_id: str, kind: str,
                  notes: list[pages.NoteInfo], dirty: manifest.Dirty | None, data: SiteData) -> list[str]:
    """A source's table of contents, its link graph and its navigation tree (not a page: not returned)."""
    toc_url = urls.toc_url(source_id)
    if not out.kept_all(out.listed_with(toc_url, urls.toc_dir(source_id)), dirty is None or source_id in dirty.tocs):
        plan = toc.plan(env_fp, source_id, kind, notes, {n.key: data.entries[n.key]["toc_digest"] for n in notes})
        toc.write_page(out, ctx.templates, ctx.built_at, plan, source_id, kind)
    graph_url = urls.graph_url(source_id)
    if not out.kept(graph_url, dirty is None or source_id in dirty.graphs):
        view = graph.source_view(data.links, notes)
        svg = drawing.source_svg([drawing.SourceNode(n.key, n.title, n.url, view.folders.index(urls.top_folder(n.path)))
                                  for n in view.notes], list(view.edges), graph_url, set(view.labelled),
                                 ctx.templates.language)
        legend = [{"name": f"{folder}/" if folder else f"{source_id}/", "css": f"folder{i % drawing.FOLDER_CLASSES}"}
                  for i, folder in enumerate(view.folders)]
        page = pages.graph_page(source_id, svg, {**view.stats, "legend": legend})
        if out.wants(graph_url, manifest.sha(env_fp, page.data())):
            out.write(graph_url, ctx.templates.render(page, ctx.built_at))
    if not out.kept_all(out.listed_with(urls.tree_url(source_id), urls.tree_dir(source_id)),
                        source_id not in data.same_trees):
        for part in tree.tree_parts(source_id, notes):
            if out.wants(part.url, manifest.sha(env_fp, part.script)):
                out.write(part.url, part.script)
    return [toc_url, graph_url]


# ---------------------------------------------------------------- notes and links


def _resolver_of_notes(config: Config, notes: list[pages.NoteInfo]) -> Resolver:
    by_source: dict[str, list[tuple[str, str]]] = {}
    by_key: dict[str, pages.NoteInfo] = {}
    for note in notes:
        by_source.setdefault(note.source_id, []).append((note.path, note.title))
        by_key[note.key] = note

    def anchors(source_id: str) -> Callable[[str], tuple[str, ...]]:
        return lambda path: by_key[f"{source_id}:{path}"].anchor_list

    return Resolver({s.id: SourceNotes(s.id, config.source_root(s), Scope.of(s), by_source.get(s.id, []),
                                       anchors(s.id)) for s in config.sources})
