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
from functools import cache
from pathlib import Path
from typing import Any

from builder.core import messages, urls
from builder.core.config import AnswerConfig



def _template_dir() -> Path:
    """``builder/templates/`` in an installed package (a wheel, ``pip install .``, pipx: setup.py ships the
    checkout's ``templates/`` there), else the checkout's own ``templates/`` (an editable install)."""
    installed = Path(__file__).resolve().parent.parent / "templates"
    return installed if (installed / "base.html").is_file() else installed.parent.parent / "templates"


TEMPLATE_DIR = _template_dir()
# The first line after <meta charset> of a page that draws diagrams: the server reads it there to send such a page
# the Content-Security-Policy mermaid needs (server/site_files.py), and only such a page.
DIAGRAM_MARK = '<meta name="notes-portal-diagrams" content="mermaid">'
STATIC_SKIPPED = frozenset({"README.md", "fetch.sh"})  # a vendored library's notes and fetcher: not the site's


def static_dir() -> Path:
    """The CSS and JavaScript copied into every site (``<site>/static/``)."""
    return TEMPLATE_DIR / "static"


def static_files() -> list[tuple[str, Path]]:
    """Every file copied into ``<site>/static/``: (its path there, the file), in order."""
    root = static_dir()
    return [(path.relative_to(root).as_posix(), path) for path in sorted(root.rglob("*"))
            if path.is_file() and path.name not in STATIC_SKIPPED
            and not any(part.startswith(".") for part in path.relative_to(root).parts)]


def file_digest(path: Path) -> str:
    """The sha256 of a file's bytes, read once per process while its size and mtime stay (a render asks for the
    static files' three times: the code fingerprint, the asset version and the copy; mermaid is 5.5 MB)."""
    st = path.stat()
    return _digest(str(path), st.st_size, st.st_mtime_ns)


@cache
def _digest(path: str, size: int, mtime_ns: int) -> str:
    """The sha256 of the file at ``path`` while it has this size and mtime (they are the memo's key)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def asset_version() -> str:
    """The cache-busting token on static asset links: a hash of the static files' bytes."""
    digest = hashlib.sha256()
    for rel, path in static_files():
        digest.update(f"{rel}\0{file_digest(path)}\0".encode())
    return digest.hexdigest()[:10]


def ask_target(answer: AnswerConfig) -> str | None:
    """Where ``answer:`` sends a question (``ollama at 127.0.0.1:11434``), which the Ask action's notice
    names on every page; None when no provider is configured: then no page offers Ask (and the pages are
    as they were before there was one)."""
    if not answer.enabled:
        return None
    from urllib.parse import urlsplit

    return f"{answer.provider} at {urlsplit(answer.url).netloc}"


def ask_notice(target: str, language: str = messages.DEFAULT_LANGUAGE) -> str:
    """The one line beside every Ask action: what is sent, and where (``target``: :func:`ask_target`'s)."""
    provider, _, host = target.partition(" at ")
    return messages.text(language, "ask.notice", provider=provider, host=host)


def ask_settings(answer: AnswerConfig) -> list[str]:
    """What the pages' fingerprints hold of ``answer:``: nothing when it is off, so that a site rendered
    without it keeps its fingerprints."""
    target = ask_target(answer)
    return [target] if target else []


@dataclass(frozen=True)
class Label:
    """The portal's own words for a page's title or a breadcrumb (``Label("page.home")``), said in the site's
    language when the page is rendered (a note's title, a source's id, a tag are said as they are)."""

    key: str
    values: tuple[tuple[str, str], ...] = ()

    def say(self, language: str) -> str:
        return messages.text(language, self.key, **dict(self.values))


@dataclass(frozen=True)
class Page:
    """One page: everything its template shows, as plain JSON-able data."""

    url: str  # site-relative
    template: str
    kind: str  # note | toc | tag | tags | home | search | 404
    title: str | Label
    context: dict[str, Any] = field(default_factory=dict)
    breadcrumbs: tuple[tuple[str | Label, str | None], ...] = ()
    description: str = ""  # the meta description (a note's summary or first paragraph; else the site's)

    def data(self) -> str:
        """Everything the page shows, canonically serialized (the fingerprint input)."""
        return json.dumps([self.template, self.title, self.context, self.breadcrumbs, self.description],
                          sort_keys=True, ensure_ascii=False, default=str)


class Templates:
    """The Jinja2 environment (autoescaping) and the site-wide template variables: the site's title,
    the asset version, the sources (the navigation on every page lists them), where Ask sends a
    question (None: no Ask) and the site's language (the pages' own words: ``t(key, **values)``, dates:
    ``| day``, ``<html lang>``)."""

    def __init__(self, template_dir: Path, site_title: str, asset_version: str,
                 sources: tuple[str, ...] = (), ask_to: str | None = None,
                 language: str = messages.DEFAULT_LANGUAGE) -> None:
        import jinja2

        self.env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_dir)),
                                      autoescape=True, trim_blocks=True, lstrip_blocks=True,
                                      undefined=jinja2.StrictUndefined)
        self.env.globals["diagram_mark"] = DIAGRAM_MARK
        self.env.globals["lang"] = language
        self.env.globals["t"] = self.say
        self.env.globals["script_messages"] = messages.script_messages(language, ask_to is not None)
        self.env.filters["day"] = lambda value: messages.day(language, str(value)) if value else ""
        self.env.filters["reason"] = lambda english: messages.reason(language, str(english))
        self.site_title = site_title
        self.asset_version = asset_version
        self.sources = sources
        self.ask_to = ask_to  # the search boxes offer Ask, naming where it sends the question (ask_target)
        self.language = language

    def say(self, key: str, **values: Any) -> str:
        """The site's words for ``key`` (see :func:`builder.core.messages.text`)."""
        return messages.text(self.language, key, **values)

    def label(self, label: str | Label) -> str:
        """A page title or breadcrumb as the page shows it."""
        return label.say(self.language) if isinstance(label, Label) else label

    def render(self, page: Page, built_at: str) -> str:
        """The page's HTML; ``built_at`` is the time shown in the footer."""
        # The 404 page is served by the server at any depth: only absolute URLs work there.
        root = "/" if page.kind == "404" else urls.root_of(page.url)
        template = self.env.get_template(page.template)
        nav_sources = [{"id": sid, "toc": urls.toc_url(sid), "graph": urls.graph_url(sid), "tree": urls.tree_url(sid)}
                       for sid in self.sources]
        crumbs = tuple((self.label(text), url) for text, url in page.breadcrumbs)
        description = page.description or self.say("description.site", title=self.site_title)
        return template.render(**page.context, root=root, site_title=self.site_title, built_at=built_at,
                               asset_v=self.asset_version, breadcrumbs=crumbs, description=description,
                               page_kind=page.kind, page_title=self.label(page.title), page_url=page.url,
                               nav_sources=nav_sources, ask_to=self.ask_to,
                               ask_notice=ask_notice(self.ask_to, self.language) if self.ask_to else None)

    def fragment(self, template: str, **context: Any) -> str:
        """A piece of a page (no shell): ``template`` rendered with ``context`` alone."""
        return self.env.get_template(template).render(**context)
