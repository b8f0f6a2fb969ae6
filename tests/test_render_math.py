"""Formulas (TeX → MathML on the server) and mermaid diagrams (drawn in the browser) on note pages.

The browser's side (MathML laid out, a diagram drawn under the server's CSP, the page without JavaScript) is in
tests/test_browser.py.
"""

from __future__ import annotations

import html
import re
import shutil
import string

import html5lib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from builder import indexfile
from builder.chunker import chunk_note
from builder.core import index as db
from builder.core.templates import DIAGRAM_MARK
from builder.notes.parse import parse_note
from builder.render.diagrams import MERMAID_JS, has_diagram
from builder.render.links import Link
from builder.render.markdown import make_renderer, render_body
from builder.render.mathml import to_mathml
from server.app import CSP, DIAGRAM_CSP, create_app
from server.search import search
from tests.conftest import HashEmbedder, copy_config, ollama_yaml, require_mermaid, sample_config, write_note
from tests.render_support import build_and_render, check_site

MC2 = ('<math display="inline"><semantics><mrow><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup>'
       '</mrow><annotation encoding="application/x-tex">E = mc^2</annotation></semantics></math>')
FRACTION = ('<math display="block"><semantics><mrow><mfrac><mrow><msub><mi>R</mi><mn>2</mn></msub></mrow><mrow>'
            '<msub><mi>R</mi><mn>1</mn></msub><mo>+</mo><msub><mi>R</mi><mn>2</mn></msub></mrow></mfrac></mrow>'
            '<annotation encoding="application/x-tex">\\frac{R_2}{R_1 + R_2}</annotation></semantics></math>\n')
NOT_RENDERED = 'title="Not rendered: TeX that latex2mathml cannot read"'


def rendered(text: str, *, trusted: bool = False) -> str:
    """The body of ``text`` (sanitized unless ``trusted``) with every link resolving to an external one."""
    return render_body(make_renderer(), text, page_url="a.html", anchors={}, trusted=trusted,
                       resolve=lambda kind, raw: Link("external", url=raw)).html


def test_inline_and_display_formulas_are_mathml():
    assert rendered("Einstein: $E = mc^2$.\n") == f"<p>Einstein: {MC2}.</p>\n"
    assert rendered("$$\n\\frac{R_2}{R_1 + R_2}\n$$\n") == FRACTION
    assert rendered("$$\\frac{R_2}{R_1 + R_2}$$\n") == FRACTION
    assert rendered("GitHub's way: $`E = mc^2`$\n") == f"<p>GitHub's way: {MC2}</p>\n"


def test_a_math_fence_is_a_displayed_formula():
    assert rendered("```math\n\\frac{R_2}{R_1 + R_2}\n```\n") == FRACTION
    assert rendered("```math\n\\frac{R_2}{\n```\n") == (
        f'<pre class="math-error" {NOT_RENDERED}><code>\\frac{{R_2}}{{</code></pre>\n')


def test_a_formula_in_the_middle_of_a_paragraph_may_be_displayed():
    html = rendered("so $$x^2$$ here\n")
    assert html.startswith('<p>so <math display="block"><semantics><mrow><msup><mi>x</mi><mn>2</mn></msup>')
    assert html.endswith("</math> here</p>\n")


@pytest.mark.parametrize("text", [
    "Sada stála $5 a multimetr $10.",
    "It costs $5 and $10 with shipping.",
    "Between $20/$30 a month.",
    "Between $20-$30 a month.",
    "B2 storage: $0.90, transactions ~$0.05, total $0.95",
    "Paid $5, $6 and $7.",
    "echo $HOME and $PATH",
    "A lone $ sign, and $ spaced $ dollars.",
    "Escaped \\$x\\$ dollars.",
    "`$x$` in code",
])
def test_prices_and_other_dollars_stay_text(text):
    html = rendered(text + "\n")
    assert "<math" not in html and "math-error" not in html
    assert html.count("$") == text.count("$")


def test_a_formula_that_does_not_convert_shows_its_source_and_the_page_goes_on():
    html = rendered("Bad $\\frac{a}{$ and unknown $\\foo x$; then $E = mc^2$.\n\n$$\n\\left( x\n$$\n\nafter\n")
    assert f'<code class="math-error" {NOT_RENDERED}>$\\frac{{a}}{{$</code>' in html
    assert f'<code class="math-error" {NOT_RENDERED}>$\\foo x$</code>' in html
    assert MC2 in html
    assert f'<pre class="math-error" {NOT_RENDERED}><code>$$\n\\left( x\n$$</code></pre>' in html
    assert html.endswith("<p>after</p>\n")
    assert rendered("in a paragraph $$\\frac{a}{$$ too\n") == (  # no <pre> in a <p>: the page must parse
        f'<p>in a paragraph <code class="math-error" {NOT_RENDERED}>$$\\frac{{a}}{{$$</code> too</p>\n')
    assert "&lt;script" in rendered("$<script>alert(1)</script>\\foo$\n")  # the source is escaped


