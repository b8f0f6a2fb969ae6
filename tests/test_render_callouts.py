"""Callouts on note pages: GitHub alerts and Obsidian callouts (``> [!TYPE]``), Grav's ``!`` notices."""

from __future__ import annotations

import pytest

from builder.render.links import Link
from builder.render.markdown import make_renderer, render_body


def rendered(text: str) -> str:
    """The sanitized body of ``text`` with every link resolving to an external one."""
    return render_body(make_renderer(), text, page_url="a.html", anchors={}, trusted=False,
                       resolve=lambda kind, raw: Link("external", url=raw)).html


@pytest.mark.parametrize("text, html", [
    ("> [!NOTE]\n> Useful *info*.\n\nafter\n",
     '<div class="callout callout-note">\n<p class="callout-title">Note</p>\n<p>Useful <em>info</em>.</p>\n'
     "</div>\n<p>after</p>\n"),
    ("> [!warning] Do not *push* secrets\n> Git keeps them.\n",
     '<div class="callout callout-warning">\n<p class="callout-title">Do not <em>push</em> secrets</p>\n'
     "<p>Git keeps them.</p>\n</div>\n"),
    ("> [!tip]- Folded\n> hidden\n",
     '<details class="callout callout-tip">\n<summary class="callout-title">Folded</summary>\n<p>hidden</p>\n'
     "</details>\n"),
    ("> [!bug]+ Open\n>\n> - one\n",
     '<details class="callout callout-danger" open="">\n<summary class="callout-title">Open</summary>\n<ul>\n'
     "<li>one</li>\n</ul>\n</details>\n"),
    ("> [!recept] Vlastní typ\n",
     '<div class="callout callout-note">\n<p class="callout-title">Vlastní typ</p>\n</div>\n'),
    ("> a plain quote [!NOTE]\n", "<blockquote>\n<p>a plain quote [!NOTE]</p>\n</blockquote>\n"),
    ("> [!NOTE] inside\n>> [!danger]\n>> nested\n",
     '<div class="callout callout-note">\n<p class="callout-title">inside</p>\n<div class="callout callout-danger">\n'
     '<p class="callout-title">Danger</p>\n<p>nested</p>\n</div>\n</div>\n'),
])
def test_a_blockquote_that_opens_with_a_type_is_a_callout(text, html):
    assert rendered(text) == html


@pytest.mark.parametrize("text, html", [
    # as kemt-wiki writes them: a title line, an empty notice line, a list whose item wraps lazily
    ("! Naučíte sa:\n!\n! - Vytvoriť cyklický kód, ktorý platí\n    podmienka.\n! - Načítať `reťazec`.\n\nPotom.\n",
     '<div class="callout callout-warning">\n<p>Naučíte sa:</p>\n<ul>\n<li>Vytvoriť cyklický kód, ktorý platí\n'
     "podmienka.</li>\n<li>Načítať <code>reťazec</code>.</li>\n</ul>\n</div>\n<p>Potom.</p>\n"),
    ("!! Do GITu neposielajte heslá.\n",
     '<div class="callout callout-danger">\n<p>Do GITu neposielajte heslá.</p>\n</div>\n'),
    ("!!! Info\n!!!! Hotovo\n",
     '<div class="callout callout-note">\n<p>Info</p>\n</div>\n'
     '<div class="callout callout-tip">\n<p>Hotovo</p>\n</div>\n'),
    ("! prvý\n\n# Nadpis\n",
     '<div class="callout callout-warning">\n<p>prvý</p>\n</div>\n<h1 id="nadpis">Nadpis</h1>\n'),
    ("! Cieľ\n===\n", '<div class="callout callout-warning">\n<p>Cieľ\n===</p>\n</div>\n'),  # lazy, as in "> Cieľ"
    ("! a\n!\nnot lazy\n", '<div class="callout callout-warning">\n<p>a</p>\n</div>\n<p>not lazy</p>\n'),
    ("! a lazy line\n# ends at a heading\n",
     '<div class="callout callout-warning">\n<p>a lazy line</p>\n</div>\n'
     '<h1 id="ends-at-a-heading">ends at a heading</h1>\n'),
    # not notices: inside a paragraph, an image, five marks, no space, indented code
    ("text\n! not a notice\n", "<p>text\n! not a notice</p>\n"),
    ("![obrázok](x.png)\n", '<p><img src="x.png" alt="obrázok" loading="lazy"></p>\n'),
    ("!!!!! five\n", "<p>!!!!! five</p>\n"),
    ("!important\n", "<p>!important</p>\n"),
    ("    ! code\n", "<pre><code>! code\n</code></pre>\n"),
])
def test_grav_notices_are_callouts(text, html):
    assert rendered(text) == html


def test_links_in_callouts_keep_their_lines():
    text = "# H\n\n> [!note] See [a](a.md)\n> and [b](b.md)\n\n! [c](c.md)\n!\n! [d](d.md)\n"
    body = render_body(make_renderer(), text, page_url="a.html", anchors={}, trusted=False,
                       resolve=lambda kind, raw: Link("broken", reason=raw))
    assert body.broken() == [(3, "a.md"), (4, "b.md"), (6, "c.md"), (8, "d.md")]
