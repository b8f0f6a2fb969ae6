"""The render of a few edited notes that reads only what they touch.

The every-minute build usually finds one or two notes whose text (or date) changed and nothing else.
The full render (:mod:`builder.render.site`) still reads every note and every manifest entry to
prove that nothing else changed (its cost: docs/BENCHMARKS.md). This one proves it from what the last
render remembered (:func:`remember`, stored with its manifest) and from the index's log of what
changed since (:func:`builder.core.index.content_changes`), and writes exactly what the full render
would write: the edited notes' pages, the home page (its "recently changed" list), the table of
contents of a source whose notes' headings changed, and whatever attachments changed. It declines
(returns None, and the full render runs) unless all of this holds:

- the last render finished, with this renderer and settings, rendered the index's generation and
  read every note;
- at most :data:`MAX_NOTES` notes changed, each published then and now (or neither: a draft);
- each keeps its title and tags, its links and what they resolve to, and its broken links: so no
  other page shows anything new about it but its headings (in the table of contents), and the
  links of other notes into it land where they did (a ``#fragment`` names a heading);
- every link to a file of every note still lands where it did (an image added next to a note
  fixes its broken link: the full render then re-renders that note): shown by the stamp's record of
  the linked files (:func:`builder.render.stamp.kept_watch`) when none changed, else by resolving
  each such link again; and every page is on disk.

``tests/test_render_delta.py`` checks that it writes the same site and manifest as the full render.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from builder.core import index as db
from builder.core import forkpool, templates, urls
from builder.core.config import Config
from builder.core.index import renderstate
from builder.render import graph, highlight, manifest, notepages, output, pages, stamp, toc
from builder.render.links import LINK_KIND, LINK_TARGET, LINK_URL, WIKI_TABLES, Resolver, SourceNotes, WikiTable
from builder.notes.sources import Scope
from builder.core.synclog import SyncLog

if TYPE_CHECKING:
    from sqlite3 import Connection

MAX_NOTES = 16  # more changed notes than this: the full render (it forks workers from 32)


# A markdown link or image to a file, as :func:`remember` keeps it: [kind, raw, resolved] (kind and raw as in
# ManifestEntry.links, resolved a StoredLink): a list, as the manifest's marshal keeps it.
FileLink = list[Any]


class _DeltaCache(TypedDict, total=False):
    """What a stored state may hold for the delta render besides :class:`DeltaMemory`: a cache it builds."""

    # "source id:table name" → a wikilink table of its titles (links.WIKI_TABLES): those a delta render built, kept
    # while the source's paths and titles stay
    wiki: dict[str, WikiTable]


class DeltaMemory(_DeltaCache):
    """What a full render stores beside its manifest for the next delta render (:func:`remember`); a stored
    state that lacks one of these keys (an older render's) sends the build to the full render. ``titles``,
    ``into``, ``out``, ``wiki`` and ``file_links`` are kept by shards (:data:`builder.render.output.MAPS`): a
    delta render reads only the sources' titles it needs, the links of the notes two hops from the edited ones,
    the wikilink tables its wikilinks ask for, and the file links only when the stamp lost their files' record."""

    content: str  # the index content it rendered (builder.core.index.content_token)
    scopes: str  # the digest of every source's folder and scope rules
    titles: dict[str, list[list[str]]]  # source → its published notes' [path, title, toc_digest]
    unreadable: list[str]  # the notes it could not read or whose page failed: every full render retries them
    into: dict[str, list[str]]  # note key → the notes linking to it
    out: dict[str, list[str]]  # note key → the notes it links to (into, the other way)
    file_links: dict[str, list[FileLink]]  # note key → its links to files (or to nothing)
    broken_links: dict[str, int]  # source → the broken links of its notes, if any (read by status; a delta keeps them)
    attachments: dict[str, list[str]]  # site URL of a copied file → [source id, path]
    files: list[str]  # every file of the site, sorted
    folders: output.FolderTimes  # every folder of the site, its time and when that was taken (output.folder_times)
    recent: list[list[str]]  # the home page's recently changed notes' order keys
    home: dict[str, Any]  # the home page's template context
    page_count: int  # pages of the site


_KEYS = tuple(sorted(DeltaMemory.__required_keys__ - set(output.MAPS)))  # what the state's meta holds


@dataclass(frozen=True)
class DeltaReport:
    """What a delta render did (as in :class:`builder.render.site.RenderReport`)."""

    written: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int  # files of the site left as they were
    notes_rendered: int  # note pages written
    broken_links: int  # in the notes rendered
    pages: int  # pages of the site


def remember(config: Config, content: str, notes: list[pages.NoteInfo], entries: manifest.Entries,
             links: graph.Links, recent: list[pages.NoteInfo], home: dict[str, Any], page_count: int,
             files: set[str], folders: output.FolderTimes, retry: set[str] | frozenset[str] = frozenset(),
             kept: dict[str, Any] | None = None) -> DeltaMemory:
    """What a full render stores beside its manifest for the next delta render: the index content it
    rendered, the published notes' paths, titles and table of contents digests, the notes linking to
    each note and those it links to, every note's links to files, each source's count of broken links, the
    attachments copied, the home page's data (``home``) and its recently changed notes, how many pages the site
    has, every page's file (``files``) and the site's folders' times (``folders``), and the notes it could not read
    or whose page failed (``retry``: every full render tries them again). ``kept``: what the state held of
    :data:`builder.render.site.DELTA_ONLY`; its wikilink tables stay for the sources whose notes' paths and titles
    are the same (``titles``, the last render's list, when it was read)."""
    file_links: dict[str, list[FileLink]] = {}
    attachments: dict[str, list[str]] = {}
    broken: dict[str, int] = {}
    for key, entry in entries.items():
        if entry.get("broken"):
            source_id = key.partition(":")[0]
            broken[source_id] = broken.get(source_id, 0) + len(entry["broken"])
        if not entry.get("files", 1):
            continue
        found: list[FileLink] = [[kind, raw, r]
                                 for (kind, raw), r in zip(entry["links"], entry["resolved"], strict=True)
                                 if kind != "wiki" and r[LINK_KIND] in ("attachment", "broken")]
        if found:
            file_links[key] = found
        for r in entry["resolved"]:
            if r[LINK_KIND] == "attachment":
                attachments[r[LINK_URL]] = [key.partition(":")[0], r[LINK_TARGET]]
    titles: dict[str, list[list[str]]] = {s.id: [] for s in config.sources}
    for note in notes:
        mine = entries.get(note.key)
        titles[note.source_id].append([note.path, note.title, mine.get("toc_digest", "") if mine else ""])
    return {"content": content, "scopes": manifest.sha(manifest.scopes(config)), "titles": titles,
            "unreadable": sorted({n.key for n in notes if n.key not in entries} | retry),
            "into": {key: sorted(sources, key=_index_order) for key, sources in links.into.items()},
            "out": {key: sorted(targets, key=_index_order) for key, targets in links.out.items()},
            "wiki": _wiki_kept((kept or {}).get("wiki", {}), (kept or {}).get("titles", {}), titles),
            "file_links": file_links, "broken_links": broken, "attachments": attachments, "files": sorted(files),
            "folders": folders,
            "recent": [[*pages.recent_key(n)] for n in recent], "home": home, "page_count": page_count}


def _wiki_key(source_id: str, name: str) -> str:
    """The key of a source's wikilink table (:data:`builder.render.links.WIKI_TABLES`) in the state's ``wiki``."""
    return f"{source_id}:{name}"


def _wiki_kept(tables: dict[str, WikiTable], before: dict[str, list[list[str]]],
               titles: dict[str, list[list[str]]]) -> dict[str, WikiTable]:
    """The wikilink ``tables`` of the sources whose notes have the paths and titles they had (``before``)."""
    if not tables:
        return {}
    same = {source_id for source_id, listed in titles.items()
            if [item[:2] for item in before.get(source_id, ())] == [item[:2] for item in listed]}
    wanted = {_wiki_key(source_id, name) for source_id in same for name in WIKI_TABLES}
    return {key: table for key, table in tables.items() if key in wanted}


def _index_order(key: str) -> tuple[str, str]:
    source_id, _, path = key.partition(":")
    return source_id, path


def render_edits(config: Config, conn: Connection, *, env_fp: str, files: list[Path],
                 log: SyncLog) -> DeltaReport | None:
    """Render the notes changed since the last render when only their own pages, home and their
    sources' tables of contents can change; None when that cannot be shown (see the module
    docstring): the full render must run."""
    site = config.site.output
    path = site / output.STATE
    meta = renderstate.read_meta(path) or {}
    if (meta.get("version") != renderstate.MANIFEST_VERSION or meta.get("env") != env_fp
            or any(key not in meta for key in _KEYS) or meta["scopes"] != manifest.sha(manifest.scopes(config))
            or meta["unreadable"] or output.Journal(site).recorded()):
        return None
    content = db.content_token(conn)  # what this render shows (read first, as the full render does)
    changed = db.content_changes(conn, meta["content"])
    if not changed or len(changed) > MAX_NOTES:
        return None
    # the proof that every page is still on disk (a stat per site folder) runs beside the rest of the proofs
    checked = output.CheckedTimes(meta["folders"], time.time_ns())
    with forkpool.meanwhile(partial(output.stray_files, site, meta["files"]), meta["folders"]) as strays:
        return _render_changed(config, conn, cast(DeltaMemory, meta), changed, content, env_fp, files, log,
                               strays, checked)


def _render_changed(config: Config, conn: Connection, meta: DeltaMemory, changed: list[tuple[str, str]], content: str,
                    env_fp: str, files: list[Path], log: SyncLog, strays: Callable[[], set[str] | None],
                    checked: output.CheckedTimes) -> DeltaReport | None:
    """:func:`render_edits` of the notes ``changed`` since the last render (``strays``: what the site holds
    besides the last render's files, None when one of those is gone; its folders' times ``checked``)."""
    site = config.site.output
    path = site / output.STATE
    notes = pages.published_notes(config, [pages.note_from_row(r) for r in db.notes_for_render(conn, changed)])
    old = renderstate.read_keys(path, "notes", (f"{source_id}:{rel}" for source_id, rel in changed))
    # a note published before and now, with the same face; a file that was no page and is none (a
    # draft) changes nothing here
    if old is None or len(old) != len(notes) or not all(n.key in old and _same_face(n, old[n.key]) for n in notes):
        return None
    roots = {s.id: config.source_root(s) for s in config.sources}
    titles = _Titles(path, {n.source_id for n in notes})
    if not titles.held:
        return None
    resolver = _resolver_of_titles(config, conn, titles)
    # the files the last render's links named, none changed since: then every link to a file lands where it did
    kept = stamp.kept_watch(config, meta["content"])
    file_links = renderstate.read_map(path, "file_links") if kept is None else {}
    if file_links is None or not _files_hold(resolver, file_links):
        return None
    into = renderstate.read_keys(path, "into", [n.key for n in notes])
    if into is None or not _anchors_hold(path, resolver, notes, old, into):
        return None
    jinja = templates.Templates(templates.TEMPLATE_DIR, config.site.title, templates.asset_version(),
                                tuple(s.id for s in config.sources), templates.ask_target(config.answer),
                                config.site.language)
    journal = output.Journal(site)

    def opened(wanted: Collection[str]) -> output.Output | None:
        """The site, with the last render's fingerprints of the pages ``wanted`` (a page not among them is
        written again)."""
        found = strays()
        if found is None:
            return None  # a page to write again (or a folder changed by hand): the full render finds which
        stored_pages = renderstate.read_keys(path, "pages", wanted)
        if stored_pages is None or not all(n.url in stored_pages for n in notes):
            return None  # the state lost them since the render began: the full render repairs it
        return output.Output(site, stored_pages, found.union(meta["files"]), set(), journal)

    blocks = highlight.CodeBlocks()
    blocks.use(highlight.blocks_file(site))
    ctx = notepages.Context(resolver, roots, config.allow_html, jinja, time.strftime("%Y-%m-%d %H:%M"), site,
                            blocks, max_note_bytes=config.max_note_bytes)
    try:
        report = _render_delta(config, conn, notes, old, meta, titles, into, opened, log, env_fp, content, ctx,
                               checked)
    finally:
        journal.close()
    if report is not None:  # its notes link the files the last render's did (else it declined)
        stamp.write_stamp(config, files, content,
                          kept if kept is not None else stamp.linked_state(linked_files(resolver, file_links)))
    return report


def _render_delta(config: Config, conn: Connection, notes: list[pages.NoteInfo], old: manifest.Entries,
                  meta: DeltaMemory, titles: _Titles, into: dict[str, list[str]],
                  opened: Callable[[Collection[str]], output.Output | None], log: SyncLog, env_fp: str, content: str,
                  ctx: notepages.Context, checked: output.CheckedTimes) -> DeltaReport | None:
    """Decide everything first (None: the full render must run), then write, with the render's ``ctx``, to
    the site ``opened`` gives for the pages it may write (None: a page of the last render is gone). ``into``:
    the notes linking to each of ``notes``."""
    site = config.site.output
    stale = [n for n in notes if n.sha256 != old[n.key]["sha"]]
    bodies = {n.key: outcome for group in notepages.same_text_groups(stale)
              for n, outcome in zip(group, notepages.body_job(ctx, group), strict=True)}
    entries: manifest.Entries = {n.key: {**old[n.key], "dates": n.dates} for n in notes}
    for note in stale:
        outcome = bodies[note.key]
        if outcome.body is None or outcome.error:
            return None
        entries[note.key] = manifest.entry(note, outcome.body, outcome.highlights)
        if any(entries[note.key].get(k) != old[note.key].get(k) for k in ("links", "resolved", "broken", "files")):
            return None  # another page may show it: the full render decides
    recent = _recent(meta["recent"], meta["home"]["recent"], notes)
    if recent is None:
        return None
    kinds = {s.id: s.kind for s in config.sources}
    moved = [n for n in notes if entries[n.key]["toc_digest"] != old[n.key]["toc_digest"]]
    tocs = _toc_plans(conn, config, env_fp, kinds, moved, titles)
    if tocs is None:
        return None
    links = _links(conn, config, site / output.STATE, [n.key for n in notes])
    statics = templates.static_files()
    out = opened([*(n.url for n in notes), urls.HOME_URL, *(p.url for plan in tocs.values() for p in plan.pieces),
                  *(urls.static_url(rel) for rel, _ in statics), *meta["attachments"]])
    if links is None or out is None:
        return None
    page_jobs = []
    for note in notes:
        backlinks = [links.notes[key] for key in into.get(note.key, ())]
        picture = links.local(note.key)
        if out.wants(note.url, manifest.note_fp(env_fp, note, entries[note.key], backlinks, picture.digest())):
            if note.key not in bodies:  # only its date moved: its page is made again from its text
                bodies[note.key] = notepages.body_job(ctx, [note])[0]
            body = bodies[note.key].body
            if body is None:
                return None
            page_jobs.append((note, body, backlinks, picture))
    for outcome in bodies.values():
        if outcome.blocks:
            ctx.blocks.remember(outcome.blocks)
    for job in page_jobs:
        out.journal.add(urls.site_file(job[0].url))
        written = notepages.page_job(ctx, job)
        if written.error:
            return None  # the full render leaves that note out (the pages written are in the journal)
        out.written.append(written.rel)
    broken = manifest.log_broken(stale, bodies, entries, log)
    home = pages.home_with({**meta["home"], "recent": [item for _, item in recent]})
    if out.wants(home.url, manifest.sha(env_fp, home.data())):
        out.write(home.url, ctx.templates.render(home, ctx.built_at))
    for source_id, plan in tocs.items():
        toc.write_page(out, ctx.templates, ctx.built_at, plan, source_id, kinds[source_id])
    output.copy_static(out, statics)
    roots = ctx.roots
    manifest.log_unwritten(output.copy_attachments(out, {url: roots[source_id] / rel
                                                      for url, (source_id, rel) in meta["attachments"].items()}), log)
    # left by a killed write (only a listed folder holds more than the last render's files: any other's time moved)
    removed = [rel for rel in sorted(out.present.difference(meta["files"])) if output.is_temporary(rel)]
    for rel in removed:
        (site / rel).unlink(missing_ok=True)
    _record_digests(titles, moved, entries)
    if renderstate.patch_state(site / output.STATE, {
        "content": content, "recent": [[*at] for at, _ in recent], "home": home.context,
        "folders": output.retimed(site, checked, out.written, removed), **_files_after(meta["files"], out.written),
    }, {"notes": {key: entry for key, entry in entries.items() if entry != old[key]},
        "wiki": {_wiki_key(source_id, name): table for source_id, source in ctx.resolver.sources.items()
                 for name, table in source.built_here().items()},
        "titles": {source_id: titles[source_id] for source_id in {n.source_id for n in moved}},
        "pages": {url: fp for url, fp in out.pages.items() if out.old.get(url) != fp}}):
        out.journal.clear()  # else the journal keeps naming the pages written (see output.Journal)
    # the last render's pages are its files (each page one file): those not written now are as they were
    return DeltaReport(tuple(out.written), tuple(removed), len(meta["files"]) - len(out.written), len(page_jobs),
                       broken, meta["page_count"])


def _record_digests(titles: _Titles, moved: list[pages.NoteInfo], entries: manifest.Entries) -> None:
    """Give the notes whose headings moved their new table of contents digest in their source's list."""
    for note in moved:
        for item in titles[note.source_id]:
            if item[0] == note.path:
                item[2] = entries[note.key]["toc_digest"]


def _files_after(files: list[str], written: list[str]) -> dict[str, list[str]]:
    """The record of the site's files to store after a delta render wrote ``written``: none when ``files`` (the
    last render's) names every one, else all of them (a file written anew: an attachment the last render could
    not copy), so that a full render that trusts the folders' times knows it is the portal's."""
    fresh = [rel for rel in written if not _in_sorted(files, rel)]  # a few looked up, not every file hashed
    return {"files": sorted({*files, *fresh})} if fresh else {}


def _in_sorted(files: list[str], rel: str) -> bool:
    """Is ``rel`` in ``files`` (sorted, as :func:`remember` and :func:`_files_after` store it)?"""
    at = bisect.bisect_left(files, rel)
    return at < len(files) and files[at] == rel


def _toc_plans(conn: Connection, config: Config, env_fp: str, kinds: dict[str, str], moved: list[pages.NoteInfo],
               titles: _Titles) -> dict[str, toc.TocPlan] | None:
    """The table of contents of each source some of whose notes (``moved``) show other headings now (see
    :func:`_toc_plan`; ``kinds``: each source's kind), by source; None when one of them cannot be made from the
    site's cache."""
    plans: dict[str, toc.TocPlan] = {}
    for source_id in sorted({n.source_id for n in moved}):
        plan = _toc_plan(conn, config, env_fp, source_id, kinds[source_id], moved, titles[source_id])
        if plan is None:
            return None
        plans[source_id] = plan
    return plans


def _toc_plan(conn: Connection, config: Config, env_fp: str, source_id: str, kind: str,
              moved: list[pages.NoteInfo], listed: list[list[str]]) -> toc.TocPlan | None:
    """The table of contents of a source some of whose notes (``moved``) show other headings now,
    from the last render's list of its notes (``listed``: path, title, digest) and the index's
    record of the notes in the folders those are in (their folder lists are rendered again; the
    others are in the site's cache, or the full render must run: None)."""
    changed = {n.path: n for n in moved if n.source_id == source_id}
    folders = {n.folder for n in changed.values()}
    around = [(source_id, path) for path, _, _ in listed
              if path.rpartition("/")[0] in folders and path not in changed]
    rows = db.notes_for_render(conn, around)
    fresh = {n.path: n for n in pages.published_notes(config, [pages.note_from_row(r) for r in rows])}
    fresh.update(changed)
    members = [fresh.get(path) or pages.NoteInfo(source_id, path, title, (), b"[]", None, "", f"{source_id}:{path}", "")
               for path, title, _ in listed]  # (outside those folders only the path counts: see toc.plan)
    if len(fresh) != len(changed) + len(around):
        return None
    digests = {f"{source_id}:{path}": digest for path, _, digest in listed}
    digests.update({n.key: manifest.sha(n.toc_entry) for n in changed.values()})
    plan = toc.plan(env_fp, source_id, kind, members, digests)
    cached = toc.Fragments(config.site.output, source_id).dir
    for folder, fps in plan.folder_fps.items():
        if folder not in folders:  # toc.Fragments.get would make it again, from the stand-ins above
            try:
                for fp in fps:
                    (cached / f"{fp}.frag").read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                return None
    return plan


def _same_face(note: pages.NoteInfo, entry: manifest.ManifestEntry) -> bool:
    """Does the note show other pages what it showed them at the last render (URL, title, tags)?
    (Its headings, which its source's table of contents shows, are looked at separately.)"""
    return entry.get("tags_digest") == manifest.sha(note.url, note.title, *note.tags)


def _anchors_hold(path: Path, resolver: Resolver, notes: list[pages.NoteInfo], old: manifest.Entries,
                  into: dict[str, list[str]]) -> bool:
    """Do the links of other notes into the notes whose headings moved still land as they did (a
    ``#fragment`` is mapped onto the target's anchors)? Those of the notes whose text changed are
    resolved anew when they are rendered."""
    moved = {n.key for n in notes if old[n.key].get("anchors_digest") != manifest.sha(*n.anchor_list)}
    rendered = {n.key for n in notes if n.sha256 != old[n.key]["sha"]}  # a note whose date alone moved is not
    linking = {key for target in moved for key in into.get(target, ())} - rendered
    if not linking:
        return True
    entries = renderstate.read_keys(path, "notes", linking)
    if entries is None or len(entries) != len(linking):
        return False
    for key, entry in entries.items():
        source_id, _, from_path = key.partition(":")
        for (kind, raw), r in zip(entry["links"], entry["resolved"], strict=True):
            if r[LINK_KIND] == "note" and f"{source_id}:{r[LINK_TARGET]}" in moved and \
                    resolver.resolve(source_id, from_path, kind, raw).as_list() != r:
                return False
    return True


class _Titles:
    """The last render's list of each source's published notes ([path, title, toc_digest], see :func:`remember`),
    read from the state a source at a time when first asked for: a one-note edit resolves the links of one source
    (links resolve inside their own) and lists the notes of one source's table of contents."""

    def __init__(self, path: Path, first: Collection[str]) -> None:
        """Reads those of the sources ``first`` (:attr:`held`: whether the state holds them all)."""
        self.path = path
        self._read: dict[str, list[list[str]]] = renderstate.read_keys(path, "titles", first) or {}
        self.held = self._read.keys() >= set(first)

    def __getitem__(self, source_id: str) -> list[list[str]]:
        if source_id not in self._read:
            found = renderstate.read_keys(self.path, "titles", [source_id]) or {}
            if source_id not in found:  # the state lost it since this render began: the full render repairs it
                raise RuntimeError(f"the render's state holds no list of the notes of {source_id}")
            self._read.update(found)
        return self._read[source_id]


class _SourcesOfTitles(dict[str, SourceNotes]):
    """A :class:`Resolver`'s sources, each made from ``titles`` when a link of it is first resolved."""

    def __init__(self, make: Callable[[str], SourceNotes]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, source_id: str) -> SourceNotes:
        made = self[source_id] = self._make(source_id)
        return made


def _resolver_of_titles(config: Config, conn: Connection, titles: _Titles) -> Resolver:
    """Link resolution over the published notes (``titles``: their paths and titles by source, as
    the last render stored them (see :func:`remember`): the delta render runs only while they stay
    the same), the anchors of a note read from the index when a link asks for them, the wikilink tables from
    the state (those the last render built, from the same titles) or else built here."""
    def anchors(source_id: str) -> Callable[[str], tuple[str, ...]]:
        def of(path: str) -> tuple[str, ...]:
            rows = db.notes_for_render(conn, [(source_id, path)])
            return pages.note_from_row(rows[0]).anchor_list if rows else ()
        return of

    sources = {s.id: s for s in config.sources}

    def kept(source_id: str) -> Callable[[str], WikiTable | None]:
        def table(name: str) -> WikiTable | None:
            key = _wiki_key(source_id, name)
            return (renderstate.read_keys(titles.path, "wiki", [key]) or {}).get(key)
        return table

    def made(source_id: str) -> SourceNotes:
        s = sources[source_id]
        return SourceNotes(s.id, config.source_root(s), Scope.of(s), [(p, t) for p, t, _ in titles[s.id]],
                           anchors(s.id), kept(s.id))

    return Resolver(_SourcesOfTitles(made))


def _files_hold(resolver: Resolver, file_links: dict[str, list[FileLink]]) -> bool:
    """Does every link to a file still resolve as at the last render (see
    :func:`builder.render.manifest.recheck`)?"""
    for key, found in file_links.items():
        source_id, _, path = key.partition(":")
        for kind, raw, r in found:
            if r[LINK_KIND] == "broken" and resolver.still_broken(source_id, path, raw, r):
                continue  # one stat said so
            if resolver.resolve(source_id, path, kind, raw).as_list() != r:
                return False
    return True


def linked_files(resolver: Resolver, file_links: dict[str, list[FileLink]]) -> list[str]:
    """The files the notes' links to files name, there or missing (see :func:`remember`): a change to one
    changes a page while no note changes (:func:`builder.render.stamp.site_is_stale` watches them)."""
    found: set[str] = set()
    for key, links in file_links.items():
        source_id, _, path = key.partition(":")
        found.update(file for _, raw, resolved in links
                     if (file := resolver.file_of(source_id, path, raw, resolved)) is not None)
    return sorted(found)


def _links(conn: Connection, config: Config, path: Path, keys: list[str]) -> graph.Links | None:
    """The link graph around ``keys``, two hops out, as :class:`builder.render.graph.Links` draws it (all a
    picture asks): the links of those notes both ways from the state at ``path`` (its ``out`` and ``into``, read
    a hop at a time), the notes from the index; None when the state cannot be read."""
    out: dict[str, set[str]] = {}
    into: dict[str, set[str]] = {}
    near: set[str] = set()
    frontier = set(keys)
    for _ in range(3):  # the notes themselves, their neighbours, and those neighbours. neighbours
        targets, sources = renderstate.read_keys(path, "out", frontier), renderstate.read_keys(path, "into", frontier)
        if targets is None or sources is None:
            return None
        out.update((key, set(found)) for key, found in targets.items())
        into.update((key, set(found)) for key, found in sources.items())
        near |= frontier
        frontier = {k for key in frontier for k in (*targets.get(key, ()), *sources.get(key, ()))} - near
    known = {n.key: n for n in pages.published_notes(config, [pages.note_from_row(r) for r in db.notes_for_render(
        conn, [_index_order(key) for key in near])])}
    return graph.Links.made(known, out, into)


def _recent(stored: list[list[str]], items: list[dict[str, str]],
            changed: list[pages.NoteInfo]) -> list[tuple[tuple[str, str], dict[str, str]]] | None:
    """The home page's recently changed notes (their order key and what the page shows of them),
    from the last render's list and the changed notes; None when a note that was not listed may
    belong in the list now (one that was listed moved back in time)."""
    mine = {n.key for n in changed}
    candidates = [((at, key), item) for (at, key), item in zip(stored, items, strict=True) if key not in mine]
    candidates += [(pages.recent_key(n), pages.recent_item(n)) for n in changed]
    top = sorted(candidates, key=lambda c: c[0], reverse=True)[:pages.RECENT_NOTES]
    # the notes not listed last time all order below the last one listed, and have not changed
    if len(stored) == pages.RECENT_NOTES and top[-1][0] < min((at, key) for at, key in stored):
        return None
    return top
