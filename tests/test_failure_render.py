"""The unit of failure is one note's page (issue 34): a note whose page cannot be named, two notes
that would share one page, a note with thousands of tags. The other pages are written, the build
exits 0, and nothing unpublished stays public or searchable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder.core import urls
from builder.core.config import Config, load_config
from tests.failure_support import found, run
from tests.conftest import write_config, write_note

NAME_MAX = 255  # ext4, xfs, btrfs, tmpfs: bytes in one file name


def portal(tmp_path: Path, include: str = "") -> Config:
    write_note(tmp_path / "notes", "verejne.md", "# Veřejné\n\nKrystalový oscilátor.\n")
    write_note(tmp_path / "notes", "osobni/koncept.md", "# Koncept\n\nDatamax smlouva\n")
    scope = f"    include: {include}\n" if include else ""
    return load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                              f"sources:\n  notes:\n    folder: notes\n{scope}"))






def page(config: Config, rel: str) -> Path:
    return config.site.output / "notes" / rel


def long_name(size: int, suffix: str = ".md") -> str:
    """A file name of ``size`` bytes (UTF-8) ending in ``suffix``."""
    stem = "dlouhý-název-" * 30
    raw = stem.encode("utf-8")[:size - len(suffix)].decode("utf-8", "ignore")
    name = raw + "x" * (size - len(suffix) - len(raw.encode("utf-8"))) + suffix
    assert len(name.encode("utf-8")) == size
    return name


# ---------------------------------------------------------------- 1. names near the file system's limit


@pytest.mark.parametrize("size", [243, 253])
def test_a_note_whose_name_is_near_the_limit_gets_its_page_on_a_first_build(tmp_path, size):
    name = long_name(size)
    write_note(tmp_path / "notes", name, "# Dlouhý\n\nSlovo kvazikrystal.\n")
    config = portal(tmp_path)
    assert run(config) == (0, [])
    assert page(config, name[:-3] + ".html").is_file() and page(config, "verejne.html").is_file()
    assert found(config, "kvazikrystal") == 1


def test_a_note_named_near_the_limit_never_stops_later_renders(tmp_path):
    config = portal(tmp_path)
    assert run(config) == (0, []) and page(config, "osobni/koncept.html").is_file()
    name = long_name(243)
    write_note(tmp_path / "notes", name, "# Dlouhý\n\nSlovo kvazikrystal.\n")
    assert run(config) == (0, [])
    write_note(tmp_path / "notes", "osobni/koncept.md", "---\npublished: false\n---\n# Koncept\n\nDatamax smlouva\n")
    write_note(tmp_path / "notes", name, "# Dlouhý\n\nSlovo kvazikrystal, upraveno.\n")
    assert run(config) == (0, [])
    assert not page(config, "osobni/koncept.html").exists() and found(config, "datamax") == 0
    assert "upraveno" in page(config, name[:-3] + ".html").read_text(encoding="utf-8")
    assert not [p for p in config.site.output.rglob("*.tmp")]


@pytest.mark.parametrize("size", [254, NAME_MAX])
def test_a_note_whose_page_cannot_be_named_is_skipped_with_one_warning(tmp_path, size):
    name = long_name(size)
    config = portal(tmp_path)
    assert run(config) == (0, [])
    write_note(tmp_path / "notes", name, "# Dlouhý\n\nSlovo kvazikrystal.\n")
    write_note(tmp_path / "notes", "novy.md", "# Nový\n\nSlovo pozitron.\n")
    code, warnings = run(config)
    assert (code, warnings) == (0, [f"notes: {name}: cannot be named: its page's file name would be "
                                    f"{size + 2} bytes, over the {NAME_MAX} a file name may have; rename it; "
                                    "not indexed"])
    assert found(config, "kvazikrystal") == 0 and found(config, "pozitron") == 1
    assert page(config, "novy.html").is_file() and page(config, "verejne.html").is_file()
    assert not [p for p in page(config, "").iterdir() if len(p.name.encode("utf-8")) > 250]
    assert run(config) == (0, [])  # said once


def test_a_note_indexed_before_names_were_checked_is_left_out_of_the_site(tmp_path, monkeypatch):
    from builder.notes import publication

    name = long_name(NAME_MAX)
    write_note(tmp_path / "notes", name, "# Dlouhý\n\nSlovo kvazikrystal.\n")
    config = portal(tmp_path)
    monkeypatch.setattr(publication, "name_problem", lambda path: None)  # as the indexer before it
    code, warnings = run(config)
    assert (code, warnings) == (0, [f"notes: {name}: cannot be named: its page's file name would be "
                                    f"{NAME_MAX + 2} bytes, over the {NAME_MAX} a file name may have; rename it; "
                                    "left out of the site"])
    assert page(config, "verejne.html").is_file() and page(config, "osobni/koncept.html").is_file()


def test_a_page_that_cannot_be_written_skips_its_note_alone(tmp_path):
    """A folder named like a page (``x.html/``) beside the note whose page that is: one of the two
    notes is refused, the same one on every build, and every other page is written."""
    config = portal(tmp_path)
    write_note(tmp_path / "notes", "x.md", "# Iks\n\nSlovo iksovka.\n")
    write_note(tmp_path / "notes", "x.html/y.md", "# Ypsilon\n\nSlovo ypsilonka.\n")
    code, warnings = run(config)
    assert (code, warnings) == (0, ["notes: x.md: cannot be named: its page notes/x.html is the folder of "
                                    "other pages; rename the note or the folder"])
    assert page(config, "x.html").is_dir() and page(config, "x.html/y.html").is_file()
    assert page(config, "verejne.html").is_file()
    write_note(tmp_path / "notes", "verejne.md", "# Veřejné\n\nKrystalový oscilátor, znovu.\n")
    assert run(config)[0] == 0 and "znovu" in page(config, "verejne.html").read_text(encoding="utf-8")


def fail_page_of(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """Rendering the page of the note at ``path`` raises (as a template choking on it would)."""
    from builder.render import pages

    real = pages.note_page

    def broken(note, *args, **kwargs):
        if note.path == path:
            raise ValueError("a template that cannot show it")
        return real(note, *args, **kwargs)

    monkeypatch.setattr(pages, "note_page", broken)


@pytest.mark.parametrize("others", [0, 160], ids=["in-process", "forked-workers"])
def test_one_page_failing_to_render_skips_that_note_and_takes_its_page_down(tmp_path, monkeypatch, others):
    for n in range(others):
        write_note(tmp_path / "notes", f"dalsi/d{n:03}.md", f"# Další {n}\n\nText.\n")
    config = portal(tmp_path)
    assert run(config) == (0, []) and page(config, "osobni/koncept.html").is_file()
    fail_page_of(monkeypatch, "osobni/koncept.md")
    write_note(tmp_path / "notes", "osobni/koncept.md", "# Koncept\n\nDatamax smlouva, nová.\n")
    write_note(tmp_path / "notes", "novy.md", "# Nový\n\nSlovo pozitron a [koncept](osobni/koncept.md).\n")
    code, warnings = run(config)
    assert code == 0 and warnings[0] == ("notes: osobni/koncept.md: its page could not be made "
                                         "(ValueError: a template that cannot show it); the note is left out")
    assert len(warnings) == 2 and warnings[1].startswith("notes: a broken link: novy.md:3: ")
    assert not page(config, "osobni/koncept.html").exists() and page(config, "novy.html").is_file()
    assert "koncept.html" not in (config.site.output / "notes" / "index.html").read_text(encoding="utf-8")
    monkeypatch.undo()
    assert run(config) == (0, [])  # nothing changed: no render, no second warning
    write_note(tmp_path / "notes", "verejne.md", "# Veřejné\n\nKrystalový oscilátor, znovu.\n")
    assert run(config) == (0, []) and page(config, "osobni/koncept.html").is_file()  # tried again, and made


def test_an_edit_alone_whose_page_fails_takes_only_that_page_down(tmp_path, monkeypatch):
    config = portal(tmp_path)
    assert run(config) == (0, [])
    fail_page_of(monkeypatch, "osobni/koncept.md")
    write_note(tmp_path / "notes", "osobni/koncept.md", "# Koncept\n\nDatamax smlouva, nová.\n")
    assert run(config) == (0, ["notes: osobni/koncept.md: its page could not be made "
                               "(ValueError: a template that cannot show it); the note is left out"])
    assert not page(config, "osobni/koncept.html").exists() and page(config, "verejne.html").is_file()


def test_most_pages_failing_to_be_written_is_the_sites_failure_and_takes_nothing_down(tmp_path, monkeypatch):
    """A folder gone read-only, a lost mount: not a reason to unpublish every note."""
    import errno

    from builder.render import output

    for n in range(12):
        write_note(tmp_path / "notes", f"dalsi/d{n:02}.md", f"# Další {n}\n\nText.\n")
    config = portal(tmp_path)
    assert run(config) == (0, [])
    real = output.write_atomic

    def refused(path, data):
        if path.suffix == ".html" and path.parent.name == "dalsi":
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        real(path, data)

    monkeypatch.setattr(output, "write_atomic", refused)
    for n in range(12):
        write_note(tmp_path / "notes", f"dalsi/d{n:02}.md", f"# Další {n}\n\nText, znovu.\n")
    code, warnings = run(config)
    assert code == 3 and len(warnings) == 1 and warnings[0].startswith("site: cannot write ")
    assert "(Permission denied)" in warnings[0]
    assert len(list(page(config, "dalsi").glob("*.html"))) == 12


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