def test_mathml_keeps_no_link_style_or_handler_in_either_mode():
    tex = "$\\href{javascript:alert(1)}{x} + \\style{color:red}{y}$\n"
    for trusted in (False, True):
        html = rendered(tex, trusted=trusted)
        assert "<math" in html and not re.search(r"<[^>]*\s(href|style|on\w+)=", html)
        assert "<annotation encoding=\"application/x-tex\">\\href{javascript:alert(1)}" in html  # text, no link
    raw = ('<math><mrow href="javascript:alert(1)" onclick="alert(1)" style="color:red"><mi>x</mi></mrow>'
           '<annotation-xml encoding="text/html"><img src="x" onerror="alert(1)"></annotation-xml>'
           '<maction actiontype="statusline"><mi>y</mi></maction></math>\n')
    html = rendered(raw)
    assert "<math><mrow><mi>x</mi></mrow>" in html
    for gone in ("href", "onclick", "onerror", "style", "annotation-xml", "maction"):
        assert gone not in html


def test_to_mathml_answers_none_for_what_it_cannot_convert():
    assert to_mathml("E = mc^2", False) == MC2
    for tex in ("", "\\frac{a}{", "a^", "\\notacommand", "{"):
        assert to_mathml(tex, True) is None


def test_a_mermaid_fence_keeps_its_source_escaped_for_the_browser():
    html = rendered('```mermaid\nflowchart LR\n  a["<b>x</b>"] --> b\n```\n\n```python\nx = 1\n```\n')
    assert html.startswith('<pre class="mermaid">flowchart LR\n  a["&lt;b&gt;x&lt;/b&gt;"] --&gt; b\n</pre>\n')
    assert has_diagram(html) and not has_diagram(rendered("```\nflowchart LR\n```\n"))


NOTE = """
    # Fyzika

    Slavný vzorec $E = mc^2$ a dělič napětí:

    $$
    U_{out} = U_{in} \\cdot \\frac{R_2}{R_1 + R_2}
    $$

    Rozbitý vzorec $\\frac{a}{$, $$\\frac{b}{$$ a cena $5 nebo $10.

    $$
    \\left( x
    $$

    ```math
    \\sqrt{
    ```

    ```mermaid
    flowchart LR
      a --> b
    ```
    """


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory):
    home = tmp_path_factory.mktemp("math")
    write_note(home / "notes", "fyzika.md", NOTE)
    write_note(home / "notes", "bez-diagramu.md", "# Bez diagramu\n\nJen $x^2$.\n")
    run = build_and_render(sample_config(home, ollama_yaml("http://127.0.0.1:9")), full=True,
                           embedder_factory=HashEmbedder)
    assert run.warnings == []  # a formula that does not convert is the page's to show, not the log's
    return home


@pytest.fixture
def portal(template, tmp_path, notes_dir):
    return copy_config(template, tmp_path)


def test_only_a_page_with_a_diagram_loads_mermaid(portal):
    require_mermaid()
    site = portal.site.output
    check_site(site)  # every page parses as strict HTML5, every script it loads is there
    with_diagram = (site / "notes" / "fyzika.html").read_text(encoding="utf-8")
    without = (site / "notes" / "bez-diagramu.html").read_text(encoding="utf-8")
    head = f'<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n{DIAGRAM_MARK}\n'
    assert with_diagram.startswith(head)
    assert 'static/vendor/mermaid/mermaid.min.js?v=' in with_diagram and "static/mermaid-init.js?v=" in with_diagram
    assert "<script>" not in with_diagram  # nothing inline: the CSP forbids it
    assert with_diagram.count('class="math-error"') == 4 and with_diagram.count("<math ") == 2  # and it parsed
    assert DIAGRAM_MARK not in without and "mermaid" not in without and "<math" in without
    vendor = site / "static" / "vendor" / "mermaid"
    assert sorted(p.name for p in vendor.iterdir()) == ["LICENSE", "mermaid.min.js"]  # its README stays behind
    assert vendor.joinpath("mermaid.min.js").stat().st_size > 1_000_000


