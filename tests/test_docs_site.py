"""The manual is a portal (issue 45): ``notes-portal build --config docs/portal.yaml`` makes a site of docs/, every
page of the manual rendered, its links all leading somewhere (none to a file outside it), and searchable."""

from __future__ import annotations

import re
import shutil

from starlette.testclient import TestClient

from builder.cli import main
from builder.core.config import load_config
from server.app import create_app
from tests.conftest import PROJECT

ORDER = ["CONFIG", "SYNC", "SEARCH", "ASKING", "AGENTS", "RELIABILITY", "ARCHITECTURE"]


def test_the_docs_build_as_a_site_with_no_broken_link(tmp_path, capsys):
    docs = tmp_path / "docs"
    shutil.copytree(PROJECT / "docs", docs, ignore=shutil.ignore_patterns(".portal"))
    assert main(["build", "--config", str(docs / "portal.yaml")]) == 0
    assert "broken link" not in capsys.readouterr().err
    site = docs / ".portal" / "site"
    pages = {p.stem for p in (site / "manual").glob("*.html")} - {"index"}
    assert pages == {p.stem for p in (PROJECT / "docs").glob("*.md")}
    assert "No broken links" in (site / "index.html").read_text(encoding="utf-8")
    start = (site / "manual" / "README.html").read_text(encoding="utf-8")
    linked = re.findall(r'<li>\s*<a href="([A-Z-]+)\.html"', start)
    assert linked == ORDER  # the pages a person reads in order
    assert '<html lang="en">' in start
    for name in ORDER:
        page = (site / "manual" / f"{name}.html").read_text(encoding="utf-8")
        assert 'class="broken-link"' not in page and "data-broken-link" not in page, name
    client = TestClient(create_app(load_config(docs / "portal.yaml")))
    hits = client.get("/api/search", params={"q": "webhook secret"}).json()["hits"]
    assert hits and hits[0]["path"] in ("SYNC.md", "CONFIG.md")
