"""The data behind every page of the site: notes as the index describes them, and a
:class:`~builder.core.templates.Page` for each note, tag, home, broken-links, graph and fixed page
(tables of contents: :mod:`builder.render.toc`).

A :class:`Page` carries everything its template shows as plain JSON-able data, so its
fingerprint (a hash of that data) tells the incremental build whether the file on disk is
still right without rendering it. Note pages are the exception: their body is markdown, so
:mod:`builder.render.site` fingerprints their inputs instead.
"""

from __future__ import annotations

import heapq
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from builder.core import urls
from builder.core.slug import fold
from builder.core.templates import Label, Page
from builder.render.diagrams import can_draw, has_diagram
from builder.notes.sources import Scope

if TYPE_CHECKING:
    from builder.core.config import Config
    from builder.core.index import NoteRow
    from builder.render.manifest import Entries

HOME = Label("page.home")
RECENT_NOTES = 15
HOME_TAGS = 40
TAG_PAGE_TAGS = 5  # a note's other tags a tag page shows
# Notes one list page shows (a tag's, the broken links'): a longer list goes on in numbered pages, so that no page
# grows with the collection (about 300 KB at most).
LIST_PAGE = 1000


@dataclass(frozen=True)
class Pager:
    """Where one page of a list stands among its pages (``number`` from 1)."""

    number: int
    urls: tuple[str, ...]  # every page of the list, the first first

    def context(self) -> dict[str, Any] | None:
        """What the page's pager shows (None: the list has one page)."""
        if len(self.urls) == 1:
            return None
        return {"number": self.number, "count": len(self.urls), "pages": list(enumerate(self.urls, start=1)),
                "prev": self.urls[self.number - 2] if self.number > 1 else None,
                "next": self.urls[self.number] if self.number < len(self.urls) else None}


