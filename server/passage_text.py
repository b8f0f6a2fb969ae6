"""A passage as the answer check reads it: its sentences (the **windows** a claim must be said in), its
clauses and the scope of their negations, its names, and where a quotation stands in it.

A window is one sentence of a passage — a paragraph's, a list item's, a table cell's. It is read with its
**context**: the headings above it inside the passage, the line that introduces its list (``Na 3–4
hrnky:``) or the item it is nested in, a definition's term, a table cell's row label and column header;
the note's title and the section's heading are context everywhere, unless a heading names several things
(``Penang Hill a Kek Lok Si``). Blockquote markers, list markers, table pipes and emphasis are read as
spaces, so every offset is one into the passage text as it was sent: the span a reader is shown.

Clauses end at ``;``, ``:``, brackets, dashes and commas, and before ``ale``, ``but`` and the like; a
negator (``not``, ``ne``, ``nie``, ``bez``…) negates what follows it in its clause — its **scope** — and a
clause's last word, when it is a negator, what stands before it (``s mandlovým ne``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from server.claims import Token, accented, ends_sentence, in_english, normalize, words_of
from server.wordforms import slovak

_HEADING = re.compile(r"^(\s{0,3})(#{1,6})\s+")

_LIST_ITEM = re.compile(r"^(\s*)([-*+•]|\d{1,3}[.)])(\s+)")

_QUOTE_MARK = re.compile(r"^(\s*)((?:>\s?)+)")

_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}")

_FENCE = re.compile(r"^\s*(```|~~~)")

# Clauses end here: punctuation, and before the conjunctions that turn a sentence around.
_CLAUSE_END = re.compile(r"[;:()\[\]–—,]|\s-\s|\b(?:ale|avšak|však|zatímco|kdežto|no|but|however|whereas|while|"
                         r"although|though|except|unless|ibaže|lenže|jenže)\b", re.IGNORECASE)

_SENTENCE_END = re.compile(r"[.!?…]+[\"”“»«']?(?=\s+\S)")

@dataclass(frozen=True)
class Window:
    """One or two sentences of a passage and the text read with them."""

    start: int  # offsets into the passage text
    end: int
    context: tuple[tuple[int, int], ...] = ()  # ranges of the passage read with it (headings, lead-in)
    run: int = 0  # the paragraph, list or table it belongs to: windows of one run are neighbours

@dataclass(frozen=True)
class PassageText:
    """A passage as the check reads it: its text, and the title and heading it was sent under."""

    text: str
    title: str = ""
    heading: str = ""

    @cached_property
    def english(self) -> bool:
        return in_english(self.text)

    @cached_property
    def slovak(self) -> bool:
        """Surely written in Slovak (:func:`server.wordforms.slovak`): an English claim's translations meet its
        words as Czech reads them (:func:`server.wordforms.as_czech`)."""
        return slovak(f"{self.title} {self.heading} {self.text}")

    @cached_property
    def accented(self) -> bool:
        """Written with diacritics (its text, title or heading): a dictionary translation must write the marks
        that tell Czech words apart as it does (:func:`server.wordforms.spelled_alike`)."""
        return accented(f"{self.title} {self.heading} {self.text}")

    @cached_property
    def plain(self) -> str:
        """The text with markdown's structure (quote and list markers, table pipes, emphasis) as spaces."""
        return _unmarked(self.text)

    @cached_property
    def words(self) -> list[Token]:
        return words_of(self.plain, self.english, urls=True)

    @cached_property
    def outside(self) -> list[Token]:
        """The words of the title and the heading's parts that name one thing: context everywhere (their
        offsets are into :attr:`label`). A part naming several (``Penang Hill a Kek Lok Si``, ``Reliable,
        Scalable, Maintainable``) lends no word: which of them a sentence is about, it does not say."""
        words = words_of(self.label, in_english(self.label))
        return [w for w in words if not any(a <= w.start < b for a, b in _several(self.label))]

    @cached_property
    def label(self) -> str:
        return f"{self.title} > {self.heading}"

    @cached_property
    def outside_scoped(self) -> list[bool]:
        """For each word of :attr:`outside`: is it in a negation's scope in its heading (``Prečo nie CPU
        limit``)?"""
        parts = [(m.start(), m.end()) for m in re.finditer(r"[^>]+", self.label)]
        return negation_scope(self.outside, parts, set())

    @cached_property
    def windows(self) -> tuple[Window, ...]:
        return _windows(self.text, self.plain)

    @cached_property
    def name_like(self) -> list[bool]:
        """For each word of :attr:`words`: is it a name? Capitalised, and all capitals, or not the first word
        of its sentence, or written so elsewhere in the passage."""
        firsts = {min((i for i, w in enumerate(self.words) if u.start <= w.start < u.end), default=-1)
                  for u in self.windows}
        inner = {w.folded for i, w in enumerate(self.words) if w.text[:1].isupper() and i not in firsts}
        return [w.text[:1].isupper() and not w.free and (w.text.isupper() and len(w.text) > 1 or i not in firsts
                                                         or w.folded in inner)
                for i, w in enumerate(self.words)]

    @cached_property
    def clauses(self) -> list[tuple[int, int]]:
        return _clauses(self.text, self.plain)

    @cached_property
    def phrases(self) -> list[tuple[int, int]]:
        return _clauses(self.text, self.plain, brackets=False)

