"""The query path: safe FTS5 expressions, inflection, function words, typos, fusion, results by note,
weak answers, hit shape, notes, hostile input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder import indexfile
from builder.core import index as db
from builder.core.config import load_config
from builder.core.analysis import ANALYSIS_VERSION, stem_word
from builder.core.errors import UserError
from builder.core.index.schema import STEMS_VERSION
from builder.sync import build
from server import fusion, spelling
from server.fusion import fuse
from server.query import match_all, parse
from server.search import embedded_by, made_before, search
from server.snippets import MAX_MARKED_WORDS, excerpt, snippet, typed_without_accents
from tests.conftest import (
    HashEmbedder,
    copy_config,
    ollama_yaml,
    quiet,
    sample_config,
    write_config,
    write_note,
    write_sample_notes,
)

EMBED = ollama_yaml("http://127.0.0.1:9")


@pytest.fixture(scope="module")
def indexed_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample notes built once for the module (each test searches a copy: the searches keep what
    they read per index file)."""
    home = tmp_path_factory.mktemp("indexed")
    write_sample_notes(home / "notes")
    config = sample_config(home, EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet(config))
    return home


@pytest.fixture
def indexed(indexed_template: Path, tmp_path: Path, notes_dir: Path):
    config = copy_config(indexed_template, tmp_path)
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    yield config, conn
    conn.close()


def test_terms_are_quoted_and_prefixed():
    terms = parse('zálohy "NEAR(a b)" -x* col:umn OR (AND)')
    assert [t.text for t in terms] == ["zálohy", "near", "a", "b", "x", "col", "umn", "or", "and"]
    assert match_all(terms[:3], stems=True) == (
        '({breadcrumb text} : "zálohy"* OR stems : "zaloh") AND ({breadcrumb text} : "near"* OR stems : "near") '
        'AND ({breadcrumb text} : "a")')


def test_hit_shape_and_provenance(indexed):
    config, conn = indexed
    result = search(conn, config, "dvě lžíce čaje", vector=embedded_by(HashEmbedder()))
    top = result.hits[0]
    assert (top.source, top.path, top.title, top.breadcrumb, top.anchor) == (
        "notes", "recepty/teh-tarik.md", "Teh Tarik", "Teh Tarik > Suroviny", "suroviny")
    assert top.line_start == 9
    assert top.ranks["bm25"] == 1 and top.ranks["vector"] >= 1
    assert top.url == "notes/recepty/teh-tarik.html#suroviny"
    scores = [hit.score for hit in result.hits]
    assert scores == sorted(scores, reverse=True) and len(set(h.url for h in result.hits)) == len(scores)
    assert "<mark>dvě</mark>" in top.snippet and "<mark>čaje</mark>" in top.snippet
    assert set(result.to_json()) == {"query", "mode", "weak", "corrected", "translated", "marked", "notes", "said",
                                     "vectors", "hits"}
    assert set(result.to_json()["hits"][0]) == {"source", "path", "title", "breadcrumb", "anchor", "line_start",
                                               "line_end", "snippet", "score", "ranks", "url", "more", "copies",
                                               "words"}


def test_fusion_orders_by_summed_reciprocal_ranks():
    # bm25 ranks A=1 B=2 C=3, vectors C=1 A=2 D=3 (hand-computed with k=10):
    # A 1/11+1/12 = .1742, C 1/13+1/11 = .1678, B 1/12 = .0833, D 1/13 = .0769
    bm25 = [(10, 9.0), (20, 8.0), (30, 7.5)]
    fused = fuse(bm25, [(30, 0.9), (10, 0.8), (40, 0.7)])
    assert [r.chunk_id for r in fused] == [10, 30, 20, 40]
    assert [(r.bm25_rank, r.vector_rank) for r in fused] == [(1, 2), (3, 1), (2, None), (None, 3)]
    assert [r.chunk_id for r in fuse([(7, 2.0), (5, 1.9)], [])] == [7, 5]


def test_a_tie_goes_to_the_half_trusted_more():
    # 5 and 7 both score 1/11 + 1/12: the meaning decides, unless every word is in a note
    bm25, vector = [(5, 2.0), (7, 1.9)], [(7, 0.9), (5, 0.8)]
    assert [r.chunk_id for r in fuse(bm25, vector)] == [7, 5]
    assert [r.chunk_id for r in fuse(bm25, vector, 1.0)] == [5, 7]
    assert [r.chunk_id for r in fuse([(8, 2.0), (6, 1.9)], [(3, 0.9), (4, 0.8)])] == [3, 8, 4, 6]


def test_a_chunk_still_waiting_for_its_vector_counts_its_words_place_for_both_halves():
    # 10 is BM25's first but has no vector yet; 20 is second by words and first by meaning
    bm25, vector = [(10, 5.0), (20, 4.9)], [(20, 0.9), (30, 0.8)]
    assert [r.chunk_id for r in fuse(bm25, vector)] == [20, 10, 30]  # 1/12 + 1/11 beats 1/11 alone
    fused = fuse(bm25, vector, unembedded=frozenset({10}))
    assert [(r.chunk_id, r.bm25_rank, r.vector_rank) for r in fused] == [(10, 1, None), (20, 2, 1), (30, None, 2)]
    assert fused[0].score == pytest.approx(2 / 11)
    # a chunk the vectors did rank gains nothing from being named
    assert [r.score for r in fuse(bm25, vector, unembedded=frozenset({20}))] == [r.score for r in fuse(bm25, vector)]


def test_a_chunk_a_build_removes_while_the_query_is_embedded_is_left_out_during_a_backfill(indexed):
    """While the server waits for the query's vector a build (cron, watch) may replace a note: its old
    chunks, found by words a moment before, are gone from the index and from the answer."""
    config, conn = indexed
    writer = db.connect(indexfile.resolve(config.index))
    writer.execute("UPDATE chunks SET embedded_at = NULL WHERE path = 'cestovani/snezka.md'")  # a backfill runs

    def vector_later():
        writer.execute("DELETE FROM chunks WHERE path = 'recepty/teh-tarik.md'")
        return HashEmbedder().embed_query("čaj mléko"), None

    result = search(conn, config, "čaj mléko", vector=lambda _query: vector_later())
    writer.close()
    assert result.vectors is not None and result.hits
    assert "recepty/teh-tarik.md" not in {hit.path for hit in result.hits}


