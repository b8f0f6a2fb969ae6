"""What the incremental render remembers between builds and what it concludes from it.

The render manifest keeps, per note, a :class:`ManifestEntry`. These functions compare entries with
today's notes to find what must be rendered again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from builder.core import urls
from builder.core.config import Config, SourceConfig
from builder.render.links import LINK_KIND, LINK_TARGET, LINK_URL, StoredLink, link_names, note_names
from builder.core.synclog import SyncLog

if TYPE_CHECKING:
    from builder.render.links import Resolver
    from builder.render.markdown import Body
    from builder.render.notepages import Outcome
    from builder.render.pages import NoteInfo


class _EntryKeys(TypedDict):
    """The keys every :class:`ManifestEntry` has."""

    sha: str  # the sha256 of the text the body was rendered from
    dates: str  # the date and author its page shows besides its text (NoteInfo.dates)
    links: list[list[str]]  # the body's links, [kind, raw]: kind is link | image | wiki
    resolved: list[StoredLink]  # what each of them resolved to, in the same order
    links_digest: str  # of the link answers
    toc_digest: str  # of its table of contents entry
    tags_digest: str  # of its URL, title and tags
    anchors_digest: str  # of its heading anchors


class ManifestEntry(_EntryKeys, total=False):
    """A note's entry in the render manifest, as stored: plain dicts and lists in the marshal shards of
    ``<site>/.render-state`` (:mod:`builder.core.index.renderstate`), so an entry written by an older render
    reads as it was written. The keys below may be absent (``total=False``, which unlike ``NotRequired``
    the runtime sees under postponed annotations: ``__required_keys__`` is right)."""

    files: int  # 1: a markdown link or image found a file or nothing; absent (an older render's): maybe
    broken: list[list[int | str]]  # its broken links, [line, reason], when it has any
    highlights: list[str]  # the keys of the highlighted code blocks its body uses


Entries = dict[str, ManifestEntry]  # note key → its entry


@dataclass(frozen=True)
class Dirty:
    """Pages besides note pages that the notes rendered now (or removed) may have changed."""

    tocs: frozenset[str]  # sources whose table of contents may have changed
    # the tags whose pages may show a note otherwise: those of the notes added or re-rendered with another URL,
    # title or tags (a tag that a note left, or that a removed note was on, lost a member: builder.render.site
    # compares each tag's members with the last render's)
    tags: frozenset[str]
    graphs: frozenset[str]  # sources whose link graph may have changed
    broken: bool  # the list of broken links


def sha(*parts: str) -> str:
    """A short digest of ``parts`` (a page or entry fingerprint)."""
    return hashlib.blake2b("\0".join(parts).encode("utf-8"), digest_size=16).hexdigest()


def note_fp(env_fp: str, note: NoteInfo, entry: ManifestEntry, backlinks: list[NoteInfo], graph: str) -> str:
    """Everything a note page shows besides what its text (sha256) and the templates decide;
    ``graph``: the digest of the picture of its links (:meth:`builder.render.graph.Local.digest`)."""
    return sha(env_fp, note.sha256, note.title, note.dates, entry["links_digest"], graph,
               *(f"{b.url}\x1f{b.title}" for b in backlinks))


def scopes(config: Config) -> str:
    """What deciding which notes are published depends on in the config: each source's folder and
    scope rules (as JSON)."""
    return json.dumps([_rules(config, s) for s in config.sources])


def _rules(config: Config, source: SourceConfig) -> list[object]:
    return [source.id, str(config.source_root(source)), source.paths, source.include, source.exclude]


Universe = dict[str, str]  # source id → the digest of what finding a link's target in it depends on


def universe(config: Config, notes: list[NoteInfo]) -> Universe:
    """What finding a link's target note depends on, by source (a link resolves inside its own source):
    its notes' paths and titles, and its folder and scope rules. A source's digest unchanged → links of
    its unchanged notes still land on the same notes (anchors and files apart)."""
    keys: dict[str, list[str]] = {s.id: [] for s in config.sources}
    for note in notes:
        keys.setdefault(note.source_id, []).append(f"{note.key}\x1f{note.title}")
    return {s.id: sha(json.dumps(_rules(config, s)), *keys[s.id]) for s in config.sources}


def same_universe(before: object, now: Universe) -> frozenset[str]:
    """The sources whose notes' paths and titles and scope are what ``before`` (a stored
    :func:`universe`; anything else from an older render) says."""
    if not isinstance(before, dict):
        return frozenset()
    return frozenset(source_id for source_id, digest in now.items() if before.get(source_id) == digest)


def entry(note: NoteInfo, body: Body, highlights: tuple[str, ...]) -> ManifestEntry:
    """A note's manifest entry."""
    resolved = [r.as_list() for r in body.results]
    found: ManifestEntry = {
        "sha": note.sha256, "dates": note.dates, "links": [list(k) for k in body.links], "resolved": resolved,
        "links_digest": sha(*("\x1f".join(r) for r in resolved)), "toc_digest": sha(note.toc_entry),
        "tags_digest": sha(note.url, note.title, *note.tags), "anchors_digest": sha(*note.anchor_list),
        "files": int(any(kind != "wiki" and r[LINK_KIND] in ("attachment", "broken")
                         for (kind, _), r in zip(body.links, resolved, strict=True)))}
    broken = body.broken()
    if broken:
        found["broken"] = [[line, reason] for line, reason in broken]
    if highlights:
        found["highlights"] = list(highlights)
    return found


