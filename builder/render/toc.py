"""A source's table of contents: every folder and every note, each note's headings as deep links,
folders collapsible with plain ``<details>`` (a filter box narrows it, ``static/toc.js``).

What a reader downloads must not grow with the source: the folder tree is cut into pieces of about
:data:`TOC_ENTRIES` entries (:func:`partition`, which the navigation tree, :mod:`builder.render.tree`,
uses too). The page (``<source>/index.html``) is the root piece; every other piece is a script
(``static/toc/<source>/<id>.js``) that ``static/toc.js`` loads when its folder is opened, and a folder's
notes past a piece's worth come in continuation pieces. Each piece is fingerprinted by what it shows, so
an edit rewrites the piece that shows the note.

Pieces hold many notes, so they are never rendered whole again for one edit: the list of each
folder's own notes is a fragment, rendered once and kept in
``<site>/.render-cache/toc/<source>/<fingerprint>.frag``, named by a hash of everything it shows;
a render reads the fragments it already has, renders the few that changed and joins them inside a
small skeleton of folders. A fragment file is written atomically and named by its inputs, so a
render killed at any point leaves only correct fragments (and perhaps unused ones, deleted by the
next render that assembles the page). The skeleton is rendered with a marker where each folder's
list goes and the page is joined as bytes (:func:`splice`): the templates joining the fragments
themselves copied the whole page once per level of folders (docs/BENCHMARKS.md has what that cost).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from builder.core import urls
from builder.core.slug import fold
from builder.core.templates import Label, Page, Templates
from builder.core.atomic import write_atomic
from builder.render.output import CACHE_DIR, Output
from builder.render.pages import NoteInfo, nav_context
from builder.render.manifest import sha

_MARK = "<!--notes-portal fragment {}-->"  # where a folder's note list goes (see splice)
_FRAGMENT_MARK = re.compile(r"<!--notes-portal fragment ([0-9a-f]+)-->")
OPEN_MAX = 300  # a source with at most this many notes shows every folder open; a bigger one, closed
FRAGMENT_TEMPLATE = "toc_notes.html"
PART_TEMPLATE = "toc_part.html"
TOC_CALLBACK = "notesPortalToc"
# Notes and folders one piece of a table of contents lists (about 0.8 kB a note with its headings): a bigger
# source's page holds its top folders and what fits, the rest loads folder by folder when opened
# (static/toc.js), so that no file grows with the source.
TOC_ENTRIES = 500


@dataclass
class Folder:
    """One folder of a source (``path`` ``""``: its root) with its own notes and its subfolders."""

    path: str
    notes: list[NoteInfo] = field(default_factory=list)
    children: list[Folder] = field(default_factory=list)
    count: int = 0  # notes in it and below

    @property
    def name(self) -> str:
        return self.path.rpartition("/")[2]


def folder_tree(notes: list[NoteInfo]) -> Folder:
    """The folders of ``notes`` (any order) as a tree, each folder's notes and subfolders by path."""
    root = Folder("")
    folders = {"": root}
    for note in sorted(notes, key=lambda n: n.path):
        path = note.folder
        if path not in folders:
            parts = path.split("/")
            for depth in range(1, len(parts) + 1):
                prefix = "/".join(parts[:depth])
                if prefix not in folders:
                    folders[prefix] = Folder(prefix)
                    folders["/".join(parts[:depth - 1])].children.append(folders[prefix])
        folders[path].notes.append(note)
    for folder in sorted(folders.values(), key=lambda f: -f.path.count("/") if f.path else 1):
        folder.children.sort(key=lambda f: f.path)
        folder.count = len(folder.notes) + sum(child.count for child in folder.children)
    return root


def folders_depth_first(folder: Folder) -> list[Folder]:
    """``folder`` and every folder below it, depth first."""
    found: list[Folder] = []
    stack = [folder]
    while stack:
        folder = stack.pop()
        found.append(folder)
        stack.extend(reversed(folder.children))
    return found


def part_id(folder_path: str) -> str:
    """The name of the piece that holds ``folder_path`` (a path within its source) when it loads on its own."""
    return hashlib.sha1(folder_path.encode("utf-8", "surrogateescape")).hexdigest()[:16]


