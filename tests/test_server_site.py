"""The built site as the server serves it: the root, folder URLs, dot-paths and attachments."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from builder.core.config import Config
from builder.core.filetypes import SANDBOX_CSP
from server.app import SECURITY_HEADERS, create_app
from tests.conftest import HashEmbedder, copy_config, ollama_yaml, sample_config, write_note, write_sample_notes
from tests.render_support import build_and_render
from tests.server_support import ids_in

SVG = '<svg xmlns="http://www.w3.org/2000/svg"><circle r="4" style="fill: red"/></svg>'


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample notes, a folder's index note and attachments of several types, built and rendered once for
    the module; each test gets a copy."""
    home = tmp_path_factory.mktemp("site")
    notes_dir = write_sample_notes(home / "notes")
    write_note(notes_dir, "recepty/napoje/masala-chai.md", "# Masala chai\n\nČaj se zázvorem.\n")
    write_note(notes_dir, "projekty/index.md", "# Projekty\n\nPřehled projektů.\n")
    write_note(notes_dir, "projekty/prilohy.md", """
        # Přílohy

        [schéma](schema.svg), [záloha](backup.sh), [měření](mereni.json), [plán](<Plán cesty.pdf>)
        """)
    (notes_dir / "projekty" / "schema.svg").write_text(SVG, encoding="utf-8")
    (notes_dir / "projekty" / "backup.sh").write_text("#!/bin/sh\nrsync -a ~/notes nas:\n", encoding="utf-8")
    (notes_dir / "projekty" / "mereni.json").write_text('{"teplota": 21.5}\n', encoding="utf-8")
    (notes_dir / "projekty" / "Plán cesty.pdf").write_bytes(b"%PDF-1.4\n%%EOF\n")
    build_and_render(sample_config(home, ollama_yaml("http://127.0.0.1:9")), full=True, embedder_factory=HashEmbedder)
    return home


@pytest.fixture
def portal(template: Path, tmp_path: Path, notes_dir: Path) -> Config:
    return copy_config(template, tmp_path)


@pytest.fixture
def client(portal):
    return TestClient(create_app(portal, embedder_factory=HashEmbedder))


def title_of(html: str) -> str:
    match = re.search(r"<title>([^<]*)</title>", html)
    assert match, "the page has no <title>"
    return match.group(1)


def test_the_site_root_is_the_home_page(client):
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/html; charset=utf-8"
    assert title_of(response.text) == "Home · Notes"
    assert response.text == client.get("/index.html").text


FOLDER_ANSWERS = [  # URL, status, Location (relative: the portal may sit under a reverse proxy's prefix)
    ("/notes/cestovani/", 307, "../index.html#dir-cestovani"),
    ("/notes/cestovani", 307, "index.html#dir-cestovani"),
    ("/notes/recepty/napoje/", 307, "../../index.html#dir-recepty-napoje"),
    ("/notes/recepty/napoje", 307, "../index.html#dir-recepty-napoje"),
    ("/notes/projekty", 307, "projekty/"),
    ("/notes", 307, "notes/"),
    ("/tags", 307, "tags/"),
    ("/notes/nic/", 404, None),  # no such folder
    ("/notes/nic", 404, None),
    ("/notes/recepty/napoje/neni/", 404, None),
    ("/static/", 404, None),  # a folder of the site that is no source's
    ("/static", 404, None),
    ("/jiny/cestovani/", 404, None),
]


def test_a_folder_url_redirects_to_where_the_folder_is_listed(client):
    answers = []
    for path, *_ in FOLDER_ANSWERS:
        response = client.get(path, follow_redirects=False)
        if response.status_code == 404:
            assert title_of(response.text) == "Not found · Notes", path
        answers.append((path, response.status_code, response.headers.get("location")))
    assert answers == FOLDER_ANSWERS


FOLDER_PAGES = [  # URL, where it lands (with the folder's anchor, an id on that page), that page's title
    ("/notes/cestovani/", "/notes/index.html#dir-cestovani", "notes · Notes"),
    ("/notes/cestovani", "/notes/index.html#dir-cestovani", "notes · Notes"),
    ("/notes/recepty/napoje/", "/notes/index.html#dir-recepty-napoje", "notes · Notes"),
    ("/notes/recepty/napoje", "/notes/index.html#dir-recepty-napoje", "notes · Notes"),
    ("/notes/projekty/", "/notes/projekty/", "Projekty · Notes"),  # the folder's own index.md
    ("/notes/projekty", "/notes/projekty/", "Projekty · Notes"),
    ("/notes/", "/notes/", "notes · Notes"),
]


