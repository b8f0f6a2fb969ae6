"""Server-rendered pages: ``/search?q=`` with the same templates as the static site."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from builder.config import Config
from builder.render import TEMPLATE_DIR
from builder.site_pages import Page, Templates


def _asset_version() -> str:
    """The same cache-busting token the build puts on static asset links (a hash of their bytes)."""
    digest = hashlib.sha256()
    for path in sorted((TEMPLATE_DIR / "static").rglob("*")):
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


class SearchPage:
    """Renders ``search.html`` for a query; works with JavaScript disabled."""

    def __init__(self, config: Config) -> None:
        self.templates = Templates(TEMPLATE_DIR, config.site.title, _asset_version())

    def render(self, *, query: str, notes: list[str], hits: list[dict[str, Any]] | None) -> str:
        context: dict[str, Any] = {"query": query, "notes": notes}
        if hits is not None:
            context["hits"] = hits
        title = f"Search: {query}" if query else "Search"
        page = Page("search", "search.html", "search", title, context, (("Home", "index.html"), ("Search", None)))
        return self.templates.render(page, time.strftime("%Y-%m-%d %H:%M"))