def names_moved(titles: object, notes: list[NoteInfo], same: frozenset[str]) -> dict[str, frozenset[str]]:
    """For each source where notes were added, removed or retitled (not in ``same``) and whose last list of
    notes is known (``titles``, as :func:`builder.render.delta.remember` stored it: source → [path, title, …]):
    the names of those notes (:func:`builder.render.links.note_names`). Only a link sharing one can land
    elsewhere now."""
    if not isinstance(titles, dict):
        return {}
    now: dict[str, set[tuple[str, str]]] = {source_id: set() for source_id in titles if source_id not in same}
    for note in notes:
        if note.source_id in now:
            now[note.source_id].add((note.path, note.title))
    found = {}
    for source_id, pairs in now.items():
        changed = pairs.symmetric_difference((path, title) for path, title, *_ in titles[source_id])
        found[source_id] = frozenset(name for path, title in changed for name in note_names(path, title))
    return found


def recheck(notes: list[NoteInfo], old: Entries, same: frozenset[str], resolver: Resolver,
            names: dict[str, frozenset[str]] | None = None) -> tuple[Entries, list[NoteInfo]]:
    """Entries of notes whose text is unchanged and whose links still land where they did, and the
    notes whose body must be rendered. Links are re-resolved where the answer may have moved: after a note
    of a source was added, removed or renamed (``same``: the sources where none was, see :func:`same_universe`),
    those of its links that share a name with such a note (``names``: :func:`names_moved`), or all of them (a
    source not in ``names``); else links to files (a broken one only when a file appeared at its path:
    :meth:`Resolver.still_broken`) and to notes whose headings changed (a ``#fragment`` is mapped onto the
    target's anchors)."""
    moved = {n.key for n in notes if n.key in old and old[n.key]["sha"] != n.sha256
             and old[n.key].get("anchors_digest") != sha(*n.anchor_list)}
    names = names or {}

    def holds(note: NoteInfo, kind: str, raw: str, r: StoredLink) -> bool:
        """Does the link still resolve to ``r``?"""
        source_id = note.source_id
        if source_id in same or (source_id in names and names[source_id].isdisjoint(link_names(note.path, kind, raw))):
            if kind == "wiki" or r[LINK_KIND] not in ("attachment", "broken"):
                if r[LINK_KIND] != "note" or f"{source_id}:{r[LINK_TARGET]}" not in moved:
                    return True  # only the notes decide it, and none that could answer it changed
            elif r[LINK_KIND] == "broken" and resolver.still_broken(source_id, note.path, raw, r):
                return True
        return r == resolver.resolve(source_id, note.path, kind, raw).as_list()

    entries: Entries = {}
    stale = []
    settled = same if not moved else frozenset()  # their notes' links to files alone can answer otherwise
    for note in notes:
        found = old.get(note.key)
        if found is None or found["sha"] != note.sha256:
            stale.append(note)
        elif (note.source_id in settled and not found.get("files", 1)) or all(
                holds(note, kind, raw, r) for (kind, raw), r in zip(found["links"], found["resolved"], strict=True)):
            entries[note.key] = found
        else:
            stale.append(note)
    return entries, stale


