"""Which links a note can answer (builder.render.links.note_names, link_names): a note added, removed or retitled
changes where a link lands only if the link and the note share a name. The full render re-resolves only those
links of a source after such a change (builder.render.manifest.recheck), so a name missed here is a link left
pointing at the wrong page."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from builder.notes.sources import Scope
from builder.render.links import Resolver, SourceNotes, link_names, note_names

# Few names, so that the drawn notes collide: the same file name in several folders, folders with and without
# ordering prefixes, in upper and lower case, folder pages (index.md, README.md, a folder's only note), Grav's
# pages/ tree, titles equal to other notes' file names.
FOLDERS = ["", "a/", "A/", "01.a/", "b/", "02.b/", "a/c/", "pages/", "pages/01.a/", "pages/a/"]
FILES = ["x.md", "X.md", "y.md", "index.md", "README.md", "item.md", "01.x.md", "a.md"]
TITLES = ["X", "x", "Yé", "Ye", "Index", "Alfa beta", "a", "?"]
LINK_PATHS = ["", "../", "/", "a/", "A/", "pages/", "b/", "01.a/", "a/c/", "../a/"]
LINK_NAMES = ["x", "x.md", "X.md", "y", "a", "a/", "01.a", "c", "item", "index.md", "README.md", "01.x", "b/y.md"]
WIKI_NAMES = ["x", "X", "Yé", "ye", "Alfa beta", "a/x", "/a/x", "index", "item", "x.md", "a", "01.x", "c/x", "c/", "?"]

paths = st.builds(str.__add__, st.sampled_from(FOLDERS), st.sampled_from(FILES))
notes = st.dictionaries(paths, st.sampled_from(TITLES), min_size=1, max_size=8)
links = st.one_of(
    st.tuples(st.just("link"), st.builds(lambda p, n, f: p + n + f, st.sampled_from(LINK_PATHS),
                                         st.sampled_from(LINK_NAMES), st.sampled_from(["", "#Oddíl"]))),
    st.tuples(st.just("wiki"), st.sampled_from(WIKI_NAMES)),
    st.tuples(st.just("image"), st.sampled_from(LINK_NAMES)),
)


def resolver(root: Path, listed: dict[str, str]) -> Resolver:
    """Link resolution over ``listed`` (path → title), in the order the render lists notes (by path)."""
    return Resolver({"s": SourceNotes("s", root, Scope(("**",), ("*.md",), ()), sorted(listed.items()),
                                      lambda path: ())})


def missed(root: Path, before: dict[str, str], after: dict[str, str], from_paths: list[str],
           found: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """The links that land elsewhere after the change from ``before`` to ``after`` and share no name with a note
    added, removed or retitled; and, in ``found``, every link that landed elsewhere."""
    changed = set(before.items()) ^ set(after.items())
    names = frozenset().union(*(note_names(path, title) for path, title in changed))
    old, new = resolver(root, before), resolver(root, after)
    wrong = []
    for from_path in from_paths:
        for kind, raw in [(k, r) for k in ("link", "image") for r in _hrefs()] + [("wiki", w) for w in WIKI_NAMES]:
            if old.resolve("s", from_path, kind, raw) != new.resolve("s", from_path, kind, raw):
                found.append((kind, raw))
                if not link_names(from_path, kind, raw) & names:
                    wrong.append((from_path, kind, raw))
    return wrong


def _hrefs() -> list[str]:
    return [p + n + f for p in LINK_PATHS for n in LINK_NAMES for f in ("", "#Oddíl")]


@settings(max_examples=150, deadline=None)
@given(listed=notes, new_path=paths, title=st.sampled_from(TITLES), change=st.sampled_from(["add", "remove", "title"]),
       link=links)
def test_a_link_that_lands_elsewhere_after_a_change_shares_a_name_with_the_changed_note(
        tmp_path_factory, listed, new_path, title, change, link):
    root = tmp_path_factory.getbasetemp()
    after = dict(listed)
    if change == "add":
        after[new_path] = title
    elif change == "remove":
        after.pop(sorted(listed)[0])
    else:
        after[sorted(listed)[-1]] = title
    changed = set(listed.items()) ^ set(after.items())
    names = frozenset().union(*(note_names(path, t) for path, t in changed))
    kind, raw = link
    for from_path in sorted({*listed, *after, "a/c/z.md", "z.md"}):
        old = resolver(root, listed).resolve("s", from_path, kind, raw)
        new = resolver(root, after).resolve("s", from_path, kind, raw)
        if old != new:
            assert link_names(from_path, kind, raw) & names, (from_path, kind, raw, old, new)


@pytest.mark.parametrize(("before", "after"), [
    ({"a/x.md": "X"}, {"a/x.md": "X", "a/y.md": "Y"}),  # a folder's only note no longer its page
    ({"pages/01.a/item.md": "I"}, {}),  # a Grav route to a folder
    ({"b/x.md": "X"}, {"b/x.md": "X", "x.md": "Jiná"}),  # a file name nearer the root answers a wikilink first
    ({"y.md": "Alfa beta"}, {"y.md": "Gama"}),  # a title a wikilink named
    ({"a/index.md": "I", "a/y.md": "Y"}, {"a/y.md": "Y"}),  # a folder loses its index
    ({"A/x.md": "X"}, {"A/x.md": "X", "a/x.md": "X"}),  # another case of the same path
    ({"a/y.md": "Y"}, {"a/y.md": "Y", "a/c/item.md": "I"}),  # [[c/]] from a/y.md: the folder a/c, by its only note
])
def test_the_changes_that_move_links_move_some_and_each_moved_link_shares_a_name(tmp_path, before, after):
    """The property above, over every link of the drawn names from every folder, on changes known to move links:
    each moves at least one (so the property is not vacuous), and every moved link shares a name."""
    found: list[tuple[str, str]] = []
    assert missed(tmp_path, before, after, sorted({*before, *after, "z.md", "a/c/z.md", "b/z.md"}), found) == []
    assert found
