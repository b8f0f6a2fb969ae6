"""The per-note work of a render (note bodies, note pages), in forked worker processes when there
is enough of it. Each job gets the render's :class:`Context` as its first argument: from the render in
this process, from the pool in a worker (:class:`builder.core.forkpool.Pool`, which workers inherit by fork
instead of unpickling it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core import urls

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

    from builder.core.templates import Templates
    from builder.render.highlight import CodeBlocks
    from builder.render.graph import Local
    from builder.render.links import Link, Resolver
    from builder.render.markdown import Body
    from builder.render.pages import NoteInfo



@dataclass(frozen=True)
class Context:
    """What rendering a note needs besides the note."""

    resolver: Resolver
    roots: dict[str, Path]
    trusted: bool
    templates: Templates
    built_at: str
    site: Path
    blocks: CodeBlocks  # the render's highlighted code and formulas (a worker's: its copy, made at the fork)
    kept_bodies: Path | None = None  # the bodies kept by earlier renders (builder.render.bodycache), if used
    spill: Path | None = None  # a big render's bodies' HTML on disk (builder.render.bodycache.Spill), if used
    max_note_bytes: int = 2_000_000  # limits.max_note_bytes: a note read for its page is read no further
    notes: Sequence[NoteInfo] = ()  # the render's notes, which jobs name by position (forked workers hold them)


@dataclass(frozen=True)
class Outcome:
    body: Body | None  # None when the note could not be read
    error: str | None = None
    highlights: tuple[str, ...] = ()  # keys of the highlighted code blocks the body uses
    blocks: dict[str, str] | None = None  # the code blocks highlighted for it (for the site's cache)
    new: bool = False  # rendered now from the text the index saw: worth keeping for the next full render


@cache
def _renderer() -> MarkdownIt:
    """The markdown-it instance of this process (made on first use; it keeps no note's state)."""
    from builder.render import markdown

    return markdown.make_renderer()


def same_text_groups(notes: list[NoteInfo]) -> list[list[NoteInfo]]:
    """Notes grouped by the sha256 of their text, in order of first appearance (one job each)."""
    groups: dict[str, list[NoteInfo]] = {}
    for note in notes:
        groups.setdefault(note.sha256, []).append(note)
    return list(groups.values())


@dataclass(frozen=True)
class Written:
    """A note page the render wrote, or why it could not."""

    url: str
    key: str  # the note's
    error: str | None = None
    errno: int | None = None  # of an OSError

    @property
    def rel(self) -> str:
        """Its file, relative to the site folder."""
        return urls.site_file(self.url)


def page_job(ctx: Context, job: tuple[NoteInfo, Body, list[NoteInfo], Local]) -> Written:
    """Render and write one note page (with the picture of its links). A page that cannot be made or
    written is that note's failure (see :class:`Written`); a full disk is the render's."""
    from builder.core import language
    from builder.render import bodycache, drawing, output, pages

    note, body, backlinks, local = job
    rel = urls.site_file(note.url)
    html = body.html
    if html == bodycache.SPILLED:
        read = bodycache.spilled_html(ctx.spill, note.key) if ctx.spill is not None else None
        if read is None:  # a failed page: the render runs again without its note (builder.render.site)
            return Written(note.url, note.key, "its page could not be made (its body could not be read back)")
        html = read
    try:
        svg = "" if local.empty else drawing.local_svg(local, note.url, ctx.templates.language)
        lang = body.lang or language.detect(language.prose_of_html(html)) or ""
        page = pages.note_page(note, html, backlinks, svg, lang, body.summary or pages.summary_of(html))
        html = ctx.templates.render(page, ctx.built_at)
        output.write_atomic(ctx.site / rel, html)
    except OSError as exc:
        if output.disk_full(exc):
            raise
        return Written(note.url, note.key, f"its page could not be written ({exc.strerror or exc})", exc.errno)
    except Exception as exc:  # a template or a drawing that chokes on one note: that note's alone
        return Written(note.url, note.key, f"its page could not be made ({type(exc).__name__}: {str(exc)[:200]})")
    return Written(note.url, note.key)


def page_job_at(ctx: Context, job: tuple[int, Body, list[int], Local]) -> Written:
    """:func:`page_job` of the note and backlinks at those positions of ``ctx.notes`` (a job so named sends no note
    to a worker: pickling a note's strings left a UTF-8 copy of each on them, 1 KB a note of the render's memory)."""
    number, body, backlinks, local = job
    return page_job(ctx, (ctx.notes[number], body, [ctx.notes[other] for other in backlinks], local))


def body_job_at(ctx: Context, numbers: list[int]) -> list[Outcome]:
    """:func:`body_job` of the notes at those positions of ``ctx.notes`` (see :func:`page_job_at`)."""
    return body_job(ctx, [ctx.notes[number] for number in numbers])


def body_job(ctx: Context, notes: list[NoteInfo]) -> list[Outcome]:
    """The bodies of notes that share one text: the first readable one is rendered, the others
    reuse its HTML wherever their links render the same (kemt-wiki keeps copies of whole courses)."""
    outcomes: list[Outcome] = []
    model: tuple[NoteInfo, Outcome] | None = None  # a note rendered from its indexed text, and its body
    for note in notes:
        data, outcome = _note_bytes(ctx, note)
        indexed = outcome is None and hashlib.sha256(data).hexdigest() == note.sha256
        if outcome is None and not indexed:  # changed since the index saw it: shown only if a build would publish it
            from builder.notes.publication import judge

            verdict = judge(note.path, data, max_bytes=ctx.max_note_bytes)
            if not verdict.published:
                outcome = Outcome(None, f"changed since this build indexed it, and not published as it is now "
                                        f"({verdict.reason}); the next build takes its page down")
        if indexed and model is not None and note.headings_json == model[0].headings_json:
            outcome = _reuse(ctx, note, *model)
        if indexed and outcome is None:
            outcome = _kept(ctx, note)
        if outcome is None:
            outcome, indexed = _render_body(ctx, note, data)
            if indexed and outcome.body is not None and model is None:
                model = (note, outcome)
        outcomes.append(outcome)
    return outcomes


def _kept(ctx: Context, note: NoteInfo) -> Outcome | None:
    """The body an earlier render kept for this text and page, when its links still render the same."""
    if ctx.kept_bodies is None:
        return None
    from builder.render import bodycache

    found = bodycache.lookup(ctx.kept_bodies, note,
                             lambda kind, raw: ctx.resolver.resolve(note.source_id, note.path, kind, raw))
    return Outcome(found[0], None, found[1]) if found is not None else None


def _reuse(ctx: Context, note: NoteInfo, first: NoteInfo, done: Outcome) -> Outcome | None:
    """``first``'s body as ``note``'s (same text and anchors), if its links render the same there."""
    from builder.render import markdown

    if done.body is None:
        return None
    resolve = ctx.resolver.resolve
    results = tuple(resolve(note.source_id, note.path, kind, raw) for kind, raw in done.body.links)
    body = markdown.same_body(done.body, first.url, note.url, results)
    return Outcome(body, done.error, done.highlights, new=done.new) if body is not None else None  # blocks: done's


def _note_bytes(ctx: Context, note: NoteInfo) -> tuple[bytes, Outcome | None]:
    try:
        with open(ctx.roots[note.source_id] / note.path, "rb") as handle:
            return handle.read(ctx.max_note_bytes + 1), None  # more: over the limit, never a page
    except OSError as exc:
        return b"", Outcome(None, f"cannot read the note for its page ({exc.strerror or exc})")


def _render_body(ctx: Context, note: NoteInfo, data: bytes) -> tuple[Outcome, bool]:
    """Render one note's body (and whether from the text the index saw); problems become a message
    and a plain-text body, never an exception."""
    from builder.render import markdown

    text = markdown.note_text(data)
    indexed = hashlib.sha256(data).hexdigest() == note.sha256
    if indexed:
        anchors = {h.line - 1: h.anchor for h in note.headings}
    else:  # changed since it was indexed: the next build re-renders it; until then, same anchors as the chunker
        from builder.notes.parse import headings_of, make_markdown

        anchors = {h.line: h.anchor for h in headings_of(make_markdown().parse(text))}
    resolver = ctx.resolver

    def resolve(kind: str, raw: str) -> Link:
        return resolver.resolve(note.source_id, note.path, kind, raw)

    blocks = ctx.blocks
    blocks.take_used()
    blocks.take_new()
    try:
        body = markdown.render_body(_renderer(), text, page_url=note.url, anchors=anchors, resolve=resolve,
                                    trusted=ctx.trusted, language=ctx.templates.language, blocks=blocks)
        return Outcome(body, None, blocks.take_used(), blocks.take_new() or None, new=indexed), indexed
    except Exception as exc:  # e.g. RecursionError on absurd nesting: show the text, keep the build going
        import html

        fallback = markdown.Body(f"<pre>{html.escape(text)}</pre>", (), ())
        blocks.take_used()
        blocks.take_new()
        error = f"could not render the markdown ({type(exc).__name__}); shown as plain text"
        return Outcome(fallback, error), indexed
