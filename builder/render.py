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
MANIFEST = ".render-manifest.json"
STAMP = ".render-stamp"
PARALLEL_MIN = 150  # below this many bodies a process pool costs more than it saves


@dataclass(frozen=True)
class RenderReport:
    """What one render did; ``written``/``removed`` are paths relative to the site folder."""

    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int
    notes_rendered: int
    broken_links: int
    seconds: float


@dataclass(frozen=True)
class _Context:
    """What rendering a note body needs besides the note (shared with pool workers by fork)."""

    resolver: Any  # builder.render_links.Resolver
    roots: dict[str, Path]
    trusted: bool


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
    return not (site / MANIFEST).is_file() or stamp != _stat_stamp(config)


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
    """Bring ``config.site.output`` up to date with the index behind ``conn``."""
    from builder import index as db
    from builder import site_pages as sp

    started = time.perf_counter()
    site = config.site.output
    site.mkdir(parents=True, exist_ok=True)
    env_fp, asset_v = _fingerprints(config)
    previous = _load_manifest(site)
    trust = not full and previous.get("env") == env_fp
    old_pages: dict[str, str] = previous.get("pages", {}) if trust else {}
    out = _Output(site, old_pages)

    notes, kinds = _published(config, [sp.note_from_row(r) for r in db.notes_for_render(conn)], log)
    context = _Context(_resolver(config, notes), {s.id: config.source_root(s) for s in config.sources},
                       config.allow_html)
    old_notes = previous.get("notes", {}) if trust else {}
    links, stale = _recheck_links(notes, old_notes, context)
    bodies = _render_bodies(stale, context, workers)
    broken = _log_broken(bodies, log)
    for key, outcome in bodies.items():
        if outcome.body is not None:
            links[key] = (outcome.body.links, outcome.body.results)
    backlinks = _backlinks(notes, links)

    templates = sp.Templates(TEMPLATE_DIR, config.site.title, asset_v)
    built_at = time.strftime("%Y-%m-%d %H:%M")
    pending = [n for n in notes if n.key in links
               and out.wants(n.url, _note_fp(env_fp, n, links[n.key][1], backlinks.get(n.key, [])))]
    missing = [n for n in pending if n.key not in bodies]
    bodies.update(_render_bodies(missing, context, workers))
    for note in pending:
        body = bodies[note.key].body
        out.write(note.url, templates.render(sp.note_page(note, body.html, backlinks.get(note.key, [])), built_at))
    out.keep_unreadable(n.url for n in notes if n.key not in links)

    groups = sp.tag_groups(notes)
    pages = [sp.toc_page(sid, kinds[sid], [n for n in notes if n.source_id == sid]) for sid in kinds]
    pages += sp.tag_pages(groups) + [sp.home_page(list(kinds.items()), notes, groups)] + sp.fixed_pages()
    for page in pages:
        if out.wants(page.url, _sha(env_fp, page.data())):
            out.write(page.url, templates.render(page, built_at))
    sitemap = sp.sitemap([n.url for n in notes if n.key in links] + [p.url for p in pages if p.kind != "404"])
    if out.wants(urls.SITEMAP_URL, _sha(sitemap)):
        out.write(urls.SITEMAP_URL, sitemap)
    _copy_static(out)
    _copy_attachments(out, links, context.roots)

    removed = out.remove_stale(previous.get("pages", {}))
    new_notes = {n.key: {"sha": n.sha256, "links": [list(k) for k in links[n.key][0]],
                         "res": [r.as_list() for r in links[n.key][1]]} for n in notes if n.key in links}
    manifest = {"version": 1, "env": env_fp, "pages": out.pages, "notes": new_notes}
    if manifest != previous:
        _write_atomic(site / MANIFEST, json.dumps(manifest, ensure_ascii=False, separators=(",", ":")))
    stamp = _stat_stamp(config)
    if not (site / STAMP).is_file() or (site / STAMP).read_text(encoding="utf-8") != stamp:
        _write_atomic(site / STAMP, stamp)
    seconds = time.perf_counter() - started
    if out.written or removed:
        log.info(f"render: {len(out.written)} files written ({sum(1 for o in bodies.values() if o.body)} notes), "
                 f"{len(removed)} removed, {broken} broken links, {seconds:.2f} s")
    return RenderReport(tuple(out.written), tuple(removed), out.unchanged, len(bodies), broken, seconds)


