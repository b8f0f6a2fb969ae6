"""Heading-aware chunks: the only retrieval unit of the index.

The policy (reference plan, "Chunking"):
- sections by H1–H3; H4–H6 stay inside their section;
- every chunk carries a breadcrumb ``title > section > subsection``, stored and
  prepended to the text that is embedded;
- small sibling sections (< ~200 tokens) under the same parent are merged until
  the group reaches that size;
- big sections (> ~800 tokens) are split at block boundaries (paragraphs, list
  items of checklists) with ~64 tokens of overlap; a code fence or a table is
  never split unless it alone exceeds the hard limit that keeps every chunk
  embeddable without silent truncation;
- a piece of a split section never ends with a heading (it goes with the text under it), and a
  piece that starts under an H4–H6 inside the section names it: its breadcrumb goes down to that
  heading and its anchor is that heading's, so a hit lands on the words it found (a piece that
  starts at such a heading carries no overlap: the text before it is another subsection);
- ~4 characters per token (bump ``CHUNKER_VERSION`` in builder/core/index/schema.py when the
  chunks would come out differently); with a ``fits`` check (the local model's own token count), a section
  whose chunks do not fit is cut again with a smaller budget until every chunk does, so the tail of
  a long section still reaches the vector (multilingual-e5 reads 512 tokens, ~3.2 characters each
  in Czech and Slovak).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from builder.core.slug import fold

if TYPE_CHECKING:  # chunks are made from parsed notes; the parser is imported by whoever parses
    from builder.notes.parse import Heading, Note

CHARS_PER_TOKEN = 4
MIN_TOKENS = 200
MAX_TOKENS = 800
OVERLAP_TOKENS = 64
HARD_MAX_TOKENS = 1600  # no chunk is longer: bigger fences/tables are cut at line boundaries
MIN_BUDGET = 96  # a fits check never makes chunks smaller than this (a giant breadcrumb is not split)


class Place(NamedTuple):
    """Where a section other than the chunk's first begins inside its text: a merged short sibling or an
    H4–H6 (its heading line is at ``offset`` in the chunk's text). A search hit whose words are there links
    to it, not to the chunk's first section."""

    offset: int
    breadcrumb: str
    anchor: str


@dataclass(frozen=True)
class Chunk:
    idx: int
    breadcrumb: str
    anchor: str  # heading slug of the section ("" = top of the note)
    line_start: int  # 1-based, inclusive
    line_end: int  # 1-based, inclusive
    text: str
    places: tuple[Place, ...] = ()  # the sections it holds after its first, in order

    @property
    def embed_text(self) -> str:
        """Exactly what is embedded: the breadcrumb gives the vector its context."""
        return f"{self.breadcrumb}\n\n{self.text}"


class _Unit(NamedTuple):  # a tuple: a note has a unit per block, and a frozen dataclass is slow to make
    """A run of source lines that is kept together unless it is too big: [start, end), 0-based."""

    start: int
    end: int
    kind: str  # paragraph | list | fence | table | heading | other
    splits: tuple[int, ...] = ()  # inner boundaries where a too-big unit may be cut
    sub: Heading | None = None  # an H4–H6 inside its section (kind "heading")
    opens: tuple[tuple[str, ...], str] | None = None  # a merged sibling's heading: its breadcrumb and anchor


@dataclass
class _Section:
    heading: Heading | None
    crumbs: tuple[str, ...]
    parent: tuple[int, ...]  # lines of the enclosing headings: identifies siblings
    units: list[_Unit]


def tokens_of(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


_KINDS = {"paragraph_open": "paragraph", "bullet_list_open": "list", "ordered_list_open": "list",
          "fence": "fence", "code_block": "fence", "table_open": "table", "html_block": "other",
          "blockquote_open": "other", "hr": "other", "heading_open": "heading"}


def _units(note: Note) -> list[tuple[_Unit, Heading | None]]:
    """Top-level blocks in order; H1–H3 headings come with their Heading, the rest with None."""
    headings = {h.line: h for h in note.headings}
    tokens = note.tokens
    out: list[tuple[_Unit, Heading | None]] = []
    for i, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.type not in _KINDS:
            continue
        start, end = token.map
        kind = _KINDS[token.type]
        splits: tuple[int, ...] = ()
        if kind == "list":
            splits = tuple(t.map[0] for t in tokens[i + 1:] if t.type == "list_item_open"
                           and t.level == 1 and t.map and start < t.map[0] < end)
        elif kind == "paragraph":
            splits = tuple(range(start + 1, end))
        heading = headings.get(start) if kind == "heading" else None
        if heading is not None and heading.level > 3:  # stays inside its section
            out.append((_Unit(start, end, kind, sub=heading), None))
            continue
        out.append((_Unit(start, end, "paragraph" if kind == "heading" else kind, splits), heading))
    return out


def _sections(note: Note) -> list[_Section]:
    title_key = fold(note.title).strip()
    root = _Section(None, (note.title,), (), [])
    sections = [root]
    stack: list[Heading] = []
    for unit, heading in _units(note):
        if heading is None:
            sections[-1].units.append(unit)
            continue
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        parent = tuple(h.line for h in stack)
        stack.append(heading)
        crumbs = [note.title] + [h.text for h in stack
                                 if not (h.level == 1 and fold(h.text).strip() == title_key) and h.text]
        sections.append(_Section(heading, tuple(crumbs), parent, []))
    return [s for s in sections if s.units]


def _text(lines: tuple[str, ...], start: int, end: int) -> str:
    return "\n".join(lines[start:end]).strip()


def _size(lines: tuple[str, ...], units: list[_Unit]) -> int:
    return sum(tokens_of(_text(lines, u.start, u.end)) + 1 for u in units)


def _merge_siblings(note: Note, sections: list[_Section]) -> list[tuple[_Section, list[_Unit]]]:
    """Groups of consecutive small sibling sections; a merged follower keeps its heading line."""
    lines = note.source_lines
    groups: list[tuple[_Section, list[_Unit]]] = []
    for section in sections:
        size = _size(lines, section.units)
        if groups:
            first, units = groups[-1]
            if (first.heading is not None and section.heading is not None
                    and first.parent == section.parent and _size(lines, units) < MIN_TOKENS
                    and size < MIN_TOKENS):
                heading_line = section.heading.line
                units.append(_Unit(heading_line, heading_line + 1, "heading",
                                   opens=(section.crumbs, section.heading.anchor)))
                units.extend(section.units)
                continue
        groups.append((section, list(section.units)))
    return groups


def _explode(lines: tuple[str, ...], unit: _Unit, budget: int) -> list[_Unit]:
    """Cut a unit that alone exceeds the budget at its inner boundaries (or any line if it must)."""
    limit = budget if unit.kind in ("paragraph", "list", "other") else _hard(budget)
    if tokens_of(_text(lines, unit.start, unit.end)) <= limit:
        return [unit]
    cuts = unit.splits or tuple(range(unit.start + 1, unit.end))
    bounds = [unit.start, *cuts, unit.end]
    pieces = [_Unit(a, b, unit.kind) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    return pieces


def _hard(budget: int) -> int:
    """The most a fence or table may take: twice the budget, at most HARD_MAX_TOKENS."""
    return min(HARD_MAX_TOKENS, 2 * budget)


def _split(lines: tuple[str, ...], units: list[_Unit], budget: int) -> list[tuple[int, int, str]]:
    """Pack units into pieces of at most ``budget`` tokens with overlap; returns (start, end, text)."""
    flat = [piece for unit in units for piece in _explode(lines, unit, budget)]
    if _size(lines, flat) <= budget:
        text = _join(lines, flat)
        return [(flat[0].start, flat[-1].end, text)] if text else []
    pieces: list[tuple[int, int, str]] = []
    current: list[_Unit] = []
    overlap = ""
    for unit in flat:
        if current and _size(lines, current + [unit]) + tokens_of(overlap) > budget:
            if (all(u.kind == "heading" for u in current)
                    and _size(lines, current + [unit]) + tokens_of(overlap) <= _hard(budget)):
                current.append(unit)  # a heading alone is no piece: it goes with the text under it
                continue
            carried: list[_Unit] = []
            while len(current) > 1 and current[-1].kind == "heading":  # a heading goes with its text
                carried.insert(0, current.pop())
            if carried and _size(lines, carried + [unit]) > _hard(budget):
                current, carried = current + carried, []  # that text is too big to take them along
            pieces.append((current[0].start, current[-1].end, _with_overlap(overlap, _join(lines, current))))
            overlap = "" if carried else _overlap(lines, current[-1])
            current = carried
        current.append(unit)
    if current:
        pieces.append((current[0].start, current[-1].end, _with_overlap(overlap, _join(lines, current))))
    return [p for p in pieces if p[2]]


def _with_overlap(overlap: str, text: str) -> str:
    return f"{overlap}\n\n{text}" if overlap and text else text


def _overlap(lines: tuple[str, ...], last: _Unit) -> str:
    """The tail of the previous piece (~OVERLAP_TOKENS, cut at a sentence or word) to repeat next.

    Never taken from a fence or a table: half a code block or half a table misleads more than it helps.
    """
    if last.kind in ("fence", "table", "heading"):
        return ""
    text = _text(lines, last.start, last.end)
    budget = OVERLAP_TOKENS * CHARS_PER_TOKEN
    if len(text) <= budget:
        return text
    tail = text[-budget:]
    for mark in (". ", "\n", " "):
        cut = tail.find(mark)
        if 0 <= cut < len(tail) - 1:
            return tail[cut + len(mark):].strip()
    return tail.strip()


def _bounded(pieces: list[tuple[int, int, str]], budget: int) -> list[tuple[int, int, str]]:
    """Cut any piece still over the hard limit (a single giant line) at whitespace; nothing is dropped."""
    hard = _hard(budget) * CHARS_PER_TOKEN
    out = []
    for start, end, text in pieces:
        while len(text) > hard:
            cut = text.rfind(" ", hard // 2, hard)
            cut = cut if cut > 0 else hard
            out.append((start, end, text[:cut].strip()))
            text = text[cut:].strip()
        if text:
            out.append((start, end, text))
    return out


def _join(lines: tuple[str, ...], units: list[_Unit]) -> str:
    parts = [_text(lines, u.start, u.end) for u in units]
    return "\n\n".join(p for p in parts if p)


def _place(section: _Section, marks: list[_Unit], n: int, start: int) -> tuple[str, str]:
    """The breadcrumb and anchor of the ``n``-th piece of ``section``, which starts at line ``start``:
    those of the section or merged sibling it starts in, down to the H4–H6 it starts under (``marks``:
    the section's units that open a merged sibling or hold an H4–H6, in order). A first piece starts
    at the section itself."""
    found = (" > ".join(section.crumbs), section.heading.anchor if section.heading else "")
    for unit, place in _marked_places(section, marks if n else []):
        if unit.start > start:
            break
        found = place
    return found


def _marked_places(section: _Section, marks: list[_Unit]) -> Iterator[tuple[_Unit, tuple[str, str]]]:
    """Each mark of ``section`` with the breadcrumb and anchor of the text after it: a merged sibling's own,
    or down to the H4–H6 it holds (an empty ``####`` names nothing: the heading above it stays)."""
    crumbs, anchor = section.crumbs, section.heading.anchor if section.heading else ""
    stack: list[Heading] = []
    for unit in marks:
        if unit.opens is not None:
            (crumbs, anchor), stack = unit.opens, []
        elif unit.sub is not None:
            while stack and stack[-1].level >= unit.sub.level:
                stack.pop()
            stack.append(unit.sub)
        named = [h for h in stack if h.text]
        yield unit, (" > ".join((*crumbs, *(h.text for h in named))), named[-1].anchor if named else anchor)


def chunk_note(note: Note, fits: Callable[[str], bool] | None = None) -> list[Chunk]:
    """The chunks of one parsed note, in document order, numbered from 0. ``fits`` tells whether a
    chunk's embedded text (``breadcrumb\n\ntext``) fits the embedding model whole."""
    chunks: list[Chunk] = []
    for section, units in _merge_siblings(note, _sections(note)):
        marks = [u for u in units if u.opens is not None or u.sub is not None]
        budget = MAX_TOKENS
        pieces = _bounded(_split(note.source_lines, units, budget), budget)
        while fits is not None and budget > MIN_BUDGET and not all(
                fits(f"{_place(section, marks, n, p[0])[0]}\n\n{p[2]}") for n, p in enumerate(pieces)):
            budget = budget * 3 // 4
            pieces = _bounded(_split(note.source_lines, units, budget), budget)
        for n, (start, end, text) in enumerate(pieces):
            breadcrumb, where = _place(section, marks, n, start)
            places = _places_in(note.source_lines, section, marks, n, start, end, text)
            if n == 0 and section.heading is not None:
                start = section.heading.line  # the section's first chunk begins at its heading
            chunks.append(Chunk(idx=len(chunks), breadcrumb=breadcrumb, anchor=where,
                                line_start=start + 1, line_end=end, text=text, places=places))
    return chunks


def _unit_at(text: str, unit: str, start: int) -> int:
    """Where the unit whose text is ``unit`` begins in a piece's ``text`` (from ``start``), or -1: its units
    are joined by blank lines (:func:`_join`), so a unit is only where one begins and ends, never a heading's
    words inside a paragraph, a longer heading or a code block."""
    at = text.find(unit, start)
    while at >= 0:
        after = at + len(unit)
        if (at == 0 or text.startswith("\n\n", at - 2)) and (after == len(text) or text.startswith("\n\n", after)):
            return at
        at = text.find(unit, at + 1)
    return -1


def _places_in(lines: tuple[str, ...], section: _Section, marks: list[_Unit], n: int, start: int, end: int,
               text: str) -> tuple[Place, ...]:
    """The sections that begin inside the ``n``-th piece of ``section`` (lines ``start`` to ``end``, its
    text ``text``) after the one it is named by (a later piece starting at a mark is named by it; the first
    is named by the section, whose heading its text leaves out): each mark's heading line found in the
    text, in order, where it leads elsewhere than the place before it (an empty ``####`` names no place;
    a piece cut from a giant line may hold none)."""
    found: list[Place] = []
    at, current = 0, _place(section, marks, n, start)[1]
    for unit, (breadcrumb, anchor) in _marked_places(section, marks):
        if unit.start >= end:
            break
        if not (start < unit.start or n == 0 and unit.start == start):
            continue
        offset = _unit_at(text, _text(lines, unit.start, unit.end), at)
        if offset < 0 or anchor == current:
            continue
        found.append(Place(offset, breadcrumb, anchor))
        at, current = offset + 1, anchor
    return tuple(found)