def test_a_bm25_winner_far_ahead_of_its_runner_up_stays_first():
    vector = [(30, 0.9), (40, 0.8), (20, 0.7)]
    assert fuse([(10, 13.0), (20, 10.0)], vector)[0].chunk_id == 10  # 13 ≥ 1.3 × 10
    assert fuse([(10, 12.9), (20, 10.0)], vector)[0].chunk_id == 20  # not far enough ahead: plain fusion


def test_a_bm25_pair_far_ahead_of_the_rest_stays_first_in_its_order():
    """A note and its copy of another course year score alike (86.8 and 75.0: not 1.3 apart), both far
    ahead of the third (57.2); the vector list ranks them 6th and 7th. Fused by rank alone the
    vectors' first (BM25's third) would come first; the pair stays ahead (the shape of kemt-219, a
    Kubernetes assignment and its copy under another year's folder)."""
    bm25 = [(10, 86.8), (11, 75.0), (20, 57.2), (30, 48.8)]
    vector = [(20, 0.908), (40, 0.907), (50, 0.904), (30, 0.901), (60, 0.900), (10, 0.899), (11, 0.899)]
    assert [r.chunk_id for r in fuse(bm25, vector)][:3] == [10, 11, 20]
    close_third = [(10, 86.8), (11, 75.0), (20, 60.0), (30, 48.8)]
    assert [r.chunk_id for r in fuse(close_third, vector)][0] == 20  # 75 < 1.3 × 60: plain fusion


def test_a_query_typed_without_accents_is_ordered_by_its_words_then_what_only_the_vectors_found():
    bm25 = [(10, 5.0), (30, 4.9), (20, 4.8)]
    vector = [(20, 0.9), (40, 0.8), (50, 0.7), (10, 0.6)]
    assert [r.chunk_id for r in fuse(bm25, vector)][:2] == [20, 10]  # the vector list's first, third by words
    fused = fuse(bm25, vector, words_lead=True)
    assert [r.chunk_id for r in fused] == [10, 30, 20, 40, 50]
    assert [(r.bm25_rank, r.vector_rank) for r in fused] == [(1, 4), (2, None), (3, 1), (None, 2), (None, 3)]
    assert [r.score for r in fused] == sorted((r.score for r in fused), reverse=True)


TEXT = "Aké nástroje sú povolené na skúške? Nástroje: Python, docker build, NetBeans."


@pytest.mark.parametrize(("query", "expected"), [
    ("ake nastroje su povolene", True),  # Slovak typed without accents: "nastroje" begins only "nástroje"
    ("jake nastroje", True),  # Czech, the same
    ("aké nástroje sú povolené", False),  # typed with them
    ("aké nastroje", False),  # one accent typed: the query has them
    ("docker build", False),  # words that have no accents in the notes either
    ("python nastroje", True),
    ("netbeans", False),
    ("xyzzy", False),  # nothing begun at all
])
def test_a_query_typed_without_accents_is_told_from_one_whose_words_have_none(query, expected):
    assert typed_without_accents(TEXT, parse(query)) is expected


def test_a_word_the_notes_also_write_without_accents_says_nothing():
    assert typed_without_accents("Nástroje.", parse("nastroje")) is True
    assert typed_without_accents("Nástroje (v ASCII nastroje).", parse("nastroje")) is False


def test_words_match_without_diacritics_and_as_prefixes(indexed):
    config, conn = indexed
    hits = search(conn, config, "rozbocovac zasuvky", mode="bm25").hits
    assert [h.path for h in hits] == ["cestovani/snezka.md"]
    hits = search(conn, config, "prevod", mode="bm25").hits  # a prefix of "Převodník", typed without accents
    assert [h.path for h in hits] == ["projekty/sauter-bus.md"]
    hits = search(conn, config, "převodník", mode="bm25").hits
    assert [h.path for h in hits] == ["projekty/sauter-bus.md"]


@pytest.mark.parametrize("query", ["převodníkem", "prevodnikem", "převodníky", "zapojením převodníku"])
def test_an_inflected_query_form_finds_another_form_lexically(indexed, query):
    config, conn = indexed
    hits = search(conn, config, query, mode="bm25").hits  # the note says "Zapojení", "Převodník"
    assert [h.path for h in hits] == ["projekty/sauter-bus.md"]
    assert "<mark>Převodník</mark>" in hits[0].snippet


def test_all_words_rank_before_some_words(config_for, notes_dir, quiet_log):
    from tests.conftest import write_note

    write_note(notes_dir, "one-word.md", "# Konvice\n\n" + "konvice konvice konvice\n" * 5)
    write_note(notes_dir, "both-words.md", "# Jiná\n\nStará konvice a kozí mléko, dlouhý text bez opakování.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert search(conn, config, "konvice", mode="bm25").hits[0].path == "one-word.md"
    paths = [h.path for h in search(conn, config, "konvice mléko", mode="bm25").hits]
    assert paths[0] == "both-words.md" and "one-word.md" in paths  # OR results follow the AND results


def test_modes_filters_and_limits(indexed):
    config, conn = indexed
    embedder = HashEmbedder()
    vector = search(conn, config, "RS485 micro:bit", mode="vector", vector=embedded_by(embedder))
    assert vector.hits and all(h.ranks["bm25"] is None for h in vector.hits)
    bm25 = search(conn, config, "RS485", mode="bm25")
    assert bm25.hits and all(h.ranks["vector"] is None for h in bm25.hits)
    tagged = search(conn, config, "čaj", tag="ČAJ", vector=embedded_by(embedder))
    assert {h.path for h in tagged.hits} == {"recepty/teh-tarik.md"}
    other = search(conn, config, "čaj", source="elsewhere", vector=embedded_by(embedder))
    assert other.hits == ()
    assert len(search(conn, config, "čaj mléko", vector=embedded_by(embedder)).hits) > 1
    assert len(search(conn, config, "čaj mléko", limit=1, vector=embedded_by(embedder)).hits) == 1
    with pytest.raises(UserError, match="limit must be a whole number from 1 to 100, got .0."):
        search(conn, config, "x", limit=0)
    with pytest.raises(UserError, match="mode must be one of hybrid, bm25, vector, got .fuzzy."):
        search(conn, config, "x", mode="fuzzy")


@pytest.mark.parametrize("query", [
    '"', '""', "'", "NEAR(", "NEAR(a b, 3)", "a OR", "AND", "-", "*", "^x", "col:", "notes:tea",
    "(((", ")", "a\"b", "\\", "{x}", "[x]", "'; DROP TABLE chunks; --", "\x00\x01\x1f", "\u202e\ufeff",
    "..........", "  ", "", "x" * 10_000, "čaj " * 3000, "🍵🍵", "ǅ", "ＡＢＣ", "é",
])
def test_hostile_queries_answer_cleanly(indexed, query):
    config, conn = indexed
    before = db.counts(conn)
    for mode in ("hybrid", "bm25", "vector"):
        result = search(conn, config, query, mode=mode, vector=embedded_by(HashEmbedder()))
        assert {h.path for h in result.hits} <= INDEXED
        assert all(_escaped(h.snippet) for h in result.hits)
        if not parse(query):
            assert result.hits == () and result.notes == ("the query has no words to search for",)
        if "čaj" in query and mode == "bm25":
            assert "recepty/teh-tarik.md" in {h.path for h in result.hits}
    assert db.counts(conn) == before  # nothing was dropped


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=0, max_size=300))
def test_any_text_is_a_clean_answer(indexed, query):
    config, conn = indexed
    result = search(conn, config, query, mode="bm25")
    assert {h.path for h in result.hits} <= INDEXED
    assert all(_escaped(hit.snippet) for hit in result.hits)


