"""English words searched in Czech and Slovak through a dictd dictionary (server.translate): reading the
dictionary, telling an English query, choosing the translations the notes hold, and what a search shows."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from builder import indexfile
from builder.core import index as db
from builder.cli.evaluate import eval_config
from builder.core.config import DEFAULT_DICTIONARY, dictd_files, load_config
from builder.core.errors import ConfigError
from server.status import collect_status, format_status
from builder.sync import build
from server import search as search_module
from server import spelling, translate
from server.app import create_app
from server.query import parse
from server.search import embedded_by, search
from tests.conftest import (
    SHARED,
    HashEmbedder,
    ollama_yaml,
    require_dictionary,
    require_shared,
    write_config,
    write_note,
)

_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

ENTRIES = [  # (index headword, entry text) in the shapes FreeDict's eng-ces has
    ("00databaseinfo", "00-database-info\nA test dictionary.\n"),
    ("tea", "tea <n>\nčaj\n"),
    ("milk", "milk <n>\nmléko\n"),
    ("milk", "milk <v>\ndojit\n"),
    ("recipe", "recipe\n [gastr] recept, předpis\n         Note: also a prescription\n"),
    ("converter", "converter <n>\npřevodník\n"),
    ("converter", "converter\nkonvertor\n"),
    ("headphones", "headphones\nsluchátka (pl)\n"),
    ("pin", "pin <n>\nšpendlík\n"),
    ("pin", "pin <n>\n [el] pin\n"),
    ("pin", "pin\nkolík\n"),
    ("and", "and\na\n"),
    ("sauce", "sauce\nomáčka\n"),
    ("test", "test <n>\ntest\n"),
    ("text", "text\ntext\n"),
    ("milk shake", "milk shake <n>\nmléčný koktejl\n"),
    ("Slovak", "Slovak <adj>\nslovenský, slovensky\n"),
]


def _b64(number: int) -> str:
    out = ""
    while True:
        out = _B64[number % 64] + out
        number //= 64
        if not number:
            return out


def write_dictd(base: Path, entries: list[tuple[str, str]] = ENTRIES, *, compressed: bool = True) -> Path:
    """A dictd dictionary at ``base`` (``base.index`` and ``base.dict.dz`` or ``base.dict``)."""
    base.parent.mkdir(parents=True, exist_ok=True)
    data, lines = b"", []
    for headword, text in entries:
        raw = text.encode("utf-8")
        lines.append(f"{headword}\t{_b64(len(data))}\t{_b64(len(raw))}")
        data += raw
    in_order = sorted(lines, key=lambda line: line.split("\t")[0])  # by headword; a headword's senses as written
    base.with_name(base.name + ".index").write_text("\n".join(in_order) + "\n", encoding="utf-8")
    if compressed:
        base.with_name(base.name + ".dict.dz").write_bytes(gzip.compress(data))
    else:
        base.with_name(base.name + ".dict").write_bytes(data)
    return base


@pytest.mark.parametrize("compressed", [True, False], ids=["dict.dz", "dict"])
def test_read_takes_every_sense_once_without_domains_notes_or_phrases(tmp_path, compressed):
    dictionary = translate.read(write_dictd(tmp_path / "eng-ces", compressed=compressed))
    assert dictionary.translations("recipe") == ("recept", "předpis")
    assert dictionary.translations("milk") == ("mléko", "dojit")
    assert dictionary.translations("pin") == ("špendlík", "kolík")  # "pin" itself is searched already
    assert dictionary.translations("slovak") == ("slovenský", "slovensky")  # headwords are looked up in lower case
    assert dictionary.translations("headphones") == ("sluchátka",)  # without its (remark)
    assert dictionary.translations("cheese") == ()
    assert "milk shake" not in dictionary.entries and "00databaseinfo" not in dictionary.entries


def test_load_of_a_damaged_or_missing_dictionary_is_none(tmp_path):
    base = write_dictd(tmp_path / "bad")
    base.with_name("bad.dict.dz").write_bytes(b"not gzip at all")
    assert translate.load(base) is None
    assert translate.load(tmp_path / "missing") is None
    assert translate.load(None) is None
    good = write_dictd(tmp_path / "good")
    broken_line = good.with_name("good.index")
    broken_line.write_text(broken_line.read_text(encoding="utf-8") + "sauce\t!!\t##\n", encoding="utf-8")
    assert translate.read(good).translations("sauce") == ("omáčka",)  # the damaged line is skipped


@pytest.mark.parametrize("query, english", [
    ("tea with milk recipe", True),
    ("headphones", True),
    ("Sauter converter pin", True),  # two of three are headwords
    ("jak pripravit teh tarik", False),  # Czech typed without accents: no headword
    ("recept na čaj", False),  # a letter outside ASCII: Czech or Slovak
    ("Sauter MAX485", False),
    ("tea", True),
])
def test_an_english_query_is_mostly_headwords_and_ascii(tmp_path, query, english):
    dictionary = translate.read(write_dictd(tmp_path / "eng-ces"))
    words = [t.text for t in parse(query) if not t.function]
    assert translate.is_english(words, dictionary) is english


@pytest.fixture
def dictionary_config(tmp_path, notes_dir):
    write_note(notes_dir, "recepty/omacky.md", """
        # Omáčky

        Sójová omáčka, rybí omáčka, omáčka z mléka.
        """)
    base = write_dictd(tmp_path / "dict" / "eng-ces")

    def make(dictionary: str | None = str(base), embedding: str = "embedding:\n  provider: none\n"):
        search_yaml = f"search:\n  dictionary: {dictionary}\n" if dictionary is not None else ""
        return load_config(write_config(tmp_path, f"index: data/index.sqlite\n{embedding}sources:\n"
                                                  f"  notes:\n    folder: notes\n{search_yaml}"))

    return make


def _built(config, quiet_log, **kwargs):
    assert build(config, log=quiet_log(config), **kwargs) == 0
    return db.connect(indexfile.resolve(config.index), readonly=True)


def test_an_english_query_finds_the_czech_note_and_says_so(dictionary_config, quiet_log):
    config = dictionary_config()
    conn = _built(config, quiet_log)
    result = search(conn, config, "tea with milk")
    assert [h.path for h in result.hits][:1] == ["recepty/teh-tarik.md"]
    assert result.translated == (("tea", ("čaj",)), ("milk", ("mléko",)))  # "dojit": no note holds it
    assert result.to_json()["translated"] == {"tea": ["čaj"], "milk": ["mléko"]}
    assert "English words also searched in Czech and Slovak: tea → čaj; milk → mléko" in result.notes
    assert "<mark>čaj</mark>" in result.hits[0].snippet and "<mark>mlékem</mark>" in result.hits[0].snippet
    assert {"caj", "mlek"} <= set(result.marked) and not result.weak  # beginnings of čaj, mléko: mark mlékem too
    conn.close()


def test_without_a_dictionary_the_english_query_finds_nothing(dictionary_config, quiet_log):
    config = dictionary_config("false")
    assert config.dictionary is None
    conn = _built(config, quiet_log)
    result = search(conn, config, "tea with milk")
    assert result.translated == () and result.weak
    assert "recepty/teh-tarik.md" not in [h.path for h in result.hits[:1]]
    conn.close()


def test_translations_the_notes_hold_most_come_first_and_are_capped(tmp_path, notes_dir, quiet_log):
    for i, words in enumerate([["alfa", "beta", "gama", "delta"], ["beta", "gama", "delta"], ["gama", "delta"],
                               ["delta"], ["epsilon", "delta"]]):
        write_note(notes_dir, f"slova/{i}.md", f"# Slova {i}\n\n{' '.join(words)}\n")
    base = write_dictd(tmp_path / "d" / "eng-ces", [("word", "word\nalfa, beta\n"), ("word", "word\ngama\n"),
                                                       ("word", "word\ndelta, epsilon, zéta\n")])
    config = load_config(write_config(tmp_path, f"index: data/index.sqlite\nembedding:\n  provider: none\n"
                                                f"sources:\n  notes:\n    folder: notes\n"
                                                f"search:\n  dictionary: {base}\n"))
    conn = _built(config, quiet_log)
    terms = translate.translated(parse("word"), config.dictionary, spelling.KeyCounts(conn))
    # chunks holding each: delta 5, gama 3, beta 2, alfa 1, epsilon 1, zéta none
    assert terms[0].translations == ("delta", "gama", "beta", "alfa")
    conn.close()


def test_a_czech_query_is_not_translated(dictionary_config, quiet_log):
    config = dictionary_config()
    conn = _built(config, quiet_log)
    for query in ("převodník", "recept na čaj", "caj s mlekem"):
        assert search(conn, config, query).translated == ()
    conn.close()


def test_a_translated_word_is_no_typo_and_a_translated_name_is_known(dictionary_config, quiet_log, notes_dir):
    write_note(notes_dir, "jazyky.md", "# Jazyky\n\nSlovenský jazyk, čaj a milá kniha.\n")
    config = dictionary_config()
    conn = _built(config, quiet_log)
    # as typos go, "milk" is one edit from "milá"; "Slovak" is a name no note mentions as typed
    result = search(conn, config, "tea Slovak milk")
    assert result.translated == (("tea", ("čaj",)), ("slovak", ("slovenský",)), ("milk", ("mléko",)))
    assert result.corrected is None and not any("no note mentions" in n for n in result.notes)
    assert not result.weak
    as_czech = search(conn, replace(config, dictionary=None), "tea Slovak milk")
    assert as_czech.corrected == "tea slovak mila" and "no note mentions 'slovak'" in as_czech.notes
    conn.close()


def test_a_translated_query_is_ordered_by_its_words(dictionary_config, quiet_log):
    """The model reads an English question over Czech notes poorly: the words' order leads (as for a
    query typed without accents), the vectors add what the words did not find."""
    config = dictionary_config(embedding=ollama_yaml("http://127.0.0.1:9"))
    conn = _built(config, quiet_log, embedder_factory=HashEmbedder)
    embedder = HashEmbedder()
    # no section holds all three words (one that did would leave out what only the vectors found)
    hybrid = search(conn, config, "milk sauce headphones", mode="hybrid", vector=embedded_by(embedder))
    words = search(conn, config, "milk sauce headphones", mode="bm25")
    assert hybrid.translated == words.translated == (("milk", ("mléko",)), ("sauce", ("omáčka",)),
                                                     ("headphones", ("sluchátka",)))
    lexical = [h.url for h in words.hits]
    assert [h.url for h in hybrid.hits][:len(lexical)] == lexical
    assert any(h.ranks["bm25"] is None for h in hybrid.hits[len(lexical):])  # what only the vectors found: after
    conn.close()


def test_an_english_question_over_english_notes_is_fused_as_any_other(dictionary_config, quiet_log, notes_dir,
                                                                      monkeypatch):
    """The words lead only when the English words had to be crossed into Czech: when a note holds half of
    them as typed, the notes are English too, which the model reads well, and its vectors count."""
    write_note(notes_dir, "en/sauces.md", """
        # Sauces

        A milk sauce for the headphones party: stir the milk slowly.
        """)
    config = dictionary_config(embedding=ollama_yaml("http://127.0.0.1:9"))
    conn = _built(config, quiet_log, embedder_factory=HashEmbedder)
    led: list[bool] = []
    real_fuse = search_module.fusion.fuse

    def fuse(*args, words_lead=False, **kwargs):
        led.append(words_lead)
        return real_fuse(*args, words_lead=words_lead, **kwargs)

    monkeypatch.setattr(search_module.fusion, "fuse", fuse)
    over_english = search(conn, config, "milk sauce headphones", mode="hybrid", vector=embedded_by(HashEmbedder()))
    assert over_english.translated and over_english.hits[0].path == "en/sauces.md" and led == [False]
    led.clear()
    over_czech = search(conn, config, "tea for the evening", mode="hybrid", vector=embedded_by(HashEmbedder()))
    assert over_czech.translated == (("tea", ("čaj",)),) and led == [True]  # no English note holds "tea"
    conn.close()


def test_config_names_a_bad_dictionary(tmp_path):
    write_dictd(tmp_path / "d" / "eng-ces")
    (tmp_path / "notes").mkdir()
    sources = "sources:\n  notes:\n    folder: notes\n"
    ok = load_config(write_config(tmp_path, sources + "search:\n  dictionary: d/eng-ces.index\n"))
    assert ok.dictionary == tmp_path / "d" / "eng-ces"
    with pytest.raises(ConfigError, match=r"portal.yaml:5: search.dictionary: no dictd dictionary at '.*/nowhere' "
                                          r"\(needs nowhere.index and nowhere.dict.dz or nowhere.dict beside it\)"):
        load_config(write_config(tmp_path, sources + "search:\n  dictionary: nowhere\n"))
    with pytest.raises(ConfigError, match=r"search.dictionary: expected the path of a dictd dictionary "
                                          r"\(without .index\) or false, got int 3"):
        load_config(write_config(tmp_path, sources + "search:\n  dictionary: 3\n"))
    unset = load_config(write_config(tmp_path, sources))
    assert unset.dictionary == (DEFAULT_DICTIONARY if dictd_files(DEFAULT_DICTIONARY) else None)


def test_freedict_english_question_over_the_slovak_wiki(tmp_path, quiet_log):
    """Debian's dict-freedict-eng-ces over kemt-wiki, words only: an English question finds the Slovak
    page (the translations are Czech; the word keys fold them into the Slovak forms)."""
    require_dictionary()
    wiki = require_shared(SHARED / "corpora" / "kemt-wiki")
    config = load_config(write_config(tmp_path, f"index: data/index.sqlite\nembedding:\n  provider: none\n"
                                                f"sources:\n  wiki:\n    folder: {wiki}\n"
                                                f"    paths: [\"pages/01.pvjc/**\"]\n"))
    conn = _built(config, quiet_log, render=False)
    result = search(conn, config, "ICPC 2015 task about cutting a block of holey cheese into slices of equal weight")
    assert dict(result.translated)["cheese"] == ("sýr",)
    assert result.hits[0].path == "pages/01.pvjc/archive/2018/inner/zadania/README.md"
    assert "<mark>syra</mark>" in result.hits[0].snippet or "<mark>syr</mark>" in result.hits[0].snippet
    conn.close()


def test_the_web_app_answers_with_the_translations(dictionary_config, quiet_log):
    config = dictionary_config()
    _built(config, quiet_log).close()
    with TestClient(create_app(config)) as client:
        body = client.get("/api/search", params={"q": "tea with milk"}).json()
        page = client.get("/search", params={"q": "tea with milk"}).text
    assert body["translated"] == {"tea": ["čaj"], "milk": ["mléko"]}
    assert body["hits"][0]["path"] == "recepty/teh-tarik.md"
    assert "English words also searched in Czech and Slovak: tea → čaj; milk → mléko" in page


@pytest.mark.parametrize("dictionary", ["base", "false"])
def test_the_eval_index_searches_with_the_configs_dictionary(dictionary_config, tmp_path, dictionary):
    base = tmp_path / "dict" / "eng-ces"
    config = dictionary_config(str(base) if dictionary == "base" else "false")
    (tmp_path / "corpora" / "wiki").mkdir(parents=True)
    evaluated = eval_config(config, tmp_path / "corpora", ["wiki"])
    assert evaluated.dictionary == config.dictionary == (base if dictionary == "base" else None)


def test_status_says_whether_english_questions_are_searched_in_czech(dictionary_config, tmp_path):
    on, off = dictionary_config(), dictionary_config("false")
    assert collect_status(on)["dictionary"] == str(tmp_path / "dict" / "eng-ces")
    assert f"English questions: also searched in Czech ({tmp_path / 'dict' / 'eng-ces'})" in \
        format_status(collect_status(on)).splitlines()
    assert collect_status(off)["dictionary"] is None
    assert ("English questions: not translated (no dictionary: apt-get install dict-freedict-eng-ces, "
            "or search.dictionary in the config)") in format_status(collect_status(off)).splitlines()


def test_a_translated_query_is_judged_weak_with_the_vectors_second_opinion(dictionary_config, quiet_log, monkeypatch):
    """Its order follows the words, but a note holding some of the translated words (each word's
    commonest senses) is not enough to call it confident: the halves must agree too, as for any
    query with vectors (only a query typed without accents is judged by its words alone)."""
    config = dictionary_config(embedding=ollama_yaml("http://127.0.0.1:9"))
    conn = _built(config, quiet_log, embedder_factory=HashEmbedder)
    asked: list[object] = []
    real = search_module.fusion.is_weak
    monkeypatch.setattr(search_module.fusion, "is_weak", lambda *args: asked.append(args[2]) or real(*args))
    search(conn, config, "milk sauce", mode="hybrid", vector=embedded_by(HashEmbedder()))
    search(conn, config, "caj s mlekem", mode="hybrid", vector=embedded_by(HashEmbedder()))
    assert asked[0] is not None and asked[1] is None  # the vectors' notes; none for the unaccented query
    conn.close()


def test_health_says_whether_the_dictionary_was_read(dictionary_config, quiet_log, tmp_path):
    config = dictionary_config()
    _built(config, quiet_log).close()
    with TestClient(create_app(config)) as client:
        client.get("/api/search", params={"q": "tea"})  # read by then, whether or not the start-up thread was first
        health = client.get("/api/health").json()
    assert health["dictionary"] == {"path": str(tmp_path / "dict" / "eng-ces"), "loaded": True, "error": None}
    assert health["status"] == "ok"
    broken = write_dictd(tmp_path / "broken" / "eng-ces")
    broken.with_name("eng-ces.dict.dz").write_bytes(b"not gzip at all")
    with TestClient(create_app(dictionary_config(str(broken)))) as client:
        client.get("/api/search", params={"q": "tea"})
        health = client.get("/api/health").json()
    assert health["dictionary"]["loaded"] is False and health["status"] == "degraded"
    assert health["dictionary"]["error"].startswith("cannot read the dictionary (BadGzipFile: ")
    with TestClient(create_app(dictionary_config("false"))) as client:
        assert client.get("/api/health").json()["dictionary"] == {"path": None, "loaded": False, "error": None}
