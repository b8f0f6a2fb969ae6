"""Long lists come in pages (issue 47): a tag's notes and the broken links, :data:`pages.LIST_PAGE` notes a page,
each page with the way to the others, every page in the sitemap; the pages follow the list as it grows and
shrinks, and an incremental render equals a fresh one. (Here a page holds 3 notes, so that 7 make three pages.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from builder.render import pages
from tests.render_support import build_and_render, check_site, make_config, parse_page, site_snapshot, write


@pytest.fixture
def three_a_page(monkeypatch):
    monkeypatch.setattr(pages, "LIST_PAGE", 3)


def tagged(root: Path, count: int) -> None:
    for i in range(count):
        write(root, f"n{i}.md", f"---\ntags: [hory]\n---\n# Hora {i}\n\nViz [nic](chybi-{i}.md).\n")


def listed(page: Path) -> list[str]:
    return [a.text for a in parse_page(page).iter("a") if a.get("class") == "note-link"]


def pager(page: Path) -> list[tuple[str | None, str]]:
    doc = parse_page(page)
    nav = next((n for n in doc.iter("nav") if n.get("class") == "pager"), None)
    if nav is None:
        return []
    return [(el.get("href"), "".join(el.itertext()).strip()) for el in nav if el.tag in ("a", "span")]


def test_a_tag_and_the_broken_links_of_seven_notes_are_three_pages_each(tmp_path, three_a_page):
    root = tmp_path / "notes"
    tagged(root, 7)
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    out = config.site.output
    check_site(out)
    assert listed(out / "tags/hory/index.html") == ["Hora 0", "Hora 1", "Hora 2"]
    assert listed(out / "tags/hory/page-2.html") == ["Hora 3", "Hora 4", "Hora 5"]
    assert listed(out / "tags/hory/page-3.html") == ["Hora 6"]
    here = "../../tags/hory/"
    assert pager(out / "tags/hory/page-2.html") == [
        (f"{here}index.html", "← Previous"), (f"{here}index.html", "1"), (None, "2"), (f"{here}page-3.html", "3"),
        (f"{here}page-3.html", "Next →")]
    assert "7 notes" in "".join(parse_page(out / "tags/hory/page-3.html").itertext())  # the whole tag's count
    assert listed(out / "broken-links.html") == ["Hora 0", "Hora 1", "Hora 2"]
    assert listed(out / "broken-links-3.html") == ["Hora 6"]
    assert pager(out / "broken-links-3.html")[:2] == [("broken-links-2.html", "← Previous"), ("broken-links.html", "1")]
    sitemap = (out / "sitemap.xml").read_text("utf-8")
    for url in ("tags/hory/page-2.html", "tags/hory/page-3.html", "broken-links-2.html", "broken-links-3.html"):
        assert f"<loc>/{url}</loc>" in sitemap


def test_the_pages_follow_the_list_and_an_incremental_render_equals_a_fresh_one(tmp_path, three_a_page):
    root = tmp_path / "notes"
    tagged(root, 7)
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    for i in range(2, 7):
        write(root, f"n{i}.md", f"# Hora {i}\n\nBez štítku, bez chyb.\n")
    run = build_and_render(config)
    out = config.site.output
    assert {"tags/hory/page-2.html", "tags/hory/page-3.html", "broken-links-2.html",
            "broken-links-3.html"} <= set(run.report.removed)
    assert listed(out / "tags/hory/index.html") == ["Hora 0", "Hora 1"]
    assert pager(out / "tags/hory/index.html") == [] and pager(out / "broken-links.html") == []
    assert not re.search(r"page-\d|broken-links-\d", (out / "sitemap.xml").read_text("utf-8"))
    tagged(root, 5)
    build_and_render(config)
    assert listed(out / "tags/hory/page-2.html") == ["Hora 3", "Hora 4"]
    incremental = site_snapshot(out)
    (tmp_path / "fresh").mkdir()
    fresh = make_config(tmp_path / "fresh", {"notes": root})
    build_and_render(fresh)
    assert site_snapshot(fresh.site.output).keys() == incremental.keys()
    for rel in ("tags/hory/index.html", "tags/hory/page-2.html", "broken-links.html", "broken-links-2.html"):
        assert site_snapshot(fresh.site.output)[rel] == incremental[rel], rel


def test_a_sitemap_past_its_size_is_an_index_of_files_the_server_serves(tmp_path, monkeypatch):
    from starlette.testclient import TestClient

    from server.app import create_app

    monkeypatch.setattr(pages, "SITEMAP_URLS", 4)
    root = tmp_path / "notes"
    for i in range(6):
        write(root, f"n{i}.md", f"# Poznámka {i}\n")
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    out = config.site.output
    with TestClient(create_app(config)) as client:
        index = client.get("/sitemap.xml")
        assert index.headers["content-type"] == "application/xml"
        parts = re.findall(r"<sitemap><loc>/(sitemap-\d+\.xml)</loc></sitemap>", index.text)
        located = []
        for part in parts:
            answer = client.get(f"/{part}")
            assert answer.status_code == 200 and answer.headers["content-type"] == "application/xml"
            found = re.findall(r"<url><loc>/([^<]+)</loc></url>", answer.text)
            assert 0 < len(found) <= 4
            located += found
        assert client.get(f"/sitemap-{len(parts) + 1}.xml").status_code == 404
    assert index.text.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex ')
    pages_on_disk = sorted(str(p.relative_to(out)) for p in out.rglob("*.html")
                           if not any(part.startswith(".") for part in p.relative_to(out).parts)
                           and p.name != "404.html")
    assert located == pages_on_disk  # every page once, in order
    monkeypatch.setattr(pages, "SITEMAP_URLS", 20_000)
    write(root, "n0.md", "# Poznámka 0, znovu\n")
    build_and_render(config)
    assert "<urlset" in (out / "sitemap.xml").read_text("utf-8")
    assert not list(out.glob("sitemap-*.xml"))  # the parts go with the index


def test_a_sitemap_file_stays_under_its_bytes_whatever_its_addresses(tmp_path, monkeypatch):
    """Letters with diacritics in a page's address are percent-encoded, three bytes each: the files are cut by
    their bytes as well as by their count."""
    monkeypatch.setattr(pages, "SITEMAP_BYTES", 600)
    root = tmp_path / "notes"
    for i in range(8):
        write(root, f"příliš-žluťoučký-kůň-úpěl-ďábelské-ódy-{i}.md", f"# Kůň {i}\n")
    config = make_config(tmp_path, {"notes": root})
    build_and_render(config)
    out = config.site.output
    parts = sorted(out.glob("sitemap-*.xml"))
    assert len(parts) > 2
    assert all(len(part.read_bytes()) <= 600 for part in parts)
    located = [loc for part in parts for loc in re.findall(r"<loc>/([^<]+)</loc>", part.read_text("utf-8"))]
    assert len(located) == len(set(located)) and sum("%C5%AF" in loc for loc in located) == 8