def paged_urls(first: str, count: int) -> tuple[str, ...]:
    """The URLs of a list of ``count`` items: ``first`` (``…/index.html`` or ``name.html``), then ``…/page-2.html``
    or ``name-2.html``, …"""
    pages = max(1, -(-count // LIST_PAGE))
    if first.endswith("/index.html"):
        folder = first.removesuffix("index.html")
        return (first, *(f"{folder}page-{k}.html" for k in range(2, pages + 1)))
    stem = first.removesuffix(".html")
    return (first, *(f"{stem}-{k}.html" for k in range(2, pages + 1)))


@dataclass(frozen=True)
class HeadingInfo:
    level: int
    text: str
    anchor: str
    line: int  # 1-based, as the index stores it


_ANCHOR_IN_JSON = re.compile(rb'"anchor": "([^"\\]*)"')
_LINE_IN_JSON = re.compile(rb'"line": \d+')


# Not frozen (but hashed by value, as if it were): a render makes one per note of the index, and a frozen
# dataclass's __init__ costs five times as much. Nothing assigns to a NoteInfo's fields. Slotted, and nothing
# decoded is kept on it: a render holds one per note of the collection for its whole run (a ``__dict__`` and
# the decoded headings were 2 KB a note of the render's memory; see docs/BENCHMARKS.md).
@dataclass(unsafe_hash=True, slots=True)
class NoteInfo:
    """One published note as the index describes it (its headings decoded on each read: keep them while needed)."""

    source_id: str
    path: str
    title: str
    tags: tuple[str, ...]
    headings_json: bytes  # files.headings, UTF-8 (half a str's size for Czech): [{anchor, level, line, text}, ...]
    changed_at: str | None  # the last change the build saw: git's last commit touching it, else the file time
    sha256: str
    key: str  # "<source>:<path>"
    url: str  # the note page, site-relative
    changed_by: str | None = None  # git sources: the author of that commit
    created: str | None = None  # YYYY-MM-DD from the front matter (date, created), when it says
    updated_fm: str | None = None  # YYYY-MM-DD from the front matter (updated, lastmod, modified)
    _sort: tuple[str, str] | None = field(default=None, init=False, repr=False, compare=False)  # sort_key, once read

    @property
    def anchor_list(self) -> tuple[str, ...]:
        """The heading anchors in order, read without decoding the JSON."""
        return tuple(anchor.decode() for anchor in _ANCHOR_IN_JSON.findall(self.headings_json))

    @property
    def updated_at(self) -> str:
        """When the note last changed: its front matter's ``updated`` when it has one, else the last
        change the build saw (ISO; sorts "Recently changed")."""
        return self.updated_fm or self.changed_at or ""

    @property
    def changed(self) -> str:
        """The day the note last changed (YYYY-MM-DD, or "")."""
        return self.updated_at[:10]

    @property
    def dates(self) -> str:
        """What the note's page says about its dates and that its text does not (see ``changed_at``)."""
        return f"{self.changed_at or ''}\x1f{self.changed_by or ''}"

    @property
    def headings(self) -> tuple[HeadingInfo, ...]:
        """The headings, decoded now (each read decodes them again)."""
        return tuple(HeadingInfo(int(h["level"]), str(h["text"]), str(h["anchor"]), int(h["line"]))
                     for h in json.loads(self.headings_json or b"[]"))

    @property
    def toc_entry(self) -> str:
        """What a table of contents shows of this note (headings without their line numbers)."""
        return "\x1f".join((self.path, self.title, *self.tags, _LINE_IN_JSON.sub(b"", self.headings_json).decode()))

    @property
    def sort_key(self) -> tuple[str, str]:
        """Where the note sorts in lists: by its folded title (kept once read: the graph sorts each note's
        neighbours by it)."""
        if self._sort is None:
            self._sort = fold(self.title), self.path
        return self._sort

    @property
    def folder(self) -> str:
        """The folder the note is in, within its source (``""``: the source's root)."""
        return self.path.rpartition("/")[0]


_CZECH_DATE = re.compile(r"^\s*(\d{1,2})\.\s*(\d{1,2})\.\s*(\d{4})\s*$")


def day_of(value: object) -> str | None:
    """A front matter date as ``YYYY-MM-DD``: an ISO date or date-time (YAML dates are stored so) or the
    Czech and Slovak ``1. 3. 2024``; anything else (a number, "TBD", an impossible day) is no date."""
    if not isinstance(value, str):
        return None
    czech = _CZECH_DATE.match(value)
    text = f"{czech[3]}-{int(czech[2]):02d}-{int(czech[1]):02d}" if czech else value.strip()[:10]
    try:
        return date.fromisoformat(text).isoformat() if len(text) == 10 else None
    except ValueError:
        return None


@lru_cache(maxsize=4096)
def _decoded_tags(stored: str) -> tuple[str, ...]:
    """``files.tags`` decoded (notes share their tag lists: each distinct one is decoded once)."""
    return tuple(json.loads(stored))


def note_from_row(row: NoteRow) -> NoteInfo:
    """A row of :func:`builder.core.index.notes_for_render` as a :class:`NoteInfo`."""
    source_id, path, title, tags, headings, changed_at, changed_by, sha256, created, updated = row
    source_id = sys.intern(source_id)  # one string for all of a source's notes, not one each
    return NoteInfo(source_id, path, title, _decoded_tags(tags) if tags and tags != "[]" else (),
                    (headings or "[]").encode(),
                    changed_at, sha256, f"{source_id}:{path}", urls.note_url(source_id, path), changed_by,
                    day_of(created) if created is not None else None, day_of(updated) if updated is not None else None)


def published_notes(config: Config, notes: list[NoteInfo]) -> list[NoteInfo]:
    """Notes of configured sources, inside today's scope (a note outside it never gets a page)."""
    scopes = {s.id: Scope.of(s) for s in config.sources}
    return [n for n in notes if n.source_id in scopes and scopes[n.source_id].wants(n.path)]


def _tag_links(tags: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(tag, urls.tag_url(tag)) for tag in tags]


# ---------------------------------------------------------------- note pages


def note_breadcrumbs(note: NoteInfo) -> tuple[tuple[str | Label, str | None], ...]:
    crumbs: list[tuple[str | Label, str | None]] = [(HOME, urls.HOME_URL),
                                                    (note.source_id, urls.toc_url(note.source_id))]
    parts = note.path.split("/")[:-1]
    for i, part in enumerate(parts):
        folder = "/".join(parts[:i + 1])
        crumbs.append((part, urls.dir_toc_url(note.source_id, folder, urls.dir_anchor(folder))))
    return (*crumbs, (note.title, None))


def title_in_body(headings: tuple[HeadingInfo, ...], body_html: str) -> bool:
    """Does the body (of a note with these ``headings``) open with an H1? Then it is the page's heading, whether
    or not it says the front matter's title (which still names the page in its tab, breadcrumbs and lists): a
    page has one H1."""
    return bool(headings) and headings[0].level == 1 and body_html.lstrip().startswith("<h1")


def note_dates(note: NoteInfo) -> dict[str, str]:
    """What the note's page says of its dates: ``changed`` (and ``by``, when git says who and the date is
    git's) and ``created`` when the front matter dates the note and that is another day."""
    return {"changed": note.changed, "by": note.changed_by if note.changed_by and not note.updated_fm else "",
            "created": note.created if note.created and note.created != note.changed else ""}


_FIRST_PARAGRAPH = re.compile(r"<p>(.*?)</p>", re.S)
_TAGS = re.compile(r"<[^>]*>")
SUMMARY_CHARS = 160


def summary_of(body_html: str) -> str:
    """A note's first paragraph as plain text, cut at a word within :data:`SUMMARY_CHARS` (its page's meta
    description when the front matter has no ``summary``); "" for a note without one."""
    import html

    found = _FIRST_PARAGRAPH.search(body_html)
    if not found:
        return ""
    text = " ".join(html.unescape(_TAGS.sub("", found[1])).split())
    if len(text) <= SUMMARY_CHARS:
        return text
    return text[:SUMMARY_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def nav_context(source_id: str = "", folder: str = "") -> dict[str, str]:
    """Where a page sits for the navigation tree: its source and folder (the tree opens there)."""
    return {"source": source_id, "folder": folder}


def note_page(note: NoteInfo, body_html: str, backlinks: list[NoteInfo], graph_svg: str = "", lang: str = "",
              description: str = "") -> Page:
    """The page of one note around its rendered body; ``graph_svg``: the picture of its links; ``lang``: the
    language its text is written in (its front matter's ``lang``, else as detected), which its page marks
    when it is not the site's; ``description``: its summary or first paragraph (the meta description)."""
    headings = note.headings
    in_body = title_in_body(headings, body_html)
    diagrams = has_diagram(body_html)
    drawn = diagrams and can_draw()  # a stat, asked only of a page with a diagram
    head, rest = "", body_html
    if in_body:
        cut = body_html.find("</h1>") + len("</h1>")
        head, rest = body_html[:cut], body_html[cut:]
    toc = [h for h in headings if h.level <= 3]
    if in_body:
        toc = toc[1:]
    context = {
        "title": note.title, "source_id": note.source_id, "path": note.path, "dates": note_dates(note),
        "tags": _tag_links(note.tags), "toc_url": urls.toc_url(note.source_id), "title_in_body": in_body,
        "toc": [{"level": h.level, "text": h.text, "anchor": h.anchor} for h in toc] if len(toc) > 1 else [],
        "body_head": head, "body_rest": rest, "diagrams": drawn, "diagrams_as_text": diagrams and not drawn,
        "backlinks": [{"title": b.title, "url": b.url, "path": f"{b.source_id}: {b.path}"}
                      for b in sorted(backlinks, key=lambda n: n.sort_key)],
        "graph_svg": graph_svg, "graph_url": urls.graph_url(note.source_id),
        "nav": nav_context(note.source_id, note.folder), "note_lang": lang,
    }
    return Page(note.url, "note.html", "note", note.title, context, note_breadcrumbs(note), description)


# ---------------------------------------------------------------- tags


def tag_groups(notes: list[NoteInfo]) -> dict[str, tuple[str, list[NoteInfo]]]:
    """Tags that share a slug are one tag ("Čaj", "čaj", "caj"); shown in their most used spelling."""
    spellings: dict[str, Counter[str]] = {}
    members: dict[str, list[NoteInfo]] = {}
    for note in notes:
        for tag in note.tags:
            slug = urls.tag_slug(tag)
            spellings.setdefault(slug, Counter())[tag] += 1
            if not members.setdefault(slug, []) or members[slug][-1] is not note:
                members[slug].append(note)
    return {slug: (min(spellings[slug].items(), key=lambda kv: (-kv[1], kv[0]))[0], members[slug])
            for slug in sorted(members)}


def _tag_page_url(slug: str) -> str:
    return f"tags/{slug}/index.html"


def tag_companions(note: NoteInfo, slug: str) -> tuple[tuple[str, ...], int]:
    """What the page of tag ``slug`` shows of a note's other tags: the first :data:`TAG_PAGE_TAGS`, and
    how many more it has (a page per tag listing every tag of the note would grow with their square)."""
    shown = tuple(t for t in note.tags[:TAG_PAGE_TAGS + 1] if urls.tag_slug(t) != slug)[:TAG_PAGE_TAGS]
    return shown, max(0, len(note.tags) - len(shown) - 1)


def tag_pages(slug: str, name: str, notes: list[NoteInfo]) -> list[Page]:
    """``/tags/<slug>/``: every note with the tag, each with a few of its other tags, :data:`LIST_PAGE` notes
    a page (``index.html``, ``page-2.html``, …)."""
    entries = []
    for note in sorted(notes, key=lambda n: n.sort_key):
        shown, more = tag_companions(note, slug)
        entries.append({"url": note.url, "title": note.title, "source_id": note.source_id, "path": note.path,
                        "tags": _tag_links(shown), "more": more})
    page_urls = paged_urls(_tag_page_url(slug), len(entries))
    found = []
    for number, url in enumerate(page_urls, start=1):
        crumbs = ((HOME, urls.HOME_URL), (Label("page.tags"), urls.tags_url()),
                  (f"#{name}", page_urls[0] if number > 1 else None))
        context = {"tag": name, "total": len(entries), "pager": Pager(number, page_urls).context(),
                   "notes": entries[(number - 1) * LIST_PAGE:number * LIST_PAGE]}
        found.append(Page(url, "tag.html", "tag", f"#{name}", context, crumbs))
    return found


def tags_page(groups: dict[str, tuple[str, list[NoteInfo]]]) -> Page:
    """``/tags/``: every tag with its number of notes."""
    index = [{"name": name, "url": _tag_page_url(slug), "count": len(notes)}
             for slug, (name, notes) in sorted(groups.items(), key=lambda kv: fold(kv[1][0]))]
    return Page(urls.tags_url(), "tags.html", "tags", Label("page.tags"), {"tags": index},
                ((HOME, urls.HOME_URL), (Label("page.tags"), None)))


# ---------------------------------------------------------------- home and fixed pages


def recent_key(note: NoteInfo) -> tuple[str, str]:
    """What orders "Recently changed" (latest first)."""
    return note.updated_at, note.key


def recent_notes(notes: list[NoteInfo]) -> list[NoteInfo]:
    """The :data:`RECENT_NOTES` notes the home page lists as recently changed, in its order."""
    return heapq.nlargest(RECENT_NOTES, notes, key=recent_key)


def recent_item(note: NoteInfo) -> dict[str, str]:
    """What the home page shows of a recently changed note."""
    return {"url": note.url, "title": note.title, "source_id": note.source_id, "changed": note.changed}


def home_page(sources: list[tuple[str, str]], notes: list[NoteInfo],
              groups: dict[str, tuple[str, list[NoteInfo]]], broken: int, recent: list[NoteInfo]) -> Page:
    """Sources, recently changed notes (``recent``, see :func:`recent_notes`), the most used tags and
    the number of broken links."""
    counts = Counter(n.source_id for n in notes)
    top = sorted(groups.items(), key=lambda kv: (-len(kv[1][1]), fold(kv[1][0])))[:HOME_TAGS]
    context = {
        "sources": [{"id": sid, "kind": kind, "url": urls.toc_url(sid), "count": counts[sid],
                     "graph_url": urls.graph_url(sid)} for sid, kind in sources],
        "recent": [recent_item(n) for n in recent],
        "tags": [{"name": name, "url": _tag_page_url(slug), "count": len(members)}
                 for slug, (name, members) in sorted(top, key=lambda kv: fold(kv[1][0]))],
        "more_tags": len(groups) > HOME_TAGS, "tag_count": len(groups),
        "broken": broken, "broken_url": urls.BROKEN_LINKS_URL,
    }
    return home_with(context)


def home_with(context: dict[str, Any]) -> Page:
    """The home page showing ``context`` (see :func:`home_page`)."""
    return Page(urls.HOME_URL, "home.html", "home", HOME, context)


def broken_links_pages(notes: list[NoteInfo], entries: Entries) -> list[Page]:
    """``/broken-links.html``: per source, every note with broken links → each link's line and target
    (and why it leads nowhere); :data:`LIST_PAGE` notes a page (``broken-links-2.html``, …)."""
    found: list[tuple[str, dict[str, Any]]] = []
    total = 0
    counts: dict[str, int] = {}
    for note in notes:  # in source and path order, as the index lists them
        entry = entries.get(note.key)
        broken = entry.get("broken") if entry else None
        if broken:
            total += len(broken)
            counts[note.source_id] = counts.get(note.source_id, 0) + len(broken)
            found.append((note.source_id, {"title": note.title, "url": note.url, "path": note.path,
                                           "links": [{"line": line, "reason": reason} for line, reason in broken]}))
    page_urls = paged_urls(urls.BROKEN_LINKS_URL, len(found))
    made = []
    for number, url in enumerate(page_urls, start=1):
        sources: dict[str, list[dict[str, Any]]] = {}
        for sid, shown in found[(number - 1) * LIST_PAGE:number * LIST_PAGE]:
            sources.setdefault(sid, []).append(shown)
        context = {"sources": [{"id": sid, "notes": shown, "count": counts[sid]} for sid, shown in sources.items()],
                   "total": total, "note_total": len(found), "pager": Pager(number, page_urls).context()}
        crumbs = ((HOME, urls.HOME_URL), (Label("page.broken"), page_urls[0] if number > 1 else None))
        made.append(Page(url, "broken.html", "broken", Label("page.broken"), context, crumbs))
    return made


def graph_page(source_id: str, svg: str, stats: dict[str, Any]) -> Page:
    """``/graph-<source>.html``: the source's notes and their links (``svg``) with the figures behind it."""
    context = {"source_id": source_id, "svg": svg, "toc_url": urls.toc_url(source_id), **stats,
               "nav": nav_context(source_id)}
    crumbs = ((HOME, urls.HOME_URL), (source_id, urls.toc_url(source_id)), (Label("page.graph"), None))
    return Page(urls.graph_url(source_id), "graph.html", "graph", Label("page.graph_of", (("source", source_id),)),
                context, crumbs)


def fixed_pages() -> list[Page]:
    return [Page(urls.SEARCH_URL, "search.html", "search", Label("page.search"), {},
                 ((HOME, urls.HOME_URL), (Label("page.search"), None))),
            Page(urls.NOT_FOUND_URL, "404.html", "404", Label("page.not_found"), {})]


# Locations and bytes in one sitemap file: past either the sitemap is an index of files (the protocol allows
# 50,000 and 50 MB; a page's address percent-encodes its letters with diacritics, three bytes each, so the
# bytes are bounded too).
SITEMAP_URLS = 20_000
SITEMAP_BYTES = 1_000_000


def sitemaps(page_urls: list[str]) -> list[tuple[str, str]]:
    """``sitemap.xml`` with root-relative locations (the config has no public base URL), as (URL, text): one
    file, or, past :data:`SITEMAP_URLS` locations or :data:`SITEMAP_BYTES`, an index of ``sitemap-1.xml``,
    ``sitemap-2.xml``, … (the sitemaps protocol's own way to split; the files sit beside the index, as the
    protocol asks)."""

    def escape(url: str) -> str:  # as xml.sax.saxutils.escape, without importing urllib.request
        return url.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    chunks: list[list[str]] = [[]]
    size = 0
    for url in sorted(page_urls):
        line = f"  <url><loc>/{escape(url)}</loc></url>"
        if chunks[-1] and (len(chunks[-1]) >= SITEMAP_URLS or size + len(line) + 1 > SITEMAP_BYTES - 200):
            chunks.append([])
            size = 0
        chunks[-1].append(line)
        size += len(line) + 1  # the addresses are ASCII (percent-encoded)

    def urlset(chunk: list[str]) -> str:
        lines = ['<?xml version="1.0" encoding="UTF-8"?>',
                 '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">', *chunk, "</urlset>"]
        return "\n".join(lines) + "\n"

    if len(chunks) == 1:
        return [(urls.SITEMAP_URL, urlset(chunks[0]))]
    parts = [(urls.sitemap_part_url(number), urlset(chunk)) for number, chunk in enumerate(chunks, start=1)]
    index = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    index += [f"  <sitemap><loc>/{url}</loc></sitemap>" for url, _ in parts]
    index.append("</sitemapindex>")
    return [(urls.SITEMAP_URL, "\n".join(index) + "\n"), *parts]
