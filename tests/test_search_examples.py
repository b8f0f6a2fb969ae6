"""The search on the example notes as a user sees it (found in issue 36): an English question with a name
in it, single letters and numbers, function words alone, a word one note holds, markdown in snippets,
and a note's other sections under a small limit."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from sqlite3 import Connection
from typing import Any

import pytest
from starlette.testclient import TestClient

from builder import indexfile
from builder.cli import main
from builder.core import index as db
from builder.core.config import DEFAULT_DICTIONARY, Config
from builder.sync import build
from server import translate
from server.app import create_app
from server.query import parse
from server.search import SearchResult, embedded_by, search
from server.snippets import plain_text, snippet
from tests.render_support import shown
from tests.conftest import (
    PROJECT,
    HashEmbedder,
    copy_config,
    ollama_yaml,
    quiet,
    require_dictionary,
    sample_config,
    write_note,
)

# a word no other note holds, in a note of its own
KVANTOFLEK = """
    # Kvantoflek

    Kvantoflek měří, jak rychle chladne čaj v hrnku.
    """


@pytest.fixture(scope="module")
def examples_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example notes and the kvantoflek note, built once for the module with the test embedder's
    vectors (``mode="bm25"`` searches the words alone) and FreeDict's English–Czech dictionary."""
    require_dictionary()
    home = tmp_path_factory.mktemp("examples")
    shutil.copytree(PROJECT / "examples" / "notes", home / "notes")
    write_note(home / "notes", "projekty/kvantoflek.md", KVANTOFLEK)
    config = sample_config(home, ollama_yaml("http://127.0.0.1:9"))
    assert config.dictionary == DEFAULT_DICTIONARY
    assert build(config, embedder_factory=HashEmbedder, log=quiet(config)) == 0
    return home


@pytest.fixture
def examples(examples_template: Path, tmp_path: Path):
    config = copy_config(examples_template, tmp_path)
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    yield config, conn
    conn.close()


def _ask(examples: tuple[Config, Connection], query: str, **kwargs: Any) -> SearchResult:
    config, conn = examples
    return search(conn, config, query, vector=embedded_by(HashEmbedder()), **kwargs)


def _sections(result: SearchResult, path: str) -> tuple[list[str], list[str]]:
    """The anchors of ``path``'s sections among the hits, and those listed under them."""
    hits = [hit for hit in result.hits if hit.path == path]
    return [hit.anchor for hit in hits], [other.anchor for hit in hits for other in hit.more]


# 1. A name in an English question does not switch translation off.

def test_an_english_question_with_a_name_in_it_is_translated(examples):
    with_name = _ask(examples, "how much water for teh tarik", mode="bm25")
    assert dict(with_name.translated)["water"][0] == "voda"  # "teh" and "tarik" are no English words
    assert "teh" not in dict(with_name.translated) and "tarik" not in dict(with_name.translated)
    hits, _ = _sections(with_name, "recepty/teh-tarik.md")
    assert "suroviny" in hits  # "700–800 ml vody": the answer is a hit, not only "also"
    assert dict(_ask(examples, "how much water for tarik", mode="bm25").translated)["water"][0] == "voda"


@pytest.mark.parametrize("query, english", [
    ("how much water for teh tarik", True),  # how, much, water, for: English; teh, tarik: a name
    ("teh tarik recipe", False),  # one English word of three
    ("jak pripravit teh tarik", False),  # Czech without accents: "jak" says so
    ("kolik vody na teh tarik", False),
    ("ako nainstalovat python", False),
    ("python 3 install", True),  # a number tells nothing
    ("Raspberry Pi GPIO blikanie LED v Pythone", False),  # "v": a Slovak word of one letter
    ("What do async for and async with do in asyncio?", True),  # the function words tell
])
def test_english_is_told_by_its_words_names_aside(query, english):
    require_dictionary()
    dictionary = translate.load(DEFAULT_DICTIONARY)
    assert dictionary is not None
    assert translate.is_english([t.text for t in parse(query)], dictionary) is english