def _sha(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _note_fp(env_fp: str, note: Any, results: tuple[Any, ...], backlinks: list[Any]) -> str:
    data = [note.sha256, note.title, list(note.tags), note.changed_at, [r.as_list() for r in results],
            [[b.url, b.title, b.source_id, b.path] for b in backlinks],
            [[h.level, h.text, h.anchor, h.line] for h in note.headings]]
    return _sha(env_fp, json.dumps(data, ensure_ascii=False))


# ---------------------------------------------------------------- notes and links


def _published(config: Config, notes: list[Any], log: SyncLog) -> tuple[list[Any], dict[str, str]]:
    """Notes of configured sources, inside today's scope; reserved source ids get no pages."""
    from builder.sources import Scope

    kinds: dict[str, str] = {}
    scopes = {}
    for source in config.sources:
        if source.id in urls.RESERVED_SOURCE_IDS:
            log.warn(f"{source.id}: this source id is a reserved site path (tags, static, api, search); "
                     "its notes get no pages")
            continue
        kinds[source.id], scopes[source.id] = source.kind, Scope.of(source)
    return [n for n in notes if n.source_id in scopes and scopes[n.source_id].wants(n.path)], kinds


def _resolver(config: Config, notes: list[Any]) -> Any:
    from builder.render_links import Resolver, source_notes
    from builder.sources import Scope

    by_source: dict[str, list[tuple[str, str, frozenset[str]]]] = {}
    for note in notes:
        by_source.setdefault(note.source_id, []).append(
            (note.path, note.title, frozenset(h.anchor for h in note.headings)))
    return Resolver({s.id: source_notes(s.id, config.source_root(s), Scope.of(s), by_source.get(s.id, []))
                     for s in config.sources})


def _recheck_links(notes: list[Any], old: dict[str, Any], context: _Context) -> tuple[dict[str, Any], list[Any]]:
    """Links of notes whose text is unchanged, re-resolved; the notes whose body must be rendered."""
    links: dict[str, Any] = {}
    stale = []
    resolve = context.resolver.resolve
    for note in notes:
        entry = old.get(note.key)
        if entry is not None and entry["sha"] == note.sha256:
            raw = tuple((kind, value) for kind, value in entry["links"])
            results = tuple(resolve(note.source_id, note.path, kind, value) for kind, value in raw)
            if [r.as_list() for r in results] == entry["res"]:
                links[note.key] = (raw, results)
                continue
        stale.append(note)
    return links, stale


def _backlinks(notes: list[Any], links: dict[str, Any]) -> dict[str, list[Any]]:
    by_key = {n.key: n for n in notes}
    found: dict[str, dict[str, Any]] = {}
    for note in notes:
        if note.key not in links:
            continue
        for result in links[note.key][1]:
            target = f"{note.source_id}:{result.target}"
            if result.kind == "note" and target != note.key and target in by_key:
                found.setdefault(target, {})[note.key] = note
    return {key: list(sources.values()) for key, sources in found.items()}


def _log_broken(bodies: dict[str, _Outcome], log: SyncLog) -> int:
    count = 0
    for key, outcome in sorted(bodies.items()):
        source_id, _, path = key.partition(":")
        if outcome.error:
            log.warn(f"{source_id}: {path}: {outcome.error}")
        for result in outcome.body.results if outcome.body else ():
            if result.kind == "broken":
                count += 1
                log.warn(f"{source_id}: {path}: broken link {result.reason}")
    return count


# ---------------------------------------------------------------- note bodies (maybe in a pool)

_CTX: _Context | None = None
_MD: Any = None


def _render_bodies(notes: list[Any], context: _Context, workers: int | None) -> dict[str, _Outcome]:
    global _CTX
    import multiprocessing

    _CTX = context
    workers = workers if workers is not None else min(os.cpu_count() or 1, 4)
    if workers < 2 or len(notes) < PARALLEL_MIN or "fork" not in multiprocessing.get_all_start_methods():
        return {note.key: _body_job(note) for note in notes}
    from concurrent.futures import ProcessPoolExecutor

    # fork: the workers inherit the resolver and the loaded modules instead of unpickling them
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return {note.key: outcome for note, outcome in zip(notes, pool.map(_body_job, notes, chunksize=16))}


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


# ---------------------------------------------------------------- output files


class _Output:
    """Writes files atomically and keeps the new manifest's page table."""

    def __init__(self, site: Path, old_pages: dict[str, str]) -> None:
        self.site = site
        self.old = old_pages
        self.pages: dict[str, str] = {}
        self.written: list[str] = []
        self.unchanged = 0

    def wants(self, url: str, fingerprint: str) -> bool:
        """Record ``url``'s fingerprint; True when the file must be (re)written."""
        self.pages[url] = fingerprint
        if self.old.get(url) == fingerprint and (self.site / urls.site_file(url)).is_file():
            self.unchanged += 1
            return False
        return True

    def write(self, url: str, data: str | bytes) -> None:
        _write_atomic(self.site / urls.site_file(url), data)
        self.written.append(urls.site_file(url))

    def keep_unreadable(self, page_urls: Any) -> None:
        """A note that could not be read keeps its previous page rather than losing it."""
        for url in page_urls:
            if url in self.old:
                self.pages[url] = self.old[url]

    def remove_stale(self, listed: dict[str, str]) -> list[str]:
        removed = []
        for url in sorted(set(listed) - set(self.pages)):
            path = self.site / urls.site_file(url)
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            removed.append(urls.site_file(url))
            _prune_dirs(path.parent, self.site)
        return removed


def _load_manifest(site: Path) -> dict[str, Any]:
    try:
        data = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == 1 else {}


def _write_atomic(path: Path, data: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(data, str):
        temp.write_text(data, encoding="utf-8")
    else:
        temp.write_bytes(data)
    os.replace(temp, path)


def _prune_dirs(directory: Path, site: Path) -> None:
    while directory != site and site in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def _copy_static(out: _Output) -> None:
    for path in sorted((TEMPLATE_DIR / "static").iterdir()):
        if path.is_file() and not path.name.startswith("."):
            data = path.read_bytes()
            url = urls.static_url(path.name)
            if out.wants(url, hashlib.sha256(data).hexdigest()):
                out.write(url, data)


def _copy_attachments(out: _Output, links: dict[str, Any], roots: dict[str, Path]) -> None:
    """Files next to the notes that some page links to, copied when new or changed (size, mtime)."""
    wanted: dict[str, Path] = {}
    for key, (_, results) in links.items():
        source_id = key.partition(":")[0]
        for result in results:
            if result.kind == "attachment":
                wanted[result.url] = roots[source_id] / result.target
    for url, source in sorted(wanted.items()):
        try:
            st = source.stat()
            if out.wants(url, f"{st.st_size}:{st.st_mtime_ns}"):
                out.write(url, source.read_bytes())
        except OSError:
            continue  # vanished since it was resolved: the next build notices the broken link