def test_a_folder_url_lands_on_its_page(client):
    landed = []
    for path, *_ in FOLDER_PAGES:
        response = client.get(path)
        fragment = response.url.fragment
        assert not fragment or fragment in ids_in(response.text), path
        landed.append((path, response.url.path + (f"#{fragment}" if fragment else ""), title_of(response.text)))
    assert landed == FOLDER_PAGES


SERVED_AS = [  # URL, Content-Type, Content-Disposition
    ("/notes/projekty/backup.sh", "application/octet-stream", "attachment; filename*=UTF-8''backup.sh"),
    ("/notes/projekty/mereni.json", "application/octet-stream", "attachment; filename*=UTF-8''mereni.json"),
    ("/notes/projekty/Pl%C3%A1n%20cesty.pdf", "application/pdf", None),
    ("/notes/projekty/schema.svg", "image/svg+xml", None),
    ("/static/style.css", "text/css; charset=utf-8", None),
    ("/static/search.js", "text/javascript; charset=utf-8", None),
    ("/sitemap.xml", "application/xml", None),
    ("/notes/projekty/prilohy.html", "text/html; charset=utf-8", None),
]


def test_files_are_served_with_the_allowlisted_type(client):
    served = []
    for path, *_ in SERVED_AS:
        response = client.get(path)
        assert response.status_code == 200 and response.headers["x-content-type-options"] == "nosniff", path
        served.append((path, response.headers["content-type"], response.headers.get("content-disposition")))
    assert served == SERVED_AS


def test_an_svg_keeps_its_sandbox_policy_and_the_other_security_headers(client):
    response = client.get("/notes/projekty/schema.svg")
    assert response.text == SVG
    assert response.headers.get_list("content-security-policy") == [SANDBOX_CSP]
    for name in ("X-Content-Type-Options", "Referrer-Policy", "X-Frame-Options"):
        assert response.headers[name] == SECURITY_HEADERS[name]
    page = client.get("/notes/projekty/prilohy.html")
    assert page.headers.get_list("content-security-policy") == [SECURITY_HEADERS["Content-Security-Policy"]]


@pytest.mark.parametrize("name", ["skript.es", "modul.mjs", "stranka.xhtml", "data.xml", "stary.htm", "neznamy.qqq",
                                  "bez-pripony", "static-like.css.exe"])
def test_an_attachment_off_the_allowlist_is_404_even_if_an_older_build_left_it(client, portal, name):
    (portal.site.output / "notes" / "projekty" / name).write_text("alert(document.cookie)\n", encoding="utf-8")
    response = client.get(f"/notes/projekty/{name}")
    assert response.status_code == 404 and title_of(response.text) == "Not found · Notes"


def test_head_304_and_ranges_keep_the_allowlisted_type(client, portal):
    path = "/notes/projekty/mereni.json"
    size = (portal.site.output / "notes" / "projekty" / "mereni.json").stat().st_size
    full = client.get(path)
    head = client.head(path)
    assert (head.status_code, head.content) == (200, b"")
    for response in (full, head):
        assert response.headers["content-length"] == str(size)
        assert response.headers["content-type"] == "application/octet-stream"
    assert head.headers["etag"] == full.headers["etag"]
    assert head.headers["last-modified"] == full.headers["last-modified"]
    again = client.get(path, headers={"If-None-Match": full.headers["etag"]})
    assert (again.status_code, again.content) == (304, b"")
    since = client.get(path, headers={"If-Modified-Since": full.headers["last-modified"]})
    assert since.status_code == 304
    part = client.get(path, headers={"Range": "bytes=2-8"})
    assert (part.status_code, part.content, part.headers["content-range"]) == (206, b"teplota", f"bytes 2-8/{size}")
    assert part.headers["content-type"] == "application/octet-stream"
    tail = client.get(path, headers={"Range": "bytes=-5"})
    assert (tail.status_code, tail.content) == (206, full.content[-5:])
    beyond = client.get(path, headers={"Range": f"bytes={size}-"})
    assert (beyond.status_code, beyond.headers["content-range"]) == (416, f"bytes */{size}")
    stale = client.get(path, headers={"Range": "bytes=2-8", "If-Range": '"not-the-etag"'})
    assert (stale.status_code, stale.content) == (200, full.content)