# 2. Single letters and numbers are not words to translate.

def test_a_single_letter_or_a_number_is_never_translated(examples):
    for query in ("x", "-x", "x 10", "10"):
        result = _ask(examples, query, mode="bm25")
        assert result.translated == (), query
        assert not any("English words" in note for note in result.notes), query
    for hit in _ask(examples, "x", mode="bm25").hits:
        assert "<mark>10</mark>" not in hit.snippet  # "vejce 10 ks" is no x
    dictionary = translate.load(DEFAULT_DICTIONARY)
    assert dictionary is not None
    assert dictionary.translations("x") == () and "10" not in dictionary.translations("ten")
    assert "&" not in dictionary.translations("ampersand") and "~" not in dictionary.translations("tilde")
    assert translate.translatable("čaj") and not translate.translatable("x") and not translate.translatable("10")


def test_the_api_translates_no_letter(examples):
    config, _ = examples
    body = TestClient(create_app(config, embedder_factory=HashEmbedder)).get("/api/search", params={"q": "-x"}).json()
    assert body["translated"] == {} and "10" not in body["marked"]


# 3. Function words alone find nothing, and no function word is marked.

@pytest.mark.parametrize("query", ["na", "a na to", "the", "how to"])
def test_function_words_alone_find_nothing_and_say_why(examples, query):
    for mode in ("hybrid", "bm25", "vector"):
        result = _ask(examples, query, mode=mode)
        assert result.hits == () and result.weak and result.marked == ()
        assert result.notes == (f"only common words ({query}): add a word that says what to find",)


def test_function_words_are_never_marked(examples):
    config, _ = examples
    body = TestClient(create_app(config, embedder_factory=HashEmbedder)).get("/api/search", params={"q": "na"}).json()
    assert body["hits"] == [] and body["weak"] and body["notes"] == [
        "only common words (na): add a word that says what to find"]
    assert all("<mark>na</mark>" not in hit.snippet.lower() for hit in _ask(examples, "čaj na", mode="bm25").hits)
    assert snippet("Tedy Ted Chiang, na NA.", parse("ted NA")) == "Tedy <mark>Ted</mark> Chiang, na <mark>NA</mark>."
    assert _ask(examples, "NA", mode="bm25").hits  # in capitals a name, not the function word "na"


def test_the_search_page_says_why_and_claims_no_closest(examples):
    config, _ = examples
    page = TestClient(create_app(config, embedder_factory=HashEmbedder)).get("/search", params={"q": "na"}).text
    assert "only common words (na): add a word that says what to find" in page
    assert "closest by meaning" not in shown(page) and "Nothing matches" in shown(page)


def test_the_manual_says_what_function_words_do():
    readme = " ".join((PROJECT / "docs" / "SEARCH.md").read_text(encoding="utf-8").split())
    assert "Function words (`a`, `na`, `the` …) find nothing by themselves and are never highlighted" in readme
    assert "only common words (na): add a word that says what to find" in readme


# 4. A word one note holds: meaning-only hits beneath it must earn their place.

def test_a_word_one_note_holds_is_not_followed_by_unrelated_sections(examples):
    result = _ask(examples, "kvantoflek")
    assert [hit.path for hit in result.hits] == ["projekty/kvantoflek.md"] and not result.weak
    assert result.hits[0].ranks["bm25"] == 1 and result.hits[0].more == ()
    # beneath a first hit holding every word, a section by meaning alone stays when it holds one of them
    both = _ask(examples, "kvantoflek čaj")
    assert both.hits[0].path == "projekty/kvantoflek.md"
    assert all(hit.ranks["bm25"] is not None or "<mark>" in hit.snippet for hit in both.hits)


def test_without_a_first_hit_holding_every_word_meaning_keeps_its_hits(examples):
    result = _ask(examples, "kvantoflek hrnek konvice výlet")  # no section holds all four
    assert any(hit.ranks["bm25"] is None for hit in result.hits)
    assert len(result.hits) == 10


