"""Where a link in a note points: another note's page, an attachment, the outside world, or nowhere.

Resolution is a pure function of the published notes (and, for attachments, of
the files next to them), so it can run before any page is rendered: the
renderer uses it to write hrefs, the incremental build to notice that a link
of an unchanged note now lands elsewhere (a note appeared, moved or vanished).

Rules, in order, for ``[text](target)`` and ``![alt](target)``:
- ``#frag`` and empty targets stay on the page; ``scheme:`` and ``//host`` are external;
- a path is relative to the note's folder, or to the source root when it starts with ``/``;
  a path that leaves the source root is broken;
- a published note (``x.md``, or ``x`` meaning ``x.md``) → its page, ``#Fragment`` mapped onto
  the heading anchors; a folder → its page (``index.md``/``README.md``, or its only note;
  ordering prefixes such as Grav's ``01.`` may be left out);
- any other regular file inside the source's scope (its real path too, when it is reached through
  a symlink) → copied next to the pages when its type is on the allowlist of
  :mod:`builder.core.filetypes` (never markup or scripts, which would run inside the portal);
- else broken.
``[[name#frag|label]]`` looks ``name`` up as a path, then by file name (same folder first),
then by title, all within the note's own source.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from builder.core import filetypes, urls
from builder.core.messages import text as say
from builder.core.slug import NON_WORD, slugify
from builder.notes.sources import Scope, matches

_MARKS = re.compile("[\u0300-\u034e\u0350-\u036f]")  # combining diacritics (U+034F joins, it is no mark)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_FRAGMENT_SAFE = "-._~!$&'()*+,;=:@/?"
_ORDER_PREFIX = re.compile(r"^\d+\.")
_DIR_PAGES = ("index.md", "readme.md", "_index.md")
# Grav keeps its pages under ``pages/`` and links them by route from there, each folder without its
# ordering prefix (``/zkt/cvicenia/desktop`` is ``pages/05.zkt/cvicenia/01.desktop/item.md``): an
# absolute link that names no note of the source is looked for there too.
GRAV_PAGES = "pages"


@dataclass(frozen=True)
class Link:
    """The outcome of resolving one link; ``url`` is site-relative (notes, attachments) or verbatim."""

    kind: str  # note | attachment | external | anchor | broken
    url: str = ""
    target: str = ""  # note: the target's path; attachment: the file's path (both in this source)
    reason: str = ""  # broken: why, for the page tooltip and the log

    def as_list(self) -> StoredLink:
        return [self.kind, self.url, self.target, self.reason]


# A Link as the render manifest keeps it (:meth:`Link.as_list`): the manifest is marshal, which holds lists,
# not records, and a big render reads 10^5 of them; its fields are read by these positions, never by number.
StoredLink = list[str]
LINK_KIND, LINK_URL, LINK_TARGET = 0, 1, 2


# The lookup tables of wikilinks (:attr:`SourceNotes.by_stem`, :attr:`SourceNotes.by_title`): a slug → the paths
# it names. A one-note render keeps those it built (:meth:`SourceNotes.built_here`) for the next one of the same notes.
WIKI_TABLES = ("by_stem", "by_title")
WikiTable = dict[str, tuple[str, ...]]


class SourceNotes:
    """What link resolution needs to know about one source's published notes. The lookup tables
    are built on first use: most builds resolve a handful of links by exact path."""

    def __init__(self, source_id: str, root: Path, scope: Scope, notes: list[tuple[str, str]],
                 anchors: Callable[[str], Collection[str]],
                 kept: Callable[[str], WikiTable | None] | None = None) -> None:
        """``kept``: a wikilink table by name (:data:`WIKI_TABLES`) as a render of these same notes built it, or
        None (then it is built here)."""
        self.source_id, self.root, self.scope = source_id, root, scope
        self.notes = notes  # (path, title)
        self.titles = dict(notes)
        self.anchors = anchors  # path → the note's heading anchors (asked only for a #fragment)
        self._kept = kept
        self._built: set[str] = set()

    def built_here(self) -> dict[str, WikiTable]:
        """The wikilink tables built here so far (not given by ``kept``), by name."""
        return {name: self.__dict__[name] for name in WIKI_TABLES if name in self._built}

    @cached_property
    def real_root(self) -> str:
        return os.path.realpath(self.root)

    @cached_property
    def by_stem(self) -> WikiTable:
        """Slug of the file name without ``.md`` → paths."""
        return self._wiki_table("by_stem", lambda: (
            (_key(posixpath.splitext(posixpath.basename(p))[0]), p) for p, _ in self.notes))

    @cached_property
    def by_title(self) -> WikiTable:
        """Slug of the title → paths."""
        return self._wiki_table("by_title", lambda: ((_key(title), p) for p, title in self.notes))

    def _wiki_table(self, name: str, pairs: Callable[[], Iterable[tuple[str, str]]]) -> WikiTable:
        """The wikilink table ``name`` as ``kept`` gives it, else grouped from its (slug, path) ``pairs``."""
        kept = self._kept(name) if self._kept is not None else None
        if kept is not None:
            return kept
        self._built.add(name)
        return _grouped(pairs())

    @cached_property
    def lower_paths(self) -> dict[str, str]:
        return {p.lower(): p for p, _ in self.notes}

    @cached_property
    def dir_pages(self) -> dict[str, str]:
        """Folder (as written, and without ordering prefixes) → the note that is its page."""
        folders: dict[str, list[str]] = {}
        for path, _ in self.notes:
            folders.setdefault(posixpath.dirname(path), []).append(path)
        pages: dict[str, str] = {}
        for folder, paths in sorted(folders.items()):
            page = _folder_page(paths)
            if page is not None:
                pages.setdefault(folder, page)
                pages.setdefault(_without_order(folder), page)
        return pages


def _key(text: str) -> str:
    """``slugify(text, fallback="")``, faster (each title is slugged when a wikilink is not a file
    name). Same result: folding ASCII only lowercases; when decomposing leaves ASCII letters and
    combining diacritics (Czech, Slovak, German, French …), folding only drops the diacritics."""
    folded = text.lower()
    if not folded.isascii():
        folded = _MARKS.sub("", unicodedata.normalize("NFKD", folded))
        if not folded.isascii():  # other letters (ß, ø, Cyrillic …): slugify knows them
            return slugify(text, fallback="")
    return NON_WORD.sub("-", folded).strip("-")[:80].rstrip("-")


def _grouped(pairs: Any) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for key, path in pairs:
        if key:
            out.setdefault(key, []).append(path)
    return {k: tuple(v) for k, v in out.items()}


def _folder_page(paths: list[str]) -> str | None:
    names = {posixpath.basename(p).lower(): p for p in paths}
    for name in _DIR_PAGES:
        if name in names:
            return names[name]
    return paths[0] if len(paths) == 1 else None


def _without_order(folder: str) -> str:
    return "/".join(_ORDER_PREFIX.sub("", part) for part in folder.split("/")) if folder else folder


class Resolver:
    """Resolves links for every note of the site; remembers answers within one build."""

    def __init__(self, sources: dict[str, SourceNotes]) -> None:
        self.sources = sources
        self._memo: dict[tuple[str, str, str, str], Link] = {}

    def resolve(self, source_id: str, from_path: str, kind: str, raw: str) -> Link:
        """``kind`` is ``link`` (markdown link), ``image`` or ``wiki`` (``name#frag`` of a wikilink)."""
        key = (source_id, posixpath.dirname(from_path), kind, raw)
        if key not in self._memo:
            src = self.sources[source_id]
            self._memo[key] = (_wiki(src, from_path, raw) if kind == "wiki"
                               else _resolve_href(src, from_path, raw, image=kind == "image"))
        return self._memo[key]

    def still_broken(self, source_id: str, from_path: str, raw: str, before: list[str]) -> bool:
        """Does a markdown link or image that :meth:`resolve` found broken (``before``, its
        :meth:`Link.as_list`) stay broken for the same reason, the published notes being the
        same? Yes when it leaves the source, or when no note answered it and its path still
        holds no file: decided by one ``stat``, without the lookup tables over every note that
        :meth:`resolve` builds (they cost more than the rest of a one-note render)."""
        raw = raw.strip()
        if before == _outside(raw).as_list():
            return True
        if before != _missing(raw).as_list():
            return False  # a file was there (not published, or not safe): look again
        joined = _joined(from_path, raw.partition("#")[0])
        return joined is not None and not os.path.isfile(os.path.join(self.sources[source_id].root, joined))

    def file_of(self, source_id: str, from_path: str, raw: str, resolved: StoredLink) -> str | None:
        """The file a markdown link or image to a file depends on: the attachment it resolved to
        (``resolved``, its :meth:`Link.as_list`), else the path it names inside the source, where a
        missing one would be; None when it names the source's root or leaves it. What a build watches
        for a page whose links could change with no note changing. A string: a ``Path`` a link costs
        more than the ``stat`` the build then makes of it."""
        if resolved[LINK_KIND] == "attachment":
            return os.path.join(self.sources[source_id].root, resolved[LINK_TARGET])
        joined = _joined(from_path, raw.strip().partition("#")[0])
        return os.path.join(self.sources[source_id].root, joined) if joined else None


def _resolve_href(src: SourceNotes, from_path: str, raw: str, *, image: bool) -> Link:
    raw = raw.strip()
    if not raw or raw.startswith("#"):
        return Link("anchor", raw)
    if _SCHEME.match(raw) or raw.startswith("//"):
        return Link("external", raw)
    path_part, _, fragment = raw.partition("#")
    joined = _joined(from_path, path_part)
    if joined is None:
        return _outside(raw)
    note = _note_at(src, joined)
    if note is None and path_part.startswith("/"):
        note = _note_at(src, f"{GRAV_PAGES}/{joined}")  # a Grav route: /zkt/cvicenia/desktop
    if note is not None and not image:
        return _note_link(src, note, unquote(fragment))
    return _attachment(src, joined, raw)


def _joined(from_path: str, path_part: str) -> str | None:
    """The path (relative to the source root) that a link's path part names from the note at
    ``from_path``, or None when it leaves the source."""
    path_part = unquote(path_part.partition("?")[0])
    base = "" if path_part.startswith("/") else posixpath.dirname(from_path)
    joined = posixpath.normpath(posixpath.join(base, path_part.lstrip("/")))
    if joined == ".." or joined.startswith("../"):
        return None
    return "" if joined == "." else joined


def _outside(raw: str) -> Link:
    return Link("broken", reason=say("en", "broken.outside", raw=raw))


def _missing(raw: str) -> Link:
    return Link("broken", reason=say("en", "broken.missing", raw=raw))


def _note_at(src: SourceNotes, path: str) -> str | None:
    for candidate in (path, f"{path}.md"):
        if candidate in src.titles:
            return candidate
    found = src.lower_paths.get(path.lower()) or src.lower_paths.get(f"{path.lower()}.md")
    if found:
        return found
    folder = path.rstrip("/")
    return src.dir_pages.get(folder) or src.dir_pages.get(_without_order(folder))


def _note_link(src: SourceNotes, path: str, fragment: str) -> Link:
    anchors = src.anchors(path)
    if fragment and fragment not in anchors and slugify(fragment) in anchors:
        fragment = slugify(fragment)
    url = urls.note_url(src.source_id, path) + (f"#{quote(fragment, safe=_FRAGMENT_SAFE)}" if fragment else "")
    return Link("note", url, target=path)


def _attachment(src: SourceNotes, path: str, raw: str) -> Link:
    """A non-note file: only a regular file inside the scope, never hidden, never active content."""
    missing = _missing(raw)
    if not path or any(part.startswith(".") for part in path.split("/")):
        return missing
    try:
        target = os.path.join(src.root, path)
        if not os.path.isfile(target):  # one stat: every build asks again for each broken link
            return missing
        root, real = src.real_root, os.path.realpath(target)
        if os.path.commonpath([real, root]) != root:  # a link out of the source
            return missing
        real_rel = Path(os.path.relpath(real, root)).as_posix()
    except (OSError, ValueError):
        return missing
    for candidate in {path, real_rel}:  # the link as written, and what it really reads
        if any(part.startswith(".") for part in candidate.split("/")) or not src.scope.covers(candidate) \
                or any(matches(p, candidate) for p in src.scope.exclude):
            return missing
    if any(matches(p, path) for p in src.scope.include) or path.lower().endswith(".md"):
        return Link("broken", reason=say("en", "broken.unpublished", raw=raw))
    if not filetypes.published(real_rel) or not filetypes.published(path):
        return Link("broken", reason=f"{raw}: {filetypes.why_not_published(path)}")
    if filetypes.suffix_of(real_rel) == ".svg" or filetypes.suffix_of(path) == ".svg":
        try:
            with open(real, "rb") as handle:
                inert = filetypes.svg_is_inert(handle)
        except OSError:
            return missing
        if not inert:
            return Link("broken", reason=say("en", "broken.svg", raw=raw))
    return Link("attachment", urls.attachment_url(src.source_id, path), target=path)


def _wiki(src: SourceNotes, from_path: str, raw: str) -> Link:
    name, _, fragment = raw.strip().partition("#")
    name = name.strip()
    if not name:
        return Link("anchor", f"#{slugify(fragment)}" if fragment else "")
    path = _wiki_target(src, from_path, name)
    if path is None:
        return Link("broken", reason=say("en", "broken.wiki", raw=raw.strip()))
    return _note_link(src, path, fragment.strip())


def _wiki_target(src: SourceNotes, from_path: str, name: str) -> str | None:
    if "/" in name:
        for base in (posixpath.dirname(from_path), ""):
            joined = posixpath.normpath(posixpath.join(base, name.lstrip("/")))
            found = _note_at(src, joined)
            if found:
                return found
    key = _key(posixpath.basename(name).removesuffix(".md"))
    here = posixpath.dirname(from_path)
    for table in ("by_stem", "by_title"):  # titles are slugged only when no file name matches
        candidates: tuple[str, ...] = getattr(src, table).get(key, ())
        if candidates:
            same_dir = [p for p in candidates if posixpath.dirname(p) == here]
            return (same_dir or sorted(candidates, key=lambda p: (p.count("/"), p)))[0]
    return None


# ---------------------------------------------------------------- which links a note can answer

# A link's names (link_names) and a note's (note_names) are made by one set of rules from the lookups above: a note
# can answer a link only if they share a name (a path as _note_at looks it up, lower case and without ``.md``,
# its folder's and that folder's without ordering prefixes, as dir_pages keys it; the slug the wikilink tables key).
# Over-approximate by design: a shared name means "resolve it again", never "it moved".


def note_names(path: str, title: str) -> frozenset[str]:
    """The names under which a link can find the note at ``path`` titled ``title`` (see :func:`link_names`): a
    link that shares none resolves the same whether the note is there, or titled so, or not."""
    folder = posixpath.dirname(path)
    return frozenset({_path_name(path), _path_name(folder), _path_name(_without_order(folder)),
                      _wiki_name(posixpath.splitext(posixpath.basename(path))[0]), _wiki_name(title)})


def link_names(from_path: str, kind: str, raw: str) -> frozenset[str]:
    """The names of the notes that could answer a link of the note at ``from_path`` (``kind`` and ``raw`` as
    :meth:`Resolver.resolve` takes them); none for what no note answers (an image, an anchor, the outside)."""
    if kind == "image":
        return frozenset()  # an image is a file, never a note's page
    if kind == "wiki":
        name = raw.strip().partition("#")[0].strip()
        if not name:
            return frozenset()
        found = {_wiki_name(posixpath.basename(name).removesuffix(".md"))}
        if "/" in name:
            for base in (posixpath.dirname(from_path), ""):
                found |= _path_names(posixpath.normpath(posixpath.join(base, name.lstrip("/"))))
        return frozenset(found)
    raw = raw.strip()
    if not raw or raw.startswith("#") or _SCHEME.match(raw) or raw.startswith("//"):
        return frozenset()
    path_part = raw.partition("#")[0]
    joined = _joined(from_path, path_part)
    if joined is None:
        return frozenset()
    found = _path_names(joined)
    if path_part.startswith("/"):
        found |= _path_names(f"{GRAV_PAGES}/{joined}")
    return frozenset(found)


def _path_names(path: str) -> set[str]:
    """What :func:`_note_at` looks ``path`` up as: a note's path, a folder's (as written or without its ordering
    prefixes)."""
    folder = path.rstrip("/")
    return {_path_name(path), _path_name(folder), _path_name(_without_order(folder))}


def _path_name(path: str) -> str:
    return "p:" + path.lower().removesuffix(".md")


def _wiki_name(name: str) -> str:
    return "w:" + _key(name)
