"""The navigation tree in parts (issue 47): what a page loads of the tree stays small whatever the size of its
source, and the parts, followed as nav.js follows them, give back the whole tree, every note in its place."""

from __future__ import annotations

import json
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.core import urls
from builder.render import pages, tree
from builder.render.toc import Folder, folder_tree

CALL = re.compile(r'^notesPortalTree\("(?P<source>[^"]+)",(?P<node>.*?)(?:,"(?P<part>[0-9a-f]+(?:-\d+)?)")?\);\n$',
                  re.DOTALL)


def note(path: str) -> pages.NoteInfo:
    url = urls.note_url("s", path)
    return pages.NoteInfo("s", path, f"T {path}", (), b"[]", None, "x", f"s:{path}", url)


def whole_tree(notes: list[pages.NoteInfo]) -> dict:
    """The source's tree as one node, every folder inlined (what the pieces must add up to)."""

    def node(folder: Folder) -> dict:
        found: dict = {}
        if folder.notes:
            found["n"] = [[n.title, n.url.rpartition("/")[2]] for n in folder.notes]
        if folder.children:
            found["d"] = [[c.name, urls.quote_path(c.name), node(c)] for c in folder.children]
        return found

    return node(folder_tree(notes))


def loaded(parts: list[tree.TreePart]) -> dict[str, dict]:
    """Each part's node by its id ("" the root), read back from its script as a browser would."""
    found = {}
    for part in parts:
        call = CALL.match(part.script)
        assert call, part.script[:80]
        pid = call["part"] or ""
        assert part.url == (urls.tree_url("s") if not pid else f"static/tree/s/{pid}.js")
        found[pid] = json.loads(call["node"])
    return found


def followed(node: dict, parts: dict[str, dict], used: set[str]) -> dict:
    """``node`` with every part id it names replaced by that part, continuations joined (the whole tree)."""
    whole: dict = {}
    notes = list(node.get("n", ()))
    more = node.get("m")
    while more:
        used.add(more)
        notes += parts[more]["n"]
        more = parts[more].get("m")
    if notes:
        whole["n"] = notes
    if "d" in node:
        whole["d"] = []
        for name, segment, sub in node["d"]:
            if isinstance(sub, str):
                used.add(sub)
                sub = parts[sub]
            whole["d"].append([name, segment, followed(sub, parts, used)])
    return whole


def entries_of(node: dict) -> int:
    return len(node.get("n", ())) + sum(1 + (entries_of(sub) if isinstance(sub, dict) else 0)
                                        for _, _, sub in node.get("d", ()))


def test_a_source_that_fits_in_one_part_is_one_script_with_the_whole_tree():
    notes = [note(p) for p in ("a.md", "sub/b.md", "sub/deeper/c.md")]
    parts = tree.tree_parts("s", notes)
    assert [p.url for p in parts] == ["static/tree/s.js"]
    assert parts[0].script == ('notesPortalTree("s",{"n":[["T a.md","a.html"]],"d":[["sub","sub",{"n":[["T sub/b.md",'
                               '"b.html"]],"d":[["deeper","deeper",{"n":[["T sub/deeper/c.md","c.html"]]}]]}]]});\n')


def test_a_big_folder_lists_its_notes_in_continuations_and_a_folder_past_the_budget_is_a_part_of_its_own():
    notes = [note(f"journal/{i:03}.md") for i in range(12)] + [note("top.md")]
    notes += [note(f"people/{name}/index.md") for name in ("ana", "bob", "cyril")]
    parts = loaded(tree.tree_parts("s", notes, entries=5))
    journal, people, cyril = tree.part_id("journal"), tree.part_id("people"), tree.part_id("people/cyril")
    # the root lists its note and its two folders (3 of 5 entries): journal/ (5 more) and people/ (3) do not fit
    assert parts[""] == {"n": [["T top.md", "top.html"]],
                         "d": [["journal", "journal", journal], ["people", "people", people]]}
    # people/ lists its three folders; the first two come with their notes, the third no longer fits
    assert parts[people] == {"d": [["ana", "ana", {"n": [["T people/ana/index.md", "index.html"]]}],
                                   ["bob", "bob", {"n": [["T people/bob/index.md", "index.html"]]}],
                                   ["cyril", "cyril", cyril]]}
    assert parts[cyril] == {"n": [["T people/cyril/index.md", "index.html"]]}
    assert parts[journal] == {"n": [[f"T journal/{i:03}.md", f"{i:03}.html"] for i in range(5)], "m": f"{journal}-2"}
    assert parts[f"{journal}-2"] == {"n": [[f"T journal/{i:03}.md", f"{i:03}.html"] for i in range(5, 10)],
                                     "m": f"{journal}-3"}
    assert parts[f"{journal}-3"] == {"n": [[f"T journal/{i:03}.md", f"{i:03}.html"] for i in range(10, 12)]}
    assert len(parts) == 6


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.integers(2, 40))
def test_the_parts_followed_from_the_root_give_back_the_whole_tree_and_each_part_keeps_to_its_budget(seed, count,
                                                                                                     entries):
    rng = random.Random(seed)
    folders = ["", "a", "a/b", "a/b/c", "d", "d/e", "f/g/h/i"] + [f"p/{k}" for k in range(rng.randint(0, 30))]
    paths = sorted({f"{rng.choice(folders)}/{rng.randint(0, 999)}.md".lstrip("/") for _ in range(count)})
    notes = [note(p) for p in paths]
    parts = tree.tree_parts("s", notes, entries=entries)
    nodes = loaded(parts)
    used: set[str] = set()
    assert followed(nodes[""], nodes, used) == whole_tree(notes)
    assert used == set(nodes) - {""}  # no part is written that nothing leads to
    for pid, node in nodes.items():
        # a folder lists its subfolders, however many: only a folder's own notes are split
        widest = max([len(node.get("d", ()))] + [len(sub.get("d", ())) for _, _, sub in node.get("d", ())
                                                  if isinstance(sub, dict)])
        assert entries_of(node) <= max(entries, widest + min(entries, len(node.get("n", ())))), pid


@pytest.mark.parametrize("count", [10_000])
def test_what_a_page_deep_in_a_big_source_loads_of_the_tree_does_not_grow_with_it(count):
    """10,000 notes in 8 × 12 folders (the bench's shape): the root part and the part of any one folder are a
    few KB, where the whole tree is half a megabyte."""
    notes = [note(f"top{i % 8}/sub{(i // 8) % 12}/note-{i:05}.md") for i in range(count)]
    parts = tree.tree_parts("s", notes)
    whole = len(json.dumps(whole_tree(notes), ensure_ascii=False))
    sizes = {p.url: len(p.script.encode("utf-8")) for p in parts}
    assert whole > 500_000
    assert max(sizes.values()) < 40_000
    root, deepest = sizes["static/tree/s.js"], sizes[f"static/tree/s/{tree.part_id('top3/sub7')}.js"]
    assert root + deepest < 45_000
