"""Mermaid diagrams: a ```` ```mermaid ```` fence becomes ``<pre class="mermaid">`` holding its source, escaped.

A note page whose body holds one loads the copy of mermaid beside the templates (``static/vendor/mermaid/``,
fetched at set-up by its ``fetch.sh``) and ``static/mermaid-init.js``, which draw each as an SVG in the browser,
from the site itself (no internet). Without JavaScript, or without that copy, the source stays readable where the
diagram would be (the page says why, in the latter case).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from builder.core.templates import static_dir

if TYPE_CHECKING:  # pages.py asks has_diagram() without loading the parser
    from markdown_it import MarkdownIt
    from markdown_it.renderer import RendererHTML
    from markdown_it.token import Token

DIAGRAM_FENCE = "mermaid"
DIAGRAM = '<pre class="mermaid">'  # how a diagram opens in a body (the sanitizer keeps it as it is)
MERMAID_JS = "vendor/mermaid/mermaid.min.js"  # in the templates' static folder once fetch.sh has run


def mermaid_plugin(md: MarkdownIt) -> None:
    """```` ```mermaid ```` fences as ``<pre class="mermaid">`` (not highlighted: mermaid reads the text)."""
    fence: Callable[..., str] = cast("RendererHTML", md.renderer).rules["fence"]  # bound: no self

    def render_fence(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        if token.info.split(maxsplit=1)[:1] == [DIAGRAM_FENCE]:
            return f"{DIAGRAM}{html.escape(token.content)}</pre>\n"
        return fence(tokens, idx, options, env)

    md.add_render_rule("fence", render_fence)


def has_diagram(body_html: str) -> bool:
    """Does a rendered body hold a diagram (so that its page loads mermaid)?"""
    return DIAGRAM in body_html


def can_draw() -> bool:
    """Is mermaid there to draw the diagrams (``static/vendor/mermaid/fetch.sh`` has run)?"""
    return (static_dir() / MERMAID_JS).is_file()