INDEXED = {"recepty/teh-tarik.md", "projekty/sauter-bus.md", "cestovani/snezka.md"}


def _escaped(snippet: str) -> bool:
    """A snippet is escaped text with <mark> around matches: no other markup, never empty."""
    bare = snippet.replace("<mark>", "").replace("</mark>", "")
    return bool(bare.strip()) and "<" not in bare and ">" not in bare


def test_empty_index_says_so(config_for, notes_dir, quiet_log):
    for path in notes_dir.rglob("*.md"):
        path.unlink()
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    result = search(conn, config, "cokoliv", vector=embedded_by(HashEmbedder()))
    assert result.hits == () and "the index is empty: run `notes-portal build`" in result.notes


def test_snippet_escapes_html_and_marks_folded_prefixes_and_other_forms():
    text = "Záloha <b>databáze</b> & zálohování každý den, s databázemi."
    assert snippet(text, parse("zaloh databáze")) == (
        "<mark>Záloha</mark> &lt;b&gt;<mark>databáze</mark>&lt;/b&gt; &amp; <mark>zálohování</mark> každý den, "
        "s <mark>databázemi</mark>.")


def test_snippets_drop_markdown_punctuation_but_keep_identifiers():
    text = ("## Zapojení\n\n| Pin | Signál |\n|---|---|\n| P0 | **TX** |\n\n"
            "- [ ] koupit [MAX485](https://x.cz) a [[sauter-bus|Sauter]]\n\nMetoda `__init__`")
    assert snippet(text, parse("max485 init")) == ("Zapojení Pin Signál P0 TX koupit <mark>MAX485</mark> a Sauter "
                                                   "Metoda __<mark>init</mark>__")


def test_an_excerpt_names_every_form_it_marks_once_for_the_landing_page():
    text = ("Každý segment má vlastní převodník.\n\nSvorky A/B převodníku na vodiče, GND převodníku na zem. "
            "Bez převodníků to nejde a na prevodníku nezáleží.")
    found = excerpt(text, parse("na prevodniku"))
    assert found.words == ("převodník", "převodníku", "převodníků", "prevodníku")  # never the function word "na"
    assert found.snippet == snippet(text, parse("na prevodniku"))
    assert excerpt(" ".join(f"slovo{i} převodník{i}" for i in range(30)), parse("převodník")).words == tuple(
        f"převodník{i}" for i in range(MAX_MARKED_WORDS))


def test_word_key_counts_are_read_once_while_the_index_holds_the_same(config_for, notes_dir, quiet_log,
                                                                     monkeypatch):
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    monkeypatch.setattr(spelling, "_KNOWN_COUNTS", spelling._PerContent(spelling.MAX_KNOWN_KEYS))
    assert spelling.KeyCounts(conn).of(["prevodnik"]) == {"prevodnik": 1}
    reads: list[list[str]] = []
    read = db.key_chunk_counts
    monkeypatch.setattr(db, "key_chunk_counts", lambda conn, keys: reads.append(list(keys)) or read(conn, keys))
    assert spelling.KeyCounts(conn).of(["prevodnik", "nikdy"]) == {"prevodnik": 1, "nikdy": 0}
    assert reads == [["nikdy"]]  # another query: the key read before is known
    write_note(notes_dir, "projekty/druhy.md", "# Druhý převodník\n\nJeště jeden převodník.\n")
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    assert spelling.KeyCounts(conn).of(["prevodnik"]) == {"prevodnik": 2}  # the notes changed: read again
    assert reads == [["nikdy"], ["prevodnik"]]
    conn.close()


def test_function_words_are_neither_searched_alone_nor_marked():
    assert snippet("Čaj na cestu a kafe na doma.", parse("čaj na doma")) == (
        "<mark>Čaj</mark> na cestu a kafe na <mark>doma</mark>.")
    assert [t.function for t in parse("byt na prodej")] == [False, True, False]  # byt (a flat) is no být
    assert [t.function for t in parse("být na")] == [True, True] or [t.function for t in parse("být na")] == [
        False, False]
    assert [t.function for t in parse("NA schůzi")] == [False, False]  # capitals: a name, not "na"
    assert [t.function for t in parse("a na to")] == [True, True, True]  # alone too: search() says so
    # a relative pronoun in any case, Czech or Slovak, and the auxiliaries of the past and conditional
    assert [t.function for t in parse("hodnota kterou generátor vrátí")] == [False, True, False, False]
    assert [t.function for t in parse("do ktorého adresára som dal súbory")] == [True, True, False, True, False, False]
    assert [t.function for t in parse("aké typy skúšky by som si mohol zvoliť")] == [
        True, False, False, True, True, True, False, False]
    # the interrogative pronouns in every case, the future auxiliary, prepositions like "according to"
    assert [t.function for t in parse("podle čeho se rozhodnout kolik položek budu mít")] == [
        True, True, True, False, False, False, True, False]
    assert [t.function for t in parse("kdo komu podľa čoho")] == [True, True, True, True]
    # conjunctions (whether, because) and indefinite pronouns
    assert [t.function for t in parse("jak zjistím jestli text obsahuje nějaké slovo")] == [
        True, False, True, False, False, True, False]
    assert [t.function for t in parse("či súbor obsahuje nejaký text, pretože")] == [
        True, False, False, True, False, True]
    # English pronouns and auxiliaries, for a question asked in English over Czech or Slovak notes
    assert [t.function for t in parse("how should we split them into parts")] == [
        True, True, True, False, True, True, False]


