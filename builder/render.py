"""The static portal: note pages, per-source tables of contents, tag pages, home, search, 404, sitemap.

Incremental by fingerprints. ``<site>/.render-manifest.json`` records, for every file this
renderer wrote, a hash of everything that went into it, and for every note the links found in
its body with what they resolved to. A build re-renders a note when its text changed or one of
its links now resolves differently (a target appeared, moved or vanished); a note page also
when its backlinks, title, tags or dates changed; other pages when the data they show changed.
Anything not written by this run and listed in the old manifest is deleted. Every file is
written atomically (temp file + ``os.replace``). A template or renderer change, ``--full``, or
``site.title``/``render.allow_html`` changes re-render everything.

This module imports neither Jinja2 nor markdown-it at load time: ``site_is_stale`` must stay
cheap for the every-minute no-op build.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder import urls
from builder.config import Config
from builder.synclog import SyncLog

RENDER_VERSION = "1"
TEMPLATE_DIR = Path(__file__).resolve().parent.parent / "templates"
_CODE = ("render.py", "render_markdown.py", "render_links.py", "site_pages.py", "urls.py", "parse.py", "slug.py")
STAMP = ".render-stamp"
PARALLEL_MIN = 150  # below this many bodies a process pool costs more than it saves


@dataclass(frozen=True)
class RenderReport:
    """What one render did; ``written``/``removed`` are paths relative to the site folder."""

    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    notes_rendered: int  # note pages written
    broken_links: int
    seconds: float


@dataclass(frozen=True)
class _Context:
    """What rendering a note needs besides the note; pool workers inherit it by fork."""

    resolver: Any  # builder.render_links.Resolver
    roots: dict[str, Path]
    trusted: bool
    templates: Any  # builder.site_pages.Templates
    built_at: str
    site: Path


@dataclass(frozen=True)
class _Outcome:
    body: Any  # builder.render_markdown.Body, or None when the note could not be read
    error: str | None = None


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
    from builder import index as db
    from builder import render_output as ro
    from builder import site_pages as sp

    global _CTX
    started = time.perf_counter()
    site = config.site.output
    site.mkdir(parents=True, exist_ok=True)
    env_fp, asset_v = _fingerprints(config)
    previous = ro.load_manifest(site)
    trust = not full and previous.get("env") == env_fp
    out = ro.Output(site, previous.get("pages", {}) if trust else {})
    notes, kinds = _published(config, [sp.note_from_row(r) for r in db.notes_for_render(conn)])
    universe = _universe(config, notes)
    _CTX = _Context(_resolver(config, notes), {s.id: config.source_root(s) for s in config.sources},
                    config.allow_html, sp.Templates(TEMPLATE_DIR, config.site.title, asset_v),
                    time.strftime("%Y-%m-%d %H:%M"), site)
    try:
        with _Pool(workers) as pool:
            same_links = trust and previous.get("universe") == universe
            entries, stale = _recheck(notes, previous.get("notes", {}) if trust else {}, same_links)
            bodies = dict(zip([n.key for n in stale], pool.map(_body_job, stale)))
            entries.update({n.key: _entry(n, bodies[n.key].body) for n in stale if bodies[n.key].body})
            broken = _log_broken(stale, bodies, entries, log)
            old_notes = previous.get("notes", {}) if trust else {}
            affected = _affected(notes, stale, old_notes, entries) if trust else None
            backlinks = _backlinks(notes, entries, affected)
            pending = [n for n in notes if n.key in entries and not out.kept(n.url, affected is None or
                                                                             n.key in affected)
                       and out.wants(n.url, _note_fp(env_fp, n, entries[n.key], backlinks.get(n.key, [])))]
            missing = [n for n in pending if n.key not in bodies]
            bodies.update(zip([n.key for n in missing], pool.map(_body_job, missing)))
            jobs = [(n, bodies[n.key].body.html, backlinks.get(n.key, [])) for n in pending if bodies[n.key].body]
            out.written.extend(pool.map(_page_job, jobs))
        out.keep(n.url for n in notes if n.key not in entries)
        dirty = _dirty(notes, stale, old_notes, entries) if trust else None
        page_urls = _site_pages(out, env_fp, [n for n in notes if n.key in entries], kinds, dirty)
    finally:
        _CTX = None

    ro.copy_static(out, TEMPLATE_DIR / "static")
    roots = {s.id: config.source_root(s) for s in config.sources}
    ro.copy_attachments(out, {r[1]: roots[key.partition(":")[0]] / r[2]
                              for key, entry in entries.items() for r in entry["res"] if r[0] == "attachment"})
    removed = out.remove_stale(previous.get("pages", {}))
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


def _site_pages(out: Any, env_fp: str, notes: list[Any], kinds: dict[str, str],
                dirty: tuple[set[str], bool] | None) -> list[str]:
    """Tables of contents, tag pages, home, search, 404 and the sitemap; returns every page URL.
    ``dirty``: (sources whose table of contents may have changed, may any tag page have changed);
    None: anything may have. Big pages are fingerprinted from their inputs, never built to compare."""
    from builder import site_pages as sp

    assert _CTX is not None
    render = _CTX.templates.render
    by_source: dict[str, list[Any]] = {sid: [] for sid in kinds}
    for note in notes:
        by_source[note.source_id].append(note)
    for sid, members in by_source.items():
        url = urls.toc_url(sid)
        if not out.kept(url, dirty is None or sid in dirty[0]) and \
                out.wants(url, _sha(env_fp, sid, kinds[sid], *(n.toc_entry for n in members))):
            out.write(url, render(sp.toc_page(sid, kinds[sid], members), _CTX.built_at))
    groups = sp.tag_groups(notes)
    tag_urls = [f"tags/{slug}/index.html" for slug in groups]
    for url, (slug, (name, members)) in zip(tag_urls, groups.items()):
        if not out.kept(url, dirty is None or dirty[1]) and \
                out.wants(url, _sha(env_fp, name, *(f"{n.url}\x1f{n.title}\x1f{' '.join(n.tags)}" for n in members))):
            out.write(url, render(sp.tag_page(slug, name, members), _CTX.built_at))
    pages = [sp.tags_page(groups), sp.home_page(list(kinds.items()), notes, groups), *sp.fixed_pages()]
    for page in pages:
        if out.wants(page.url, _sha(env_fp, page.data())):
            out.write(page.url, render(page, _CTX.built_at))
    page_urls = ([n.url for n in notes] + [urls.toc_url(sid) for sid in kinds] + tag_urls
                 + [p.url for p in pages if p.kind != "404"])
    sitemap = sp.sitemap(page_urls)
    if out.wants(urls.SITEMAP_URL, _sha(sitemap)):
        out.write(urls.SITEMAP_URL, sitemap)
    return page_urls


def _dirty(notes: list[Any], stale: list[Any], old: dict[str, Any], entries: dict[str, Any]) -> tuple[set[str], bool]:
    """Which tables of contents and whether tag pages may have changed: only a note that was added,
    removed, or re-rendered with another outline (``td``) or title/tags (``tg``) changes them."""
    sources: set[str] = set()
    tags = False
    for key in {n.key for n in stale} | (set(old) - {n.key for n in notes}):
        before, now = old.get(key) or {}, entries.get(key) or {}
        if not before or not now or before.get("td") != now.get("td"):
            sources.add(key.partition(":")[0])
        tags = tags or not before or not now or before.get("tg") != now.get("tg")
    return sources, tags


def _sha(*parts: str) -> str:
    return hashlib.blake2b("\0".join(parts).encode("utf-8"), digest_size=16).hexdigest()


def _note_fp(env_fp: str, note: Any, entry: dict[str, Any], backlinks: list[Any]) -> str:
    """Everything a note page shows besides what its text (sha256) and the templates decide."""
    return _sha(env_fp, note.sha256, note.title, note.changed_at or "", entry["rd"],
                *(f"{b.url}\x1f{b.title}" for b in backlinks))


def _universe(config: Config, notes: list[Any]) -> str:
    """What finding a link's target note depends on: every note's path and title, and the scopes.
    Unchanged → links of unchanged notes still land on the same notes (anchors and files apart)."""
    scopes = [[s.id, str(config.source_root(s)), s.paths, s.include, s.exclude] for s in config.sources]
    return _sha(json.dumps(scopes), *(f"{n.key}\x1f{n.title}" for n in notes))


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

    by_source: dict[str, list[tuple[str, str, frozenset[str]]]] = {}
    for note in notes:
        by_source.setdefault(note.source_id, []).append((note.path, note.title, note.anchors))
    return Resolver({s.id: SourceNotes(s.id, config.source_root(s), Scope.of(s), by_source.get(s.id, []))
                     for s in config.sources})


def _entry(note: Any, body: Any) -> dict[str, Any]:
    """A note's manifest entry: its links and their answers (``rd``: digest of the answers)."""
    res = [r.as_list() for r in body.results]
    return {"sha": note.sha256, "links": [list(k) for k in body.links], "res": res,
            "rd": _sha(*("\x1f".join(r) for r in res)), "td": _sha(note.toc_entry),
            "tg": _sha(note.url, note.title, *note.tags), "an": _sha(*note.anchor_list)}


