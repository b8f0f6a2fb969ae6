"""Notes parsed once in a first build (builder.render.early): the index's outline taken from the
renderer's parse is the index's own parse, note for note; the body rendered from it is the body
the render makes; and a first build that renders while it parses writes the site and the index a
build that parses every note twice writes."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from builder import forkpool, indexfile, sync
from builder.chunker import chunk_note
from builder.core import index as db
from builder.core.config import load_config
from builder.core.textdecode import decode_note
from builder.parse import Note, parse_note
from builder.render import early, jobs, markdown, site
from builder.sync import build
from builder.synclog import SyncLog
from tests.conftest import SHARED, require_shared
from tests.test_render_delta import make_notes, manifest, site_snapshot
from tests.test_render_helpers import make_config, write

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "notes"

# Notes where the two grammars part (footnotes, definition lists), headings whose words the
# renderer's inline grammar reads otherwise (wikilinks, footnote references, reference links), and
# other shapes the outline must keep: setext headings, front matter, nesting, raw HTML, CRLF.
TRICKY = {
    "footnote.md": "# Pozn\n\nText s poznámkou[^1].\n\n## Dál\n\n[^1]: Poznámka pod čarou.\n",
    "inline-footnote.md": "# Pozn\n\nText^[vložená poznámka] a dál.\n",
    "deflist.md": "# Pojmy\n\nČaj\n: nápoj z lístků\n\n## Další\n\nKáva\n: taky nápoj\n",
    "heading-words.md": "# Viz [[Jiná poznámka]] a [^2]\n\n## [Odkaz][ref] a `kód`\n\ntext\n\n[ref]: https://x.cz\n",
    "setext.md": "Nadpis\n======\n\nOdstavec\n---\n\n> # V citaci\n\n- ## V seznamu\n",
    "front.md": "---\ntitle: Z hlavičky\ntags: [a, b]\n---\n# Jiný\n\n<div>\n<a href=\"front.md\">já</a>\n</div>\n",
    "crlf.md": "# Okna\r\n\r\nřádek\r\n\r\n## Druhý\r\n\r\n```python\r\nx = 1\r\n```\r\n",
    "empty.md": "",
    "task.md": "# Úkoly\n\n- [x] hotovo\n- [ ] zbývá\n\n| a | b |\n|:-|-:|\n| 1 | 2 |\n",
}


def corpus_notes() -> list[tuple[str, Path, str]]:
    """(corpus, root, path) of every note of the example notes and the shared corpora."""
    found = []
    for name, root in (("examples", EXAMPLES), ("kemt-wiki", SHARED / "corpora" / "kemt-wiki"),
                       ("naucse", SHARED / "corpora" / "naucse")):
        found += [(name, root, p.relative_to(root).as_posix()) for p in sorted(root.rglob("*.md"))]
    return found


def outline_shape(note: Note) -> list[tuple]:
    """What the chunker and the index read of a note's blocks."""
    return [(t.type, t.tag, t.nesting, t.level, tuple(t.map) if t.map else None) for t in note.tokens]


def same_as_parsed_twice(path: str, text: str, root: Path) -> None:
    """The note, its chunks and its body from one parse equal those of the index's parse and the render's."""
    from builder.core.config import SourceConfig

    source = SourceConfig(id="notes", kind="folder", root=root)
    speculative = early.for_source(source, root, [path], trusted=False)
    made = early.parse_and_render(path, text, speculative)
    if markdown.page_text(text) != text.replace("\r\n", "\n").replace("\r", "\n"):
        assert made is None  # the page shows other characters than the index reads: the render's
        return
    assert made is not None
    note, body = made.note, made.body
    reference = parse_note(path, text)
    # the renderer gives the shared blocks ids and children afterwards: what the index reads is compared
    assert replace(note, tokens=()) == replace(reference, tokens=())
    assert outline_shape(note) == outline_shape(reference)
    assert chunk_note(note) == chunk_note(reference)

    def resolve(kind: str, raw: str):
        return speculative.resolver.resolve("notes", path, kind, raw)

    expected = markdown.render_body(markdown.make_renderer(), markdown.page_text(text),
                                    page_url=f"notes/{path[:-3]}.html",
                                    anchors={h.line: h.anchor for h in reference.headings}, resolve=resolve,
                                    trusted=False)
    assert body == expected


