"""The portal's own words in the site's language (issue 45): the catalogues agree with each other, every page of a
Czech site speaks Czech (no English word of the portal's left on it, nor in the search page the server renders),
dates are written the Czech way, ``<html lang>`` is the site's and a note in another language says so on its
text; the meta description comes from the note. The scripts' words in the browser: tests/test_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from builder.core import messages
from builder.core.config import load_config
from builder.core.errors import ConfigError
from builder.core.language import detect, prose_of_markdown
from server.app import create_app
from tests.conftest import PROJECT, HashEmbedder
from tests.render_support import build_and_render, parse_page, shown

PLACE = re.compile(r"\{(\w+)\}")
CODE = ("builder", "server", "templates")


def _forms(entry: messages.Text) -> tuple[str, ...]:
    return entry if isinstance(entry, tuple) else (entry,)


def test_every_key_is_in_every_language_with_the_same_values():
    for language, catalogue in messages.CATALOGUES.items():
        assert set(catalogue) == set(messages.EN), language
        for key, entry in catalogue.items():
            english = messages.EN[key]
            assert isinstance(entry, tuple) == isinstance(english, tuple), (language, key)
            assert all(text.strip() for text in _forms(entry)), (language, key)
            assert {PLACE.findall(text).__len__() > 0 for text in _forms(entry)} <= {True, False}
            wanted = set(PLACE.findall(_forms(english)[-1]))
            assert all(set(PLACE.findall(text)) == wanted for text in _forms(entry)), (language, key)
    assert set(messages.SCRIPT_KEYS) <= set(messages.EN)


def test_every_key_is_used_and_every_key_used_is_there():
    code = "\n".join(path.read_text(encoding="utf-8") for folder in CODE
                     for path in sorted((PROJECT / folder).rglob("*")) if path.suffix in (".py", ".html", ".js")
                     and "vendor" not in path.parts and path.name != "messages.py")
    for key in messages.EN:
        family = key.rsplit(".", 1)[0] + "."  # home.kind.folder is said as "home.kind." ~ kind
        assert f'"{key}"' in code or f"'{key}'" in code or f'"{family}"' in code or key.startswith(
            ("said.", "ask.", "broken.")) and key.split(".", 1)[1] in code, key
    used = {key for key in re.findall(r"""\b(?:t|say)\((?:[\w.]+, )?["'](\w+\.[\w.]*\w)["']""", code)}
    assert used and used <= set(messages.EN), used - set(messages.EN)


def test_counts_numbers_and_days_as_each_language_says_them():
    assert [messages.text("cs", "toc.notes", n=n) for n in (1, 3, 5, 1200)] == [
        "1 poznámka", "3 poznámky", "5 poznámek", "1\u00a0200 poznámek"]
    assert [messages.text("sk", "home.broken", n=n) for n in (1, 2, 7)] == [
        "1 nefunkčný odkaz", "2 nefunkčné odkazy", "7 nefunkčných odkazov"]
    assert [messages.text("en", "toc.notes", n=n) for n in (1, 3, 1200)] == ["1 note", "3 notes", "1,200 notes"]
    assert messages.day("cs", "2026-12-06") == messages.day("sk", "2026-12-06") == "6. 12. 2026"
    assert messages.day("cs", "2026-12-06 03:57") == "6. 12. 2026 03:57"
    assert messages.day("en", "2026-12-06T03:57:10+00:00") == "6 Dec 2026 03:57"
    assert messages.day("cs", "soon") == "soon"
    english = messages.text("en", "broken.missing", raw="../a.md")
    assert messages.reason("cs", english) == "../a.md: taková poznámka ani soubor neexistuje"
    assert messages.reason("cs", "x: some other reason") == "x: some other reason"


def test_the_language_of_a_text():
    assert detect("Tohle je poznámka o tom, jak se vaří čaj, když není mléko.") == "cs"
    assert detect("Toto je poznámka o tom, ako sa varí čaj, keď nie je mlieko a sú tu len vajíčka.") == "sk"
    assert detect("This is a note about how the tea is made when there is no milk.") == "en"
    assert detect("Kubernetes 1.29, kubectl apply") is None
    yaml_in_czech = "---\ntitle: x\n---\nŠablona, kterou kopíruju.\n\n```yaml\nthe: and of to is in\n```\n"
    assert detect(prose_of_markdown(yaml_in_czech + "Je to tak, protože to jde, když se chce.")) == "cs"


def test_a_language_the_portal_does_not_speak_is_a_config_error(tmp_path):
    (tmp_path / "notes").mkdir()
    (tmp_path / "portal.yaml").write_text("site:\n  language: de\nsources:\n  notes:\n    folder: notes\n",
                                          encoding="utf-8")
    with pytest.raises(ConfigError, match=r"portal.yaml:2: site.language: must be one of cs, sk, en, got 'de'"):
        load_config(tmp_path / "portal.yaml")


CZECH = """---
title: Čaj s mlékem
tags: [čaj, recepty]
updated: 2026-12-06
---
# Čaj s mlékem

Tohle je poznámka o tom, jak se vaří čaj s mlékem, když je zima a není co dělat.

Odkaz na [nic](neexistuje.md) a [[Chybí]].

## Postup

Vařte čaj. Je to tak jednoduché, že to zvládne každý, kdo má hrnek.
"""
SLOVAK = """# Bryndzové halušky

Toto je recept, ktorý sa robí tak, ako to robila stará mama: sú to halušky s bryndzou a slaninou.
"""
DECLARED = """---
lang: en
summary: A short note in English, said so by its front matter.
---
# Krátká

Ok.
"""


@pytest.fixture
def czech_site(tmp_path: Path):
    notes = tmp_path / "notes"
    (notes / "recepty").mkdir(parents=True)
    (notes / "recepty" / "caj.md").write_text(CZECH, encoding="utf-8")
    (notes / "recepty" / "halusky.md").write_text(SLOVAK, encoding="utf-8")
    (notes / "kratka.md").write_text(DECLARED, encoding="utf-8")
    (tmp_path / "portal.yaml").write_text(
        "site:\n  title: Poznámky\n  language: cs\n  output: site\nindex: data/index.sqlite\n"
        "embedding:\n  provider: none\nsources:\n  poznamky:\n    folder: notes\n", encoding="utf-8")
    config = load_config(tmp_path / "portal.yaml")
    build_and_render(config, embedder_factory=HashEmbedder)
    return config


def _english_words() -> list[str]:
    """What an English page of the portal says that a Czech one must not: every English text of the catalogue
    that differs from the Czech, cut at its values (pieces of four letters or more; a lone word whole)."""
    pieces = set()
    for key, entry in messages.EN.items():
        if key.startswith(("said.", "auth.", "ask.")) or _forms(entry) == _forms(messages.CS[key]):
            continue  # what a search says and signing in and asking: only on a running server (below)
        for text in _forms(entry):
            for piece in PLACE.split(text)[::2]:
                piece = re.sub(r"<[^>]+>", "", piece).strip(" .,:;·→+#()“”")
                if len(piece) >= 4 and piece not in ("git", "notes-portal serve"):
                    pieces.add(piece)
    return sorted(pieces, key=len, reverse=True)


def _visible(page: str) -> str:
    """What a reader meets on a page: its text and the words in its attributes (labels, placeholders, titles),
    without the note's own text."""
    page = re.sub(r'<div class="note-body".*?</div>\s*<section class="backlinks"', "<section", shown(page), flags=re.S)
    return re.sub(r'\s(href|src|action|class|id|data-[\w-]+|datetime|rel|name|type|content)="[^"]*"', "", page)


def test_a_czech_site_speaks_czech_on_every_page(czech_site):
    site = czech_site.site.output
    english = _english_words()
    assert "Recently changed" in english and "Linked from" in english and "Search notes" in english
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 9  # home, notes, their table of contents, tags, graph, broken links, search, 404
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert text.startswith('<!doctype html>\n<html lang="cs">'), page
        seen = _visible(text)
        left = [words for words in english if re.search(rf"(?<![\w-]){re.escape(words)}(?![\w-])", seen)]
        assert left == [], (page.relative_to(site), left)
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "Nedávno změněné" in home and '<time datetime="2026-12-06">6. 12. 2026</time>' in home
    broken = (site / "broken-links.html").read_text(encoding="utf-8")
    assert "2 nefunkční odkazy v 1 poznámce." in broken
    assert "neexistuje.md: taková poznámka ani soubor neexistuje" in broken
    assert "[[Chybí]]: žádná poznámka tohoto jména ani názvu" in broken
    note = (site / "poznamky/recepty/caj.html").read_text(encoding="utf-8")
    assert 'title="Nefunkční odkaz: neexistuje.md: taková poznámka ani soubor neexistuje"' in note
    assert re.search(r"Sestaveno \d{1,2}\. \d{1,2}\. \d{4} \d\d:\d\d", note)


def test_a_note_says_its_own_language_and_describes_itself(czech_site):
    site = czech_site.site.output
    czech = parse_page(site / "poznamky/recepty/caj.html")
    slovak = parse_page(site / "poznamky/recepty/halusky.html")
    declared = parse_page(site / "poznamky/kratka.html")

    def body(doc):
        return next(d for d in doc.iter("div") if d.get("class") == "note-body")

    def description(doc):
        return next(m.get("content") for m in doc.iter("meta") if m.get("name") == "description")

    assert body(czech).get("lang") is None  # the site's language: nothing to say
    assert body(slovak).get("lang") == "sk"  # detected
    assert body(declared).get("lang") == "en"  # the front matter's, though "Ok." says nothing
    assert description(czech) == "Tohle je poznámka o tom, jak se vaří čaj s mlékem, když je zima a není co dělat."
    assert description(declared) == "A short note in English, said so by its front matter."
    assert description(parse_page(site / "index.html")) == (
        "Poznámky: poznámky, ve kterých lze hledat podle slov i podle významu.")


def test_the_server_pages_speak_the_sites_language(czech_site):
    client = TestClient(create_app(czech_site, embedder_factory=HashEmbedder))
    page = client.get("/search", params={"q": "čaj"}).text
    assert page.startswith('<!doctype html>\n<html lang="cs">')
    assert "<title>Hledání: čaj · Poznámky</title>" in page and "slova #1" in page
    assert "hledání podle významu je vypnuté (provider: none): výsledky jen podle slov" in page
    seen = _visible(page)
    assert [words for words in _english_words() if re.search(rf"(?<![\w-]){re.escape(words)}(?![\w-])", seen)] == []
    body = client.get("/api/search", params={"q": "čaj"}).json()
    assert body["notes"] == ["embeddings disabled (provider: none): FTS-only results"]  # the API: English
    assert body["said"] == [{"key": "said.disabled", "values": {}}]  # and the key the search box says