_SEVERAL = {False: re.compile(r",|&|\s(?:a|i|aj|nebo|alebo|vs\.?|versus)\s", re.IGNORECASE),
            True: re.compile(r",|&|\s(?:and|or|vs\.?|versus)\s", re.IGNORECASE)}

def _several(label: str) -> list[tuple[int, int]]:
    """The parts of a title and heading (between ``>``) that name several things."""
    return [(m.start(), m.end()) for m in re.finditer(r"[^>]+", label)
            if _SEVERAL[in_english(m.group(0))].search(m.group(0))]

def negation_scope(words: list[Token], clauses: list[tuple[int, int]], negating: set[int]) -> list[bool]:
    """For each word: does it stand in a negation's scope (after a negator, or a word of ``negating``,
    in its clause; a word of ``negating`` itself)?"""
    scoped = [False] * len(words)
    clause_of = [next((k for k, (a, b) in enumerate(clauses) if a <= w.start < b), -1 - i)
                 for i, w in enumerate(words)]
    open_in: set[int] = set()
    for i, word in enumerate(words):
        if clause_of[i] in open_in or i in negating:
            scoped[i] = True
        if word.negator or i in negating:
            open_in.add(clause_of[i])
            if not any(clause_of[j] == clause_of[i] and w.content for j, w in enumerate(words) if j > i):
                for j in range(i):  # "s mandlovým ne": a clause's last word negates what stands before it
                    if clause_of[j] == clause_of[i]:
                        scoped[j] = True
    return scoped

def clauses_of(text: str) -> list[tuple[int, int]]:
    """The clauses of a claim: cut where :data:`_CLAUSE_END` and sentence ends cut a passage's."""
    cuts = {0, len(text)} | {m.start() for m in _CLAUSE_END.finditer(text)}
    cuts |= {m.end() for m in _SENTENCE_END.finditer(text)}
    ordered = sorted(cuts)
    return list(zip(ordered, ordered[1:], strict=False))

def occurrences(quote: str, passage: str) -> list[tuple[int, int]]:
    """Where ``quote`` stands in ``passage`` word for word, as whole words (``chci`` is not in ``nechci``),
    after :func:`server.verify.normalize` on both sides; offsets into ``passage``."""
    want = normalize(quote)
    if not want:
        return []
    plain, where = _normalized_with_offsets(passage)
    found = []
    pattern = (r"(?<!\w)" if want[0].isalnum() else "") + re.escape(want) + (r"(?!\w)" if want[-1].isalnum() else "")
    for m in re.finditer(pattern, plain):
        found.append((where[m.start()], where[m.end() - 1] + 1))
    return found

_LINK = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")

_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!>~|])")

