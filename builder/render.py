"""The static portal: note pages, per-source tables of contents, tag pages, home, search, 404, sitemap.

Incremental by fingerprints. ``<site>/.render-manifest.json`` records, for every file this
renderer wrote, a hash of everything that went into it, and for every note the links found in
its body with what they resolved to. A build re-renders a note when its text changed or one of
its links now resolves differently (a target appeared, moved or vanished); a note page also
when its backlinks, title, tags or dates changed; other pages when the data they show changed.
Anything not written by this run and listed in the old manifest is deleted. Every file is
written atomically (temp file + ``os.replace``). A template or renderer change, ``--full``, or
``site.title``/``render.allow_html`` changes re-render everything; such big renders reuse the
highlighted code kept in ``<site>/.render-cache/`` (:mod:`builder.render_highlight`), and notes
with the same text are rendered once where their links allow (:mod:`builder.render_jobs`).

This module imports neither Jinja2 nor markdown-it at load time: ``site_is_stale`` must stay
cheap for the every-minute no-op build.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder import urls
from builder.config import Config
from builder.synclog import SyncLog

if TYPE_CHECKING:
    from builder.render_state import Dirty

RENDER_VERSION = "1"
TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
_CODE = ("render.py", "render_markdown.py", "render_highlight.py", "render_links.py", "render_jobs.py",
         "render_state.py", "site_pages.py", "urls.py", "parse.py", "slug.py")
STAMP = ".render-stamp"


@dataclass(frozen=True)
class RenderReport:
    """What one render did; ``written``/``removed`` are paths relative to the site folder."""

    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    notes_rendered: int  # note pages written
    broken_links: int
    seconds: float


# ---------------------------------------------------------------- staleness (os.stat only)


def _code_files() -> list[Path]:
    files = [Path(d) / f for d, _, names in sorted(os.walk(TEMPLATE_DIR)) for f in sorted(names)]
    return files + [Path(__file__).with_name(name) for name in _CODE]


def _stat_stamp(config: Config) -> str:
    digest = hashlib.sha256(RENDER_VERSION.encode())
    for path in _code_files():
        st = os.stat(path)
        digest.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    digest.update(json.dumps([config.site.title, config.allow_html, [s.id for s in config.sources]]).encode())
    return digest.hexdigest()


def site_is_stale(config: Config) -> bool:
    """True when the site is missing or the templates, renderer or site settings changed since
    the last render (os.stat and two small reads: cheap enough for the every-minute build)."""
    site = config.site.output
    try:
        stamp = (site / STAMP).read_text(encoding="utf-8")
    except OSError:
        return True
    return not (site / ".render-manifest.json").is_file() or stamp != _stat_stamp(config)


def _fingerprints(config: Config) -> tuple[str, str]:
    """(everything that shapes every page, the static assets' version) from file contents."""
    import markdown_it
    import mdit_py_plugins
    import nh3
    import pygments

    code, assets = hashlib.sha256(RENDER_VERSION.encode()), hashlib.sha256()
    for path in _code_files():
        data = path.read_bytes()
        code.update(f"{path.name}\0{len(data)}\0".encode() + data)
        if "static" in path.parts:
            assets.update(data)
    versions = [markdown_it.__version__, mdit_py_plugins.__version__, pygments.__version__, nh3.__version__]
    code.update(json.dumps([config.site.title, config.allow_html, versions]).encode())
    return code.hexdigest(), assets.hexdigest()[:10]


# ---------------------------------------------------------------- the render


def render_site(config: Config, conn: Any, *, full: bool, log: SyncLog, workers: int | None = None) -> RenderReport:
    """Bring ``config.site.output`` up to date with the index behind ``conn`` (``full``: rewrite all)."""
    started = time.perf_counter()
    # The render keeps ~10^6 objects alive (manifest, notes) and makes no reference cycles worth
    # collecting: the collector would rescan them all again and again (~12% of an incremental render).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _render(config, conn, full=full, log=log, workers=workers, started=started)
    finally:
        if collecting:
            gc.enable()


def _render(config: Config, conn: Any, *, full: bool, log: SyncLog, workers: int | None,
            started: float) -> RenderReport:
    from builder import index as db
    from builder import render_highlight as hl
    from builder import render_jobs as rj
    from builder import render_output as ro
    from builder import render_state as st
    from builder import site_pages as sp

    site = config.site.output
    site.mkdir(parents=True, exist_ok=True)
    env_fp, asset_v = _fingerprints(config)
    previous = ro.load_manifest(site)
    trust = not full and previous.get("env") == env_fp
    old = previous.get("notes", {}) if trust else {}
    out = ro.Output(site, previous.get("pages", {}) if trust else {})
    notes, kinds = _published(config, [sp.note_from_row(r) for r in db.notes_for_render(conn)])
    universe = st.universe(config, notes)
    resolver = _resolver(config, notes)
    roots = {s.id: config.source_root(s) for s in config.sources}
    highlights = hl.cache_file(site)
    templates = sp.Templates(TEMPLATE_DIR, config.site.title, asset_v)
    rj.set_context(rj.Context(resolver, roots, config.allow_html, templates, time.strftime("%Y-%m-%d %H:%M"), site))
    try:
        with rj.Pool(workers) as pool:
            entries, stale = st.recheck(notes, old, trust and previous.get("universe") == universe, resolver)
            big = len(stale) >= rj.PARALLEL_MIN  # worth reading and writing the site's highlighted code
            if big:
                hl.load(highlights)  # before the workers fork: they inherit it
            bodies = _bodies(pool, stale)
            entries.update({n.key: st.entry(n, bodies[n.key].body, bodies[n.key].highlights)
                            for n in stale if bodies[n.key].body})
            broken = st.log_broken(stale, bodies, entries, log)
            affected = st.affected(notes, stale, old, entries) if trust else None
            backlinks = st.backlinks(notes, entries, affected)
            pending = [n for n in notes if n.key in entries and not out.kept(n.url, affected is None or
                                                                             n.key in affected)
                       and out.wants(n.url, st.note_fp(env_fp, n, entries[n.key], backlinks.get(n.key, [])))]
            bodies.update(_bodies(pool, [n for n in pending if n.key not in bodies]))
            jobs = [(n, bodies[n.key].body.html, backlinks.get(n.key, [])) for n in pending if bodies[n.key].body]
            # the workers write note pages while this process makes the others; the notes sent along
            # must not change meanwhile (they are pickled by another thread)
            sp.settle([n for job in jobs for n in (job[0], *job[2])])
            note_pages = pool.start(rj.page_job, jobs)
            out.keep(n.url for n in notes if n.key not in entries)
            dirty = st.dirty(notes, stale, old, entries) if trust else None
            page_urls = _site_pages(out, env_fp, [n for n in notes if n.key in entries], kinds, dirty)
            out.written.extend(note_pages())
    finally:
        rj.set_context(None)

    ro.copy_static(out, TEMPLATE_DIR / "static")
    ro.copy_attachments(out, {r[1]: roots[key.partition(":")[0]] / r[2]
                              for key, entry in entries.items() for r in entry["res"] if r[0] == "attachment"})
    removed = out.remove_stale(previous.get("pages", {}))
    if big:
        hl.save(highlights, (k for entry in entries.values() for k in entry.get("hl", ())))
    out.save_manifest({"version": ro.MANIFEST_VERSION, "env": env_fp, "universe": universe, "pages": out.pages,
                       "notes": entries}, previous)
    stamp = _stat_stamp(config)
    if not (site / STAMP).is_file() or (site / STAMP).read_text(encoding="utf-8") != stamp:
        ro.write_atomic(site / STAMP, stamp)
    seconds = time.perf_counter() - started
    if out.written or removed:
        log.info(f"render: {len(out.written)} files written ({len(jobs)} note pages of {len(page_urls)} pages), "
                 f"{len(removed)} removed, {broken} broken links, {seconds:.2f} s")
    return RenderReport(tuple(out.written), tuple(removed), out.unchanged, len(jobs), broken, seconds)


def _bodies(pool: Any, notes: list[Any]) -> dict[str, Any]:
    """Note key → its rendered body (:class:`builder.render_jobs.Outcome`); one job per text."""
    from builder import render_highlight as hl
    from builder import render_jobs as rj

    groups = rj.same_text_groups(notes)
    bodies = {note.key: outcome for group, outcomes in zip(groups, pool.map(rj.body_job, groups))
              for note, outcome in zip(group, outcomes)}
    for outcome in bodies.values():
        if outcome.blocks:
            hl.remember(outcome.blocks)
    return bodies


def _site_pages(out: Any, env_fp: str, notes: list[Any], kinds: dict[str, str], dirty: Dirty | None) -> list[str]:
    """Tables of contents, tag pages, home, search, 404 and the sitemap; returns every page URL.
    ``dirty`` (:class:`builder.render_state.Dirty`) names the pages that may have changed; None:
    any may have. Big pages are fingerprinted from their inputs, never built to compare."""
    from builder import render_jobs as rj
    from builder import render_state as st
    from builder import site_pages as sp

    ctx = rj.context()
    render = ctx.templates.render
    by_source: dict[str, list[Any]] = {sid: [] for sid in kinds}
    for note in notes:
        by_source[note.source_id].append(note)
    toc_urls = []
    for sid, members in by_source.items():
        folders: dict[str, list[Any]] = {}
        for note in members:
            folders.setdefault(urls.top_folder(note.path), []).append(note)
        url = urls.toc_url(sid)
        toc_urls.append(url)
        if not out.kept(url, dirty is None or url in dirty.tocs):
            counts = sp.folder_counts(members)
            if out.wants(url, st.sha(env_fp, sid, kinds[sid], json.dumps(counts, ensure_ascii=False),
                                     *(n.toc_entry for n in folders.get("", [])))):
                out.write(url, render(sp.toc_index_page(sid, kinds[sid], members, counts), ctx.built_at))
        for folder, group in sorted(folders.items()):
            url = urls.folder_toc_url(sid, folder)
            if not folder:
                continue
            toc_urls.append(url)
            if not out.kept(url, dirty is None or url in dirty.tocs) and \
                    out.wants(url, st.sha(env_fp, sid, folder, *(n.toc_entry for n in group))):
                out.write(url, render(sp.toc_folder_page(sid, folder, group), ctx.built_at))
    groups = sp.tag_groups(notes)
    tag_urls = [f"tags/{slug}/index.html" for slug in groups]
    for url, (slug, (name, members)) in zip(tag_urls, groups.items()):
        if not out.kept(url, dirty is None or dirty.tags) and \
                out.wants(url, st.sha(env_fp, name, *(f"{n.url}\x1f{n.title}\x1f{' '.join(n.tags)}" for n in members))):
            out.write(url, render(sp.tag_page(slug, name, members), ctx.built_at))
    pages = [sp.tags_page(groups), sp.home_page(list(kinds.items()), notes, groups), *sp.fixed_pages()]
    for page in pages:
        if out.wants(page.url, st.sha(env_fp, page.data())):
            out.write(page.url, render(page, ctx.built_at))
    page_urls = sorted([n.url for n in notes] + toc_urls + tag_urls + [p.url for p in pages if p.kind != "404"])
    if out.wants(urls.SITEMAP_URL, st.sha(env_fp, *page_urls)):
        out.write(urls.SITEMAP_URL, sp.sitemap(page_urls))
    return page_urls


# ---------------------------------------------------------------- notes and links


def _published(config: Config, notes: list[Any]) -> tuple[list[Any], dict[str, str]]:
    """Notes of configured sources, inside today's scope (a note outside it never gets a page)."""
    from builder.sources import Scope

    kinds: dict[str, str] = {}
    scopes = {}
    for source in config.sources:
        kinds[source.id], scopes[source.id] = source.kind, Scope.of(source)
    return [n for n in notes if n.source_id in scopes and scopes[n.source_id].wants(n.path)], kinds


def _resolver(config: Config, notes: list[Any]) -> Any:
    from builder.render_links import Resolver, SourceNotes
    from builder.sources import Scope

    by_source: dict[str, list[tuple[str, str]]] = {}
    by_key = {}
    for note in notes:
        by_source.setdefault(note.source_id, []).append((note.path, note.title))
        by_key[note.key] = note

    def anchors(source_id: str) -> Any:
        return lambda path: by_key[f"{source_id}:{path}"].anchor_list

    return Resolver({s.id: SourceNotes(s.id, config.source_root(s), Scope.of(s), by_source.get(s.id, []),
                                       anchors(s.id)) for s in config.sources})
