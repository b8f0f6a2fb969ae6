"""When a word of a claim is a word of a passage: the same word in another form, the other side of a ``ne-``,
or — for an English claim about a Czech or Slovak note — one of its dictionary translations.

Two words are the same word when they fold to the same letters, share a Czech/Slovak word key
(:mod:`builder.core.analysis`) or an English stem (Snowball's Porter 2), fall in one group of
:data:`server.lexicon.SAME` (``max`` and ``maximálně``, ``min`` and ``minut``), or, for derived and aspect
forms the keys do not join (``odovzdávajú``, ``odovzdajte``), share a beginning of five letters or more that
is 70 % of the shorter word — but never a word and its ``-less``/``-free`` (``leader``, ``leaderless``).
A translation meets a word of the passage by its folded form, its word key or its root — the first five letters
after its verbal prefix, the Slovak spelling read as Czech (``skúška`` meets ``zkouška``) — but only with the
same prefix: ``vy-``, ``při-``, ``od-`` say where to (``vycestovat`` is not ``přicestovat``, "arrive"), so no
prefix is taken off one word to meet the other. And it must write the marks that tell Czech words apart as the
passage does (:func:`spelled_alike`: ``hořký`` "bitter" is not ``horký`` "hot"), unless the passage is typed
without diacritics (:attr:`server.passage_text.PassageText.accented`); so must a Czech word of a claim written
with diacritics (:mod:`server.evidence`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

from builder.core.analysis import stem_word
from builder.core.slug import fold
from server import lexicon
from server.claims import Token, keys, words_of

class Translations(Protocol):
    """What the check asks a dictionary: the translations of an English word (server.translate.Dictionary)."""

    def translations(self, word: str) -> tuple[str, ...]: ...

def same_word(a: Token, b: Token) -> bool:
    """Are two words the same word: equal folded, the same word key or English stem, one of the groups of
    :data:`server.lexicon.SAME`, or (derived and aspect forms: ``odovzdávajú`` ↔ ``odovzdajte``) a common
    beginning of 5+ letters that is 70 % of the shorter word?"""
    if keys(a.text) & keys(b.text):
        return True
    if lexicon.SAME.get(a.folded, frozenset()) & lexicon.SAME.get(b.folded, frozenset()):
        return True
    x, y = a.folded, b.folded
    if not (x.isalpha() and y.isalpha()) or _negative_suffix(x, y) or _negative_suffix(y, x):
        return False
    shared = 0
    for p, q in zip(x, y, strict=False):
        if p != q:
            break
        shared += 1
    return shared >= 5 and shared >= 0.7 * min(len(x), len(y))

def _negative_suffix(word: str, base: str) -> bool:
    """Is ``word`` ``base`` with a suffix that negates it (leaderless, careless, sugar-free)?"""
    return word.startswith(base[:max(4, len(base) - 1)]) and word.endswith(("less", "lessly", "free"))

ROOT = 5  # letters of a root compared
_PREFIXES = ("pred", "pre", "pri", "pro", "pod", "nad", "roz", "vy", "vz", "za", "na", "po", "od", "do", "ob", "u",
             "z", "s", "v", "o")

# Slovak words Czech spells alike for another meaning, each form as the Czech word of its meaning: Slovak
# horký "bitter" is Czech hořký, Slovak horúci "hot" is Czech horký (Slovak horko "heat" is not horký's). A
# dictionary translation is compared with these in a Slovak passage (FreeDict's is English–Czech).
_SLOVAK_FALSE_FRIENDS = (
    (re.compile(r"horúc(?:i|a|e|u|eho|ej|om|emu|im|ich|ou|imi)"), "horký"),
    (re.compile(r"hork(?:ý|á|é|ú|ého|ej|om|ému|ým|ých|ou|ými)"), "hořký"),
    (re.compile(r"pivnic(?:a|e|i|u|ou|iach|ami)"), "sklep"),  # Czech pivnice: a pub
    (re.compile(r"kapust(?:a|y|e|u|ou|ami|ách)"), "zelí"),  # Czech kapusta: kale
    (re.compile(r"pokoj(?:a|u|om|i)?"), "klid"),  # Czech pokoj: a room too (Slovak izba)
)
# Words only Slovak writes (Czech: jsou, jsem, jako, když, nebo, ne, také, protože, proto, i, podle, velmi), and
# its ktor- (Czech kter-).
_SLOVAK_WORDS = frozenset("sú som sme ste ako keď alebo nie tiež pretože preto aj podľa veľmi".split())
_SLOVAK_LETTERS = re.compile(r"[äôľĺŕ]", re.IGNORECASE)
_CZECH_LETTERS = re.compile(r"[řůě]", re.IGNORECASE)


def slovak(text: str) -> bool:
    """Is ``text`` surely Slovak: a letter or a word only Slovak writes, and no letter only Czech does? (A short
    Czech text can look Slovak to a counter of common words: ``ale``, ``potom``, ``je`` are both languages'.)"""
    if _CZECH_LETTERS.search(text):
        return False
    return bool(_SLOVAK_LETTERS.search(text)) or any(w in _SLOVAK_WORDS or w.startswith("ktor")  # ktorý, ktorú…
                                                      for w in re.findall(r"\w+", text.lower()))

def as_czech(slovak_word: str) -> str:
    """A Slovak passage's word as the Czech word of its meaning where Czech spells it alike for another
    (:data:`_SLOVAK_FALSE_FRIENDS`); else as written."""
    lower = unicodedata.normalize("NFC", slovak_word.lower())
    return next((czech for form, czech in _SLOVAK_FALSE_FRIENDS if form.fullmatch(lower)), slovak_word)

@lru_cache(maxsize=65_536)
def czech_forms(word: str) -> frozenset[str]:
    """What a Czech or Slovak word is compared with a dictionary translation by: its folded form, its word
    key, and its prefix with its root — the first five letters after the verbal prefix, Slovak spelling
    (``ou`` → ``u``, ``ie`` → ``e``) read as Czech — so that ``skúška`` meets ``zkouška``. The prefix stays:
    ``vycestoval`` meets ``vycestovat``, not ``cestovat`` nor ``přicestovat``."""
    folded = fold(word)
    root, prefix = folded, ""
    for candidate in _PREFIXES:
        if root.startswith(candidate) and len(root) - len(candidate) >= (4 if len(candidate) > 1 else 5):
            root, prefix = root[len(candidate):], candidate
            break
    root = _czech_spelling(root)
    prefix = "s" if prefix == "z" else prefix  # one prefix spelt two ways: zkouška, skúška
    return frozenset({folded, "k:" + stem_word(word), f"r:{prefix}-{root[:ROOT]}"}) if len(root) >= 4 else frozenset(
        {folded, "k:" + stem_word(word)})

_VOICED_Z = re.compile(r"^z(?=[kptcsfš])")  # Czech zk-, zp-, … where Slovak writes sk-, sp-, …

def _czech_spelling(word: str) -> str:
    """A lower-case word with Slovak spelling read as Czech (``ou`` → ``u``, ``ie`` → ``e``, a leading ``z``
    before a voiceless consonant → ``s``), as :func:`czech_forms` and :func:`spelled_alike` compare it."""
    return _VOICED_Z.sub("s", word.replace("ou", "u").replace("ie", "e"))

def translation_forms(word: str, dictionary: Translations) -> tuple[tuple[str, frozenset[str]], ...]:
    """Every word of a translation of an English word (of any headword it may be a form of), with its
    :func:`czech_forms`: of a translation of one or two content words, each (``polévková lžíce``: both)."""
    found: dict[str, frozenset[str]] = {}
    for lemma in lexicon.english_lemmas(word):
        for translation in dictionary.translations(lemma):
            words = [w for w in words_of(translation, False) if w.content]
            if len(words) <= 2:
                for w in words:
                    found.setdefault(w.text.lower(), czech_forms(w.text))
    return tuple(found.items())

def translates(translations: Sequence[tuple[str, frozenset[str]]], passage_word: str, accented: bool) -> bool:
    """Is ``passage_word`` one of ``translations`` (:func:`translation_forms`): the same form of some
    translation, which — in a passage written with diacritics (``accented``) — writes its marks alike?"""
    forms = czech_forms(passage_word)
    return any(shared & forms and (not accented or spelled_alike(text, passage_word))
               for text, shared in translations)

# The marks that tell Czech words apart (hořký "bitter", horký "hot"; řada "row", rada "advice").
# Not the length marks: inflection lengthens and shortens (kráva, krav; mráz, mrazu; psát, psal); nor ě,
# which Slovak writes e or ie (město, mesto); nor Slovak's own ä, ô, ĺ, ľ, ŕ, which Czech lacks.
MARKS = frozenset("čďňřšťžů")
# A consonant inflection softens, with its mark, before an ending: sestra → sestře, bratr → bratři (ř before
# e or i); loď → lodi, píseň → písni (ď, ť, ň ending a word, or before e, i, where Czech writes de, di, ti,
# ni for them, and a note may write přeceďím); Slovak's infinitive ends in ť (variť, vařit).
_SOFT = {"ř": "r", "ď": "d", "ť": "t", "ň": "n"}

def _marked(word: str) -> str:
    """``word`` in lower case, its letters folded but :data:`MARKS`, in Czech spelling (as :func:`czech_forms`
    reads Slovak)."""
    kept = "".join(ch if ch in MARKS else fold(ch) for ch in unicodedata.normalize("NFC", word.lower()))
    return _czech_spelling(kept)

def spelled_alike(word: str, other: str) -> bool:
    """Do two words found the same by their folded forms write :data:`MARKS` alike in the letters they share
    from the start, but for a consonant inflection softens (``sestra``, ``sestře``)? ``hořký`` and ``horká``
    do not: "bitter" is not said by "Káva je horká"."""
    a, b = _marked(word), _marked(other)
    for i, (p, q) in enumerate(zip(fold(a), fold(b), strict=False)):
        if p != q:
            break
        if a[i] != b[i] and not (_softened(a, i, b[i]) or _softened(b, i, a[i])):
            return False
    return True

def _softened(word: str, at: int, other: str) -> bool:
    """Is ``word[at]`` the softened ``other`` before an ending (ř before e or i; ď, ť, ň before e, i or ending
    the word)?"""
    if _SOFT.get(word[at]) != other:
        return False
    after = word[at + 1:at + 2]
    return after in ("e", "i") or after == "" and word[at] != "ř"

def negated_side(claim_word: str, passage_word: str) -> str:
    """Which of two folded words is the other with a ne- prefix, by their keys (``schvalila`` and
    ``neschvalila``): "p" the passage's, "c" the claim's, "" neither."""
    for plain, negated, side in ((claim_word, passage_word, "p"), (passage_word, claim_word, "c")):
        if negated.startswith("ne") and len(negated) > 4 and len(plain) > 2 and keys(plain) & keys(negated[2:]):
            return side
    return ""