# 5. Snippets show the text as read, in the drop-down, on /search and in the CLI alike.

def test_snippets_show_markdown_as_read(examples, capsys):
    config, _ = examples
    result = _ask(examples, "teh ais", mode="bm25")
    top = result.hits[0]
    assert (top.path, top.anchor) == ("recepty/teh-tarik.md", "tipy")
    assert "Ledová verze: <mark>teh</mark> <mark>ais</mark> – stejný postup" in top.snippet
    assert "*" not in top.snippet and "(*" not in top.snippet
    client = TestClient(create_app(config, embedder_factory=HashEmbedder))
    api = client.get("/api/search", params={"q": "teh ais", "mode": "bm25"}).json()["hits"][0]["snippet"]
    assert api == top.snippet  # what the drop-down (search.js) shows
    assert top.snippet in client.get("/search", params={"q": "teh ais", "mode": "bm25"}).text
    assert main(["search", "teh ais", "--mode", "bm25", "--config", str(config.path)]) == 0
    assert "Ledová verze: ⟦teh⟧ ⟦ais⟧ – stejný postup" in capsys.readouterr().out
    assert main(["search", "teh ais", "--mode", "bm25", "--json", "--config", str(config.path)]) == 0
    assert json.loads(capsys.readouterr().out)["hits"][0]["snippet"] == top.snippet


def test_markdown_syntax_is_read_and_marks_stay_on_their_words():
    text = ("## Postup ##\n\n1. **Vodu** přivedu k varu, viz [poznámky z cesty](../cestovani/kl.md).\n"
            "   - nested *čaj* a _mléko_, ~~cukr~~\n      - deeper `git log` a ``a ` b``\n"
            "> citát s [[teh-tarik|Teh Tarikem]]\n\n---\n\nsnake_case_name, 2 * 3 * 4, \\*hvězdička\\*")
    assert plain_text(text) == ("Postup\n\nVodu přivedu k varu, viz poznámky z cesty.\nnested čaj a mléko, cukr\n"
                                "deeper git log a a ` b\ncitát s Teh Tarikem\n\n\n\n"
                                "snake_case_name, 2 * 3 * 4, *hvězdička*")
    assert snippet(text, parse("vodu čaj mléko poznámky git")) == (
        "Postup <mark>Vodu</mark> přivedu k varu, viz <mark>poznámky</mark> z cesty. nested <mark>čaj</mark> a "
        "<mark>mléko</mark>, cukr deeper <mark>git</mark> log a a ` b citát s Teh Tarikem snake_case_name, "
        "2 * 3 * 4, *hvězdička*")


def test_markdown_that_never_closes_costs_its_length_not_its_square():
    """A long line of openers without closers, or many blank lines (the rules once took seconds)."""
    for text in ("\n" * 1500, "[[a|" * 6000, "*a " * 7000, "_a " * 7000, "<http://" * 3000, "[" * 20000):
        started = time.perf_counter()
        plain_text(text)
        assert time.perf_counter() - started < 1.0, text[:8]


# 6. The limit shortens the hits, never what a shown note lists under them.

@pytest.mark.parametrize("query", ["čaj", "teh tarik", "mléko"])
def test_a_small_limit_keeps_each_shown_notes_other_sections(examples, query):
    full = _ask(examples, query, mode="bm25")
    for limit in (1, 2, 3):
        short = _ask(examples, query, mode="bm25", limit=limit)
        assert short.hits == full.hits[:limit] or [h.url for h in short.hits] == [h.url for h in full.hits[:limit]]
        for path in {hit.path for hit in short.hits}:
            shown, listed = _sections(short, path)
            assert set(shown) | set(listed) == set().union(*_sections(full, path)), (query, limit, path)
            assert not set(shown) & set(listed)
    alone = _ask(examples, "čaj", mode="bm25", limit=1).hits
    assert [hit.anchor for hit in alone] == ["caj-a-mleko"]
    assert [other.anchor for other in alone[0].more] == ["suroviny", "teh-tarik"]  # a hit at the default limit
