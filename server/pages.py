"""Server-rendered pages: ``/search?q=`` with the same templates as the static site."""

from __future__ import annotations

import time
from typing import Any

from builder.core import urls
from builder.core.config import Config
from builder.core.templates import TEMPLATE_DIR, Page, Templates, asset_version


class SearchPage:
    """Renders ``search.html`` for a query; works with JavaScript disabled."""

    def __init__(self, config: Config) -> None:
        self.templates = Templates(TEMPLATE_DIR, config.site.title, asset_version())

    def render(self, *, query: str, notes: list[str], hits: list[dict[str, Any]] | None) -> str:
        """The results page for ``query`` (``hits`` None: the empty search form)."""
        context: dict[str, Any] = {"query": query, "notes": notes}
        if hits is not None:
            context["hits"] = hits
        title = f"Search: {query}" if query else "Search"
        page = Page("search", "search.html", "search", title, context,
                    (("Home", urls.HOME_URL), ("Search", None)))
        return self.templates.render(page, time.strftime("%Y-%m-%d %H:%M"))