def _recheck(notes: list[Any], old: dict[str, Any], same_universe: bool) -> tuple[dict[str, Any], list[Any]]:
    """Entries of notes whose text is unchanged and whose links still land where they did, and the
    notes whose body must be rendered. Links are re-resolved where the answer may have moved: all
    of them after a note was added, removed or renamed; else links to files and to notes whose
    headings changed (a ``#fragment`` is mapped onto the target's anchors)."""
    assert _CTX is not None
    resolve = _CTX.resolver.resolve
    moved = {n.key for n in notes if n.key in old and old[n.key]["sha"] != n.sha256
             and old[n.key].get("an") != _sha(*n.anchor_list)}

    def may_differ(source_id: str, kind: str, r: list[str]) -> bool:
        return (not same_universe or (kind != "wiki" and r[0] in ("attachment", "broken"))
                or (r[0] == "note" and f"{source_id}:{r[2]}" in moved))

    entries: dict[str, Any] = {}
    stale = []
    for note in notes:
        entry = old.get(note.key)
        if entry is None or entry["sha"] != note.sha256:
            stale.append(note)
        elif all(r == resolve(note.source_id, note.path, kind, raw).as_list()
                 for (kind, raw), r in zip(entry["links"], entry["res"]) if may_differ(note.source_id, kind, r)):
            entries[note.key] = entry
        else:
            stale.append(note)
    return entries, stale