def test_the_server_allows_inline_styles_on_diagram_pages_alone(portal):
    require_mermaid()
    client = TestClient(create_app(portal, embedder_factory=HashEmbedder))
    policies = [f"default-src 'self'; script-src 'self'; style-src 'self'{more}; img-src 'self' data:; "
                "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
                for more in ("", " 'unsafe-inline'")]
    assert policies == [CSP, DIAGRAM_CSP]  # inline styles for mermaid's SVG; scripts the site's own, no eval
    page = client.get("/notes/fyzika.html")
    assert page.headers.get_list("content-security-policy") == [DIAGRAM_CSP]
    for other in ("/notes/bez-diagramu.html", "/index.html", "/static/vendor/mermaid/mermaid.min.js"):
        response = client.get(other)
        assert response.status_code == 200 and response.headers.get_list("content-security-policy") == [CSP], other
    assert client.get("/static/mermaid-init.js").headers["content-type"] == "text/javascript; charset=utf-8"


def test_a_formula_is_indexed_and_found_by_its_source(portal):
    text = (portal.sources[0].root / "fyzika.md").read_text(encoding="utf-8")
    chunks = chunk_note(parse_note("fyzika.md", text))
    assert any("$E = mc^2$" in c.text and "\\frac{R_2}{R_1 + R_2}" in c.text for c in chunks)
    conn = db.connect(indexfile.resolve(portal.index), readonly=True)
    try:
        for query in ("mc^2", "E = mc^2", "U_{out}", "frac R_2"):  # (the other note's x^2 has a "2" too)
            assert search(conn, portal, query, mode="bm25").hits[0].path == "fyzika.md", query
    finally:
        conn.close()


def test_a_diagram_added_by_an_edit_makes_its_page_load_mermaid_and_removed_stop(portal):
    require_mermaid()
    note = portal.sources[0].root / "bez-diagramu.md"
    page = portal.site.output / "notes" / "bez-diagramu.html"
    note.write_text("# Bez diagramu\n\n```mermaid\nflowchart LR\n  a --> b\n```\n", encoding="utf-8")
    build_and_render(portal, embedder_factory=HashEmbedder)
    assert DIAGRAM_MARK in page.read_text(encoding="utf-8")
    note.write_text("# Bez diagramu\n\nUž zase bez.\n", encoding="utf-8")
    build_and_render(portal, embedder_factory=HashEmbedder)
    assert DIAGRAM_MARK not in page.read_text(encoding="utf-8") and "mermaid" not in page.read_text(encoding="utf-8")


def test_the_vendored_mermaid_is_the_checked_release():
    """mermaid is kept in git (its README says why): the file is the npm release fetch.sh names, byte for byte."""
    import hashlib

    from builder.core.templates import static_dir

    fetch = (static_dir() / "vendor/mermaid/fetch.sh").read_text(encoding="utf-8")
    expected = re.search(r"^SHA256=([0-9a-f]{64})$", fetch, re.M)
    assert expected and expected[1] == "336df803d87a38b70a01e736e666c8f7601d2ce42f5e47c8fafe5d721074b9a3"
    assert hashlib.sha256((static_dir() / MERMAID_JS).read_bytes()).hexdigest() == expected[1]


def test_without_mermaid_a_diagram_shows_its_source_and_says_why_until_it_is_back(tmp_path, monkeypatch):
    """An install that lost mermaid's file shows each diagram's source, says so, and loads no script it lacks;
    the first build after the file is back draws them."""
    require_mermaid()
    from builder.core import templates

    fetched_here = templates.static_dir() / MERMAID_JS
    copy = tmp_path / "templates"
    shutil.copytree(templates.TEMPLATE_DIR, copy)
    fetched = copy / "static" / MERMAID_JS
    fetched.unlink()
    monkeypatch.setattr(templates, "TEMPLATE_DIR", copy)
    home = tmp_path / "portal"
    write_note(home / "notes", "schema.md", "# Schéma\n\n```mermaid\nflowchart LR\n  a --> b\n```\n")
    config = sample_config(home, ollama_yaml("http://127.0.0.1:9"))
    build_and_render(config, full=True, embedder_factory=HashEmbedder)
    site = config.site.output
    check_site(site)  # every script a page loads is there
    page = (site / "notes" / "schema.html").read_text(encoding="utf-8")
    assert "<script src=\"../static/vendor/mermaid" not in page and DIAGRAM_MARK not in page
    assert '<pre class="mermaid">flowchart LR\n  a --&gt; b\n</pre>' in page
    assert ("Diagrams are shown as their source: this install of the portal lacks mermaid's file "
            "(<code>static/vendor/mermaid/mermaid.min.js</code>) to draw them.") in " ".join(page.split())
    shutil.copy(fetched_here, fetched)
    build_and_render(config, embedder_factory=HashEmbedder)
    page = (site / "notes" / "schema.html").read_text(encoding="utf-8")
    assert "static/vendor/mermaid/mermaid.min.js?v=" in page and DIAGRAM_MARK in page and "diagrams-as-text" not in page


