"""A source's table of contents: one page with every folder and every note, each note's headings as
deep links, folders collapsible with plain ``<details>`` (a filter box narrows it, ``static/toc.js``).

The page of a big source is large (about 0.6 kB per note), so it is never rendered whole again for
one edit: the list of each folder's own notes is a fragment, rendered once and kept in
``<site>/.render-cache/toc/<source>/<fingerprint>.frag``, named by a hash of everything it shows;
a render reads the fragments it already has, renders the few that changed and joins them inside a
small skeleton of folders. A fragment file is written atomically and named by its inputs, so a
render killed at any point leaves only correct fragments (and perhaps unused ones, deleted by the
next render that assembles the page). The skeleton is rendered with a marker where each folder's
list goes and the page is joined as bytes (:func:`splice`): the templates joining the fragments
themselves copied the whole page once per level of folders (270 ms of the 340 ms a 6 MB page took).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from builder.core import urls
from builder.core.slug import fold
from builder.core.templates import Label, Page, Templates
from builder.atomic import write_atomic
from builder.render.output import CACHE_DIR, Output
from builder.render.pages import NoteInfo, nav_context
from builder.render.manifest import sha

_MARK = "<!--notes-portal fragment {}-->"  # where a folder's note list goes (see splice)
_FRAGMENT_MARK = re.compile(r"<!--notes-portal fragment ([0-9a-f]+)-->")
OPEN_MAX = 300  # a source with at most this many notes shows every folder open; a bigger one, closed
FRAGMENT_TEMPLATE = "toc_notes.html"


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
    found = [folder]
    for child in folder.children:
        found.extend(folders_depth_first(child))
    return found


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
        title = fold(note.title) if any(h.level == 1 for h in note.headings) else ""
        entries.append({
            "href": note.url.removeprefix(prefix), "title": note.title, "file": note.path.rpartition("/")[2],
            "tags": [(tag, f"../{urls.tag_url(tag)}") for tag in note.tags],
            "headings": [(h.level, h.text, h.anchor) for h in note.headings
                         if h.level <= 3 and not (h.level == 1 and fold(h.text) == title)],
        })
    return {"notes": entries}


@dataclass(frozen=True)
class TocPlan:
    """A source's table of contents before it is assembled: its fingerprint and how to build it."""

    url: str
    fingerprint: str
    root: Folder
    folder_fps: dict[str, str]  # folder path → the fingerprint of its fragment


def plan(env_fp: str, source_id: str, kind: str, notes: list[NoteInfo], entry_digests: dict[str, str]) -> TocPlan:
    """Fingerprint the page from its inputs: every folder's notes (title, tags, headings: each note's
    ``sha(note.toc_entry)``, kept in its manifest entry, by key in ``entry_digests``) and shape."""
    root = folder_tree(notes)
    folder_fps = {f.path: sha(env_fp, "toc", source_id, f.path, *(entry_digests[n.key] for n in f.notes))
                  for f in folders_depth_first(root) if f.notes}
    shape = [f"{f.path}\x1f{f.count}" for f in folders_depth_first(root)]
    fingerprint = sha(env_fp, "toc-page", source_id, kind, str(len(notes) <= OPEN_MAX), *shape,
                      *folder_fps.values())
    return TocPlan(urls.toc_url(source_id), fingerprint, root, folder_fps)


def toc_page(source_id: str, kind: str, toc: TocPlan) -> Page:
    """The page's skeleton: each folder's note list is a marker that :func:`splice` replaces."""

    def node(folder: Folder, lone: bool = False) -> dict[str, Any]:
        notes_html = _MARK.format(toc.folder_fps[folder.path]) if folder.notes else ""
        # a folder alone beside nothing (``pages/`` holding a whole Grav wiki) is open: a click that
        # shows nothing new would be the first thing every visit asks for
        alone = len(folder.children) == 1 and not folder.notes
        return {"path": folder.path, "name": folder.name or source_id, "anchor": urls.dir_anchor(folder.path),
                "count": folder.count, "notes_html": notes_html, "lone": lone,
                "children": [node(c, alone) for c in folder.children]}

    tree = node(toc.root)
    context = {"source_id": source_id, "kind": kind, "note_count": toc.root.count,
               "folder_count": len(toc.folder_fps), "open": toc.root.count <= OPEN_MAX, "tree": tree,
               "graph_url": urls.graph_url(source_id), "nav": nav_context(source_id)}
    crumbs = ((Label("page.home"), urls.HOME_URL), (source_id, None))
    return Page(toc.url, "toc.html", "toc", source_id, context, crumbs)


def splice(skeleton: str, toc: TocPlan, fragments: Fragments, render_fragment: Callable[[Folder], str]) -> bytes:
    """The page as UTF-8: ``skeleton`` (the rendered :func:`toc_page`) with each folder's marker
    replaced by its note list from ``fragments`` (made by ``render_fragment`` when missing)."""
    folders = {toc.folder_fps[f.path]: f for f in folders_depth_first(toc.root) if f.notes}
    pieces = _FRAGMENT_MARK.split(skeleton)  # text, fingerprint, text, …
    return b"".join(piece.encode("utf-8") if i % 2 == 0
                    else fragments.get(piece, partial(render_fragment, folders[piece]))
                    for i, piece in enumerate(pieces))


def write_page(out: Output, templates: Templates, built_at: str, toc: TocPlan, source_id: str, kind: str) -> None:
    """Write the table of contents ``toc`` (see :func:`plan`) unless the page on disk has its
    fingerprint: a skeleton around the folders' fragments, of which only new ones are rendered."""
    if out.wants(toc.url, toc.fingerprint):
        fragments = Fragments(out.site, source_id)
        skeleton = templates.render(toc_page(source_id, kind, toc), built_at)
        out.write(toc.url, splice(skeleton, toc, fragments, lambda folder: templates.fragment(
            FRAGMENT_TEMPLATE, **fragment_context(source_id, folder.notes))))
        fragments.prune()
