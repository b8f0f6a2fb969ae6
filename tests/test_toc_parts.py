"""A big source's table of contents in pieces (issue 47): the page holds its top folders and what fits, the rest
are scripts loaded when a folder is opened (static/toc.js; in a browser: tests/test_browser.py). Here, with
pieces of a few entries: the page and its pieces together list every note once, each piece named by the page
or another piece exists, none is over its budget, and an edit rewrites the piece that shows it, not the page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.render import toc
from tests.render_support import build_and_render, make_config, write

PART = re.compile(r'^notesPortalToc\("([0-9a-f]+(?:-\d+)?)",(.*)\);\n$', re.DOTALL)


@pytest.fixture
def small_pieces(monkeypatch):
    monkeypatch.setattr(toc, "TOC_ENTRIES", 4)


def notes_in(html: str) -> list[str]:
    return re.findall(r'<a class="toc-title" href="([^"]+)"', html)


def parts_named(html: str) -> list[str]:
    return re.findall(r'data-part="([^"]+)"', html)


def pieces(site: Path) -> tuple[str, dict[str, str]]:
    """The page's HTML and each piece's HTML by its id, read back from its script."""
    found = {}
    for script in (site / "static/toc/notes").glob("*.js"):
        match = PART.match(script.read_text("utf-8"))
        assert match, script.name
        assert script.stem == match[1]
        found[match[1]] = json.loads(match[2])
    return (site / "notes/index.html").read_text("utf-8"), found


def notes(root: Path) -> list[str]:
    paths = [f"denik/d{i:02}.md" for i in range(9)] + ["a.md", "b.md"]
    paths += [f"lide/p{k}/z{j}.md" for k in range(4) for j in range(2)] + ["lide/hluboko/x/y/z.md"]
    for path in paths:
        write(root, path, f"# {path}\n\n## Oddíl\n")
    return paths


def test_the_page_and_its_pieces_list_every_note_once_and_every_piece_they_name(tmp_path, small_pieces):
    root = tmp_path / "notes"
    paths = notes(root)
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    page, found = pieces(config.site.output)
    listed = notes_in(page) + [href for html in found.values() for href in notes_in(html)]
    assert sorted(listed) == sorted(p.removesuffix(".md") + ".html" for p in paths)
    named = parts_named(page) + [part for html in found.values() for part in parts_named(html)]
    assert sorted(named) == sorted(found)  # every piece named once, none written that nothing names
    for html in [page, *found.values()]:
        assert len(notes_in(html)) <= 4
    assert notes_in(page) == ["a.html", "b.html"]  # the root's own notes; denik/ and lide/ did not fit
    journal = toc.part_id("denik")
    assert notes_in(found[journal]) == [f"denik/d{i:02}.html" for i in range(4)]
    assert notes_in(found[f"{journal}-3"]) == ["denik/d08.html"]


def test_an_edit_rewrites_the_piece_that_shows_the_note_and_not_the_page(tmp_path, small_pieces):
    root = tmp_path / "notes"
    notes(root)
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    write(root, "denik/d05.md", "# denik/d05.md\n\n## Jiný oddíl\n")
    run = build_and_render(config)
    journal = toc.part_id("denik")
    assert {w for w in run.report.written if "toc" in w or w.endswith("index.html")} >= {
        f"static/toc/notes/{journal}-2.js"}
    assert "notes/index.html" not in run.report.written
    assert f"static/toc/notes/{journal}.js" not in run.report.written
    _, found = pieces(config.site.output)
    assert "jiny-oddil" in found[f"{journal}-2"]
    for path in ("denik/d05.md", "denik/d06.md", "denik/d07.md", "denik/d08.md"):
        (root / path).unlink()
    run = build_and_render(config)
    assert f"static/toc/notes/{journal}-3.js" in run.report.removed  # 5 notes left: a piece of 4 and one of 1
    page, found = pieces(config.site.output)
    assert f"{journal}-3" not in found and f"{journal}-2" in found


def _tree(shape, path: str = "") -> toc.Folder:
    """A folder from ``shape`` = (its note count, its subfolders' shapes)."""
    count, children = shape
    folder = toc.Folder(path, notes=[None] * count)
    folder.children = [_tree(child, f"{path}/{i}" if path else str(i)) for i, child in enumerate(children)]
    folder.count = count + sum(child.count for child in folder.children)
    return folder


def _depth_first(folder: toc.Folder) -> list[toc.Folder]:
    return [folder] + [f for child in folder.children for f in _depth_first(child)]


SHAPES = st.recursive(st.tuples(st.integers(0, 3), st.just([])),
                      lambda inner: st.tuples(st.integers(0, 3), st.lists(inner, max_size=3)), max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(shape=SHAPES, entries=st.integers(1, 12))
def test_a_piece_shows_its_folder_and_the_inlined_ones_depth_first(shape, entries):
    root = _tree(shape)
    assert toc.folders_depth_first(root) == _depth_first(root)
    parts = toc.partition(root, entries)
    for part in parts:
        assert toc.shown_folders(part) == [part.folder] + [f for f in _depth_first(part.folder)
                                                            if f.path in part.inlined]
