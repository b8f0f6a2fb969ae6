"""TeX formulas → MathML on the server: ``$…$`` inline, ``$$…$$`` display, GitHub's ```` ```math ```` fences.

No script lays them out: browsers draw MathML themselves (Chromium since 109, Firefox, Safari), so formulas
show offline, without JavaScript and under the server's Content-Security-Policy. latex2mathml converts; a formula
it cannot convert, or one that uses a command it does not know, shows its source in ``<code class="math-error">``
(nothing is logged: the page shows it where it is). The index reads a formula's source as it is written (the
indexer's grammar has no math), so a search finds ``E = mc^2`` by its TeX.

Dollars are read by pandoc's rule (mdit_py_plugins' ``dollarmath``, its ``allow_space`` and ``allow_digits``
off), which keeps prices text: an opening ``$`` is followed by no space and preceded by no digit, a closing one
preceded by no space and followed by no digit, so "$5 and $10" or "$20/$30" is no formula. GitHub's ``$`x`$``
is read as ``$x$``.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import nh3
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

from builder.render import highlight
from builder.render.highlight import CodeBlocks

if TYPE_CHECKING:
    from markdown_it.renderer import RendererHTML

# What latex2mathml writes (every command of its tables converted and collected, 3.81) and MathML Core's other
# presentation elements; attributes that change how a formula looks, never a link (latex2mathml turns \href into an
# ``href`` on an mrow), a style or an event handler. ``annotation`` holds the TeX source (shown by no browser).
MATH_TAGS = frozenset({
    "math", "semantics", "annotation", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub",
    "msubsup", "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd", "mstyle",
    "mpadded", "mphantom", "menclose", "merror", "mmultiscripts", "mprescripts", "none"})
_LOOKS = {"mathvariant", "mathcolor", "mathbackground", "mathsize", "displaystyle", "scriptlevel"}
MATH_ATTRIBUTES: dict[str, set[str]] = {
    "math": {"display"} | _LOOKS,
    "annotation": {"encoding"},
    "mo": {"accent", "fence", "form", "largeop", "lspace", "rspace", "maxsize", "minsize", "movablelimits",
           "separator", "stretchy", "symmetric"} | _LOOKS,
    "mfrac": {"linethickness"} | _LOOKS,
    "mover": {"accent"} | _LOOKS,
    "munder": {"accentunder"} | _LOOKS,
    "munderover": {"accent", "accentunder"} | _LOOKS,
    "mspace": {"width", "height", "depth"} | _LOOKS,
    "mpadded": {"width", "height", "depth", "lspace", "voffset"} | _LOOKS,
    "mtable": {"columnalign", "columnlines", "columnspacing", "rowalign", "rowlines", "rowspacing", "frame"} | _LOOKS,
    "mtr": {"columnalign", "rowalign"} | _LOOKS,
    "mtd": {"columnalign", "rowalign", "columnspan", "rowspan"} | _LOOKS,
    "menclose": {"notation"} | _LOOKS,
    **{tag: set(_LOOKS) for tag in ("mi", "mn", "ms", "mtext", "mrow", "mstyle", "msup", "msub", "msubsup", "msqrt",
                                     "mroot", "merror", "mmultiscripts")},
}
_MATHML_CLEANER = nh3.Cleaner(tags=set(MATH_TAGS), attributes=MATH_ATTRIBUTES)
_UNKNOWN = re.compile(r">\\[A-Za-z]+")  # latex2mathml writes a command it does not know as it is: <mi>\foo</mi>
MATH_FENCE = "math"
_INLINE, _BLOCK = "\0math-inline", "\0math-block"  # remembered as these "languages": no fence's holds a NUL
_NOT_RENDERED = "Not rendered: TeX that latex2mathml cannot read"


def math_plugin(md: MarkdownIt) -> None:
    """``$…$``, ``$$…$$`` (on their own lines or inside a paragraph) and ```` ```math ```` fences as MathML."""
    dollarmath_plugin(md, allow_labels=False, allow_space=False, allow_digits=False, allow_blank_lines=False,
                      double_inline=True)
    md.add_render_rule("math_inline", _render_inline)
    md.add_render_rule("math_inline_double", _render_inline)
    md.add_render_rule("math_block", _render_block)
    fence: Callable[..., str] = cast("RendererHTML", md.renderer).rules["fence"]  # bound: no self

    def render_fence(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
        if tokens[idx].info.split(maxsplit=1)[:1] == [MATH_FENCE]:
            return display_math(tokens[idx].content, "", env["blocks"])
        return fence(tokens, idx, options, env)

    md.add_render_rule("fence", render_fence)


def _render_inline(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    """``$…$`` inline, and ``$$…$$`` inside a paragraph displayed (a ``<math>`` may stand in a ``<p>``)."""
    token = tokens[idx]
    tex = token.content
    if len(tex) > 2 and tex[0] == tex[-1] == "`":  # GitHub's $`x`$
        tex = tex[1:-1]
    found = _converted(tex.strip(), token.type == "math_inline_double", env["blocks"])
    if not found:
        source = html.escape(f"{token.markup}{token.content}{token.markup}")
        return f'<code class="math-error" title="{_NOT_RENDERED}">{source}</code>'
    return found


