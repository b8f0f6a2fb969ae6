"""Real corpora end to end: the example notes and kemt-wiki (616 Grav pages, read from ../shared).

Each is indexed, rendered, and then every produced page is parsed with html5lib in strict mode,
every internal link must reach a produced file or be marked broken, and every chunk's anchor
must be an id on its note page (a search hit lands on its section).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from builder.core import urls
from server.status import broken_link_counts
from tests.conftest import DIMS, HashEmbedder, ollama_yaml, require_shared
from tests.render_support import (
    EXAMPLES,
    KEMT,
    build_and_render,
    check_site,
    make_config,
    open_index,
)

pytestmark = pytest.mark.slow


def assert_chunk_anchors_on_pages(config, ids: dict[str, set[str]]) -> int:
    conn = open_index(config)
    rows = conn.execute("SELECT DISTINCT source_id, path, anchor FROM chunks WHERE anchor != ''").fetchall()
    missing = [f"{r['source_id']}:{r['path']}#{r['anchor']}" for r in rows
               if r["anchor"] not in ids.get(urls.site_file(urls.note_url(r["source_id"], r["path"])), set())]
    assert not missing, missing[:20]
    return len(rows)


def published_pages(config) -> set[str]:
    conn = open_index(config)
    return {urls.site_file(urls.note_url(r["source_id"], r["path"]))
            for r in conn.execute("SELECT source_id, path FROM files WHERE status = 'ok'")}


def test_example_notes_render_completely(tmp_path: Path):
    config = make_config(tmp_path, {"notes": EXAMPLES}, embedding=ollama_yaml("http://127.0.0.1:9", DIMS))
    run = build_and_render(config, embedder_factory=HashEmbedder)
    site = config.site.output
    check = check_site(site)
    assert published_pages(config) <= set(check.ids)
    assert not (site / "notes/osobni/koncept.html").exists()  # published: false
    assert assert_chunk_anchors_on_pages(config, check.ids) > 40
    assert run.warnings == [  # the two broken links are there on purpose (see the README)
        "notes: 2 broken links in 2 notes, such as osobni/todo-tyden.md:28: ../projekty/meteostanice.md: no such "
        "note or file; every broken link is listed on broken-links.html"]
    assert check.broken_marked == 2 and broken_link_counts(site) == {"notes": 2}
    for copied in ("notes/projekty/schema.svg", "notes/projekty/sauter-bus-capture.txt", "notes/devops/backup.sh"):
        assert (site / copied).is_file(), copied
    assert run.report.notes_rendered == 33


def test_kemt_wiki_renders_completely(tmp_path: Path):
    require_shared(KEMT)
    config = make_config(tmp_path, {"kemt": KEMT}, title="KEMT wiki")
    run = build_and_render(config, workers=2)
    site = config.site.output
    check = check_site(site)
    pages = published_pages(config)
    assert len(pages) > 590 and pages <= set(check.ids)
    assert assert_chunk_anchors_on_pages(config, check.ids) > 1000
    broken = [w for w in run.warnings if "broken link" in w]
    assert len(broken) == 1 and broken[0].startswith(f"kemt: {run.report.broken_links} broken links in ")
    assert run.report.broken_links > 100 and broken_link_counts(site) == {"kemt": run.report.broken_links}
    listed = (site / "broken-links.html").read_text(encoding="utf-8").count('<span class="broken-line">')
    assert listed == run.report.broken_links  # each with its line
    assert check.broken_marked >= listed  # the same link may be written twice on a line
    assert not [w for w in run.warnings if "could not render" in w or "cannot read" in w]
    # Grav routes: "/info/kodex" is the folder info/03.kodex (ordering prefix left out) → its page
    intro = (site / "kemt/55.usaa/archive/README.html").read_text(encoding="utf-8")
    assert '<a href="../../info/03.kodex/README.html" rel="noopener noreferrer">Etický kódex</a>' in intro