@pytest.mark.parametrize(("query", "marked"), [("kolik vody na teh tarik", ("kolik", "vody", "teh", "tarik")),
                                                ("kondenzvané mléko", ("kondenzovane", "mléko")),
                                                ("a na to", ())])
def test_the_answer_names_the_words_its_snippets_mark(indexed, query, marked):
    """The landing page marks these (search.js sends them as ``hl``): never a function word, a typo as corrected."""
    config, conn = indexed
    assert search(conn, config, query, mode="bm25").to_json()["marked"] == list(marked)


@pytest.fixture(scope="module")
def many_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample notes, a long note of many sections and two copies of one note, built once for the module."""
    home = tmp_path_factory.mktemp("many")
    notes_dir = write_sample_notes(home / "notes")
    sections = "".join(f"## Oddíl {i}\n\nKonvice a teplota vody číslo {i}. {'text ' * 250}\n\n" for i in range(5))
    write_note(notes_dir, "caj/velka.md", f"# Velká čajová\n\n{sections}")
    write_note(notes_dir, "caj/mala.md", "# Malá\n\nKonvice a teplota vody pro zelený čaj.\n")
    copy = "# Kopie\n\nKonvice stejná jako jinde, teplota vody 80 stupňů.\n"
    write_note(notes_dir, "caj/kopie-a.md", copy)
    write_note(notes_dir, "archiv/kopie-a.md", copy)
    config = sample_config(home, EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet(config))
    return home


@pytest.fixture
def many(many_template: Path, tmp_path: Path, notes_dir: Path):
    config = copy_config(many_template, tmp_path)
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    yield config, conn
    conn.close()


def test_results_by_note_at_most_two_sections_each_and_copies_as_one(many):
    config, conn = many
    result = search(conn, config, "konvice teplota vody", mode="bm25", limit=10)
    paths = [h.path for h in result.hits]
    assert paths.count("caj/velka.md") == 2
    shown = [h for h in result.hits if h.path == "caj/velka.md"]
    assert len(shown[0].more) == 3 and shown[1].more == ()  # listed under the note's first hit
    assert {h.anchor for h in shown} | {m.anchor for m in shown[0].more} == {f"oddil-{i}" for i in range(5)}
    assert all(m.url == f"notes/caj/velka.html#{m.anchor}" for m in shown[0].more)
    copies = [h for h in result.hits if h.path.endswith("kopie-a.md")]
    assert len(copies) == 1 and [c.path for c in copies[0].copies] == [
        ({"caj/kopie-a.md", "archiv/kopie-a.md"} - {copies[0].path}).pop()]
    wider = search(conn, config, "konvice teplota vody", mode="bm25", max_per_note=5).hits
    assert [h.path for h in wider].count("caj/velka.md") == 5 and all(h.more == () for h in wider)


def test_a_typo_is_searched_as_the_close_word_and_the_answer_says_so(indexed):
    config, conn = indexed
    result = search(conn, config, "kondenzvané mléko", mode="bm25")
    assert result.corrected == "kondenzovane mléko"
    assert result.notes[0] == "no note holds 'kondenzvané': showing results for 'kondenzovane mléko'"
    assert {h.path for h in result.hits} == {"recepty/teh-tarik.md"}
    assert search(conn, config, "kondenzované mléko", mode="bm25").corrected is None
    assert search(conn, config, "převodnyk", mode="bm25").corrected == "prevodnik"  # i → y: two letters apart
    as_typed = search(conn, config, "kondenzvané mléko", mode="bm25", correct=False)  # the way back
    assert (as_typed.corrected, as_typed.notes) == (None, ())
    assert {h.path for h in as_typed.hits} == {"recepty/teh-tarik.md"}  # by "mléko" alone
    assert as_typed.hits[0].snippet.count("<mark>") < result.hits[0].snippet.count("<mark>")


@pytest.mark.parametrize("query", ["qxzvv", "xylofonový koncert v opeře"])
def test_nonsense_and_absent_topics_are_weak(indexed, query):
    config, conn = indexed
    for mode in ("hybrid", "bm25", "vector"):
        assert search(conn, config, query, mode=mode, vector=embedded_by(HashEmbedder())).weak is True, mode


@pytest.mark.parametrize("query", ["dvě lžíce čaje", "převodník RS485", "powerbanka"])
def test_answered_questions_are_not_weak(indexed, query):
    config, conn = indexed
    for mode in ("hybrid", "bm25", "vector"):
        assert search(conn, config, query, mode=mode, vector=embedded_by(HashEmbedder())).weak is False, mode


@pytest.mark.parametrize(("query", "weak"), [("čaje qxzvv kwyjibo", False), ("čaje qxzvv kwyjibo zzyzx", True)])
def test_with_words_alone_a_note_holding_a_third_of_them_is_a_lead(indexed, query, weak):
    """No vector half to agree with (mode bm25): one word of three held by a note is shown as an
    answer, one of four is not; with vectors that disagree both would be weak."""
    config, conn = indexed
    result = search(conn, config, query, mode="bm25")
    assert result.hits[0].path == "recepty/teh-tarik.md" and result.weak is weak


@pytest.mark.parametrize(("query", "weak"), [("nastroje povolene qwrtz zxcvb", False),
                                               ("nástroje povolené qwrtz zxcvb", True)])
def test_a_query_typed_without_accents_is_judged_by_its_words(config_for, notes_dir, quiet_log, query, weak):
    """Half the words are in the exam note and the vector half points at guitar notes only: typed
    with accents that disagreement makes the answer weak; typed without them, the model's list is no
    second opinion (it reads ``nastroje`` as another word) and the words alone find a lead."""
    write_note(notes_dir, "skola/skuska.md",
               "# Skúška\n\nAké nástroje sú povolené na skúške? Python a NetBeans.\n")
    for i in range(fusion.AGREEMENT_DEPTH):  # the exam note beyond the vector half's depth
        write_note(notes_dir, f"hudba/kytara-{i}.md", f"# Kytara {i}\n\nKytara, struna a akord číslo {i}.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    guitars = HashEmbedder().embed_query("kytara struna akord")
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    try:
        result = search(conn, config, query, mode="hybrid", vector=made_before(guitars))
    finally:
        conn.close()
    assert result.hits[0].path == "skola/skuska.md"
    assert "skola/skuska.md" not in {h.path for h in result.hits
                                     if h.ranks["vector"] and h.ranks["vector"] <= fusion.AGREEMENT_DEPTH}
    assert result.weak is weak


@pytest.mark.parametrize(("guitars", "weak"), [(1, False), (2, True)])
def test_the_halves_agree_when_they_share_a_note_within_their_first_chunks(tmp_path, quiet_log, guitars, weak):
    """Half the words are in the exam note (no note holds 3/4 of them), BM25 ranks it first, and the
    vector half, pointed at guitars, ranks it after every guitar note. Over these few chunks the halves
    look among their first 2 (a 40th of 480, at least 2; 12 from 480 chunks on: see the next test):
    2nd is still agreement (the answer is shown as one), 3rd is not (weak)."""
    notes = tmp_path / "notes"
    write_note(notes, "skola/skuska.md", "# Skúška\n\nAké nástroje sú povolené na skúške? Python a NetBeans.\n")
    for i in range(guitars):
        write_note(notes, f"hudba/kytara-{i}.md", f"# Kytara {i}\n\nKytara, struna a akord číslo {i}.\n")
    config = sample_config(tmp_path, EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    try:
        result = search(conn, config, "nástroje povolené qwrtz zxcvb", mode="hybrid",
                        vector=made_before(HashEmbedder().embed_query("kytara struna akord")))
    finally:
        conn.close()
    assert result.hits[0].path == "skola/skuska.md" and result.hits[0].ranks == {"bm25": 1, "vector": guitars + 1}
    assert fusion.agreement_depth(guitars + 1) == 2 and result.weak is weak


def test_the_chunks_searched_are_counted_no_further_than_needed(indexed):
    config, conn = indexed
    every = db.counts(conn)["chunks"]
    assert every > 3 and db.count_chunks_up_to(conn, 3) == 3 and db.count_chunks_up_to(conn, 10_000) == every
    assert db.count_chunks_up_to(conn, 10_000, "notes") == every and db.count_chunks_up_to(conn, 10_000, "other") == 0


def test_the_halves_look_deeper_for_agreement_the_more_chunks_are_searched():
    """Twelve chunks of each half from 480 chunks on (the dev set's 4,310: every figure in docs/QUALITY.md),
    a 40th of them below, at least 2: twelve of a hundred chunks are an eighth of all the notes."""
    assert [fusion.agreement_depth(n) for n in (0, 13, 103, 200, 479, 480, 4_310, 100_000)] == [
        2, 2, 2, 5, 11, 12, 12, 12]


@pytest.mark.parametrize(("query", "unknown"), [("převodník pro Modbus", "'modbus'"),
                                                 ("zapojení převodníku na ESP32", "'esp32'"),
                                                 ("čaj s mlékem jako v NewYorku", "'newyorku'")])
def test_a_name_no_note_holds_makes_the_answer_weak_whatever_else_matches(indexed, query, unknown):
    """The other words find good hits (převodník, čaj), but the notes say nothing of the named thing."""
    config, conn = indexed
    for mode in ("hybrid", "bm25", "vector"):
        result = search(conn, config, query, mode=mode, vector=embedded_by(HashEmbedder()))
        assert result.hits and result.weak is True, mode
        assert f"no note mentions {unknown}" in result.notes


@pytest.mark.parametrize("query", ["převodník MAX485", "zapojení pro Sauter", "Převodník max485 na micro:bitu"])
def test_a_name_the_notes_hold_in_some_form_is_no_reason_to_be_weak(indexed, query):
    config, conn = indexed
    result = search(conn, config, query, mode="hybrid", vector=embedded_by(HashEmbedder()))
    assert result.weak is False and not any("mentions" in n for n in result.notes)
    assert [t.name for t in parse("Převodník max485 na micro:bitu")] == [False, False, False, False, False]
    assert [t.name for t in parse("zapojení pro Sauter a GPIO DataFrame")] == [False, False, True, False, True, True]


def test_an_inflected_name_is_held_but_a_name_sharing_only_a_word_key_is_not(config_for, notes_dir, quiet_log):
    write_note(notes_dir, "hry.md", "# Hry\n\nStaré herky a skripty v jazyce Python pro Docker.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert stem_word("heroku") == stem_word("herky")  # the word key alone would call Heroku known
    assert spelling.unknown_names(conn, parse("skripty v Pythonu s Dockerom na Heroku")) == ["heroku"]
    assert search(conn, config, "skripty v Pythonu s Dockerom", mode="bm25").weak is False
    conn.close()


def test_candidate_words_kept_between_queries_follow_the_index(config_for, notes_dir, quiet_log):
    """A long-running server keeps each letter's candidate words; a build that adds a word is seen."""
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert search(conn, config, "vlnobití", mode="bm25").corrected is None  # no close word yet
    conn.close()
    write_note(notes_dir, "more.md", "# Moře\n\nVlnobití u pobřeží.\n")
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert search(conn, config, "vlnobiti", mode="bm25").corrected is None  # held as typed (folded)
    assert search(conn, config, "vlnobytí", mode="bm25").corrected == "vlnobiti"
    conn.close()


def test_a_letter_with_many_words_keeps_its_most_frequent_ones_and_is_read_once(
        config_for, notes_dir, quiet_log, monkeypatch):
    """Past ``MAX_CANDIDATES`` words of one first letter, the rare ones are left out (not those late in
    the alphabet), and one read of the letter serves words of every length."""
    write_note(notes_dir, "a.md", "# A\n\nVaaaa vbbbb vcccc vdddd.\n")
    write_note(notes_dir, "b.md", "# B\n\nVzduch u pobřeží.\n")
    write_note(notes_dir, "c.md", "# C\n\nVzduch v noci.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    monkeypatch.setattr(spelling, "MAX_CANDIDATES", 3)
    monkeypatch.setattr(spelling, "_CANDIDATES", spelling._Candidates())
    reads = []
    monkeypatch.setattr(db, "frequent_words", lambda *args: reads.append(args[1:]) or db.queries.frequent_words(*args))
    assert search(conn, config, "vzduck", mode="bm25").corrected == "vzduch"  # 2 chunks: the first of 3 kept
    assert search(conn, config, "vaaab", mode="bm25").corrected == "vaaaa"  # 1 chunk, first of its equals
    assert search(conn, config, "vddde", mode="bm25").corrected is None  # 1 chunk, left out past the 3
    assert reads == [("v", spelling.SHORTEST, 3)]
    conn.close()


def test_a_correct_word_the_notes_lack_is_not_turned_into_an_unrelated_one(config_for, notes_dir, quiet_log):
    write_note(notes_dir, "zvyky.md", "# Zvyky\n\nNa nový editor si musíš zvyknout.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert search(conn, config, "zvednout pero", mode="bm25").corrected is None  # 2 edits from "zvyknout"
    assert search(conn, config, "zvyknot", mode="bm25").corrected == "zvyknout"  # 1 edit: a typo


def test_another_form_of_a_word_the_notes_hold_is_searched_by_its_beginning_not_corrected(
        config_for, notes_dir, quiet_log):
    """The word keys join many forms, not a participle and its verbal noun (``odsadený``/``odsadenie``,
    ``napájený``/``napájení``). Such a word is no typo: without this it was "corrected" to the other
    language's close word (``odsazeny``), and the answer said so."""
    write_note(notes_dir, "make.md", "# Makefile\n\nOdsadenie príkazov v pravidle musí byť tabulátorom.\n")
    write_note(notes_dir, "python.md", "# Bloky\n\nOdsazený kód patří do bloku.\n")
    write_note(notes_dir, "servo.md", "# Servo\n\nPozor na napájení z USB.\n")
    write_note(notes_dir, "posta.md", "# Pošta\n\nZpravidla čtu zpravodaj.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    for query, path, form, marked in [("odsadený príkaz", "make.md", "odsadenie", "Odsadenie"),
                                      ("napájený servomotor", "servo.md", "napajeni", "napájení")]:
        result = search(conn, config, query, mode="bm25")
        assert result.corrected is None
        word = query.split()[0]
        assert result.notes == (f"no note holds {word!r}: searched for the forms the notes hold ({form})",)
        assert result.hits[0].path == path and f"<mark>{marked}</mark>" in result.hits[0].snippet
        assert form in result.marked
        as_typed = search(conn, config, query.split()[0], mode="bm25", correct=False)  # as typed: in no note
        assert as_typed.notes == () and path not in {h.path for h in as_typed.hits}
    assert [(t.text, t.forms) for t in spelling.respell(conn, parse("odsadený napájený odsazeny"))[0]] == [
        ("odsadený", ("odsadenie",)), ("napájený", ("napajeni",)), ("odsazeny", ())]  # the last: held as typed
    # a word sharing only a longer beginning is not another form: zprávy is neither zpravidla nor zpravodaj
    assert spelling.respell(conn, parse("zprávy"))[0][0].forms == ()
    assert search(conn, config, "zprávy", mode="bm25").hits == ()
    # a typo is still one: its beginning without the ending begins no word of the notes
    assert search(conn, config, "napájenx", mode="bm25").corrected == "napajeni"
    conn.close()


def test_a_section_cut_in_several_chunks_is_listed_once(config_for, notes_dir, quiet_log):
    long = "\n\n".join(f"Konvice číslo {i}. " + "slovo " * 150 for i in range(8))
    write_note(notes_dir, "dlouha.md",
               f"# Dlouhá\n\n## Úvod\n\nKonvice.\n\n## Jádro\n\n{long}\n\n## Závěr\n\nKonvice.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    hits = [h for h in search(conn, config, "konvice", mode="bm25").hits if h.path == "dlouha.md"]
    anchors = [h.anchor for h in hits] + [m.anchor for m in hits[0].more]
    chunks = conn.execute("SELECT count(*) FROM chunks WHERE path = 'dlouha.md' AND anchor = 'jadro'").fetchone()[0]
    assert chunks >= 3 and anchors.count("jadro") == 1 and len(anchors) == len(set(anchors))


@settings(max_examples=300, deadline=None)
@given(st.text("abcdeěščř", min_size=1, max_size=12), st.text("abcdeěščř", min_size=1, max_size=12))
def test_the_letter_set_filter_never_drops_a_word_within_two_edits(a, b):
    """spelling._closest skips a candidate whose letters differ from the word's in more than 2·limit
    ways: a lower bound of the edit distance, so it never skips a close word."""
    d = spelling.distance(a, b, 2)
    if d <= 2:
        assert len(set(a) ^ set(b)) <= 2 * d


def test_a_heading_naming_the_words_in_another_form_counts_as_a_heading(config_for, notes_dir, quiet_log):
    """The word keys count a section's breadcrumb twice, as the exact columns weigh it: a section
    headed by the query's words in another form ranks above one whose text merely mentions them.
    An index whose stems were laid out before is given them again by the next build."""
    write_note(notes_dir, "c/poznamky.md", "# Poznámky\n\n## Rôzne\n\nTu je konverzia reťazca spomenutá len tak.\n")
    write_note(notes_dir, "c/retazce.md", "# Reťazce\n\n## Konverzia reťazca na číslo\n\n"
                                          "Funkcia sscanf prečíta číslo zo vstupu a vráti počet položiek.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    hits = search(conn, config, "konverzie reťazcov", mode="bm25").hits
    assert [h.path for h in hits[:2]] == ["c/retazce.md", "c/poznamky.md"]
    conn.close()
    writable = db.connect(indexfile.resolve(config.index))
    with db.transaction(writable):  # as an index whose stems were laid out before (same keys)
        writable.execute("UPDATE meta SET value = :old WHERE key = 'text_analysis'", {"old": ANALYSIS_VERSION})
    writable.close()
    conn = db.connect(indexfile.resolve(config.index), readonly=True)  # a server before the next build
    assert db.has_stems(conn) and search(conn, config, "konverzie reťazcov", mode="bm25").hits
    conn.close()
    writable = db.connect(indexfile.resolve(config.index))
    with db.transaction(writable):  # the next build lays every chunk's stems out again
        writable.execute("UPDATE chunks SET stems = ''")
    writable.close()
    write_note(notes_dir, "c/novy.md", "# Nový\n")  # something for the build to do
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert db.get_meta(conn)["text_analysis"] == STEMS_VERSION
    assert conn.execute("SELECT count(*) FROM chunks WHERE stems = ''").fetchone()[0] == 0
    assert [h.path for h in search(conn, config, "konverzie reťazcov", mode="bm25").hits[:1]] == ["c/retazce.md"]
    conn.close()


def _as_before_steps_7_and_8(config) -> None:
    """Make the built index what the code before schema steps 7 and 8 left."""
    from builder.core.index import schema

    conn = db.connect(indexfile.resolve(config.index))
    with db.transaction(conn):
        conn.execute("DROP TABLE chunks_fts")
        conn.execute(schema._FTS_TABLE.replace(schema._PREFIX_OPTION, "prefix='2 3 4'"))
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
        conn.execute("ALTER TABLE files ADD COLUMN links TEXT NOT NULL DEFAULT '[]'")
        conn.execute("ALTER TABLE files DROP COLUMN encoding")
        db.set_meta(conn, {"schema_version": "6"})
    conn.close()


def test_sqlite_before_3_35_keeps_the_links_column_and_builds_on(config_for, notes_dir, quiet_log, monkeypatch):
    config = config_for()
    build(config, log=quiet_log(config))
    _as_before_steps_7_and_8(config)
    monkeypatch.setattr(db.sqlite_module(), "sqlite_version_info", (3, 34, 1))  # no DROP COLUMN there
    write_note(notes_dir, "nove.md", "# Nové\n\nSamovar na čaj.\n")
    assert build(config, log=quiet_log(config)) == 0
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert {"links", "encoding"} <= {r[1] for r in conn.execute("PRAGMA table_info(files)")}
    assert [h.path for h in search(conn, config, "samovar", mode="bm25").hits] == ["nove.md"]
    conn.close()


def test_an_index_from_before_schema_steps_7_and_8_answers_the_same_with_one_prefix_index(
        config_for, notes_dir, quiet_log):
    from builder.core.index import schema

    config = config_for()
    build(config, log=quiet_log(config))
    _as_before_steps_7_and_8(config)
    queries = ["čaj", "mlék", "převodníkem", "sběr", "RS485 pro", "konv", "zapojení", "sluchátka sony"]

    def answers(conn):
        return {q: [(h.path, h.anchor, round(h.score, 9)) for h in search(conn, config, q, mode="bm25").hits]
                for q in queries}

    def fts_sql(conn):
        return conn.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks_fts'").fetchone()[0]

    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    before, vocabulary = answers(conn), conn.execute("SELECT * FROM chunks_vocab ORDER BY 1, 2").fetchall()
    assert "prefix='2 3 4'" in fts_sql(conn) and all(before.values())
    assert db.code_pages(conn) == {}  # no column for it yet: every note as UTF-8
    conn.close()
    build(config, log=quiet_log(config))  # nothing changed; the build still gains step 7
    conn = db.connect(indexfile.resolve(config.index))
    assert db.get_meta(conn)["schema_version"] == str(len(schema.SCHEMA_STEPS))
    assert "prefix='3'" in fts_sql(conn)
    assert {"links", "encoding"} & {r[1] for r in conn.execute("PRAGMA table_info(files)")} == {"encoding"}
    assert db.fts_integrity_error(conn) is None
    assert answers(conn) == before
    assert conn.execute("SELECT * FROM chunks_vocab ORDER BY 1, 2").fetchall() == vocabulary
    with db.transaction(conn):  # steps run again on a file that has them: nothing changes
        db.set_meta(conn, {"schema_version": "6"})
    db.migrate(conn)
    assert "prefix='3'" in fts_sql(conn) and answers(conn) == before
    # step 10, run again after step 7 made chunks_fts anew: FTS5 still gathers 16 MB before writing
    assert [tuple(r) for r in conn.execute("SELECT v FROM chunks_fts_config WHERE k = 'hashsize'")] == [(16777216,)]
    conn.close()
    write_note(notes_dir, "nove.md", "# Nové\n\nKonvice na čaj.\n")
    (notes_dir / "cestovani/snezka.md").unlink()
    build(config, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index))
    assert [h.path for h in search(conn, config, "konv", mode="bm25").hits] == ["nove.md", "recepty/teh-tarik.md"]
    assert search(conn, config, "sluchátka sony", mode="bm25").hits == ()
    assert db.fts_integrity_error(conn) is None
    conn.close()


def test_an_index_without_its_vocabulary_answers_a_question_with_common_words(config_for, notes_dir, quiet_log,
                                                                            monkeypatch):
    """An index from before schema step 4 (word keys, no ``chunks_vocab``), read as it is: no word
    counts, so the any-word query is asked whole."""
    import server.search as search_module

    config = config_for()
    build(config, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index))
    with db.transaction(conn):
        conn.execute("DROP TABLE chunks_vocab")
        db.set_meta(conn, {"schema_version": "3"})
    conn.close()
    monkeypatch.setattr(search_module, "COMMON_CHUNKS", 0)  # every word common, were they counted
    monkeypatch.setattr(search_module, "COMMON_SAVED", 1)
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    hits = search(conn, config, "teplota vody konvice", mode="bm25").hits
    conn.close()
    assert hits and {h.path for h in hits} >= {"recepty/teh-tarik.md"}


def test_a_query_reads_each_words_chunk_count_once(indexed, monkeypatch):
    """The typo check and BM25's common-terms split ask about the same word keys: each is read from
    ``chunks_vocab`` once, and a word whose key some chunk holds needs no other look-up."""
    import server.search as search_module

    config, conn = indexed
    monkeypatch.setattr(search_module, "COMMON_CHUNKS", 0)  # the split reads every content word's count
    monkeypatch.setattr(search_module, "COMMON_SAVED", 1)
    read, looked_up = [], []
    counts, holds = db.key_chunk_counts, db.has_word_or_key
    monkeypatch.setattr(db, "key_chunk_counts", lambda c, keys: read.extend(keys) or counts(c, keys))
    monkeypatch.setattr(db, "has_word_or_key", lambda c, prefix, key: looked_up.append(prefix) or holds(c, prefix, key))
    result = search(conn, config, "vody konvice qqqxyzw", mode="bm25")
    assert len(read) == len(set(read)) and {t.key for t in parse("vody konvice qqqxyzw")} <= set(read)  # each once
    assert looked_up == ["qqqxyzw"]  # vody and konvice are held by their keys
    assert result.hits


def test_a_rare_tag_filters_inside_the_words_search_and_keeps_its_order(tmp_path: Path):
    """A tag on few notes is searched with its chunks listed once (``tag_chunk_ids``); a common one by
    the best of all matches. Either way: only the tag's notes, in the order of the unfiltered ranking,
    and a source filter on top keeps only that source's."""
    for n in range(24):
        tags = (["vzácný"] if n in (3, 17) else []) + (["běžný"] if n % 4 else [])
        body = "".join(f"\n## Oddíl {k}\n\nsíťový most {'most ' * (n % 5)}číslo {n} {k}\n" for k in range(3))
        write_note(tmp_path / "notes", f"n{n:02}.md", f"---\ntags: {tags}\n---\n# Poznámka {n}\n{body}")
        write_note(tmp_path / "other", f"o{n:02}.md", f"---\ntags: [vzácný]\n---\n# Jiná {n}\n\nsíťový most {n}\n")
    config = load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                      "sources:\n  notes:\n    folder: notes\n  other:\n    folder: other\n"))
    assert build(config, log=quiet(config)) == 0
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    try:
        rare = db.tag_chunk_ids(conn, "VZÁCNÝ", "notes")
        notes_rare = {row[0] for row in conn.execute(
            "SELECT id FROM chunks WHERE source_id = 'notes' AND path IN ('n03.md', 'n17.md')")}
        assert rare is not None and set(json.loads(rare)) == notes_rare and len(notes_rare) == 2
        assert db.tag_chunk_ids(conn, "běžný", None) is None  # 18 of 24 notes: the best of all matches
        everything = [h.path for h in search(conn, config, "most", mode="bm25", limit=50, max_per_note=1).hits]
        for tag, source in (("vzácný", "notes"), ("běžný", None), ("vzácný", None)):
            found = [(h.source, h.path) for h in search(conn, config, "most", mode="bm25", limit=50, tag=tag,
                                                         source=source, max_per_note=1).hits]
            tagged = {(r[0], r[1]) for r in conn.execute(
                "SELECT source_id, path FROM note_tags WHERE tag_key = :tag", {"tag": tag})}
            assert set(found) == {t for t in tagged if source in (None, t[0])}, (tag, source, len(found), sorted(found))
            mine = [p for s, p in found if s == "notes"]
            assert mine == [p for p in everything if p in mine]  # the unfiltered order
    finally:
        conn.close()


def test_two_hits_of_a_note_never_lead_to_one_section(config_for, notes_dir, quiet_log):
    """A long section cut in two chunks, the first holding the start of an H4 the second goes on under: the
    first chunk's hit on the H4's words stays at its own section, the second's leads to the H4."""
    def para(word: str, count: int) -> str:
        return " ".join(f"{word}{i}" for i in range(count))

    write_note(notes_dir, "dlouha.md", "# T\n\n## Dlouhá\n\n" + para("úvod", 150) + "\n\n#### Detail\n\n"
               "kvazikrystal mříž " + para("a", 60) + "\n\n" + "\n\n".join(para(f"p{k}x", 60) for k in range(8))
               + "\n\nkvazikrystal mříž na konci.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    hits = search(conn, config, "kvazikrystal mříž", mode="bm25").hits
    conn.close()
    assert sorted((h.anchor, h.url, h.breadcrumb) for h in hits) == [
        ("detail", "notes/dlouha.html#detail", "T > Dlouhá > Detail"),
        ("dlouha", "notes/dlouha.html#dlouha", "T > Dlouhá")]


def test_a_hit_leads_to_the_merged_section_its_words_are_in(config_for, notes_dir, quiet_log):
    """Short sibling sections share a chunk, H4–H6 stay in theirs: a hit leads to (and shows) the section
    that holds most of its words, the chunk's first on a tie; an answer's passage is still the whole chunk
    under its first section's breadcrumb; an index cut before the chunks kept their places still answers."""
    write_note(notes_dir, "caj.md", "# Čaj\n\n## Masala chai\n\nZázvor a kardamom, metlička ne.\n\n## Teh tarik\n\n"
                                    "Přelévá se z konvice do konvice.\n\n#### Mléko\n\nKondenzované mléko slazené.\n\n"
                                    "## Matcha\n\nŠlehá se bambusovou metličkou.\n")
    write_note(notes_dir, "voda.md", "# Teh tarik\n\n## Suroviny\n\nLitr vody, sypaný čaj.\n\n## Postup\n\n"
                                     "Vodu svařím, vodou zaliju čaj. Tarik: přelévám.\n")
    config = config_for(EMBED)
    build(config, embedder_factory=HashEmbedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)

    def top(query: str) -> tuple[str, str, str]:
        hit = search(conn, config, query, mode="bm25").hits[0]
        return hit.url, hit.breadcrumb, hit.snippet

    assert conn.execute("SELECT count(*) FROM chunks WHERE path = 'caj.md'").fetchone()[0] == 1
    url, breadcrumb, shown = top("bambusovou metličkou")
    assert (url, breadcrumb) == ("notes/caj.html#matcha", "Čaj > Matcha")
    assert "<mark>bambusovou</mark>" in shown and "Zázvor" not in shown
    assert top("kondenzované mléko")[:2] == ("notes/caj.html#mleko", "Čaj > Teh tarik > Mléko")
    assert top("konvice")[:2] == ("notes/caj.html#teh-tarik", "Čaj > Teh tarik")
    assert top("kardamom")[:2] == ("notes/caj.html#masala-chai", "Čaj > Masala chai")
    assert top("metlička")[:2] == ("notes/caj.html#masala-chai", "Čaj > Masala chai")  # one in each: the first
    # each word counts once (Postup says voda thrice), and the title's words name the note, not a section
    assert top("vodou")[:2] == ("notes/voda.html#suroviny", "Teh tarik > Suroviny")
    assert top("kolik vody na teh tarik")[:2] == ("notes/voda.html#suroviny", "Teh tarik > Suroviny")
    assert top("tarik zaliju")[:2] == ("notes/voda.html#postup", "Teh tarik > Postup")
    hit = search(conn, config, "bambusovou metličkou", mode="bm25").hits[0]
    assert hit.anchor == "masala-chai"
    chunk = db.stored_chunk(conn, hit.source, hit.path, hit.anchor, hit.line_start)
    assert chunk is not None and chunk.breadcrumb == "Čaj > Masala chai" and chunk.text.endswith("metličkou.")
    conn.close()
    writable = db.connect(indexfile.resolve(config.index))
    writable.execute("ALTER TABLE chunks DROP COLUMN places")  # as an index cut before schema step 15
    writable.close()
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert top("bambusovou metličkou")[:2] == ("notes/caj.html#masala-chai", "Čaj > Masala chai")
    conn.close()
