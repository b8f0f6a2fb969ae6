"""The answer check (server/verify.py) on hand-written Czech, Slovak and English answers: sentences,
normalization, and each kind of problem with its exact message. Pure functions: no index, no model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.claims import claims, normalize, quotes
from server.verify import Problem, check, occurs, sentences

PASSAGES = [
    "Převodník MAX485 je na pinech P0 a P1. Rychlost sběrnice je 9600 baudů.",
    "Výlet na Sněžku byl 4. 12. 2026, sraz v 7:30 u „Horní stanice“ lanovky.",
    "The build runs every minute from cron; a no-op build takes 0,156 s.",
]
URLS = ["notes/a.html#zapojeni", "notes/b.html#snezka", "notes/c.html#build"]


def kinds(answer: str) -> list[str]:
    return [p.kind for p in check(answer, PASSAGES, URLS)]


@pytest.mark.parametrize(("answer", "expected"), [
    # abbreviations, initials and dates do not end a sentence
    ("Např. převodník MAX485 je na pinech P0 a P1 [1]. Sraz byl 4. 12. 2026 [2].",
     ["Např. převodník MAX485 je na pinech P0 a P1 [1].", "Sraz byl 4. 12. 2026 [2]."]),
    ("Podľa J. Nováka, t. j. autora, je to tzv. proxy [1]. Potom nasleduje 3. kapitola [2].",
     ["Podľa J. Nováka, t. j. autora, je to tzv. proxy [1].", "Potom nasleduje 3. kapitola [2]."]),
    # a code span and a quotation keep their full stops
    ("Run `make. all` first [3]. It said „Hotovo. Konec“ then [1].",
     ["Run `make. all` first [3].", "It said „Hotovo. Konec“ then [1]."]),
    # citations after the full stop belong to the sentence before them
    ("The build runs from cron. [3] It is fast! [3]", ["The build runs from cron. [3]", "It is fast! [3]"]),
    # a list item is a sentence, its marker dropped
    ("Na Sněžku:\n- sraz v 7:30 [2]\n2. lanovka [2]", ["Na Sněžku:", "sraz v 7:30 [2]", "lanovka [2]"]),
])
def test_sentences_are_split_for_czech_slovak_english_code_and_lists(answer, expected):
    assert [s.text for s in sentences(answer)] == expected


def test_normalize_unifies_quotes_whitespace_and_composition():
    decomposed = "Sne\u030cz\u030cka"  # S, n, e + combining caron, ... as some editors save it
    assert normalize(f"  „{decomposed}“\n\t«x»  ‚y‘ ’z’ **tučně** `kód`") == "\"Sněžka\" \"x\" 'y' 'z' tučně kód"


def test_a_quote_with_other_marks_and_spacing_still_occurs_as_one_span_of_whole_words():
    assert occurs("na   pinech\nP0", PASSAGES[0])
    assert occurs("u \"Horní stanice\" lanovky", PASSAGES[1])
    assert not occurs("Převodník MAX485 … P0 a P1", PASSAGES[0])  # an ellipsis joins nothing: one span
    assert not occurs("Převodník MAX486", PASSAGES[0])
    assert not occurs("řevodník MAX485", PASSAGES[0])  # not inside a longer word
    assert not occurs("chci vařit", "Já nechci vařit.")


def test_straight_single_quotes_quote_and_apostrophes_do_not():
    assert quotes("Heslo je 'kubernetes21', it's the students' one [1].") == ("kubernetes21",)
    assert kinds("Sraz byl u 'Dolní stanice' lanovky [2].") == ["quote"]
    assert kinds("Sraz byl u 'Horní stanice' lanovky, it's 7:30 [2].") == []


def test_quotes_and_numbers_of_a_sentence():
    sentence = "Je to „9600 baudů“ a 4. 12. 2026, it’s fine [1][2]."
    assert quotes(sentence) == ("9600 baudů",)
    (claim,) = claims(1, sentence)
    assert claim.cited == (1, 2) and claim.numbers == ("9600", "4", "12", "2026")  # citations are not numbers


def test_a_correct_answer_passes():
    answer = ("Převodník MAX485 je na pinech P0 a P1 [1], rychlost sběrnice je „9600 baudů“ [1]. "
              "Sraz byl 4.12.2026 v 7:30 [2]. A no-op build takes 0.156 s [3].")
    assert check(answer, PASSAGES, URLS) == ()


def test_each_kind_of_problem_with_its_message():
    assert check("Převodník je na pinech P0 a P1.", PASSAGES, URLS) == (
        Problem("uncited", 1, "sentence 1 cites no passage: Převodník je na pinech P0 a P1."),)
    assert check("Převodník je na pinech P0 a P1 [4].", PASSAGES, URLS) == (
        Problem("unknown_source", 1, "sentence 1 cites [4], but the passages are [1] to [3]: "
                                     "Převodník je na pinech P0 a P1 [4]."),)
    assert check("Píše se „na pinech P2 a P3“ [1].", PASSAGES, URLS) == (
        Problem("quote", 1, "sentence 1 quotes 'na pinech P2 a P3', which is not word for word in [1]"),)
    assert check("Rychlost sběrnice je 19200 baudů [1].", PASSAGES, URLS) == (
        Problem("number", 1, "sentence 1: it says 19200, which [1] does not say there (closest: «Rychlost sběrnice "
                             "je 9600 baudů.»); it says: Rychlost sběrnice je 19200 baudů"),)
    assert check("Sraz byl v 7:30 [2]. Viz https://example.com/snezka [2].", PASSAGES, URLS) == (
        Problem("link", 0, "the answer holds a URL no passage gives: https://example.com/snezka"),)
    assert check("Sraz byl v 7:30 [[2]](notes/b.html) [2].", PASSAGES, URLS) == (
        Problem("link", 0, "the answer makes a link of its own (notes/b.html): cite the passage with [n] instead"),)


def test_a_number_must_be_in_a_passage_the_sentence_cites_not_just_any():
    assert kinds("Rychlost sběrnice je 9600 baudů [2].") == ["claim"]  # 9600 is in [1], not in [2]
    assert kinds("Rychlost sběrnice je 9600 baudů [1].") == []
    assert kinds("Rychlost sběrnice je 9600 baudů [1][2].") == ["citation"]  # [2] does not say it


def test_an_empty_answer_is_a_problem():
    assert check("  \n", PASSAGES, URLS) == (Problem("uncited", 0, "the answer is empty"),)


PIECES = [*"ab1 2.,:!?…\n-*[]()„“”\"'‚‘’«»`/", "[1]", "[2]", "[9]", "http://x.cz/1", "4. 12.", "Např.", "P0"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_any_text_is_checked_without_an_exception(answer):
    """Whatever a model writes, the check answers with problems or none; it never fails (an exception would
    be a 500 for the user instead of a refused answer)."""
    problems = check(answer, PASSAGES, URLS)
    assert all(isinstance(p, Problem) for p in problems)
    assert problems or all(s.cited for s in sentences(answer))
