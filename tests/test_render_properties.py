"""Random notes of every markdown construct the portal renders: every page is valid HTML5, and every
section the index holds has its anchor on the note's page (a search hit lands on its heading)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.core import urls
from tests.render_support import build_and_render, make_config, open_index, parse_page

pytestmark = pytest.mark.slow

WORDS = ("Čaj", "čaj", "Postup", "Suroviny", "x", "C++", "a & b", "<b>", "ěščř", "1. krok", "", "`kód`",
         "*důraz*", "[odkaz](b.md)", "[[b]]", "$x^2$", "#", "\\*", "Úvod")
FORMULAS = ("x^2", r"\frac{a}{b}", r"\begin{x", "}{")


@st.composite
def inline(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)))


@st.composite
def block(draw: st.DrawFn) -> str:
    text = draw(inline())
    kind = draw(st.integers(0, 13))
    if kind == 0:
        return f"{'#' * draw(st.integers(1, 6))} {text}"
    if kind == 1:
        return f"{text or 'Nadpis'}\n{draw(st.sampled_from(('===', '---')))}"  # setext
    if kind == 2:
        return f"- {text}\n  - # {draw(inline())}\n- [x] hotovo"
    if kind == 3:
        return f"> ## {text}\n> {draw(inline())}"
    if kind == 4:
        return f"```python\n# {text}\nx = '<tag>'\n```"
    if kind == 5:
        return f"> [!{draw(st.sampled_from(('note', 'warning', 'tip')))}] {text}\n> obsah"
    if kind == 6:
        return f"| a | {text} |\n|---|:-:|\n| 1 | {draw(inline())} |"
    if kind == 7:
        return f"<div>\n\n## {text}\n\n</div>"
    if kind == 8:
        return f"Poznámka[^1].\n\n[^1]: {text}"
    if kind == 9:
        formula = draw(st.sampled_from(FORMULAS))
        return f"$$\n{formula}\n$$"
    if kind == 10:
        return f"```mermaid\ngraph TD; A-->{text or 'B'}\n```"
    if kind == 11:
        return f"Termín\n: {text}"
    if kind == 12:
        return f"    # odsazený kód {text}"
    return text


note = st.tuples(st.booleans(), st.lists(block(), min_size=1, max_size=8))


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(notes=st.lists(note, min_size=1, max_size=3))
def test_every_page_parses_and_every_section_anchor_is_on_its_page(notes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = root / "notes"
        folder.mkdir()
        for n, (front, blocks) in enumerate(notes):
            head = f"---\ntitle: Poznámka {n}\ntags: [čaj]\n---\n" if front else ""
            (folder / f"n{n}.md").write_text(head + "\n\n".join(blocks) + "\n", encoding="utf-8")
        (folder / "b.md").write_text("# B\n", encoding="utf-8")
        (root / "portal").mkdir()
        config = make_config(root / "portal", {"notes": folder})
        build_and_render(config)
        for page in config.site.output.rglob("*.html"):
            parse_page(page)  # strict: any HTML5 parse error raises
        conn = open_index(config)
        try:
            rows = conn.execute("SELECT path, anchor FROM chunks WHERE anchor != ''").fetchall()
        finally:
            conn.close()
        for path, anchor in rows:
            doc = parse_page(config.site.output / urls.site_file(urls.note_url("notes", path)))
            assert anchor in {el.get("id") for el in doc.iter()}, (path, anchor, notes)