@dataclass(frozen=True)
class Part:
    """One piece of a big source's folder tree that a reader's browser loads on its own (the navigation tree's
    scripts, :mod:`builder.render.tree`, and the table of contents' parts, here).

    ``folder`` with its first ``entries`` notes and every subfolder; of those, the ones in ``inlined`` come with
    their contents (by the same rule, breadth first, while the piece has room), the others are pieces of their
    own. A continuation (``start`` > 0) lists only ``folder``'s notes from ``start``. A folder with more notes
    than a piece holds names its next piece, ``<id>-2``, ``<id>-3``, … (:func:`more_of`)."""

    id: str | None  # None: the root, which every reader loads
    folder: Folder
    start: int = 0
    inlined: frozenset[str] = frozenset()


def partition(root: Folder, entries: int) -> list[Part]:
    """``root``'s tree in pieces of about ``entries`` entries (notes and folders), the root first. A piece
    lists its folder's notes (up to ``entries``) and subfolders whatever their number, then brings the
    contents of its subfolders while they fit."""
    found: list[Part] = []
    pending: list[tuple[Folder, str | None]] = [(root, None)]
    while pending:
        folder, pid = pending.pop()
        left = entries - _cost(folder, entries)
        inlined: set[str] = set()
        queue = deque([folder])
        while queue:
            for child in queue.popleft().children:
                if _cost(child, entries) <= left:
                    left -= _cost(child, entries)
                    inlined.add(child.path)
                    queue.append(child)
                else:
                    pending.append((child, part_id(child.path)))
        found.append(Part(pid, folder, 0, frozenset(inlined)))
    for folder in folders_depth_first(root):
        found += [Part(f"{part_id(folder.path)}-{start // entries + 1}", folder, start)
                  for start in range(entries, len(folder.notes), entries)]
    return found


def shown_folders(part: Part) -> list[Folder]:
    """``part``'s folder and the folders inlined in it, depth first: ``folders_depth_first(part.folder)`` with
    only the inlined, without walking the others' subtrees (an inlined folder's parent is the piece's folder or
    inlined, :func:`partition`)."""
    found = [part.folder]
    stack = list(reversed(part.folder.children))
    while stack:
        folder = stack.pop()
        if folder.path in part.inlined:
            found.append(folder)
            stack.extend(reversed(folder.children))
    return found


def _cost(folder: Folder, entries: int) -> int:
    """The entries a folder's piece lists of it: its notes (up to a piece's worth) and its subfolders."""
    return min(len(folder.notes), entries) + len(folder.children)


def more_of(folder: Folder, start: int, entries: int) -> str | None:
    """The piece with ``folder``'s notes after the ``entries`` shown from ``start``, or None."""
    after = start + entries
    return f"{part_id(folder.path)}-{after // entries + 1}" if after < len(folder.notes) else None


class Fragments:
    """The rendered note lists of one source's folders, kept between renders in the site's cache."""

    def __init__(self, site: Path, source_id: str) -> None:
        self.dir = site / CACHE_DIR / "toc" / source_id
        self.used: set[str] = set()

    def get(self, fingerprint: str, make: Callable[[], str]) -> bytes:
        """The fragment named ``fingerprint`` (UTF-8): read from the cache, else made by ``make`` and kept."""
        self.used.add(fingerprint)
        path = self.dir / f"{fingerprint}.frag"
        try:
            data = path.read_bytes()
            data.decode("utf-8")  # a damaged file is made again
            return data
        except (OSError, UnicodeDecodeError):
            data = make().encode("utf-8")
            self.dir.mkdir(parents=True, exist_ok=True)
            write_atomic(path, data)
            return data

    def prune(self) -> None:
        """Delete the fragments this page no longer uses (other renderers' included)."""
        try:
            names = os.listdir(self.dir)
        except OSError:
            return
        for name in names:
            if name.removesuffix(".frag") not in self.used:
                (self.dir / name).unlink(missing_ok=True)