@pytest.mark.parametrize("path", sorted(TRICKY))
def test_one_parse_gives_the_index_and_the_page_what_two_parses_give(path, tmp_path):
    write(tmp_path, path, "x")  # a file to resolve links against
    same_as_parsed_twice(path, TRICKY[path], tmp_path)


def test_one_parse_gives_what_two_parses_give_for_every_note_of_the_corpora():
    require_shared(SHARED / "corpora")
    notes = corpus_notes()
    assert len(notes) > 700
    for _, root, path in notes:
        same_as_parsed_twice(path, decode_note((root / path).read_bytes()).text, root)


def test_the_outline_of_the_renderers_parse_is_used_unless_the_grammars_part(monkeypatch):
    """The index's own parse runs again only for notes with footnotes or definition lists."""
    from builder import parse

    own: list[str] = []
    real = parse._outline
    monkeypatch.setattr(parse, "_outline", lambda text: own.append(text) or real(text))
    source_root = EXAMPLES
    for path, text in TRICKY.items():
        from builder.core.config import SourceConfig

        speculative = early.for_source(SourceConfig(id="n", kind="folder", root=source_root), source_root,
                                       [path], trusted=False)
        assert early.parse_and_render(path, text, speculative) is not None
    assert sorted(own) == sorted(TRICKY[p].replace("\r\n", "\n")
                                 for p in ("footnote.md", "inline-footnote.md", "deflist.md"))


def test_a_note_with_characters_html_forbids_is_left_to_the_render():
    """The page shows U+FFFD where the index reads a control character: not one text, so no early body."""
    from builder.core.config import SourceConfig

    speculative = early.for_source(SourceConfig(id="n", kind="folder", root=EXAMPLES), EXAMPLES, [],
                                   trusted=False)
    assert early.parse_and_render("a.md", "# A\x0b\n\ntext\n", speculative) is None
    assert early.parse_and_render("a.md", "# A\n\ntext\n", speculative) is not None


# ---------------------------------------------------------------- whole builds


def notes(tmp_path: Path) -> Path:
    """The render tests' notes (two sources), plus notes whose links the early render resolves
    otherwise than the end of the build does, plus the tricky ones."""
    root = tmp_path / "notes"
    make_notes(root)
    write(root, "na-koncept.md", "# Na koncept\n\n[koncept](koncept.md) se nezveřejňuje.\n")
    write(root, "hluboko.md", "# Hluboko\n\n" + ">" * 3000 + " text\n")  # markdown-it stops nesting at 20
    for path, text in TRICKY.items():
        write(root, f"tricky/{path}", text)
    write(root, "kopie/task.md", TRICKY["task.md"])  # a copy: rendered once, its page reuses the body
    return root


def portal(tmp_path: Path, name: str):
    """A portal over :func:`notes` (made once in ``tmp_path``)."""
    root = tmp_path / "notes"
    if not root.exists():
        notes(tmp_path)
    (tmp_path / name).mkdir()
    return make_config(tmp_path / name, {"notes": root, "other": tmp_path / "other"})


rendered_early: list[str] = []  # the notes the last first_build rendered while parsing (its process only)


def first_build(config, monkeypatch, *, parse_once: bool, forked: bool) -> list[str]:
    """A first build (``notes-portal build``); returns the notes whose bodies the render parsed."""
    parsed: list[str] = []
    rendered_early.clear()
    with monkeypatch.context() as patch:
        if not parse_once:
            patch.setattr(sync, "_render_while_parsing", lambda config: False)
        if forked:
            patch.setattr(forkpool, "PARALLEL_MIN", 1)
            patch.setattr(os, "cpu_count", lambda: 2)
        real = jobs._render
        patch.setattr(jobs, "_render", lambda note, data: parsed.append(note.key) or real(note, data))
        real_early = early.parse_and_render
        patch.setattr(early, "parse_and_render",
                      lambda path, text, how: rendered_early.append(path) or real_early(path, text, how))
        assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0
    return parsed


