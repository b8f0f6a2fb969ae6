"""Note bodies rendered while a full build parses its notes for the index: each note parsed once.

A first build (or a ``--full`` one with no bodies kept, :mod:`builder.render.bodycache`) would
otherwise parse every note twice: its blocks for the index, then the whole text for its page. Here
the build's parsing workers parse each note whole with the renderer's grammar, take the index's
outline from that parse (:func:`builder.parse.outline_from`) and render the body from the same
tokens.

A body's links are resolved before the index knows every note: by the paths of the files the build
indexes, each titled by its file name, none with headings. The render uses such a body only when each
of its links renders as it does with what the index holds in the end (as for kept bodies), and
renders the note again otherwise: a link by a note's title or to a heading.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.core import urls
from builder.render.links import Resolver, SourceNotes
from builder.sources import Scope

if TYPE_CHECKING:
    from markdown_it.token import Token

    from builder.core.config import SourceConfig
    from builder.parse import Note
    from builder.render.markdown import Body


@dataclass(frozen=True)
class EarlyRender:
    """What rendering one source's notes during the parse needs."""

    source_id: str
    resolver: Resolver  # by the paths being indexed (see the module docstring)
    trusted: bool  # raw HTML is not sanitized
    # the texts (sha256) rendered so far in this process: a copy of one is parsed for the index alone,
    # and the render gives it the first copy's body where its links render the same (one set per process:
    # forked workers change their own)
    rendered: set[str] = field(default_factory=set, compare=False)


def for_source(source: SourceConfig, root: Path, paths: Iterable[str], trusted: bool) -> EarlyRender:
    """The early render of ``source``'s notes, whose files (relative to ``root``) are ``paths``."""
    notes = [(path, posixpath.splitext(posixpath.basename(path))[0]) for path in sorted(paths)]
    unknown: tuple[str, ...] = ()
    notes_here = SourceNotes(source.id, root, Scope.of(source), notes, lambda _path: unknown)
    return EarlyRender(source.id, Resolver({source.id: notes_here}), trusted)


@dataclass(frozen=True)
class Parsed:
    """One note parsed once: for the index and for its page."""

    note: Note
    body: Body
    code: tuple[str, ...]  # the keys of its highlighted code blocks
    new_blocks: dict[str, str]  # the code blocks highlighted for it now (not remembered before)


_MD: list[Any] = []  # the renderer, made on first use in each process


def parse_and_render(path: str, text: str, early: EarlyRender) -> Parsed | None:
    """The note at ``path`` (``text``: as the index reads it) and its body, from one parse; None when
    its page would show other characters than the index reads (:func:`builder.render.markdown.page_text`)."""
    from builder.parse import normalize_newlines, outline_from, parse_note
    from builder.render import highlight, markdown

    text = normalize_newlines(text)
    if markdown.page_text(text) != text:
        return None
    if not _MD:
        _MD.append(markdown.make_renderer())
    made: list[Note] = []

    def outline(tokens: list[Token], env: dict[str, Any]) -> dict[int, str]:
        note = parse_note(path, text, outline_from(tokens, env))
        made.append(note)
        return {h.line: h.anchor for h in note.headings}

    def resolve(kind: str, raw: str) -> Any:
        return early.resolver.resolve(early.source_id, path, kind, raw)

    highlight.take_used()
    highlight.take_new()
    body = markdown.render_body(_MD[0], text, page_url=urls.note_url(early.source_id, path), anchors=outline,
                                resolve=resolve, trusted=early.trusted)
    return Parsed(made[0], body, highlight.take_used(), highlight.take_new())