def affected(notes: list[NoteInfo], stale: list[NoteInfo], old: Entries, entries: Entries) -> set[str]:
    """Notes whose page may differ from the last render: the re-rendered ones and every note that one
    of them (or a removed note) links to, before or after (its "linked from" list may have changed).
    Every other page's inputs are its unchanged text and unchanged backlinks."""
    changed = {n.key for n in stale} | (set(old) - {n.key for n in notes})
    found = set(changed)
    for key in changed:
        source_id = key.partition(":")[0]
        for item in (old.get(key), entries.get(key)):
            found.update(f"{source_id}:{r[LINK_TARGET]}" for r in (item["resolved"] if item else ())
                         if r[LINK_KIND] == "note")
    return found


def backlinks(notes: list[NoteInfo], entries: Entries, only: set[str] | None) -> dict[str, list[NoteInfo]]:
    """Target note key → the notes linking to it (each once, never itself); for ``only`` these targets."""
    found: dict[str, dict[str, NoteInfo]] = {}
    for note in notes:
        item = entries.get(note.key)
        for r in item["resolved"] if item else ():
            if r[LINK_KIND] == "note":
                target = f"{note.source_id}:{r[LINK_TARGET]}"
                if target != note.key and (only is None or target in only):
                    found.setdefault(target, {})[note.key] = note
    return {key: list(sources.values()) for key, sources in found.items()}


def dirty(notes: list[NoteInfo], stale: list[NoteInfo], old: Entries, entries: Entries,
          graphs: set[str]) -> Dirty:
    """Which tables of contents and whether tag pages may have changed: only a note that was added,
    removed, or re-rendered with another outline (``toc_digest``) or title/tags (``tags_digest``)
    changes them. ``graphs``: the notes whose place in the link graph moved (see
    :func:`builder.render.graph.moved`)."""
    tocs: set[str] = set()
    tags: set[str] = set()
    broken = False
    rendered = {n.key: n for n in stale}
    for key in rendered.keys() | (set(old) - {n.key for n in notes}):
        before, now = old.get(key), entries.get(key)
        source_id = key.partition(":")[0]
        if now is not None and (before is None or before.get("tags_digest") != now.get("tags_digest")):
            tags.update(urls.tag_slug(tag) for tag in rendered[key].tags)
        if before is None or now is None:  # added or removed: every list it is on changes
            tocs.add(source_id)
            either = before or now
            broken = broken or bool(either and either.get("broken"))
            continue
        if before.get("toc_digest") != now.get("toc_digest"):
            tocs.add(source_id)
        broken = broken or before.get("broken") != now.get("broken") or (
            bool(before.get("broken")) and before.get("tags_digest") != now.get("tags_digest"))  # its title, URL
    return Dirty(frozenset(tocs), frozenset(tags), frozenset(key.partition(":")[0] for key in graphs), broken)


def log_broken(stale: list[NoteInfo], bodies: dict[str, Outcome], entries: Entries, log: SyncLog) -> int:
    """A WARN line per note that could not be rendered, and one line per source for the broken links
    of the notes rendered now (not again while they stay unchanged): how many, the first, and where
    the site lists them all. Returns the number of broken links of the notes rendered now."""
    count = 0
    per_source: dict[str, list[tuple[str, list[list[int | str]]]]] = {}
    for note in stale:
        if bodies[note.key].error:
            log.warn(f"{note.source_id}: {note.path}: {bodies[note.key].error}")
        broken = entries[note.key].get("broken") if note.key in entries else None
        if broken:
            count += len(broken)
            per_source.setdefault(note.source_id, []).append((note.path, broken))
    for source_id, found in per_source.items():
        links = sum(len(b) for _, b in found)
        path, (line, reason) = found[0][0], found[0][1][0]
        notes = f"{len(found)} notes" if len(found) > 1 else "1 note"
        many = f"{links} broken links in {notes}, such as" if links > 1 else "a broken link:"
        log.warn(f"{source_id}: {many} {path}:{line}: {reason}; every broken link is listed on {urls.BROKEN_LINKS_URL}")
    return count


def attachments(entries: Entries, roots: dict[str, Path]) -> dict[str, Path]:
    """The files the notes' links copied into the site: each one's site URL → where it is on disk."""
    return {r[LINK_URL]: roots[key.partition(":")[0]] / r[LINK_TARGET] for key, entry in entries.items()
            if entry.get("files", 1) for r in entry["resolved"] if r[LINK_KIND] == "attachment"}


def log_unwritten(failed: list[tuple[str, str]], log: SyncLog) -> None:
    """A WARN line per attachment that could not be copied into the site (url, why)."""
    for url, reason in failed:
        source_id, _, path = urls.site_file(url).partition("/")
        log.warn(f"{source_id}: {path}: the attachment could not be copied ({reason}); the links to it lead nowhere")