def _normalized_with_offsets(text: str) -> tuple[str, list[int]]:
    """:func:`server.verify.normalize` of ``text`` (a markdown link read as its text, escapes and
    emphasis marks dropped, one kind of quotation mark, whitespace collapsed) with quote and list markers
    read as spaces, and for each character of the result its offset in ``text``."""
    plain = _unmarked(text)
    keep = [True] * len(plain)
    for m in _LINK.finditer(plain):
        for i in range(m.start(), m.end()):
            keep[i] = m.start(1) <= i < m.end(1)
    for m in _ESCAPED.finditer(plain):
        keep[m.start()] = False
    out: list[str] = []
    where: list[int] = []
    for i, char in enumerate(plain):
        if not keep[i] or char == " " and text[i] in "*_":
            continue  # a link's target, an escape, an emphasis mark: nothing (a marker of a line: a space)
        piece = " " if char.isspace() else normalize(char)
        if not piece or piece == " " and (not out or out[-1] == " "):
            continue
        out.append(piece)
        where.append(i)
    while out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where

def _unmarked(text: str) -> str:
    """``text`` with markdown's structure as spaces (offsets kept): blockquote and list markers, table
    pipes, heading marks, emphasis."""
    lines = []
    for line in text.split("\n"):
        line = _QUOTE_MARK.sub(lambda m: m.group(1) + " " * len(m.group(2)), line)
        line = _HEADING.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), line)
        line = _LIST_ITEM.sub(lambda m: m.group(1) + " " * (len(m.group(0)) - len(m.group(1))), line)
        if line.lstrip().startswith("|"):
            line = line.replace("|", " ")
        lines.append(_EMPHASIS_MARKS.sub(_blank_emphasis, line))
    return "\n".join(lines)


# Code spans are kept as they are; outside them, *, ** and *** next to a word, and _ or __ that open or
# close one (never inside a word: snake_case, __init__ stay).
_EMPHASIS_MARKS = re.compile(r"`[^`]*`|\*{1,3}(?=\S)|(?<=\S)\*{1,3}|(?<![\w])_{1,2}(?=\w)|(?<=\w)_{1,2}(?!\w)")


def _blank_emphasis(m: re.Match[str]) -> str:
    found = m.group(0)
    if found.startswith("`"):
        return found
    before, after = m.string[m.start() - 1:m.start()], m.string[m.end():m.end() + 1]
    if found.startswith("_") and before.isalnum() and after.isalnum():
        return found
    return " " * len(found)

@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    kind: str  # paragraph | item | cell | code
    context: tuple[tuple[int, int], ...]
    run: int  # blocks of one list or one table share it; a paragraph and a code line have their own

def _blocks(text: str) -> list[_Block]:
    """The passage's paragraphs, list items, table rows, code lines and headings, each with the ranges it
    is read with: the headings above it, the lines that introduce its list (a paragraph or a less
    indented item ending with ``:``) and its table's header row."""
    reader = _BlockReader(text)
    for line in text.split("\n"):
        reader.read(line)
    reader.close()
    return reader.blocks

