"""The unit of failure is one note's page (issue 34): a note whose page cannot be named, two notes
that would share one page, a note with thousands of tags. The other pages are written, the build
exits 0, and nothing unpublished stays public or searchable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder import indexfile
from builder.core import index as db
from builder.core import urls
from builder.core.config import Config, load_config
from builder.sync import build
from builder.synclog import SyncLog
from tests.conftest import write_config, write_note

NAME_MAX = 255  # ext4, xfs, btrfs, tmpfs: bytes in one file name


def portal(tmp_path: Path, include: str = "") -> Config:
    write_note(tmp_path / "notes", "verejne.md", "# Veřejné\n\nKrystalový oscilátor.\n")
    write_note(tmp_path / "notes", "osobni/koncept.md", "# Koncept\n\nDatamax smlouva\n")
    scope = f"    include: {include}\n" if include else ""
    return load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                              f"sources:\n  notes:\n    folder: notes\n{scope}"))


def run(config: Config) -> tuple[int, list[str]]:
    log = SyncLog(config.log_path, echo_info=False)
    code = build(config, log=log)
    return code, [line.split(" WARN ", 1)[1] for line in log.lines if " WARN " in line]


def found(config: Config, word: str) -> int:
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        query = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH :word"
        return conn.execute(query, {"word": word}).fetchone()[0]
    finally:
        conn.close()


def page(config: Config, rel: str) -> Path:
    return config.site.output / "notes" / rel


def long_name(size: int, suffix: str = ".md") -> str:
    """A file name of ``size`` bytes (UTF-8) ending in ``suffix``."""
    stem = "dlouhý-název-" * 30
    raw = stem.encode("utf-8")[:size - len(suffix)].decode("utf-8", "ignore")
    name = raw + "x" * (size - len(suffix) - len(raw.encode("utf-8"))) + suffix
    assert len(name.encode("utf-8")) == size
    return name


# ---------------------------------------------------------------- 2. two notes, one page


COLLISIONS = [
    ("", ["index.md", "index.md.md"]),
    ("", ["recepty/index.toc.md", "recepty/index.toc.md.md"]),
    ('["*.md", "*.MD"]', ["caj.md", "caj.MD"]),
    ('["*.md", "*.markdown"]', ["plan.markdown", "plan.markdown.md"]),
    ('["*.md", "vlnka"]', ["vlnka.md", "vlnka"]),
    ('["*.md", "vlnka"]', ["vlnka~.md", "vlnka"]),  # what keeps an extensionless name's page its own
]


@pytest.mark.parametrize("include, names", COLLISIONS,
                         ids=["index", "index-toc", "case", "markdown", "extensionless", "tilde"])
def test_two_notes_never_share_a_page(tmp_path, include, names):
    from starlette.testclient import TestClient

    from server.app import create_app

    for n, name in enumerate(names):
        write_note(tmp_path / "notes", name, f"# Stránka {n}\n\nSlovo jedinec{n}.\n")
    config = portal(tmp_path, include)
    assert run(config) == (0, [])
    client = TestClient(create_app(config))
    files = set()
    for n, name in enumerate(names):
        hits = client.get("/api/search", params={"q": f"jedinec{n}", "mode": "bm25"}).json()["hits"]
        assert [h["path"] for h in hits] == [name]
        rel = urls.site_file(hits[0]["url"])
        assert f"jedinec{n}" in (config.site.output / rel).read_text(encoding="utf-8")
        files.add(rel)
    assert len(files) == len(names)


def test_every_note_name_has_a_page_of_its_own():
    stems = ["index", "Index", "index.toc", "a", "a~", "a.md", "a.MD", "a.markdown", ".md", "x.html"]
    suffixes = ["", ".md", ".MD", ".md.md", ".markdown", "~", "~.md"]
    for folder in ("", "f/", "f/g/"):
        names = {folder + stem + suffix for stem in stems for suffix in suffixes}
        pages = {urls.note_url("notes", name) for name in names}
        assert len(pages) == len(names)
        reserved = {urls.toc_url("notes"), "notes/f/index.toc.html"}
        assert not pages & reserved


def test_the_usual_pages_keep_their_urls():
    assert urls.note_url("notes", "recepty/teh-tarik.md") == "notes/recepty/teh-tarik.html"
    assert urls.note_url("notes", "index.md") == "notes/index.md.html"
    assert urls.note_url("notes", "recepty/index.md") == "notes/recepty/index.html"
    assert urls.note_url("notes", "recepty/index.toc.md") == "notes/recepty/index.toc.md.html"


# ---------------------------------------------------------------- 3. thousands of tags


def tag_pages(tmp_path: Path, count: int) -> list[Path]:
    """The tag pages of a site with one note with ``count`` tags and another note sharing one."""
    root = tmp_path / f"tags{count}"
    tags = ", ".join(f"štítek{n:04}" for n in range(count))
    write_note(root / "notes", "mnoho.md", f"---\ntags: [{tags}]\n---\n# Mnoho\n\nText.\n")
    write_note(root / "notes", "jeden.md", "---\ntags: [štítek0001]\n---\n# Jeden\n\nText.\n")
    config = load_config(write_config(root, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                            "sources:\n  notes:\n    folder: notes\n"))
    assert run(config) == (0, [])
    return sorted((config.site.output / "tags").glob("*/index.html"))


def test_the_tag_pages_of_a_note_grow_linearly_with_its_tags(tmp_path):
    small, large = tag_pages(tmp_path, 100), tag_pages(tmp_path, 200)
    assert (len(small), len(large)) == (100, 200)
    assert sum(p.stat().st_size for p in large) / sum(p.stat().st_size for p in small) < 2.2


def test_a_tag_page_lists_a_note_once_with_a_few_of_its_tags(tmp_path):
    found = tag_pages(tmp_path, 40)
    html = next(p for p in found if p.parent.name == "stitek0001").read_text(encoding="utf-8")
    items = re.findall(r'<li>\s*<a class="note-link".*?</li>', html, re.S)
    assert len(items) == 2  # the two notes
    many = next(item for item in items if "Mnoho" in item)
    assert re.findall(r"#(štítek\d+)", many) == ["štítek0000", "štítek0002", "štítek0003", "štítek0004",
                                                   "štítek0005"]
    assert "+34 more" in many


def test_a_note_with_more_tags_than_the_cap_keeps_the_first_ones(tmp_path):
    root = tmp_path
    tags = ", ".join(f"t{n:04}" for n in range(300))
    write_note(root / "notes", "mnoho.md", f"---\ntags: [{tags}]\n---\n# Mnoho\n\nText.\n")
    config = load_config(write_config(root, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                            "sources:\n  notes:\n    folder: notes\n"))
    assert run(config) == (0, ["notes: mnoho.md: 300 tags; only the first 256 are kept"])
    assert len(list((config.site.output / "tags").glob("*/index.html"))) == 256
    assert (config.site.output / "tags" / "t0255").is_dir() and not (config.site.output / "tags" / "t0256").exists()
