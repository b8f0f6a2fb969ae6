"""Markdown → :class:`Note`: title, tags, headings with anchors, published flag.

markdown-it-py does the parsing (CommonMark with setext headings, nested lists,
HTML blocks); this module only reads its token stream. The index needs the blocks (the chunker
cuts at them) and the words of the headings, so only headings get the inline pass: the rest of
a note's inline markup is the renderer's business (it parses the note whole).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime
from functools import cache
from pathlib import PurePosixPath
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from builder.core.slug import Slugger


@dataclass(frozen=True)
class Heading:
    level: int
    text: str  # plain text, inline markup reduced to its words
    anchor: str
    line: int  # 0-based line of the heading in the source


class NoteRefused(ValueError):
    """A note that cannot be read safely (its front matter uses YAML aliases): it is skipped with a
    warning, never guessed at, so a note meant to be hidden cannot become public by it."""


@dataclass(frozen=True)
class Note:
    path: str
    title: str
    tags: tuple[str, ...]
    headings: tuple[Heading, ...]
    published: bool
    source_lines: tuple[str, ...]
    tokens: tuple[Token, ...] = field(repr=False)  # blocks; only a heading's inline token has children
    front_matter: dict[str, Any] = field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()


def make_markdown() -> MarkdownIt:
    """The parser shared by the chunker and the renderer (so headings and lines agree)."""
    return MarkdownIt("commonmark", {"html": True}).use(front_matter_plugin).enable(["table", "strikethrough"])


@cache
def _outline_parser() -> MarkdownIt:
    """:func:`make_markdown` without its inline pass (most of the parsing time of a note), made once per
    process (it keeps no note's state)."""
    md = make_markdown()
    md.core.ruler.disable(["inline", "text_join"])
    return md


def _outline(text: str) -> list[Token]:
    """The block tokens of ``text``, the inline tokens of top-level headings parsed (as a whole
    parse would: with the link reference definitions of the whole note)."""
    md = _outline_parser()
    env: dict[str, Any] = {}
    tokens = md.parse(text, env)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0:
            inline = tokens[i + 1]
            inline.children = []
            md.inline.parse(inline.content, md, env, inline.children)
    return tokens


# "text_special" (an escaped character, an entity) is text: a whole parse joins it into its text token
_TEXT_TYPES = ("text", "text_special", "code_inline", "softbreak", "html_inline", "image")


def inline_text(token: Token) -> str:
    """Visible text of an inline token: text and code spans, without markup."""
    if not token.children:
        return token.content.strip()
    parts = [child.content for child in token.children if child.type in _TEXT_TYPES]
    text = "".join(" " if p == "" else p for p in parts)
    text = re.sub(r"<[^>]*>", "", text)  # inline HTML tags are markup, not words
    return " ".join(text.split())


def headings_of(tokens: list[Token] | tuple[Token, ...]) -> list[Heading]:
    """Every heading of the token stream with its unique anchor, in document order."""
    slugger = Slugger()
    headings = []
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            text = inline_text(tokens[i + 1])
            headings.append(Heading(level=int(token.tag[1]), text=text, anchor=slugger.slug(text),
                                    line=token.map[0]))
    return headings


MAX_TAGS = 256  # a note's tags kept: each is a page of the site, and a tag page lists the note


def _tags(front: dict[str, Any]) -> tuple[str, ...]:
    """Every distinct tag of the front matter, in its order (:data:`MAX_TAGS` are kept: see parse_note)."""
    raw = front.get("tags", front.get("tag"))
    taxonomy = front.get("taxonomy")
    if raw is None and isinstance(taxonomy, dict):  # Grav pages: taxonomy: {tag: [...]}
        raw = taxonomy.get("tag")
    if isinstance(raw, str):
        raw = raw.split(",")
    if not isinstance(raw, list):
        return ()
    tags: dict[str, None] = {}  # in order, each once
    for item in raw:
        tag = " ".join(str(item).strip().lstrip("#").split())
        if tag and not isinstance(item, (dict, list)):
            tags[tag] = None
    return tuple(tags)


# libyaml's scanner when PyYAML was built with it (its wheels are), the same safe constructor: the
# pure-Python one was an eighth of the parsing workers' time in a first build of 10,000 notes (py-spy).
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _front_matter(tokens: list[Token], path: str, text: str) -> tuple[dict[str, Any], list[str]]:
    if not tokens or tokens[0].type != "front_matter":
        return _unclosed(text, path)
    content = tokens[0].content
    if "*" in content and _has_aliases(content):  # 362 bytes of aliases expand to gigabytes
        raise NoteRefused("front matter uses YAML aliases (*name), which are not read; not indexed")
    try:
        data = yaml.load(content, Loader=_YAML_LOADER)  # a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        last = content.count("\n")  # an error at the end (an unclosed bracket) is on the last line
        where = f" at line {min(mark.line, last) + 2}" if mark else ""
        return _read_loosely(content, f"{path}: broken front matter{where}")
    if data is None:
        return {}, []
    if not isinstance(data, dict):
        return _read_loosely(content, f"{path}: front matter is not a mapping")
    return data, []


def _has_aliases(content: str) -> bool:
    try:
        return any(isinstance(event, yaml.AliasEvent) for event in yaml.parse(content, Loader=_YAML_LOADER))
    except yaml.YAMLError:
        return False  # refused by the loader too: read loosely, where no alias is expanded


def _unclosed(text: str, path: str) -> tuple[dict[str, Any], list[str]]:
    """A note that opens with ``---`` and never closes it: its body as written, but a
    ``published: false`` line in that block still hides it."""
    lines = text.split("\n")
    if lines[0].rstrip() != "---":
        return {}, []
    block = []
    for line in lines[1:]:
        if not (found := _LOOSE_LINE.fullmatch(line)):
            break
        block.append(found)
    if not block:  # a thematic break opening the note
        return {}, []
    hidden = any(found[1] == "published" and _is_false(found[2].strip("\"'")) for found in block)
    return ({"published": False} if hidden else {}), [f"{path}: front matter without its closing ---, "
                                                       "indexed from the body"]


# A front matter line as people write it when YAML refuses it: ``title: Týždeň 4: Obrazy`` (a colon
# in a plain value), ``title:Vetvenie`` (no space after the colon). Grav's wikis hold both. A comment
# after the value (`` # private``) is YAML's: not part of it.
_LOOSE_LINE = re.compile(r"([A-Za-z_][\w-]*)[ \t]*:[ \t]*(.*?)(?:[ \t]+#.*)?[ \t]*")
_YAML_SYNTAX = tuple("[]{}\"'|>&*!%@`#,")  # a value opening with one of these is YAML gone wrong, not text


def _read_loosely(content: str, problem: str) -> tuple[dict[str, Any], list[str]]:
    """Front matter YAML refused, read as one ``key: value`` per line when every line is one.
    Otherwise only ``published: false`` is kept: a note its author meant to hide stays hidden."""
    data: dict[str, Any] = {}
    for line in content.split("\n"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LOOSE_LINE.fullmatch(line)
        value = _loose_value(match[2]) if match else None
        if match is None or value is None:
            hidden = any(found[1] == "published" and _is_false(found[2].strip("\"'"))
                         for found in map(_LOOSE_LINE.fullmatch, content.split("\n")) if found)
            return ({"published": False} if hidden else {}), [f"{problem}, indexed from the body"]
        data[match[1]] = value
    return data, [f"{problem}, read line by line as key: value"]


def _loose_value(raw: str) -> Any:
    """A value of a loosely read line: what YAML makes of it (``true``, ``3``, ``[a, b]``), else the
    text itself (``Týždeň 4: Obrazy``); None for what looks like broken YAML syntax (``[unclosed``)."""
    if not raw:
        return ""
    try:
        value = yaml.load(raw, Loader=_YAML_LOADER)  # a safe loader
    except yaml.YAMLError:
        return None if raw.startswith(_YAML_SYNTAX) else raw
    if value is None:
        return ""
    return raw if isinstance(value, dict) and not raw.startswith("{") else value  # "Týždeň 4: Obrazy"


def _is_false(value: Any) -> bool:
    return value is False or (isinstance(value, str) and value.strip().lower() in ("false", "no", "off"))


def parse_note(path: str, text: str) -> Note:
    """Parse one note; never raises for bad markdown or bad front matter (those become warnings)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # the line numbering markdown-it uses
    tokens = _outline(text)
    front, warnings = _front_matter(tokens, path, text)
    headings = headings_of(tokens)
    title = front.get("title")
    if not isinstance(title, (str, int, float)) or not str(title).strip():
        first_h1 = next((h.text for h in headings if h.level == 1 and h.text), None)
        title = first_h1 or PurePosixPath(path).stem.replace("-", " ").replace("_", " ")
    tags = _tags(front)
    if len(tags) > MAX_TAGS:
        warnings.append(f"{path}: {len(tags)} tags; only the first {MAX_TAGS} are kept")
    return Note(
        path=path,
        title=" ".join(str(title).split()),
        tags=tags[:MAX_TAGS],
        headings=tuple(headings),
        published=not _is_false(front.get("published", True)),
        source_lines=tuple(text.split("\n")),
        tokens=tuple(tokens),
        front_matter={k: _plain(v) for k, v in front.items()},
        warnings=tuple(warnings),
    )


def _plain(value: Any) -> Any:
    """Front matter values made JSON-friendly (YAML dates become ISO strings)."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
