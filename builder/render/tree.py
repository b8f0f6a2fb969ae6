"""The navigation tree: one small script per source (``static/tree/<source>.js``) with its folders and
its notes' titles, which ``static/nav.js`` turns into the collapsible tree beside every page.

Why a separate file and not HTML in every page: the tree shows every note's title, so a page that
carried it would have to be rewritten whenever any note of its source is added, removed or
retitled; as one file per source, such a change rewrites that file alone and no page. Why a
script and not JSON: a page opened from ``file://`` may load a script next to it but not fetch a
file. The script calls ``notesPortalTree(source, tree)``; a tree is ``{"d": [[name, url segment,
tree], …], "n": [[title, url file name], …]}`` (keys left out when empty), folders and notes in
path order (the folders of :func:`builder.render.toc.folder_tree`). A note's URL is
``<source>/<url segments of its folders>/<url file name>``.
"""

from __future__ import annotations

import json
from typing import Any

from builder.core import urls
from builder.render.pages import NoteInfo
from builder.render.toc import Folder, folder_tree

CALLBACK = "notesPortalTree"


def tree_data(notes: list[NoteInfo]) -> dict[str, Any]:
    """The nested folders and notes of one source's ``notes``."""
    return _node(folder_tree(notes))


def _node(folder: Folder) -> dict[str, Any]:
    node: dict[str, Any] = {}
    if folder.notes:
        node["n"] = [[note.title, note.url.rpartition("/")[2]] for note in folder.notes]
    if folder.children:
        node["d"] = [[child.name, urls.quote_path(child.name), _node(child)] for child in folder.children]
    return node


def tree_script(source_id: str, notes: list[NoteInfo]) -> str:
    """The script that hands ``source_id``'s tree to the navigation."""
    data = json.dumps(tree_data(notes), ensure_ascii=False, separators=(",", ":"))
    # "</" cannot end a script here, but U+2028/9 are line ends in old JavaScript: escape them too
    data = data.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"{CALLBACK}({json.dumps(source_id)},{data});\n"
