"""Formulas and diagrams in a real browser: the real server on 127.0.0.1, Debian's headless Chromium.

Formulas are MathML made by the renderer (no script); a ```mermaid fence is drawn by the bundled mermaid under the
server's Content-Security-Policy. Every page here is watched for console errors and CSP violations (an init script
listens for ``securitypolicyviolation``: Chromium's own console line for a blocked style is an error too).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from server.app import CSP, DIAGRAM_CSP
from tests.conftest import require_browser, require_mermaid, serve

ROOT = Path(__file__).resolve().parents[1]
FORMULAS = "notes/projekty/elektronika/delic-napeti.html"
DIAGRAM = "notes/devops/ci-pipeline.html"
MERMAID = "static/vendor/mermaid/mermaid.min.js"

pytestmark = pytest.mark.slow

WATCH_CSP = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  const what = `${event.violatedDirective} ${event.blockedURI} at ${event.sourceFile}:${event.lineNumber}`;
  window.__cspViolations.push(what);
  console.error("CSP violation: " + what);
});
"""


@pytest.fixture(autouse=True, scope="module")
def _tools() -> None:
    require_browser()


class Watched:
    """A page in its own context, with what went wrong on it: console errors, page errors, failed requests,
    CSP violations; and the URLs it asked for."""

    def __init__(self, browser, **context_options) -> None:
        self.context = browser.new_context(**context_options)
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        if context_options.get("java_script_enabled", True):
            self.page.add_init_script(WATCH_CSP)
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("response", lambda r: self.errors.append(f"{r.status} {r.url}") if r.status >= 400 else None)

    def violations(self) -> list[str]:
        return self.page.evaluate("() => window.__cspViolations")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def watched(browser):
    opened: list[Watched] = []

    def open_(**context_options) -> Watched:
        opened.append(Watched(browser, **context_options))
        return opened[-1]

    yield open_
    for one in opened:
        one.close()


def box(locator) -> dict[str, float]:
    found = locator.bounding_box()
    assert found is not None, "not laid out"
    return found


def luminance(colour: str) -> float:
    """0 (black) … 1 (white) of a computed ``rgb(…)`` colour."""
    red, green, blue = (int(part) for part in colour[colour.index("(") + 1:colour.index(")")].split(",")[:3])
    return (0.2126 * red + 0.7152 * green + 0.0722 * blue) / 255


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_formulas_are_laid_out_as_mathml_in_the_text_colour(examples_server, watched, scheme):
    tab = watched(color_scheme=scheme)
    response = tab.page.goto(f"{examples_server}/{FORMULAS}")
    assert response.headers["content-security-policy"] == CSP  # no diagram here: the strict policy
    main = tab.page.locator("main")
    assert main.locator("math").count() >= 5 and main.locator(".math-error").count() == 0
    display = main.locator('math[display="block"]').first
    assert box(display)["width"] > 50 and box(display)["height"] > 20
    numerator, denominator = display.locator("mfrac > *").nth(0), display.locator("mfrac > *").nth(1)
    assert box(numerator)["y"] + box(numerator)["height"] <= box(denominator)["y"] + 1  # a real fraction: stacked
    inline = main.locator('p math[display="inline"]').first
    assert box(inline)["width"] > 10 and box(inline)["height"] > 5
    text = main.locator(".note-body p").first.evaluate("el => getComputedStyle(el).color")
    assert {inline.evaluate("el => getComputedStyle(el).color"), display.evaluate("el => getComputedStyle(el).color"),
            inline.locator("mi").first.evaluate("el => getComputedStyle(el).color")} == {text}
    assert (luminance(text) > 0.8) == (scheme == "dark")
    assert "$5" in main.inner_text() and "$10" in main.inner_text()  # prices are text
    assert not any(MERMAID in url for url in tab.requests)  # no diagram, no mermaid
    assert tab.errors == [] and tab.violations() == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_a_mermaid_fence_is_drawn_as_svg_under_the_csp(examples_server, watched, scheme):
    require_mermaid()
    tab = watched(color_scheme=scheme)
    response = tab.page.goto(f"{examples_server}/{DIAGRAM}")
    assert response.headers["content-security-policy"] == DIAGRAM_CSP
    svg = tab.page.locator("main .mermaid-diagram svg")
    svg.wait_for(state="visible", timeout=20_000)
    assert box(svg)["width"] > 100 and box(svg)["height"] > 20
    assert tab.page.locator("main pre.mermaid").count() == 0
    labels = tab.page.locator("main .mermaid-diagram").inner_text()
    assert "git push" in labels and "deploy" in labels and "větev main?" in labels
    node = svg.locator(".node rect, .node polygon").first
    fill = luminance(node.evaluate("el => getComputedStyle(el).fill"))
    assert fill < 0.4 if scheme == "dark" else fill > 0.7  # mermaid's dark theme in the dark
    assert any(MERMAID in url for url in tab.requests)
    assert tab.errors == [] and tab.violations() == []


