"""The page shell both sides render: the Jinja2 templates, the page data, the asset version.

The renderer (:mod:`builder.render`) writes every page of the site with these
templates; the server renders ``/search?q=`` with the same ones, so a results
page looks like the rest of the site. Jinja2 is imported only when a
:class:`Templates` is made: the every-minute no-op build never loads it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.core import urls

TEMPLATE_DIR = Path(__file__).resolve().parent.parent.parent / "templates"


def static_dir() -> Path:
    """The CSS and JavaScript copied into every site (``<site>/static/``)."""
    return TEMPLATE_DIR / "static"


def asset_version() -> str:
    """The cache-busting token on static asset links: a hash of the static files' bytes."""
    digest = hashlib.sha256()
    for path in sorted(static_dir().rglob("*")):
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()[:10]


@dataclass(frozen=True)
class Page:
    """One page: everything its template shows, as plain JSON-able data."""

    url: str  # site-relative
    template: str
    kind: str  # note | toc | tag | tags | home | search | 404
    title: str
    context: dict[str, Any] = field(default_factory=dict)
    breadcrumbs: tuple[tuple[str, str | None], ...] = ()

    def data(self) -> str:
        """Everything the page shows, canonically serialized (the fingerprint input)."""
        return json.dumps([self.template, self.title, self.context, self.breadcrumbs],
                          sort_keys=True, ensure_ascii=False, default=str)


class Templates:
    """The Jinja2 environment (autoescaping) and the site-wide template variables: the site's title,
    the asset version and the sources (the navigation on every page lists them)."""

    def __init__(self, template_dir: Path, site_title: str, asset_version: str,
                 sources: tuple[str, ...] = ()) -> None:
        import jinja2

        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir)),
                                      autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                      undefined=jinja2.StrictUndefined)
        self.site_title = site_title
        self.asset_version = asset_version
        self.sources = sources

    def render(self, page: Page, built_at: str) -> str:
        """The page's HTML; ``built_at`` is the time shown in the footer."""
        # The 404 page is served by the server at any depth: only absolute URLs work there.
        root = "/" if page.kind == "404" else urls.root_of(page.url)
        template = self.env.get_template(page.template)
        nav_sources = [{"id": sid, "toc": urls.toc_url(sid), "graph": urls.graph_url(sid), "tree": urls.tree_url(sid)}
                       for sid in self.sources]
        return template.render(**page.context, root=root, site_title=self.site_title, built_at=built_at,
                               asset_v=self.asset_version, breadcrumbs=page.breadcrumbs,
                               page_kind=page.kind, page_title=page.title, page_url=page.url,
                               nav_sources=nav_sources)

    def fragment(self, template: str, **context: Any) -> str:
        """A piece of a page (no shell): ``template`` rendered with ``context`` alone."""
        return self.env.get_template(template).render(**context)
