"""The navigation tree: small scripts per source with its folders and its notes' titles, which
``static/nav.js`` turns into the collapsible tree beside every page, loading a folder's part when the
folder is opened.

Why separate files and not HTML in every page: the tree shows every note's title, so a page that
carried it would have to be rewritten whenever any note of its source is added, removed or
retitled; as files of their own, such a change rewrites one part and no page. Why scripts and not
JSON: a page opened from ``file://`` may load a script next to it but not fetch a file.

Why parts: what a page makes the browser download must not grow with the collection. The root part
(``static/tree/<source>.js``, :func:`builder.core.urls.tree_url`) holds the source's top folders and
as much below them as fits in :data:`PART_ENTRIES` entries (breadth first); a folder that does not fit
is a part of its own (``static/tree/<source>/<id>.js``, ``id`` a hash of the folder's path), loaded when
it is opened, with the same rule below it. A folder with more notes than a part holds lists the rest in
continuation parts (``<id>-2.js``, …). A source that fits in one part is one script, as it always was.

A part calls ``notesPortalTree(source, node[, part id])`` (no id: the root). A node is ``{"n": [[title,
url file name], …], "d": [[name, url segment, node or part id], …], "m": part id}`` (keys left out when
empty; ``m``: the part with the folder's next notes), folders and notes in path order (the folders of
:func:`builder.render.toc.folder_tree`). A note's URL is ``<source>/<url segments of its folders>/<url file
name>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from builder.core import urls
from builder.render.pages import NoteInfo
from builder.render.toc import Folder, Part, folder_tree, more_of, part_id, partition

CALLBACK = "notesPortalTree"
# Entries (notes and folders) of one part: about 25 KB of titles, so that a page deep in a big source
# loads a few of them, never the whole tree.
PART_ENTRIES = 400


@dataclass(frozen=True)
class TreePart:
    """One script of a source's tree: its URL and its text."""

    url: str
    script: str


def _note_entries(notes: list[NoteInfo]) -> list[list[str]]:
    return [[note.title, note.url.rpartition("/")[2]] for note in notes]


def tree_parts(source_id: str, notes: list[NoteInfo], entries: int | None = None) -> list[TreePart]:
    """Every script of ``source_id``'s tree, the root part first (see the module's docstring); ``entries``:
    a part's size, :data:`PART_ENTRIES` unless given."""
    entries = entries or PART_ENTRIES
    return [_script(source_id, _node(part.folder, part, entries), part.id)
            for part in partition(folder_tree(notes), entries)]


def _node(folder: Folder, part: Part, entries: int) -> dict[str, Any]:
    """What ``part`` holds of ``folder`` (its own folder, or one inlined in it)."""
    start = part.start if folder is part.folder else 0
    node: dict[str, Any] = {}
    if folder.notes:
        node["n"] = _note_entries(folder.notes[start:start + entries])
        more = more_of(folder, start, entries)
        if more:
            node["m"] = more
    if folder.children and start == 0:
        node["d"] = [[child.name, urls.quote_path(child.name),
                      _node(child, part, entries) if child.path in part.inlined else part_id(child.path)]
                     for child in folder.children]
    return node


def _script(source_id: str, node: dict[str, Any], pid: str | None) -> TreePart:
    data = json.dumps(node, ensure_ascii=False, separators=(",", ":"))
    # U+2028/9 are line ends in old JavaScript: escaped
    data = data.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    if pid is None:
        return TreePart(urls.tree_url(source_id), f"{CALLBACK}({json.dumps(source_id)},{data});\n")
    return TreePart(urls.tree_part_url(source_id, pid), f"{CALLBACK}({json.dumps(source_id)},{data},\"{pid}\");\n")
