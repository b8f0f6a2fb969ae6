"""Markdown → safe HTML for one note page: markdown-it-py plus our plugins.

- The block grammar is the indexer's (:func:`builder.notes.parse.make_markdown`: CommonMark, HTML,
  front matter, tables, strikethrough) plus footnotes, task lists and definition lists.
- Heading ids: a top-level heading gets the anchor the index stored for its line (computed by
  :func:`builder.notes.parse.headings_of`, the chunker's function), so a search hit's ``#anchor``
  lands on its section; nested headings get fresh ids that cannot collide with those.
- Links, images and ``[[wikilinks]]`` go through a resolver; broken ones become
  ``<span class="broken-link">``. Each link's lines in the file are recorded, for the site's
  broken-links page.
- Code fences are highlighted by Pygments (:mod:`builder.render.highlight`); TeX formulas become MathML
  (:mod:`builder.render.mathml`), ``mermaid`` fences diagrams drawn in the browser
  (:mod:`builder.render.diagrams`); raw HTML is sanitized by nh3 unless trusted.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from markdown_it.utils import OptionsDict
from mdit_py_plugins.deflist import deflist_plugin
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.tasklists import tasklists_plugin

from builder.core import messages, urls
from builder.core.slug import Slugger
from builder.core.textdecode import decode_note
from builder.notes.parse import inline_text
from builder.render.callouts import callout_plugin, grav_notice_plugin
from builder.render.diagrams import mermaid_plugin
from builder.render.highlight import CodeBlocks
from builder.render.links import Link
from builder.render.mathml import MATH_ATTRIBUTES, MATH_TAGS, math_plugin

if TYPE_CHECKING:
    from markdown_it.utils import OptionsType

_WIKILINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")  # [[target]], [[target#section]], [[target|label]]

WikiResolve = Callable[[str, Any], "tuple[str | None, str]"]


def wikilink_plugin(md: MarkdownIt, *, resolve: WikiResolve) -> None:
    """``[[name]]``, ``[[name#section]]`` and ``[[name|label]]`` as links.

    ``resolve(target, env)`` returns ``(href, title)``; ``href`` None renders the label as a
    ``<span class="broken-link">`` whose tooltip is ``title``.
    """

    def tokenize(state: Any, silent: bool) -> bool:
        if not state.src.startswith("[[", state.pos):
            return False
        match = _WIKILINK.match(state.src, state.pos)
        if match is None:
            return False
        if not silent:
            target, _, label = match.group(1).partition("|")
            token = state.push("wikilink", "", 0)
            token.meta = {"target": target.strip(), "label": label.strip()}
            token.content = match.group(0)
        state.pos = match.end()
        return True

    def render(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        meta = tokens[idx].meta
        if is_toc_marker(meta):
            return ""  # a "table of contents here" marker: every page already has one
        label = html.escape(meta["label"] or meta["target"].removesuffix(".md"))
        href, title = resolve(meta["target"], env)
        if href is None:
            return f'<span class="broken-link" title="{html.escape(title)}">{label}</span>'
        return f'<a class="wikilink" href="{html.escape(href)}">{label}</a>'

    md.inline.ruler.before("link", "wikilink", tokenize)
    md.add_render_rule("wikilink", render)


_ALIGNMENT = {f"text-align:{side}": f"align-{side}" for side in ("left", "center", "right")}


def table_alignment_plugin(md: MarkdownIt) -> None:
    """Table column alignment (``:--:``) as classes: the server's Content-Security-Policy
    (``style-src 'self'``) ignores inline ``style`` attributes, which markdown-it writes."""

    def to_classes(state: Any) -> None:
        for token in state.tokens:
            if token.type in ("th_open", "td_open") and token.attrs.get("style") in _ALIGNMENT:
                token.attrJoin("class", _ALIGNMENT[str(token.attrs.pop("style"))])

    md.core.ruler.push("table_alignment", to_classes)


def is_toc_marker(meta: dict[str, str]) -> bool:
    """``[[TOC]]`` (no label) marks where a table of contents goes: no link."""
    return meta["target"].upper() == "TOC" and not meta["label"]


# ---------------------------------------------------------------- sanitizing

_ATTRIBUTES = {**{tag: set(attrs) for tag, attrs in nh3.ALLOWED_ATTRIBUTES.items()},
               "*": {"id", "class", "title", "lang", "dir"},
               "a": {"href", "hreflang", "data-broken-link"},
               "img": {"src", "alt", "width", "height", "title", "loading", "data-broken-link"},
               "details": {"open"},
               "input": {"checked"},
               "li": {"value"}}
for _cell in ("td", "th"):
    _ATTRIBUTES[_cell] = _ATTRIBUTES[_cell] | {"style"}
for _tag, _names in MATH_ATTRIBUTES.items():  # formulas (builder.render.mathml), in a note's raw HTML too
    _ATTRIBUTES[_tag] = _ATTRIBUTES.get(_tag, set()) | _names

_CLEANER = nh3.Cleaner(
    tags=set(nh3.ALLOWED_TAGS) | {"section", "input"} | MATH_TAGS,
    attributes=_ATTRIBUTES,
    tag_attribute_values={"input": {"type": {"checkbox"}}},
    set_tag_attribute_values={"input": {"disabled": "disabled"}},  # task lists are read-only
    filter_style_properties={"text-align"},  # table column alignment, nothing else
)


def sanitize(body: str) -> str:
    """Untrusted HTML → HTML without scripts, event handlers, styles or dangerous URLs."""
    return _CLEANER.clean(body)


# ---------------------------------------------------------------- the per-note renderer


@dataclass(frozen=True)
class Body:
    """One rendered note body and the links it contains (in document order, unique)."""

    html: str
    links: tuple[tuple[str, str], ...]  # (kind, raw): kind is link | image | wiki
    results: tuple[Link, ...]  # the resolution of each entry of ``links``
    lines: tuple[tuple[int, ...], ...] = ()  # the 1-based lines where each entry of ``links`` is written
    lang: str = ""  # the front matter's ``lang`` (or ``language``): the language the note says it is written in
    summary: str = ""  # the front matter's ``summary`` (or ``description``): its page's meta description

    def broken(self) -> list[tuple[int, str]]:
        """(line, why) of every broken link of the note, by line (within a line, in the order each link first
        appears in the note)."""
        return sorted(((line, result.reason) for result, lines in zip(self.results, self.lines, strict=False)
                       if result.kind == "broken" for line in lines), key=lambda found: found[0])


def make_renderer() -> MarkdownIt:
    """The markdown-it instance for note pages (per-note state travels in ``env``, the render's code blocks
    in the options of :func:`render_body`)."""
    md = (MarkdownIt("commonmark", {"html": True})
          .use(front_matter_plugin).enable(["table", "strikethrough"])
          .use(footnote_plugin).use(tasklists_plugin).use(deflist_plugin).use(table_alignment_plugin))
    wikilink_plugin(md, resolve=_wiki_href)
    math_plugin(md)
    mermaid_plugin(md)
    callout_plugin(md)
    grav_notice_plugin(md)
    md.core.ruler.push("heading_ids", _heading_ids)
    md.core.ruler.push("note_links", _rewrite_links)
    md.add_render_rule("broken_image", _render_broken_image)
    return md


# Characters HTML forbids in a document (controls other than whitespace, noncharacters).
_NOT_IN_HTML = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")


def note_text(data: bytes) -> str:
    """The text as the indexer saw it (same decoding, BOM and newline handling, so the same lines),
    with characters that HTML forbids replaced by U+FFFD."""
    text = decode_note(data).text
    return _NOT_IN_HTML.sub("\ufffd", text.replace("\r\n", "\n").replace("\r", "\n"))


def render_body(md: MarkdownIt, text: str, *, page_url: str, anchors: dict[int, str],
                resolve: Callable[[str, str], Link], trusted: bool, language: str = "en",
                blocks: CodeBlocks | None = None) -> Body:
    """Render one note. ``anchors`` maps the 0-based line of each top-level heading to its anchor;
    ``resolve(kind, raw)`` answers links of this note; ``language``: the site's (a broken link's tooltip);
    ``blocks``: the render's highlighted code and formulas (None: a new set, as for a render of its own)."""
    blocks = blocks if blocks is not None else CodeBlocks()
    env: dict[str, Any] = {"page_url": page_url, "anchors": anchors, "links": {}, "lines": {}, "emitted": set(),
                           "resolve": resolve, "language": language, "blocks": blocks}
    tokens = md.parse(text, env)
    lang, summary = _declared(tokens)
    options = OptionsDict(cast("OptionsType", {**md.options, "highlight": blocks.highlight_code}))
    out = md.renderer.render(tokens, options, env)
    missing = [a for a in anchors.values() if a not in env["emitted"]]
    if missing:  # a heading the indexer saw that this grammar nests differently: keep its target alive
        out = "".join(f'<span id="{html.escape(a)}"></span>' for a in missing) + out
    if not trusted:
        out = sanitize(out)
    links = tuple(env["links"])
    return Body(out, links, tuple(env["links"][key] for key in links),
                tuple(tuple(env["lines"].get(key, ())) for key in links), lang, summary)


_LANG_TAG = re.compile(r"[a-z]{2,3}(-[a-z0-9]{2,8})*")


def _declared(tokens: list[Any]) -> tuple[str, str]:
    """What the front matter says of the note's language and summary ("" where it says nothing usable)."""
    matter = next((t.content for t in tokens[:1] if t.type == "front_matter"), "")
    if not re.search(r"^(lang|language|summary|description)\s*:", matter, re.M):
        return "", ""
    import yaml

    try:
        data = yaml.safe_load(matter)
    except yaml.YAMLError:
        return "", ""
    if not isinstance(data, dict):
        return "", ""
    lang = next((str(v).strip().lower() for k in ("lang", "language") if isinstance(v := data.get(k), str)), "")
    summary = next((" ".join(v.split()) for k in ("summary", "description") if isinstance(v := data.get(k), str)), "")
    return (lang if _LANG_TAG.fullmatch(lang) else ""), summary[:300]


def same_body(body: Body, from_url: str, to_url: str, results: tuple[Link, ...]) -> Body | None:
    """``body``, rendered for the page at ``from_url``, as the body of another note with the same
    text and anchors whose links resolved to ``results``: the same HTML when every link renders the
    same on the page at ``to_url`` (same href, or broken for the same reason); else None."""
    for before, after in zip(body.results, results, strict=True):
        if _rendered(before, from_url) != _rendered(after, to_url):
            return None
    return Body(body.html, body.links, results, body.lines, body.lang, body.summary)


def _rendered(link: Link, page_url: str) -> tuple[bool, str]:
    """All that a page shows of a link: broken and why, or where it leads."""
    return (True, link.reason) if link.kind == "broken" else (False, _href(link, page_url))


def _resolve(env: Any, kind: str, raw: str, line: int | None = None) -> Link:
    """The link's resolution (asked once per note); ``line``: 0-based, where it is written."""
    key = (kind, raw)
    if key not in env["links"]:
        env["links"][key] = env["resolve"](kind, raw)
    if line is not None and "lines" in env:
        found = env["lines"].setdefault(key, [])
        if line + 1 not in found:
            found.append(line + 1)
    return env["links"][key]


def _href(link: Link, page_url: str) -> str:
    if link.kind in ("note", "attachment"):
        return urls.relative(page_url, link.url) or "#"
    return link.url


def _wiki_href(target: str, env: Any) -> tuple[str | None, str]:
    link = _resolve(env, "wiki", target)
    if link.kind == "broken":
        return None, _broken(env, "broken.title", link)
    return _href(link, env["page_url"]) or "#", ""


def _broken(env: Any, key: str, link: Link) -> str:
    """A broken link's tooltip in the page's language (``Broken link: x.md: no such note or file``)."""
    language = env.get("language", "en")
    return messages.text(language, key, reason=messages.reason(language, link.reason))


def _heading_ids(state: Any) -> None:
    anchors: dict[int, str] = state.env.get("anchors", {})
    slugger = Slugger()
    for taken in anchors.values():  # nested headings must not take a section's anchor
        slugger.slug(taken)
    tokens = state.tokens
    for i, token in enumerate(tokens):
        if token.type != "heading_open":
            continue
        anchor: str | None = anchors.get(token.map[0]) if token.level == 0 and token.map else None
        if anchor is None:
            anchor = slugger.slug(inline_text(tokens[i + 1]))
        else:
            state.env["emitted"].add(anchor)
        token.attrSet("id", anchor)


_TAG = re.compile(r"<([a-zA-Z][a-zA-Z0-9-]*)(\s[^<>]*)?>")
_URL_ATTR = re.compile(r"""(\s)(href|src)(\s*=\s*)("[^"]*"|'[^']*'|[^\s"'=<>`]+)""", re.IGNORECASE)


def _rewrite_raw_html(content: str, env: Any, line: int) -> str:
    """Links inside raw HTML tags resolve like markdown links; a broken one loses its URL and is
    marked with ``data-broken-link`` (a regex over tags: escaped text such as ``&lt;a href`` is no tag).
    ``line``: where ``content`` starts (0-based)."""

    def tag(match: re.Match[str]) -> str:
        attrs = match.group(2)
        if not attrs:
            return match.group(0)

        def attribute(found: re.Match[str]) -> str:
            space, name, _, value = found.groups()
            raw = html.unescape(value[1:-1] if value[:1] in "\"'" else value)
            at = line + content.count("\n", 0, match.start(2) + found.start(2))
            link = _resolve(env, "image" if name.lower() == "src" else "link", raw, at)
            if link.kind == "broken":
                return f'{space}data-broken-link="{html.escape(_broken(env, "broken.title", link))}"'
            return f'{space}{name}="{html.escape(_href(link, env["page_url"]))}"'

        return f"<{match.group(1)}{_URL_ATTR.sub(attribute, attrs)}>"

    return _TAG.sub(tag, content)


def _rewrite_links(state: Any) -> None:
    """Resolve every link of the note (wikilinks too, so that each is recorded with its line) and
    rewrite markdown links, images and links in raw HTML."""
    env = state.env
    line = 0  # 0-based, of the token at hand: its block's first line, plus the line breaks before it
    for token in state.tokens:
        line = token.map[0] if token.map else line
        if token.type == "html_block":
            token.content = _rewrite_raw_html(token.content, env, line)
        if token.type != "inline" or not token.children:
            continue
        broken_open = False
        for child in token.children:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "wikilink" and not is_toc_marker(child.meta):
                _resolve(env, "wiki", child.meta["target"], line)
            elif child.type == "link_open":
                link = _resolve(env, "link", str(child.attrs.get("href", "")), line)
                broken_open = link.kind == "broken"
                if broken_open:
                    child.tag, child.attrs = "span", {"class": "broken-link",
                                                      "title": _broken(env, "broken.title", link)}
                else:
                    child.attrSet("href", _href(link, env["page_url"]))
            elif child.type == "link_close" and broken_open:
                child.tag, broken_open = "span", False
            elif child.type == "html_inline":
                child.content = _rewrite_raw_html(child.content, env, line)
                line += child.content.count("\n")
            elif child.type == "image":
                link = _resolve(env, "image", str(child.attrs.get("src", "")), line)
                if link.kind == "broken":
                    child.type = "broken_image"
                    child.meta = {**(child.meta or {}), "reason": link.reason}
                else:
                    child.attrSet("src", _href(link, env["page_url"]))
                    child.attrSet("loading", "lazy")


def _render_broken_image(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env) or str(token.attrGet("src") or "image")
    title = html.escape(messages.text(env.get("language", "en"), "broken.image_title",
                                      reason=messages.reason(env.get("language", "en"), token.meta["reason"])))
    return f'<span class="broken-link broken-image" title="{title}">[{html.escape(alt)}]</span>'