def _render_block(self: Any, tokens: list[Token], idx: int, options: Any, env: Any) -> str:
    return display_math(tokens[idx].content, "$$", env["blocks"])


def display_math(tex: str, delimiter: str, blocks: CodeBlocks) -> str:
    """A displayed formula (a block), or its source between ``delimiter`` in a ``<pre>`` when it does not convert."""
    found = _converted(tex.strip(), True, blocks)
    if not found:
        source = f"{delimiter}{tex}{delimiter}" if delimiter else tex.rstrip("\n")
        return f'<pre class="math-error" title="{_NOT_RENDERED}"><code>{html.escape(source)}</code></pre>\n'
    return found + "\n"


def _converted(tex: str, display: bool, blocks: CodeBlocks) -> str:
    """:func:`to_mathml`, remembered and stored with the highlighted code (``""``: it does not convert)."""
    return blocks.remembered(_BLOCK if display else _INLINE, tex, lambda: to_mathml(tex, display) or "") or ""


def to_mathml(tex: str, display: bool) -> str | None:
    """``tex`` as a ``<math>`` element (its source kept in an annotation), or None when latex2mathml cannot
    convert it, or when the MathML would not show every character of the formula's text.

    latex2mathml builds an element tree whose text holds its symbols as character references
    (``&#x0003C;``) beside the formula's own text as typed (``\\text{a<b}``), and its ``convert`` unescapes
    the whole serialisation, so a ``<`` or ``<!--`` typed in a text reached the sanitiser as markup and cut the
    formula. Here the tree is serialised by ElementTree, which escapes every text: its references are
    decoded into characters first (a formula that holds ``&#`` itself is not drawn, since its text and
    latex2mathml's references could not be told apart), and the text that comes out of the sanitiser
    must be the text that went in."""
    if not tex or "&#" in tex:
        return None
    from xml.etree.ElementTree import tostring

    from latex2mathml.converter import convert_to_element  # ~80 ms to import: only notes with math pay

    try:
        tree = convert_to_element(tex, display="block" if display else "inline")
    except Exception:  # its parser raises its own errors, and IndexError and others on odd input
        return None
    for element in tree.iter():
        element.text = element.text and _REFERENCE.sub(_character, element.text)
        element.tail = element.tail and _REFERENCE.sub(_character, element.tail)
        for name, value in element.attrib.items():
            element.attrib[name] = _REFERENCE.sub(_character, value)
    out = tostring(tree, encoding="unicode", short_empty_elements=False)
    if _UNKNOWN.search(out) or not out.startswith("<math") or not out.endswith("</math>"):
        return None
    inner = out[out.index(">") + 1:-len("</math>")]
    annotated = (f'<math display="{"block" if display else "inline"}"><semantics>{inner}'
                 f'<annotation encoding="application/x-tex">{html.escape(tex, quote=False)}</annotation>'
                 f"</semantics></math>")
    # the same safe MathML when a source's raw HTML is trusted and not sanitized
    cleaned = _MATHML_CLEANER.clean(annotated)
    return cleaned if _text_of(cleaned) == _text_of(annotated) else None


_REFERENCE = re.compile(r"&#x([0-9A-Fa-f]{1,6});")  # how latex2mathml writes a symbol into its tree
_MARKUP = re.compile(r"<[^>]*>")  # in MathML whose every text is escaped, a ``<`` opens a tag


def _character(found: re.Match[str]) -> str:
    code = int(found[1], 16)
    return chr(code) if 0 < code <= 0x10FFFF else found[0]


def _text_of(mathml: str) -> str:
    """The characters a MathML element (its texts escaped) holds, without its markup."""
    return html.unescape(_MARKUP.sub("", mathml))


def converter_version() -> str:
    """latex2mathml's installed version, without importing it (see :func:`highlight.installed_version`)."""
    return highlight.installed_version("latex2mathml")