def prune_sources(site: Path, source_ids: set[str]) -> None:
    """Forget the fragments of sources that left the config."""
    base = site / CACHE_DIR / "toc"
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if name not in source_ids:
            for leftover in (base / name).glob("*"):
                leftover.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                (base / name).rmdir()


def fragment_context(source_id: str, notes: list[NoteInfo]) -> dict[str, Any]:
    """What a folder's fragment shows of its notes; links relative to the table of contents, which
    is ``<source>/index.html``."""
    prefix = f"{source_id}/"
    entries = []
    for note in notes:
        headings = note.headings
        title = fold(note.title) if any(h.level == 1 for h in headings) else ""
        entries.append({
            "href": note.url.removeprefix(prefix), "title": note.title, "file": note.path.rpartition("/")[2],
            "tags": [(tag, f"../{urls.tag_url(tag)}") for tag in note.tags],
            "headings": [(h.level, h.text, h.anchor) for h in headings
                         if h.level <= 3 and not (h.level == 1 and fold(h.text) == title)],
        })
    return {"notes": entries}


@dataclass(frozen=True)
class Piece:
    """One file of a table of contents: a :class:`Part` of the folder tree, where it is written and the
    fingerprint of what it shows."""

    part: Part
    url: str
    fingerprint: str


@dataclass(frozen=True)
class TocPlan:
    """A source's table of contents before it is assembled: its pieces with their fingerprints, and the
    fingerprint of each folder's note lists (one fragment per :data:`TOC_ENTRIES` notes)."""

    url: str
    pieces: tuple[Piece, ...]  # the page itself first
    root: Folder
    folder_fps: dict[str, tuple[str, ...]]  # folder path → the fingerprints of its note lists' fragments
    entries: int  # notes of one fragment, entries of one piece

    @property
    def fingerprint(self) -> str:
        return self.pieces[0].fingerprint

    @cached_property
    def lists(self) -> dict[str, tuple[Folder, int]]:
        """Each note list's fragment fingerprint → its folder and the list's number in it (see :func:`splice`)."""
        return {fp: (folder, number) for folder in folders_depth_first(self.root) if folder.notes
                for number, fp in enumerate(self.folder_fps[folder.path])}


