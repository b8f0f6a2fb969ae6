"""The links between notes as a graph: each note's neighbourhood (two hops) for its page, what a
change can reach (so that the incremental render redraws exactly the pages whose picture moved) and
the most linked notes of a source for its graph page.

A note's picture shows the note, up to :data:`RING1_MAX` notes it links to or that link to it (ring
1, the notes it links to first, each group by title) and, for each of those, up to
:data:`RING2_PER` of their own neighbours (ring 2, by title), :data:`RING2_MAX` in all. Every
choice looks only at the notes' titles, paths and links within two hops of the note, so a change of
one note (its links, its title, or the note itself appearing or vanishing) can alter only the
pictures of notes within two hops of it, before or after the change (:meth:`Links.ball`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from builder.render.links import LINK_KIND, LINK_TARGET

if TYPE_CHECKING:
    from builder.render.manifest import Entries, ManifestEntry
    from builder.render.pages import NoteInfo

RING1_MAX = 10
RING2_PER = 3
RING2_MAX = 12


def note_targets(source_id: str, entry: ManifestEntry | None) -> set[str]:
    """The keys of the notes a manifest entry's links land on (its own source only, as links resolve)."""
    return {f"{source_id}:{r[LINK_TARGET]}" for r in (entry["resolved"] if entry else ()) if r[LINK_KIND] == "note"}


class Node(NamedTuple):
    key: str
    title: str
    url: str  # site-relative
    ring: int  # 0: the note itself, 1 or 2: hops away
    parent: int  # ring 2: the index of the ring-1 node it is drawn beside; else 0


@dataclass(frozen=True)
class Local:
    """What a note's picture shows: its nodes (the note first), the links between them that make the
    hops (``(from, to)`` indexes into ``nodes``: the note and ring 1, ring 1 and ring 2) and how many
    of the note's own neighbours did not fit."""

    nodes: tuple[Node, ...]
    edges: tuple[tuple[int, int], ...]
    more: int

    def digest(self) -> str:
        """A fingerprint of the picture (everything drawn)."""
        parts = [f"{n.key}\x1f{n.title}\x1f{n.ring}\x1f{n.parent}" for n in self.nodes]
        parts += [f"{a}>{b}" for a, b in self.edges]
        parts.append(str(self.more))
        return hashlib.blake2b("\x1e".join(parts).encode(), digest_size=16).hexdigest()

    @property
    def empty(self) -> bool:
        return len(self.nodes) < 2


class Links:
    """Links between published notes, both ways, as the render resolved them (each pair once)."""

    def __init__(self, notes: Iterable[NoteInfo], entries: Entries) -> None:
        self.notes = known = {n.key: n for n in notes}
        self.out: dict[str, set[str]] = {}
        self.into: dict[str, set[str]] = {}
        into = self.into
        for key, note in known.items():
            entry = entries.get(key)
            targets: set[str] | None = None
            for r in entry["resolved"] if entry else ():
                if r[LINK_KIND] == "note":
                    target = f"{note.source_id}:{r[LINK_TARGET]}"
                    if target != key and target in known:
                        if targets is None:
                            targets = self.out[key] = set()
                        if target not in targets:
                            targets.add(target)
                            back = into.get(target)
                            if back is None:
                                into[target] = {key}
                            else:
                                back.add(key)
        self._sorted: dict[str, tuple[str, ...]] = {}

    @classmethod
    def made(cls, notes: dict[str, NoteInfo], out: dict[str, set[str]], into: dict[str, set[str]]) -> Links:
        """The graph from links already found (``out``, ``into``: key → keys, each without the note
        itself); ``notes`` must hold every note whose picture or neighbours are asked for, and theirs."""
        links = cls((), {})
        links.notes, links.out, links.into = notes, out, into
        return links

    def neighbours(self, key: str) -> tuple[str, ...]:
        """Notes linked from or to ``key``, by title (then path)."""
        found = self._sorted.get(key)
        if found is None:
            both = self.out.get(key, set()) | self.into.get(key, set())
            found = self._sorted[key] = tuple(sorted(both, key=lambda k: self.notes[k].sort_key))
        return found

    def local(self, key: str) -> Local:
        """The two-hop picture of note ``key`` (see the module docstring)."""
        out = self.out.get(key, set())
        near = self.neighbours(key)
        ring1 = sorted(near, key=lambda k: k not in out)[:RING1_MAX]  # stable: by title within each group
        index = {k: i for i, k in enumerate([key, *ring1])}
        ring2: dict[str, int] = {}  # key → its first ring-1 neighbour
        for i, inner in enumerate(ring1, start=1):
            taken = 0
            for k in self.neighbours(inner):
                if k not in index and k not in ring2 and taken < RING2_PER and len(ring2) < RING2_MAX:
                    ring2[k] = i
                    taken += 1
        nodes = [self._node(key, 0, 0)] + [self._node(k, 1, 0) for k in ring1]
        nodes += [self._node(k, 2, parent) for k, parent in ring2.items()]
        index.update({k: i for i, k in enumerate(ring2, start=len(index))})
        edges = []
        for a, b in [(key, k) for k in ring1] + [(inner, k) for inner in ring1 for k in ring2]:
            a_out, b_out = self.out.get(a), self.out.get(b)
            if a_out is not None and b in a_out:
                edges.append((index[a], index[b]))
            if b_out is not None and a in b_out:
                edges.append((index[b], index[a]))
        return Local(tuple(nodes), tuple(edges), len(near) - len(ring1))

    def _node(self, key: str, ring: int, parent: int) -> Node:
        note = self.notes[key]
        return Node(key, note.title, note.url, ring, parent)  # (a tuple: made 10^5 times in a full render)

    def ball(self, keys: Iterable[str], hops: int, extra: dict[str, set[str]]) -> set[str]:
        """Notes within ``hops`` links (either way) of ``keys``, over these links plus ``extra`` (links
        that were there before: key → targets)."""
        back: dict[str, set[str]] = {}
        for source, targets in extra.items():
            for target in targets:
                back.setdefault(target, set()).add(source)
        found = set(keys)
        frontier = set(found)
        for _ in range(hops):
            step: set[str] = set()
            for key in frontier:
                step |= self.out.get(key, set()) | self.into.get(key, set())
                step |= extra.get(key, set()) | back.get(key, set())
            frontier = step - found
            found |= frontier
        return found

    def degree(self, key: str) -> int:
        return len(self.out.get(key, ())) + len(self.into.get(key, ()))