def _affected(notes: list[Any], stale: list[Any], old: dict[str, Any], entries: dict[str, Any]) -> set[str]:
    """Notes whose page may differ from the last render: the re-rendered ones and every note that one
    of them (or a removed note) links to, before or after (its "linked from" list may have changed).
    Every other page's inputs are its unchanged text and unchanged backlinks."""
    changed = {n.key for n in stale} | (set(old) - {n.key for n in notes})
    affected = set(changed)
    for key in changed:
        source_id = key.partition(":")[0]
        for entry in (old.get(key), entries.get(key)):
            affected.update(f"{source_id}:{r[2]}" for r in (entry["res"] if entry else ()) if r[0] == "note")
    return affected


def _backlinks(notes: list[Any], entries: dict[str, Any], only: set[str] | None) -> dict[str, list[Any]]:
    """Target note key → the notes linking to it (each once, never itself); for ``only`` these targets."""
    found: dict[str, dict[str, Any]] = {}
    for note in notes:
        entry = entries.get(note.key)
        for r in entry["res"] if entry else ():
            if r[0] == "note":
                target = f"{note.source_id}:{r[2]}"
                if target != note.key and (only is None or target in only):
                    found.setdefault(target, {})[note.key] = note
    return {key: list(sources.values()) for key, sources in found.items()}


def _log_broken(stale: list[Any], bodies: dict[str, _Outcome], entries: dict[str, Any], log: SyncLog) -> int:
    """One WARN line per broken link of each note rendered now (not again while it stays unchanged)."""
    count = 0
    for note in stale:
        if bodies[note.key].error:
            log.warn(f"{note.source_id}: {note.path}: {bodies[note.key].error}")
        for r in entries[note.key]["res"] if note.key in entries else ():
            if r[0] == "broken":
                count += 1
                log.warn(f"{note.source_id}: {note.path}: broken link {r[3]}")
    return count


# ---------------------------------------------------------------- note bodies (maybe in a pool)

_CTX: _Context | None = None
_MD: Any = None


class _Pool:
    """``map`` in forked worker processes when there is enough work, else in this process."""

    def __init__(self, workers: int | None) -> None:
        import multiprocessing

        self.workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
        if "fork" not in multiprocessing.get_all_start_methods():
            self.workers = 1
        self.executor: Any = None

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.executor is not None:
            self.executor.shutdown()

    def map(self, fn: Any, items: list[Any]) -> list[Any]:
        if self.workers < 2 or len(items) < PARALLEL_MIN:
            return [fn(item) for item in items]
        if self.executor is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # fork: workers inherit _CTX (resolver, compiled templates) instead of unpickling it
            self.executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("fork"))
        return list(self.executor.map(fn, items, chunksize=16))


def _page_job(job: tuple[Any, str, list[Any]]) -> str:
    """Render and write one note page; returns its file path relative to the site."""
    from builder import render_output as ro
    from builder import site_pages as sp

    assert _CTX is not None
    note, body_html, backlinks = job
    html = _CTX.templates.render(sp.note_page(note, body_html, backlinks), _CTX.built_at)
    ro.write_atomic(_CTX.site / urls.site_file(note.url), html)
    return urls.site_file(note.url)


def _body_job(note: Any) -> _Outcome:
    """Render one note's body; problems become a message and a plain-text body, never an exception."""
    global _MD
    from builder import render_markdown as rm

    assert _CTX is not None
    try:
        data = (_CTX.roots[note.source_id] / note.path).read_bytes()
    except OSError as exc:
        return _Outcome(None, f"cannot read the note for its page ({exc.strerror or exc})")
    text = rm.note_text(data)
    if hashlib.sha256(data).hexdigest() == note.sha256:
        anchors = {h.line - 1: h.anchor for h in note.headings}
    else:  # changed since it was indexed: the next build re-renders it; until then, same anchors as the chunker
        from builder.parse import headings_of, make_markdown

        anchors = {h.line: h.anchor for h in headings_of(make_markdown().parse(text))}
    _MD = _MD or rm.make_renderer()
    resolver = _CTX.resolver
    page_url = note.url

    def resolve(kind: str, raw: str) -> Any:
        return resolver.resolve(note.source_id, note.path, kind, raw)

    try:
        return _Outcome(rm.render_body(_MD, text, page_url=page_url, anchors=anchors, resolve=resolve,
                                       trusted=_CTX.trusted))
    except Exception as exc:  # e.g. RecursionError on absurd nesting: show the text, keep the build going
        import html

        fallback = rm.Body(f"<pre>{html.escape(text)}</pre>", (), ())
        return _Outcome(fallback, f"could not render the markdown ({type(exc).__name__}); shown as plain text")
