"""Random edits, build after build: every ordinary (incremental) build leaves the site a fresh build of
the same notes would make, page for page and byte for byte (the build time aside)."""

from __future__ import annotations

import posixpath
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from builder import indexfile
from builder.core import index as db
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.render_support import make_config, site_snapshot

pytestmark = pytest.mark.slow

NAMES = ("a.md", "b.md", "sub/c.md", "sub/d.md", "sub/index.md", "sub/deep/e.md")
TITLES = ("Alfa", "Beta", "Čaj", "Hory")
HEADINGS = ("Oddíl", "Postup", "Suroviny")
TAGS = ("čaj", "hory", "recepty")


@st.composite
def note_text(draw: st.DrawFn) -> str:
    """A note: maybe front matter (tags, a title, unpublished), an H1, sections, links of every kind."""
    lines: list[str] = []
    tags = draw(st.lists(st.sampled_from(TAGS), unique=True, max_size=2))
    title = draw(st.none() | st.sampled_from(TITLES))
    hidden = draw(st.integers(0, 9)) == 0
    if tags or title or hidden:
        lines.append("---")
        if tags:
            lines.append(f"tags: [{', '.join(tags)}]")
        if title:
            lines.append(f"title: {title}")
        if hidden:
            lines.append("published: false")
        lines.append("---")
    if draw(st.booleans()):
        lines.append(f"# {draw(st.sampled_from(TITLES))}")
    for heading in draw(st.lists(st.sampled_from(HEADINGS), unique=True, max_size=2)):
        lines += ["", f"## {heading}", ""]
        for _ in range(draw(st.integers(0, 2))):
            target = draw(st.sampled_from(NAMES))
            fragment = draw(st.none() | st.sampled_from(HEADINGS))
            kind = draw(st.sampled_from(("md", "wiki", "title", "folder", "image")))
            if kind == "md":
                lines.append(f"Viz [odkaz](<<{target}>>{'#' + fragment if fragment else ''}).")
            elif kind == "wiki":
                lines.append(f"Viz [[{Path(target).stem}{'#' + fragment if fragment else ''}]].")
            elif kind == "title":  # a wikilink by a title some note may have
                lines.append(f"Viz [[{draw(st.sampled_from(TITLES))}]].")
            elif kind == "folder":
                lines.append(f"Viz [složka](<<{posixpath.dirname(target) or 'sub'}>>/).")
            else:
                lines.append("![obrázek](<<img.png>>)")
    return "\n".join(lines) + "\n"


step = st.lists(st.tuples(st.sampled_from(NAMES), st.none() | note_text()), min_size=1, max_size=3)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(first=st.dictionaries(st.sampled_from(NAMES), note_text(), min_size=1), steps=st.lists(step, max_size=3),
       image=st.lists(st.sampled_from((None, b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n\x1a\nnew")), min_size=4,
                      max_size=4))
# found here: an image put where a note expected it changed no note, and no build rendered its page again
@example(first={"b.md": "\n## Oddíl\n\n![obrázek](<<img.png>>)\n"}, steps=[[("a.md", None)]],
         image=[None, b"\x89PNG\r\n\x1a\n", None, None])
def test_every_incremental_build_leaves_the_site_a_fresh_build_makes(first, steps, image) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        notes = root / "notes"
        _put(notes, "index.md", "# Rozcestník\n\n[[a]], [[c]]\n")  # never deleted: an empty folder is an unmounted one
        for rel, text in first.items():
            _put(notes, rel, text)
        _image(notes, image[0])
        (root / "portal").mkdir()
        config = make_config(root / "portal", {"notes": notes})
        log = SyncLog(config.log_path, echo_info=False)
        assert build(config, log=log) in (0, 3)
        for number, edits in enumerate(steps, start=1):
            for rel, text in edits:  # None: the note is deleted
                if text is None:
                    (notes / rel).unlink(missing_ok=True)
                else:
                    _put(notes, rel, text)
            _image(notes, image[number])
            assert build(config, log=log) in (0, 3)
            fresh = root / f"fresh{number}"
            fresh.mkdir()
            clean = make_config(fresh, {"notes": notes})
            assert build(clean, log=SyncLog(clean.log_path, echo_info=False)) in (0, 3)
            assert site_snapshot(config.site.output) == site_snapshot(clean.site.output), (first, steps[:number])
            assert _index(config) == _index(clean), (first, steps[:number])
            shutil.rmtree(fresh)


def _index(config) -> tuple[list[tuple], list[tuple], list[tuple]]:
    """What the index says of the notes: each file's record, each chunk, and what FTS5 finds for each
    word of the notes (its full-text index checked against the chunks first)."""
    conn = db.connect(indexfile.resolve(config.index), vec=False)
    try:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        files = conn.execute("SELECT path, title, tags, headings, front_matter, status, status_note, sha256 FROM files "
                             "ORDER BY path").fetchall()
        chunks = conn.execute("SELECT path, chunk_idx, breadcrumb, anchor, line_start, line_end, text FROM chunks "
                              "ORDER BY path, chunk_idx").fetchall()
        found = [(word, *(row[0] for row in conn.execute(
                     "SELECT c.path FROM chunks_fts JOIN chunks AS c ON c.id = chunks_fts.rowid "
                     "WHERE chunks_fts MATCH :word ORDER BY c.path, c.chunk_idx", {"word": f'"{word}"'})))
                 for word in (*TITLES, *HEADINGS, "Viz", "obrázek")]
        return [tuple(r) for r in files], [tuple(r) for r in chunks], found
    finally:
        conn.close()


def _put(notes: Path, rel: str, text: str) -> None:
    """Write a note, its links (``<<target>>``) made relative to its folder."""
    path = notes / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    here = posixpath.dirname(rel) or "."
    path.write_text(re.sub(r"<<([^>]+)>>", lambda m: posixpath.relpath(m.group(1), here), text), encoding="utf-8")


def _image(notes: Path, data: bytes | None) -> None:
    """The attachment the notes may link to: absent, or these bytes."""
    notes.mkdir(parents=True, exist_ok=True)
    if data is None:
        (notes / "img.png").unlink(missing_ok=True)
    else:
        (notes / "img.png").write_bytes(data)