def moved(stale: Iterable[NoteInfo], removed: Iterable[str], old: Entries,
          entries: Entries) -> tuple[set[str], dict[str, set[str]]]:
    """Notes whose place in the graph may have changed since the last render (they appeared, vanished,
    link elsewhere or have another title), and their links before (key → targets)."""
    found: set[str] = set()
    before: dict[str, set[str]] = {}
    for key in [n.key for n in stale] + list(removed):
        source_id = key.partition(":")[0]
        was, now = old.get(key), entries.get(key)
        old_targets, new_targets = note_targets(source_id, was), note_targets(source_id, now)
        if not was or not now or old_targets != new_targets or was.get("tags_digest") != now.get("tags_digest"):
            found.add(key)
            before[key] = old_targets
    return found, before


SOURCE_MAX = 150  # notes drawn on a source's graph: the most linked ones
SOURCE_LABELS = 40  # of those, the most linked are labelled (every node has its title as a tooltip)
MOST_LINKED = 15


@dataclass(frozen=True)
class SourceView:
    """What a source's graph page shows: the drawn notes (in path order), the links between them
    (indexes), which are labelled, their top-level folders, and the figures beside the picture."""

    notes: tuple[NoteInfo, ...]
    edges: tuple[tuple[int, int], ...]
    labelled: frozenset[int]
    folders: tuple[str, ...]  # top-level folders of the drawn notes, in order ("" : the source's root)
    stats: dict[str, Any]


def source_view(links: Links, notes: list[NoteInfo]) -> SourceView:
    """The graph of one source's ``notes``: its :data:`SOURCE_MAX` most linked notes and their links."""
    linked = [n for n in notes if links.degree(n.key)]
    chosen = sorted(sorted(linked, key=lambda n: (-links.degree(n.key), n.path))[:SOURCE_MAX], key=lambda n: n.path)
    index = {n.key: i for i, n in enumerate(chosen)}
    edges = tuple(sorted((index[a], index[b]) for a in index for b in links.out.get(a, ()) if b in index))
    by_degree = sorted(range(len(chosen)), key=lambda i: (-links.degree(chosen[i].key), chosen[i].path))
    folders = tuple(sorted({n.path.partition("/")[0] if "/" in n.path else "" for n in chosen}))
    targets = sorted((n for n in notes if links.into.get(n.key)),
                     key=lambda n: (-len(links.into[n.key]), n.sort_key))[:MOST_LINKED]
    stats = {"note_count": len(notes), "linked_count": len(linked), "shown_count": len(chosen),
             "link_count": sum(len(links.out.get(n.key, ())) for n in notes),
             "most_linked": [{"title": n.title, "url": n.url, "count": len(links.into[n.key])} for n in targets]}
    return SourceView(tuple(chosen), edges, frozenset(by_degree[:SOURCE_LABELS]), folders, stats)