def test_without_javascript_the_diagram_s_source_stays_readable_and_formulas_still_show(examples_server, watched):
    tab = watched(java_script_enabled=False)
    tab.page.goto(f"{examples_server}/{DIAGRAM}")
    source = tab.page.locator("main pre.mermaid")
    assert source.is_visible() and tab.page.locator("main svg.flowchart, main .mermaid-diagram").count() == 0
    assert source.inner_text().startswith("flowchart LR\n  push[git push] --> lint --> test\n")
    tab.page.goto(f"{examples_server}/{FORMULAS}")
    display = tab.page.locator('main math[display="block"]').first
    assert box(display)["width"] > 50 and box(display)["height"] > 20
    assert tab.errors == []


def test_a_diagram_is_drawn_in_a_site_opened_from_a_file(examples_portal, watched):
    require_mermaid()
    tab = watched()
    tab.page.goto((examples_portal.config.site.output / DIAGRAM).as_uri())
    tab.page.locator("main .mermaid-diagram svg").wait_for(state="visible", timeout=20_000)
    assert tab.errors == []


@pytest.fixture(scope="module")
def broken_server(tmp_path_factory):
    """A portal (no embeddings) of a note with a good diagram, a diagram mermaid cannot read and a bad formula."""
    work = tmp_path_factory.mktemp("broken")
    (work / "notes").mkdir()
    (work / "notes" / "diagramy.md").write_text(textwrap.dedent("""\
        # Diagramy

        ```mermaid
        flowchart TD
          a[začátek] --> b[konec]
        ```

        ```mermaid
        flowchart TD
          a[začátek --> --> ((
        ```

        Vzorec $\\frac{a}{$ se nepovedl, $E = mc^2$ ano.
        """), encoding="utf-8")
    config = work / "portal.yaml"
    config.write_text("site:\n  title: Poznámky\nindex: data/index.sqlite\nembedding:\n  provider: none\n"
                      "sources:\n  notes:\n    folder: notes\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "builder.cli", "build", "--config", str(config)], check=True,
                   capture_output=True, cwd=ROOT)
    yield from serve(config)


def test_a_diagram_mermaid_cannot_read_keeps_its_source_and_the_others_are_drawn(broken_server, watched):
    require_mermaid()
    tab = watched()
    tab.page.goto(f"{broken_server}/notes/diagramy.html")
    tab.page.locator("main pre.mermaid-error").wait_for(state="visible", timeout=20_000)
    assert tab.page.locator("main .mermaid-diagram svg").count() == 1
    kept = tab.page.locator("main pre.mermaid-error")
    assert "a[začátek --> --> ((" in kept.inner_text()
    assert kept.get_attribute("title").startswith("Diagram not drawn: Parse error on line 2:")
    assert "Syntax error" not in tab.page.locator("body").inner_text()  # mermaid's error picture is not left behind
    assert tab.page.locator("body > [id^=dmermaid]").count() == 0
    bad = tab.page.locator("main code.math-error")
    assert bad.inner_text() == "$\\frac{a}{$" and tab.page.locator("main math").count() == 1
    assert tab.violations() == []
    assert tab.errors == []
