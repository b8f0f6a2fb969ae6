"""The unit of failure is one note's page (issue 34): a note whose page cannot be named, two notes
that would share one page, a note with thousands of tags. The other pages are written, the build
exits 0, and nothing unpublished stays public or searchable."""

from __future__ import annotations

import re
from pathlib import Path

from builder import indexfile
from builder.core import index as db
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