def plan(env_fp: str, source_id: str, kind: str, notes: list[NoteInfo], entry_digests: dict[str, str],
         entries: int | None = None) -> TocPlan:
    """Fingerprint the pieces from their inputs: each of their folders' notes (title, tags, headings: each
    note's ``sha(note.toc_entry)``, kept in its manifest entry, by key in ``entry_digests``) and shape.
    ``entries``: a piece's size, :data:`TOC_ENTRIES` unless given."""
    entries = entries or TOC_ENTRIES
    root = folder_tree(notes)
    folder_fps = {f.path: tuple(sha(env_fp, "toc", source_id, f.path, str(start),
                                    *(entry_digests[n.key] for n in f.notes[start:start + entries]))
                                for start in range(0, len(f.notes), entries))
                  for f in folders_depth_first(root) if f.notes}
    opened = str(len(notes) <= OPEN_MAX)
    found: list[Piece] = []
    for part in partition(root, entries):
        shown = shown_folders(part)
        shape = [f"{f.path}\x1f{f.count}\x1f{len(f.notes)}\x1f" + "\x1f".join(c.path for c in f.children)
                 for f in shown]
        lists = [folder_fps[f.path][part.start // entries if f is part.folder else 0] for f in shown if f.notes]
        url = urls.toc_url(source_id) if part.id is None else urls.toc_part_url(source_id, part.id)
        found.append(Piece(part, url, sha(env_fp, "toc-part", source_id, kind, opened, str(part.id), str(part.start),
                                          *shape, *lists)))
    return TocPlan(urls.toc_url(source_id), tuple(found), root, folder_fps, entries)


def _toc_node(toc: TocPlan, part: Part, folder: Folder, lone: bool = False) -> dict[str, Any]:
    """What ``part`` shows of ``folder`` (its own folder, or one inlined in it): a marker for its note list
    (see :func:`splice`), the piece with its next notes, and its subfolders, each inlined or a piece's id."""
    entries = toc.entries
    start = part.start if folder is part.folder else 0
    fps = toc.folder_fps.get(folder.path, ())
    notes_html = _MARK.format(fps[start // entries]) if folder.notes else ""
    # a folder alone beside nothing (``pages/`` holding a whole Grav wiki) is open: a click that
    # shows nothing new would be the first thing every visit asks for
    alone = len(folder.children) == 1 and not folder.notes
    children = [] if start else folder.children
    return {"path": folder.path, "name": folder.name, "anchor": urls.dir_anchor(folder.path), "count": folder.count,
            "notes_html": notes_html, "lone": lone, "more": more_of(folder, start, entries) if folder.notes else None,
            "part": None,
            "children": [_toc_node(toc, part, c, alone) if c.path in part.inlined
                         else {"path": c.path, "name": c.name, "anchor": urls.dir_anchor(c.path), "count": c.count,
                               "part": part_id(c.path), "lone": False, "children": [], "notes_html": "", "more": None}
                         for c in children]}


def toc_page(source_id: str, kind: str, toc: TocPlan) -> Page:
    """The page's skeleton (its root piece): each folder's note list is a marker that :func:`splice`
    replaces."""
    part = toc.pieces[0].part
    tree = _toc_node(toc, part, toc.root)
    tree["name"] = source_id
    context = {"source_id": source_id, "kind": kind, "note_count": toc.root.count,
               "folder_count": len(toc.folder_fps), "open": toc.root.count <= OPEN_MAX, "tree": tree,
               "parts": urls.toc_dir(source_id), "graph_url": urls.graph_url(source_id),
               "nav": nav_context(source_id)}
    crumbs = ((Label("page.home"), urls.HOME_URL), (source_id, None))
    return Page(toc.url, "toc.html", "toc", source_id, context, crumbs)


def splice(skeleton: str, toc: TocPlan, fragments: Fragments, render_fragment: Callable[[Folder, int], str]) -> bytes:
    """The piece as UTF-8: ``skeleton`` with each note list's marker replaced by its fragment from
    ``fragments`` (made by ``render_fragment(folder, start)`` when missing)."""
    pieces = _FRAGMENT_MARK.split(skeleton)  # text, fingerprint, text, …

    def fragment(fp: str) -> bytes:
        folder, number = toc.lists[fp]
        return fragments.get(fp, partial(render_fragment, folder, number * toc.entries))

    return b"".join(piece.encode("utf-8") if i % 2 == 0 else fragment(piece) for i, piece in enumerate(pieces))


def part_script(part_id_: str, html: bytes) -> str:
    """The script of one piece of a table of contents: hands its HTML to ``static/toc.js``."""
    data = json.dumps(html.decode("utf-8"), ensure_ascii=False)
    data = data.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")  # line ends in old JavaScript
    return f"{TOC_CALLBACK}({json.dumps(part_id_)},{data});\n"


def write_page(out: Output, templates: Templates, built_at: str, toc: TocPlan, source_id: str, kind: str) -> None:
    """Write the table of contents ``toc`` (see :func:`plan`): each piece whose file on disk lacks its
    fingerprint, a skeleton around the folders' fragments, of which only new ones are rendered."""
    fragments = Fragments(out.site, source_id)
    wanted = [(piece.part, piece.url) for piece in toc.pieces if out.wants(piece.url, piece.fingerprint)]

    def render_fragment(folder: Folder, start: int) -> str:
        shown = folder.notes[start:start + toc.entries]
        return templates.fragment(FRAGMENT_TEMPLATE, **fragment_context(source_id, shown))

    for part, url in wanted:
        if part.id is None:
            out.write(url, splice(templates.render(toc_page(source_id, kind, toc), built_at), toc, fragments,
                                  render_fragment))
            continue
        node = _toc_node(toc, part, part.folder)
        skeleton = templates.fragment(PART_TEMPLATE, node=node, open=toc.root.count <= OPEN_MAX)
        out.write(url, part_script(part.id, splice(skeleton, toc, fragments, render_fragment)))
    if wanted:
        for fps in toc.folder_fps.values():
            fragments.used.update(fps)
        fragments.prune()