def index_rows(config) -> list[tuple]:
    conn = db.connect(indexfile.resolve(config.index), vec=False)
    try:
        return [tuple(r) for r in conn.execute(
            "SELECT f.path, f.title, f.tags, f.headings, f.status, c.chunk_idx, c.breadcrumb, c.anchor, "
            "c.line_start, c.line_end, c.text, c.stems FROM files AS f LEFT JOIN chunks AS c USING (source_id, path) "
            "ORDER BY f.source_id, f.path, c.chunk_idx")]
    finally:
        conn.close()


def published(config) -> list[str]:
    """The keys of the notes with a page."""
    conn = db.connect(indexfile.resolve(config.index), vec=False)
    try:
        return sorted(f"{source}:{path}" for source, path in conn.execute(
            "SELECT source_id, path FROM files WHERE status = 'ok'"))
    finally:
        conn.close()


@pytest.mark.parametrize("forked", [False, True], ids=["one process", "forked workers"])
def test_a_first_build_that_parses_once_writes_what_parsing_twice_writes(tmp_path, monkeypatch, forked):
    once, twice = portal(tmp_path, "once"), portal(tmp_path, "twice")
    reparsed = first_build(once, monkeypatch, parse_once=True, forked=forked)
    rendered_once = list(rendered_early)
    parsed = first_build(twice, monkeypatch, parse_once=False, forked=forked)
    assert site_snapshot(once.site.output) == site_snapshot(twice.site.output)
    assert manifest(once.site.output) == manifest(twice.site.output)
    assert index_rows(once) == index_rows(twice)
    assert len(index_rows(once)) > 30
    if not forked:  # (the workers' calls are not seen here)
        # parsing twice: the render parses every note but one of the two copies
        assert sorted(set(parsed) | {"notes:kopie/task.md", "notes:tricky/task.md"}) == published(twice)
        assert len(parsed) == len(published(twice)) - 1
        # parsing once, it parses again only a note with a link by title ([[Gama]]), to a heading as
        # written (#Oddíl) or to a note that is not published
        assert sorted(reparsed) == ["notes:a.md", "notes:na-koncept.md", "notes:sub/b.md"]
        # each text once: the copy of tricky/task.md is parsed for the index alone, its page takes the body
        assert len(rendered_once) == len(set(rendered_once)) == len(published(once)) - 1 + 1  # + the draft
        assert ("kopie/task.md" in rendered_once) != ("tricky/task.md" in rendered_once)


def test_a_note_that_fails_to_render_while_parsing_is_indexed_and_rendered_as_ever(tmp_path, monkeypatch):
    once, twice = portal(tmp_path, "once"), portal(tmp_path, "twice")
    real = early.parse_and_render

    def failing(path, text, speculative):
        if path == "sub/d.md":
            raise RecursionError("maximum recursion depth exceeded")
        return real(path, text, speculative)

    monkeypatch.setattr(early, "parse_and_render", failing)
    assert first_build(once, monkeypatch, parse_once=True, forked=False) == ["notes:a.md", "notes:na-koncept.md",
                                                                               "notes:sub/b.md", "notes:sub/d.md"]
    first_build(twice, monkeypatch, parse_once=False, forked=False)
    assert site_snapshot(once.site.output) == site_snapshot(twice.site.output)
    assert index_rows(once) == index_rows(twice)


def test_a_full_build_over_a_site_with_kept_bodies_parses_the_blocks_only(tmp_path, monkeypatch):
    """``build --full`` meets the texts the site keeps bodies of: no note is rendered while parsing."""
    monkeypatch.setattr(site, "BIG_RENDER", 1)  # only a big render keeps bodies
    config = portal(tmp_path, "p")
    first_build(config, monkeypatch, parse_once=True, forked=False)
    before = site_snapshot(config.site.output)
    rendered: list[str] = []
    real = markdown.render_body
    monkeypatch.setattr(markdown, "render_body", lambda md, text, **kw: rendered.append(kw["page_url"])
                        or real(md, text, **kw))
    assert build(load_config(config.path), full=True, log=SyncLog(config.log_path, echo_info=False)) == 0
    assert rendered == []
    assert site_snapshot(config.site.output) == before
