"""The answer check reads what each sentence claims (server/claims.py, evidence.py, passage_text.py): the
four sentences the issue showed it letting through, each refused with the word or the negation named; one
citation laundering another; an ellipsis; a quotation inside a longer word; a blockquote quoted faithfully;
number words; English answers about Czech notes through the dictionary; and the evidence a shown answer
carries. Pure functions: no index, no model."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from server.passage_text import PassageText
from server.verify import check, verdict
from tests.conftest import PROJECT, require_dictionary

JANA = "Jana does not approve the ACME transfer of 5000 EUR. Petr signs the contract."
TEH_TARIK = (PROJECT / "examples" / "notes" / "recepty" / "teh-tarik.md").read_text(encoding="utf-8")
SUROVINY = PassageText(TEH_TARIK.split("## Suroviny\n", 1)[1].split("## Postup")[0].strip(), "Teh Tarik", "Suroviny")
POSTUP = PassageText(TEH_TARIK.split("## Postup\n", 1)[1].split("### Čaj a mléko")[0].strip(), "Teh Tarik", "Postup")


def problems(answer: str, *passages: PassageText | str, dictionary=None) -> list[tuple[str, str]]:
    return [(p.kind, p.message) for p in check(answer, list(passages), (), dictionary)]


def test_a_flipped_negation_is_refused_naming_the_word():
    assert problems("Jana approved the ACME transfer of 5000 EUR [1].", JANA) == [(
        "polarity", "sentence 1: it says 'approved' without a negation; [1] says it with one: «Jana does not "
                    "approve the ACME transfer of 5000 EUR.»; it says: Jana approved the ACME transfer of 5000 EUR")]


def test_an_invented_ingredient_with_the_right_digits_is_refused_naming_it():
    found = problems("Na teh tarik dáš 700–800 ml vody a pět lžic cukru [1].", SUROVINY)
    assert [kind for kind, _ in found] == ["claim"]
    assert "'cukru'" in found[0][1] and "(nor 5)" in found[0][1] and "not in [1]" in found[0][1]


def test_a_fact_moved_to_another_person_of_the_same_passage_is_refused_naming_them():
    found = problems("Petr approved the ACME transfer of 5000 EUR [1].", JANA)
    assert found[0][0] == "claim" and found[0][1].startswith("sentence 1: 'Petr' is not in [1] beside the rest of it")


def test_a_negated_fact_said_as_positive_without_its_subject_is_refused():
    assert [kind for kind, _ in problems("The transfer was approved [1].", JANA)] == ["polarity"]


def test_the_faithful_versions_pass():
    assert problems("Jana does not approve the ACME transfer of 5000 EUR [1].", JANA) == []
    assert problems("Jana did not approve the transfer [1]. Petr signs the contract [1].", JANA) == []
    assert problems("Na teh tarik je potřeba 700–800 ml vody [1].", SUROVINY) == []


def test_a_quote_found_only_in_the_second_passage_does_not_verify_the_first_citation():
    found = problems("Jana „does not approve the ACME transfer“ [1][2].", POSTUP, JANA)
    assert [kind for kind, _ in found] == ["citation"]
    assert found[0][1].startswith("sentence 1 cites [1][2], but [1] does not say it")
    assert problems("Jana „does not approve the ACME transfer“ [2].", POSTUP, JANA) == []


def test_an_ellipsis_that_drops_a_negation_is_refused_and_so_is_one_that_drops_nothing_important():
    assert problems("„Jana … approve the ACME transfer of 5000 EUR“ [1].", JANA) == [(
        "quote", "sentence 1 quotes 'Jana … approve the ACME transfer of 5000 EUR' with an ellipsis: quote one "
                 "whole span, word for word")]
    assert [kind for kind, _ in problems("„Petr ... the contract“ [1].", JANA)] == ["quote"]


def test_a_quotation_cut_after_a_negation_loses_it():
    assert [kind for kind, _ in problems("Jana said: „approve the ACME transfer of 5000 EUR“ [1].", JANA)] \
        == ["polarity"]


@pytest.mark.parametrize("answer", ["Autor píše „chci vařit“ [1].", "Píše se „vařit doma“ [1]."])
def test_a_quotation_inside_a_longer_word_is_not_found(answer):
    passage = "Večer nechci vařit. Dnes nevařit doma."
    assert [kind for kind, _ in problems(answer, passage)] == ["quote"]


def test_a_faithful_quotation_of_a_two_line_blockquote_passes():
    answer = ("Podle poznámky: „Kondenzované mléko kupuju v asijském obchodě v Sapě, to české v tubě je příliš "
              "husté a má divnou vanilkovou pachuť.“ [1]")
    assert problems(answer, SUROVINY) == []


@pytest.mark.parametrize(("answer", "kinds"), [
    ("Čaj se nechá provařit tři až pět minut [1].", []),  # "3–5 minut"
    ("Přidají se dvě polévkové lžíce černého čaje [1].", []),  # the passage says "dvě" too
    ("Přidají se 2 polévkové lžíce černého čaje [1].", []),
    ("Přidají se tři polévkové lžíce černého čaje [1].", ["number"]),
    ("Opakuje se to pětkrát až sedmkrát, dokud není nahoře hustá pěna [1].", []),  # "5–7×"
    ("Opakuje se to 5–7×, dokud je nahoře hustá pěna [1].", ["polarity"]),
])
def test_number_words_are_their_values(answer, kinds):
    assert [kind for kind, _ in problems(answer, POSTUP)] == kinds


def test_an_english_answer_about_a_czech_note_is_read_through_the_dictionary():
    require_dictionary()
    from builder.core.config import DEFAULT_DICTIONARY
    from server import translate

    dictionary = translate.load(DEFAULT_DICTIONARY)
    answer = "Add two tablespoons of black tea [1]."  # "Přidám dvě polévkové lžíce černého čaje"
    assert problems(answer, POSTUP, dictionary=dictionary) == []
    assert [kind for kind, _ in problems(answer, POSTUP)] == ["claim"]  # without it: English words are absent
    assert [kind for kind, _ in problems("Add two tablespoons of black coffee [1].", POSTUP, dictionary=dictionary)] \
        == ["claim"]
    # true, and refused: FreeDict's "boil" is vařit, and the note's "provařit 3–5 minut" has a prefix (the price of
    # not letting "arrive", přicestovat, meet vycestoval: docs/ANSWERS.md)
    assert [kind for kind, _ in problems("Boil the tea for 3–5 minutes [1].", POSTUP, dictionary=dictionary)] \
        == ["claim"]


@pytest.fixture(scope="module")
def freedict():
    require_dictionary()
    from builder.core.config import DEFAULT_DICTIONARY
    from server import translate

    return translate.load(DEFAULT_DICTIONARY)


@pytest.mark.parametrize(("answer", "passage", "kinds"), [
    # FreeDict gives "bitter" as hořký; folded, hořký is horký ("hot"): a translation writes the marks that
    # tell Czech words apart (ř, š, č, ž, ď, ť, ň, ů) as the passage does
    ("The coffee is bitter [1].", "Káva je horká.", ["claim"]),
    ("The coffee is hot [1].", "Káva je horká.", []),
    ("The coffee is bitter [1].", "Káva je hořká.", []),
    ("The coffee is hot [1].", "Káva je hořká.", ["claim"]),
    # … save where inflection softens a consonant: sestra → sestře (ř before e, i), loď → lodi (ď ending it)
    ("The letter was sent to the sister [1].", "Dopis jsem poslal sestře.", []),
    ("The captain is on the boat [1].", "Na lodi je kapitán.", []),
    # a note typed without diacritics has no marks to compare: its words meet a translation folded (čaj, caj)
    ("The tea is strong and sweet [1].", "Caj je silny a sladky.", []),
    # a verbal prefix is part of the word: "arrive" is přicestovat, not vycestovat (travel out) nor odcestovat
    ("Petr arrived in Brno [1].", "Petr vycestoval do Brna.", ["claim"]),
    ("Petr arrived in Brno [1].", "Petr odcestoval do Brna.", ["claim"]),
    ("Petr arrived in Brno [1].", "Petr přicestoval do Brna.", []),
    ("Petr departed for Brno [1].", "Petr odcestoval do Brna.", []),
    ("Petr travelled to Brno [1].", "Petr cestoval do Brna.", []),
    ("The exam takes two hours [1].", "Skúška trvá dve hodiny.", []),  # Slovak s- is Czech z-: zkouška
    # "otázka" names a fact of the note (an exam's questions), not the source: "questions" finds it
    ("The exam has three questions [1].", "Zkouška má tři otázky.", []),
    ("The exam has three questions [1].", "Skúška má tri otázky.", []),
    ("The exam has three tasks [1].", "Zkouška má tři otázky.", ["claim"]),
])
def test_a_translation_keeps_the_marks_and_the_prefix_of_the_passages_word(freedict, answer, passage, kinds):
    assert [kind for kind, _ in problems(answer, passage, dictionary=freedict)] == kinds


@pytest.mark.parametrize(("answer", "passage", "kinds"), [
    ("Káva je hořká [1].", "Káva je horká.", ["claim"]),  # both written with diacritics: hořká is not horká
    ("Káva je horká [1].", "Káva je horká.", []),
    ("Kava je horka [1].", "Káva je hořká.", []),  # either side typed without diacritics: folded, as before
    ("Káva je hořká [1].", "Kava je horka.", []),
    ("Zkouška má tři otázky [1].", "Zkouška má tři úlohy.", ["claim"]),  # otázky was a free word
])
def test_a_czech_word_keeps_its_marks_where_both_sides_write_them(answer, passage, kinds):
    assert [kind for kind, _ in problems(answer, passage)] == kinds


@pytest.mark.parametrize(("answer", "passage", "kinds"), [
    # a content word that folds like a free word is a content word where the claim writes diacritics: malá
    # "small" is not Slovak mala "had", málo "little" not malo, byt "flat" not být "to be", řada "row" not rada
    ("Káva je malá [1].", "Káva je velká.", ["claim"]),
    ("Káva je malá [1].", "Káva je malá.", []),
    ("Cukru je málo [1].", "Cukru je hodně.", ["claim"]),
    ("Byt je velký [1].", "Dům je velký.", ["claim"]),
    ("Byt je velký [1].", "Byt je velký.", []),
    ("Byt je drahý [1].", "Být drahý je snadné.", ["claim"]),  # the passage's být is not the claim's byt
    ("Je to dobrá řada [1].", "Je to dobrá rada.", ["claim"]),
    ("Rada zní: pít hodně vody [1].", "Pít hodně vody.", []),  # beside a cue, rada still names the source
    ("Rada: pijte hodně vody [1].", "Pijte hodně vody.", []),  # so does a claim it opens with a colon
    ("Po tréninku bolí svaly [1].", "Po tréninku jsou svaly unavené.", ["claim"]),  # Slovak boli "were"
    ("Festival sa koná v máji [1].", "Festival sa koná v júni.", ["claim"]),  # mají "have"
    ("Petr dal dárek mámě [1].", "Petr dal dárek tátovi.", ["claim"]),  # máme "we have"
    ("Je to prosté jídlo [1].", "Je to slavnostní jídlo.", ["claim"]),  # prostě "simply"
    ("Práve preto pridávame soľ [1].", "Preto pridávame soľ.", []),  # Slovak práve "just", as Czech právě
    ("Radi vám pomôžeme s rezerváciou [1].", "Pomôžeme vám s rezerváciou.", []),
    ("Slovensky sa to mala naučiť za týždeň [1].", "Slovensky sa to mala naučiť za týždeň.", []),
])
def test_a_word_spelled_unlike_the_free_word_it_folds_to_is_a_fact(answer, passage, kinds):
    found = problems(answer, passage)
    assert [kind for kind, _ in found] == kinds


@pytest.mark.parametrize(("answer", "passage", "dictionary", "said"), [
    # where from and where to: a word said with "to" (do, k, into) is not said by one with "from" (z, od)
    ("Petr went to Brno [1].", "Petr odjel z Brna v pondělí.", True, "it says to 'Brno' where [1] says from"),
    ("Petr odjel do Brna [1].", "Petr odjel z Brna v pondělí.", False, "it says to 'Brna' where [1] says from"),
    ("Vlak jede z Prahy do Brna [1].", "Vlak jede z Brna do Prahy.", False,
     "it says from 'Prahy' where [1] says to"),
    ("Put the milk into the pot [1].", "Mlieko vyberieme z hrnca.", True,
     "it says to 'pot' where [1] says from"),
    ("Mlieko vylejeme do veľkého hrnca [1].", "Mlieko vylejeme z veľkého hrnca.", False,
     "it says to 'veľkého' where [1] says from"),
    ("Otevřeno od pondělí [1].", "Otevřeno do pondělí.", False, "it says from 'pondělí' where [1] says to"),
    ("Otevřeno od 10 hodin [1].", "Otevřeno do 10 hodin.", False, "it says from '10' where [1] says to"),
    ("Děti do 6 let mají vstup zdarma [1].", "Děti od 6 let mají vstup zdarma.", False,
     "it says to '6' where [1] says from"),
    ("Petr has lived in Brno since 2010 [1].", "Petr žil v Brně do roku 2010.", True,
     "it says from '2010' where [1] says to"),
    ("The road has been closed since Monday [1].", "Silnice je uzavřená do pondělí.", True,
     "it says from 'Monday' where [1] says to"),
    ("Výstava je otvorená od nedele [1].", "Výstava je otvorená až po nedeľu.", False,
     "it says from 'nedele' where [1] says to"),  # Slovak "až po": until
    ("Put the soup into this pot [1].", "Polévku vylijeme z tohoto hrnce.", True,
     "it says to 'pot' where [1] says from"),
    ("Petr went to Brno [1].", "Petr odjel z Brna, protože Brno bylo drahé.", True,
     "it says to 'Brno' where [1] says from"),  # a mention without a preposition does not say "to"
    # the faithful ones
    ("Petr odjel z Brna [1].", "Petr odjel z Brna v pondělí.", False, None),
    ("The train goes from Brno to Prague [1].", "Vlak jede z Brna do Prahy.", True, None),
    ("Vlak jede z Brna do Prahy [1].", "Vlak jede z Brna do Prahy.", False, None),
    ("Petr jel do Brna [1].", "Petr jel z Prahy do Brna a pak zpět z Brna.", False, None),  # one place says "to"
    ("Petr jel do Brna [1].", "Petr jel vlakem: Brno je daleko.", False, None),  # said without a direction
    ("Add the milk to the tea [1].", "Přidáme do čaje mléko.", True, None),
    # an English infinitive's "to", a verb ending as an adjective does, a key "od" what it opens: no way said
    ("Petr wanted to leave Brno [1].", "Petr chtěl odjet z Brna.", True, None),
    ("Mouku přidáme k máslu [1].", "Z lednice vyndáme máslo a přidáme mouku.", False, None),
    ("The password to the wifi is on the fridge [1].", "Heslo od wifi je na lednici.", True, None),
    ("Klíč k bytu nechte na recepci [1].", "Klíč od bytu nechte na recepci.", False, None),
])
def test_a_direction_turned_round_is_refused(freedict, answer, passage, dictionary, said):
    found = problems(answer, passage, dictionary=freedict if dictionary else None)
    if said is None:
        assert found == []
    else:
        assert [kind for kind, _ in found] == ["claim"] and said in found[0][1]


@pytest.mark.parametrize(("answer", "passage", "kinds"), [
    # FreeDict is English–Czech: a Slovak note's horký is Czech hořký ("bitter"), its horúci Czech horký ("hot")
    ("The tea is hot [1].", "Keď je čaj horký, pridáme mlieko.", ["claim"]),
    ("The tea is bitter [1].", "Keď je čaj horký, pridáme mlieko.", []),
    ("The tea is hot [1].", "Keď je čaj horúci, pridáme mlieko.", []),
    ("The tea is bitter [1].", "Keď je čaj horúci, pridáme mlieko.", ["claim"]),
    ("The tea is hot [1].", "Když je čaj horký, přidáme mléko.", []),  # in a Czech note, horký is hot
    ("The tea is hot [1].", "Čaj je horký, ale potom vychladne.", []),  # Czech, though "ale potom" is Slovak too
    ("The tea is bitter [1].", "Čaj je horký, ale potom vychladne.", ["claim"]),
    ("The tea is hot [1].", "Čaj je horký, preto ho pijeme s medom.", ["claim"]),  # preto: only Slovak writes it
    ("The tea is hot [1].", "Čaj je horký, jak říkají Slováci: ako oheň.", []),  # ř: Czech, quoting Slovak
    ("The wine is in the pub [1].", "Víno je v pivnici, ktorú nájdete pod hradom.", ["claim"]),  # Slovak: a cellar
    ("The wine is in the cellar [1].", "Víno je v pivnici, ktorú nájdete pod hradom.", []),
    ("Kale is healthy [1].", "Kapusta je zdravá, preto ju jeme často.", ["claim"]),  # Slovak: cabbage
    ("There is a room in the hotel [1].", "V hoteli je pokoj, ktorý ocenia aj rodiny.", ["claim"]),  # Slovak: quiet
])
def test_a_slovak_word_czech_spells_alike_is_read_in_its_slovak_meaning(freedict, answer, passage, kinds):
    assert [kind for kind, _ in problems(answer, passage, dictionary=freedict)] == kinds


def test_a_shown_answer_carries_each_claims_evidence_as_offsets_into_its_passage():
    result = verdict("Přidají se dvě polévkové lžíce černého čaje [1]. Čaj se přecedí přes jemné sítko [1].",
                     [POSTUP])
    assert result.problems == ()
    spans = [POSTUP.text[e.start:e.end] for e in result.evidence]
    assert [(e.sentence, e.n) for e in result.evidence] == [(1, 1), (2, 1)]
    assert spans[0].startswith("Přidám dvě polévkové lžíce černého čaje") and "sítko" in spans[1]
    assert verdict("Čaj se přecedí přes hrubé sítko [1].", [POSTUP]).evidence == ()


# ---------------------------------------------------------------- a property: what a sentence says, reused

SENTENCES = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(POSTUP.text.replace("**", "").split()))
             if len(s.split()) >= 5 and not re.search(r"[„“\"()]", s)]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SENTENCES), st.sampled_from(["Podle poznámek: „{}“ [1]", "Postup říká: „{}“ [1]"]),
       st.integers(min_value=0, max_value=40), st.sampled_from(["cukr", "skořici", "Brno", "studený", "mikrovlnku"]))
def test_a_quoted_sentence_passes_and_one_word_changed_in_it_does_not(sentence, frame, at, stranger):
    """A sentence of the passage quoted whole always passes; the same sentence with one of its longer words
    replaced by a word the passage never writes never does (quoted or not)."""
    sentence = re.sub(r"^\d+\.\s*", "", sentence).rstrip(".")
    assert check(frame.format(sentence), [POSTUP]) == ()
    words = [m for m in re.finditer(r"\w{5,}", sentence)]
    word = words[at % len(words)]
    changed = sentence[:word.start()] + stranger + sentence[word.end():]
    assert check(frame.format(changed), [POSTUP]) != ()
    assert check(changed + " [1].", [POSTUP]) != ()
