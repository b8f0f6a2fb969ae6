"""Server-rendered pages with the same templates as the static site: ``/search?q=`` and ``/auth``."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from builder.core import messages, urls
from builder.core.config import Config
from builder.core.templates import TEMPLATE_DIR, Label, Page, Templates, ask_target, asset_version
from server.search import SearchResult, provenance

if TYPE_CHECKING:
    from server.answer import Answer

# The sign-in form exists only on a running server, so its template lives here, not in templates/.
AUTH_TEMPLATE = """{% extends "base.html" %}
{% block main %}
<h1>{{ t("auth.title") }}</h1>
<p class="search-note">{{ message }}</p>
<form class="auth" method="post" action="{{ root }}auth">
  <input type="hidden" name="next" value="{{ next }}">
  <label>{{ t("auth.key") }}
    <input type="password" name="key" autocomplete="current-password" required autofocus></label>
  <button type="submit">{{ t("auth.button") }}</button>
</form>
<p class="muted">{{ t("auth.where") | safe }}</p>
{% endblock %}
"""


def _templates(config: Config) -> Templates:
    import jinja2

    templates = Templates(TEMPLATE_DIR, config.site.title, asset_version(), tuple(s.id for s in config.sources),
                          ask_target(config.answer), config.site.language)
    templates.env.loader = jinja2.ChoiceLoader([jinja2.DictLoader({"server/auth.html": AUTH_TEMPLATE}),
                                                jinja2.FileSystemLoader(str(TEMPLATE_DIR))])
    return templates


def landing(url: str, words: Iterable[str]) -> str:
    """``url`` (``page#anchor``) with ``?hl=``: the page marks the words that begin with one of
    ``words`` in the section it opens at (``search.js``)."""
    page, hash_mark, anchor = url.partition("#")
    return f"{page}?{urlencode({'hl': ' '.join(dict.fromkeys(words))})}{hash_mark}{anchor}"


def page_hits(result: SearchResult, language: str = messages.DEFAULT_LANGUAGE) -> list[dict[str, Any]]:
    """The hits as ``search.html`` shows them; each link to a section (the hit's, the note's other
    matching ones, the copies') marks the query's words and the forms the hit's section holds; a
    note whose title another note among the hits has too names its source and path (``where``)."""
    notes = {(hit.source, hit.path): hit.title for hit in result.hits}
    titled = Counter(notes.values())  # two notes of one title: each says where it is
    hits = []
    for hit in result.hits:
        words = (*result.marked, *hit.words)
        where = f"{hit.source}: {hit.path}" if titled[hit.title] > 1 else None
        hits.append({"url": hit.url, "href": landing(hit.url, words), "title": hit.title, "where": where,
                     "breadcrumb": hit.breadcrumb, "section": section(hit.breadcrumb, hit.title, language),
                     "snippet": hit.snippet, "provenance": provenance(hit, language),
                     "more": [{**asdict(other), "href": landing(other.url, words),
                               "section": section(other.breadcrumb, hit.title, language)} for other in hit.more],
                     "copies": [{**asdict(copy), "href": landing(copy.url, words)} for copy in hit.copies]})
    return hits


def section(breadcrumb: str, title: str, language: str = messages.DEFAULT_LANGUAGE) -> str:
    """Where in its note a hit is, the note's title being shown above it: the breadcrumb without the
    title (as the drop-down says it, ``search.js``), or "top of the note"."""
    if breadcrumb == title:
        return messages.text(language, "search.top")
    return breadcrumb.removeprefix(f"{title} > ")


def page_answer(reply: Answer, language: str = messages.DEFAULT_LANGUAGE) -> dict[str, Any]:
    """The answer as ``search.html`` shows it: the text in parts (each ``[n]`` a link to its source's
    section that marks the span the check matched), the cited sources with each sentence's evidence, or the
    status's words (in the site's language) and the problems."""
    from server.answer import answer_parts

    if reply.status != "answered":
        return {"status": reply.status, "parts": [], "message": messages.text(language, f"ask.{reply.status}"),
                "problems": [p.message for p in reply.problems]}
    heading = {s.n: s.heading.replace(" > ", " › ") for s in reply.sources}
    parts = [{"text": text, "href": c.link if c else None, "heading": heading.get(c.n, "") if c else "",
              "evidence": f"evidence-{c.sentence}-{c.n}" if c else None}
             for text, c in answer_parts(reply)]
    sources = [{"n": s.n, "href": s.url, "heading": heading[s.n],
                "evidence": [{"id": f"evidence-{c.sentence}-{c.n}", "sentence": c.sentence,
                              "text": " ".join(s.text[c.span[0]:c.span[1]].split())}
                             for c in reply.citations if c.n == s.n]}
               for s in reply.sources if any(c.n == s.n for c in reply.citations)]
    return {"status": reply.status, "parts": parts, "sources": sources, "message": "", "problems": []}


class SearchPage:
    """Renders ``search.html`` for a query (works with JavaScript disabled) and the sign-in page."""

    def __init__(self, config: Config) -> None:
        self.templates = _templates(config)

    def say(self, key: str, **values: Any) -> str:
        """The site's words for ``key`` (builder.core.messages)."""
        return self.templates.say(key, **values)

    def notes(self, result: SearchResult) -> list[str]:
        """What the search says about itself, in the site's language."""
        return [self.say(key, **dict(values)) for key, values in result.said]

    def render(self, *, query: str, notes: list[str], hits: list[dict[str, Any]] | None,
               weak: bool = False, as_typed: str | None = None, answer: dict[str, Any] | None = None) -> str:
        """The results page for ``query`` (``hits`` None: the empty search form; ``weak``: the hits are
        only the closest by meaning; ``as_typed``: a word was corrected, and this site-relative URL
        searches the words as typed; ``answer``: :func:`page_answer`'s, when Ask was pressed)."""
        context: dict[str, Any] = {"query": query, "notes": notes, "weak": weak, "as_typed": as_typed}
        if hits is not None:
            context["hits"] = hits
        if answer is not None:
            context["answer"] = answer
        title = Label("page.search_for", (("query", query),)) if query else Label("page.search")
        page = Page("search", "search.html", "search", title, context,
                    ((Label("page.home"), urls.HOME_URL), (Label("page.search"), None)))
        return self.templates.render(page, time.strftime("%Y-%m-%d %H:%M"))

    def render_auth(self, *, message: str, next_url: str) -> str:
        """The sign-in form; after it the browser goes back to ``next_url``."""
        page = Page("auth", "server/auth.html", "auth", Label("page.sign_in"), {"message": message, "next": next_url},
                    ((Label("page.home"), urls.HOME_URL), (Label("page.sign_in"), None)))
        return self.templates.render(page, time.strftime("%Y-%m-%d %H:%M"))
