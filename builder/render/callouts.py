"""Callouts: boxes that say "note", "tip" or "warning" around a part of a note.

Two ways people write them, both rendered as ``<div class="callout callout-{family}">`` (or a
``<details>`` when the callout folds) with a title:

- GitHub alerts and Obsidian callouts, a blockquote whose first line is ``[!TYPE]``, optionally
  followed by ``+`` or ``-`` (folded open or closed) and a title::

      > [!warning] Do not push secrets
      > Git keeps them for ever.

- Grav's notices (the markdown-notices plugin, as kemt-wiki writes them): consecutive lines that
  open with one to four ``!`` and a space; the count is the colour (yellow, red, blue, green)::

      ! Cieľ:
      ! - príprava základnej sady nástrojov

The index reads both as the text they hold (``builder.notes.parse`` keeps its own grammar).
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

# The colour each kind takes: Obsidian's types and aliases, GitHub's five; an unknown type is a note.
FAMILIES = {
    **dict.fromkeys(("note", "info", "todo", "abstract", "summary", "tldr", "quote", "cite", "example"), "note"),
    **dict.fromkeys(("tip", "hint", "success", "check", "done", "important"), "tip"),
    **dict.fromkeys(("warning", "caution", "attention", "question", "help", "faq"), "warning"),
    **dict.fromkeys(("danger", "error", "failure", "fail", "missing", "bug"), "danger"),
}
_MARKER = re.compile(r"\[!([A-Za-z][\w-]*)\]([+-]?)[ \t]*(.*)")
GRAV_FAMILIES = {1: "warning", 2: "danger", 3: "note", 4: "tip"}  # "!" … "!!!!": Grav's yellow, red, blue, green
_GRAV_LINE = re.compile(r"(!{1,4})(?:[ \t]|$)")


def callout_plugin(md: MarkdownIt) -> None:
    """Blockquotes that open with ``[!TYPE]`` become callouts (before the inline pass, so that the
    title is parsed as inline markdown)."""
    md.core.ruler.after("block", "callouts", _callouts)


def grav_notice_plugin(md: MarkdownIt) -> None:
    """Lines that open with ``!`` … ``!!!!`` and a space are a callout of Grav's kind; the text
    after the marks is parsed as blocks, as a blockquote's is. A notice never interrupts a paragraph."""
    md.block.ruler.before("blockquote", "grav_notice", _grav_notice)


def _open_callout(token: Token, kind: str, fold: str) -> None:
    token.tag = "details" if fold else "div"
    token.attrs = {"class": f"callout callout-{FAMILIES.get(kind, 'note')}"}
    if fold == "+":
        token.attrs["open"] = ""


def _title(kind: str, title: str, fold: str, line: int, level: int) -> list[Token]:
    tag = "summary" if fold else "p"
    opening, closing = Token("callout_title_open", tag, 1), Token("callout_title_close", tag, -1)
    opening.attrs = {"class": "callout-title"}
    inline = Token("inline", "", 0)
    inline.content = title or kind.capitalize()
    inline.children = []
    for token, depth in ((opening, level), (inline, level + 1), (closing, level)):
        token.map, token.level, token.block = [line, line + 1], depth, True
    return [opening, inline, closing]


def _callouts(state: Any) -> None:
    tokens: list[Token] = state.tokens
    i = 0
    while i < len(tokens) - 2:
        opening, paragraph, inline = tokens[i], tokens[i + 1], tokens[i + 2]
        i += 1
        if opening.type != "blockquote_open" or paragraph.type != "paragraph_open" or inline.type != "inline":
            continue
        first, _, rest = inline.content.partition("\n")
        found = _MARKER.fullmatch(first.strip())
        if found is None:
            continue
        kind, fold, title = found[1].lower(), found[2], found[3].strip()
        closing = next(t for t in tokens[i + 1:] if t.type == "blockquote_close" and t.level == opening.level)
        _open_callout(opening, kind, fold)
        closing.tag = opening.tag
        line = paragraph.map[0] if paragraph.map else 0
        header = _title(kind, title, fold, line, paragraph.level)
        if rest.strip():  # the paragraph goes on below the marker's line
            inline.content = rest
            for token in (paragraph, inline):
                token.map = [line + 1, token.map[1]] if token.map else None
            tokens[i:i] = header
        else:
            tokens[i:i + 3] = header


def _grav_notice(state: Any, start: int, end: int, silent: bool) -> bool:
    if state.is_code_block(start):
        return False
    level = _grav_level(state, start)
    if level is None:
        return False
    if silent:
        return True
    terminators = state.md.block.ruler.getRules("blockquote")
    saved, last, last_empty = [], start, False
    while last < end:
        saved.append((state.bMarks[last], state.tShift[last], state.sCount[last]))
        here = _grav_level(state, last)
        if here == level:  # the text after the marks (and one space), as in a blockquote
            pos = state.bMarks[last] + state.tShift[last] + level
            if pos < state.eMarks[last] and state.src[pos] in " \t":
                pos += 1
            text = state.src[pos:state.eMarks[last]]
            indent = len(text) - len(text.lstrip(" \t"))
            state.bMarks[last], state.tShift[last], state.sCount[last] = pos, indent, indent
            last_empty = not text.strip()
        elif (last_empty or state.isEmpty(last) or here is not None
              or any(rule(state, last, end, True) for rule in terminators)):
            saved.pop()
            break
        else:  # a lazy line: the paragraph above goes on (kemt-wiki wraps list items so)
            state.sCount[last] = -1
        last += 1
    old_parent, old_indent, old_max = state.parentType, state.blkIndent, state.lineMax
    state.parentType, state.blkIndent, state.lineMax = "blockquote", 0, last
    token = state.push("grav_notice_open", "div", 1)
    token.attrs = {"class": f"callout callout-{GRAV_FAMILIES[level]}"}
    token.markup, token.map = "!" * level, [start, last]
    state.md.block.tokenize(state, start, last)
    token = state.push("grav_notice_close", "div", -1)
    token.markup = "!" * level
    state.parentType, state.blkIndent, state.lineMax = old_parent, old_indent, old_max
    for n, (b_mark, t_shift, s_count) in enumerate(saved, start):
        state.bMarks[n], state.tShift[n], state.sCount[n] = b_mark, t_shift, s_count
    state.line = last
    return True


def _grav_level(state: Any, line: int) -> int | None:
    """How many ``!`` open the line as a notice (None: it is no notice line)."""
    if state.sCount[line] - state.blkIndent >= 4:
        return None
    pos = state.bMarks[line] + state.tShift[line]
    found = _GRAV_LINE.match(state.src, pos, state.eMarks[line])
    return len(found[1]) if found else None