class _BlockReader:
    """Reads a passage line by line into blocks (see :func:`_blocks`)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.blocks: list[_Block] = []
        self.at = 0
        self.current: list[int] | None = None  # start and end of the block being read
        self.kind = "paragraph"
        self.indent = -1  # of the current list item
        self.headings: dict[int, tuple[int, int]] = {}
        self.lead_ins: list[tuple[int, tuple[int, int]]] = []  # (indent, span): -1 for a paragraph
        self.header: tuple[int, int] | None = None
        self.fenced = False
        self.header_cells: list[tuple[int, int]] = []
        self.run = 0
        self.broken = False  # a heading since the last block: the next list or table is another one

    def read(self, line: str) -> None:
        start, end = self.at, self.at + len(line)
        self.at = end + 1
        body = _QUOTE_MARK.sub("", line)
        if _FENCE.match(body) or self.fenced:
            self.close()
            if _FENCE.match(body):
                self.fenced = not self.fenced
            elif body.strip():
                self.open(start, end, "code")
                self.close()
            return
        if not body.strip():
            self.close()
            self.header = None
            return
        heading = _HEADING.match(body)
        if heading:
            self.close()
            level = len(heading.group(2))
            self.headings = {lv: span for lv, span in self.headings.items() if lv < level}
            self.headings[level] = (start, end)
            self.lead_ins = []
            self.broken = True
            return
        if body.lstrip().startswith("|"):
            self.close()
            if not _TABLE_RULE.match(body):
                self.row(line, start)
            return
        if body.startswith(": ") and self.blocks and self.current is None:
            term = self.blocks[-1]
            self.open(start, end, "item", 0)
            self.lead_ins = [(-1, (term.start, term.end))]
            return
        item = _LIST_ITEM.match(body)
        if item:
            self.close()
            indent = len(item.group(1))
            self.lead_ins = [(i, span) for i, span in self.lead_ins if i < indent]
            self.open(start, end, "item", indent)
            return
        if self.current is not None:
            self.current[1] = end
            return
        if self.kind == "item" and line[:1].isspace():
            self.open(start, end, "item", self.indent)  # an item's next paragraph
            return
        self.lead_ins = []
        self.open(start, end, "paragraph")

    def row(self, line: str, start: int) -> None:
        """A table row as one block per cell, each read with its row's first cell and its column's
        header cell (a number in a table belongs to its row and its column)."""
        cells = [(m.start(1) + start, m.end(1) + start) for m in re.finditer(r"(?<=\|)([^|]*[^|\s][^|]*)(?=\|)", line)]
        cells = [(a + len(self.text[a:b]) - len(self.text[a:b].lstrip()), b - (len(self.text[a:b]) -
                  len(self.text[a:b].rstrip()))) for a, b in cells]
        header = self.header is None
        if header:
            self.header_cells = cells
        for column, (a, b) in enumerate(cells):
            self.open(a, b, "cell")
            context = tuple(self.headings[level] for level in sorted(self.headings))
            if column > 0:
                context += (cells[0],)
            if not header and column < len(self.header_cells):
                context += (self.header_cells[column],)
            self.blocks.append(_Block(a, b, "cell", context, self.run))
            self.current = None
        self.header = self.header or (start, start + len(line))

    def open(self, start: int, end: int, kind: str, indent: int = -1) -> None:
        previous = self.blocks[-1] if self.blocks else None
        if previous is None or kind in ("paragraph", "code") or previous.kind != kind or self.broken:
            self.run += 1
        self.current, self.kind, self.indent, self.broken = [start, end], kind, indent, False

    def close(self) -> None:
        if self.current is None:
            return
        start, end = self.current
        context = tuple(self.headings[level] for level in sorted(self.headings))
        if self.kind == "item":
            context += tuple(span for indent, span in self.lead_ins if indent < self.indent)
        self.blocks.append(_Block(start, end, self.kind, context, self.run))
        if self.kind == "item" or self.text[start:end].rstrip().endswith(":") and self.kind == "paragraph":
            # a paragraph ending with ":" introduces the list after it; an item, the items nested in it
            self.lead_ins.append((self.indent, (start, end)))
        self.current = None

def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The sentences of ``text[start:end]``, as offsets: cut after ``.``, ``!``, ``?`` or ``…`` where a
    new sentence begins, never after an abbreviation, an initial or an ordinal."""
    out = []
    at = start
    for m in _SENTENCE_END.finditer(text, start, end):
        if m.group(0)[0] == "." and not ends_sentence(text[at:m.start()], text[m.end():end].lstrip()):
            continue
        out.append((at, m.end()))
        at = m.end()
    out.append((at, end))
    return [(a + len(text[a:b]) - len(text[a:b].lstrip()), b) for a, b in out if text[a:b].strip()]

def _windows(text: str, plain: str) -> tuple[Window, ...]:
    """Every sentence of every block, in order, with its block's context and run."""
    return tuple(Window(a, b, block.context, block.run)
                 for block in _blocks(text) for a, b in _sentences(plain, block.start, block.end))

def _clauses(text: str, plain: str, brackets: bool = True) -> list[tuple[int, int]]:
    """The passage's clauses: each block's sentences cut at :data:`_CLAUSE_END` (brackets too, unless not
    ``brackets``)."""
    found = []
    for block in _blocks(text):
        cuts = {block.start, block.end}
        cuts |= {m.start() for m in _CLAUSE_END.finditer(plain, block.start, block.end)
                 if brackets or m.group(0) not in "()[]"}
        cuts |= {m.end() for m in _SENTENCE_END.finditer(plain, block.start, block.end)}
        ordered = sorted(cuts)
        found += list(zip(ordered, ordered[1:], strict=False))
    return found