# ---------------------------------------------------------------- a formula's text is never cut (issue 44)

def shown(body: str) -> list[str]:
    """What a browser shows of each paragraph of ``body``, parsed as a browser parses it (html5lib: MathML
    is foreign content there): every text but the TeX annotation, which no browser draws."""
    tree = html5lib.HTMLParser(namespaceHTMLElements=False).parseFragment(body)

    def text(element) -> str:
        if element.tag.rpartition("}")[2] == "annotation":
            return element.tail or ""
        return (element.text or "") + "".join(text(child) for child in element) + (element.tail or "")

    return [text(p).removesuffix(p.tail or "") for p in tree.iter() if p.tag == "p"]


@pytest.mark.parametrize(("tex", "drawn"), [
    ("\\text{if a<b then ZETAWORD}", "if\xa0a<b\xa0then\xa0ZETAWORD"),
    ("x \\text{<!--} OMEGAWORD \\text{-->} z", "x<!--OMEGAWORD-->z"),
    ("\\text{\"quoted\" & 'single' <b>bold</b>}", "\"quoted\"\xa0&\xa0'single'\xa0<b>bold</b>"),
    ("\\mathrm{a<b} \\operatorname{c&d} > e", "a<bc&d>e"),
    ("\\text{]]> <![CDATA[ x}", "]]>\xa0<![CDATA[\xa0x"),
])
def test_a_formula_s_text_reaches_the_page_whole(tex, drawn):
    """Before: latex2mathml's text went to the sanitiser unescaped; ``a<b then …`` became a tag and the rest
    of the formula (and its annotation) vanished, ``<!--`` … ``-->`` a comment."""
    body = rendered(f"Before ${tex}$ after.\n")
    assert "<math" in body and "math-error" not in body
    assert shown(body) == [f"Before {drawn} after."]
    assert f'<annotation encoding="application/x-tex">{html.escape(tex, quote=False)}</annotation>' in body


def test_a_formula_whose_text_holds_a_character_reference_shows_its_source():
    """latex2mathml writes its symbols as ``&#x…;`` into the text: one typed there could not be told apart."""
    body = rendered("Before $\\text{&#x3C; and &#60;} x$ after.\n")
    assert "<math" not in body and shown(body) == ["Before $\\text{&#x3C; and &#60;} x$ after."]


_TEXT_CHARACTERS = string.ascii_letters + string.digits + " <>&\"'!-=;:?.,/*+()[]|@"
_ATOMS = {"x": "x", "y": "y", "2": "2", "+": "+", "-": "−", "=": "=", "<": "<", ">": ">", "\\&": "&",
          "\\lt": "<", "\\gt": ">"}
_TEXT_PARTS = st.one_of(st.text(_TEXT_CHARACTERS, min_size=1, max_size=12),
                        st.sampled_from(["<!--", "-->", "<", ">", "&", "&amp;", "\"", "'", "<b>", "</mtext>",
                                         "<script>", "]]>", "<!", "&lt", "&#60;"]))


@st.composite
def _formulas(draw) -> tuple[str, str]:
    """(TeX, the characters it shows when drawn): text in \\text, \\mathrm or \\textbf among atoms."""
    tex, drawn = [], []
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            command = draw(st.sampled_from(["\\text", "\\textbf", "\\mbox"]))
            words = "".join(draw(st.lists(_TEXT_PARTS, min_size=1, max_size=4)))
            tex.append(f"{command}{{{words}}}")
            drawn.append(words.replace(" ", "\xa0"))
        else:
            atom = draw(st.sampled_from(sorted(_ATOMS)))
            tex.append(atom)
            drawn.append(_ATOMS[atom])
    return " ".join(tex), "".join(drawn)


@settings(max_examples=300, deadline=None)
@given(formula=_formulas(), display=st.booleans())
def test_a_formula_is_drawn_whole_or_shown_as_its_source(formula, display):
    """Random formulas with markup, comment markers, ampersands and quotes in their text: the paragraph
    shows every character of the source, drawn (each text as typed) or as the source itself, and the
    words after it."""
    tex, drawn = formula
    dollars = "$$" if display else "$"
    body = rendered(f"Before {dollars}{tex}{dollars} after.\n")
    if "<math" in body:
        assert shown(body) == [f"Before {drawn} after."]
        assert f'<annotation encoding="application/x-tex">{html.escape(tex, quote=False)}</annotation>' in body
    else:
        assert shown(body) == [f"Before {dollars}{tex}{dollars} after."]
