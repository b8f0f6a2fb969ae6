"""When a word of a claim is a word of a passage: the same word in another form, the other side of a ``ne-``,
or — for an English claim about a Czech or Slovak note — one of its dictionary translations.

Two words are the same word when they fold to the same letters, share a Czech/Slovak word key
(:mod:`builder.core.analysis`) or an English stem (Snowball's Porter 2), fall in one group of
:data:`server.lexicon.SAME` (``max`` and ``maximálně``, ``min`` and ``minut``), or, for derived and aspect
forms the keys do not join (``odovzdávajú``, ``odovzdajte``), share a beginning of five letters or more that
is 70 % of the shorter word — but never a word and its ``-less``/``-free`` (``leader``, ``leaderless``).
A translation is compared by root: the verbal prefix off and the Slovak spelling read as Czech
(``vychladnout`` meets ``zchladnout``, ``skúška`` meets ``zkouška``).
"""

from __future__ import annotations

import re
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

def czech_forms(word: str) -> frozenset[str]:
    """What a Czech or Slovak word is compared with a dictionary translation by: its folded form, its word
    key, and its root — verbal prefix off, Slovak spelling (``ou`` → ``u``, ``ie`` → ``e``), first five
    letters — so that ``vychladnout`` meets ``zchladnout`` and ``skúška`` meets ``zkouška``."""
    folded = fold(word)
    root = folded
    for prefix in _PREFIXES:
        if root.startswith(prefix) and len(root) - len(prefix) >= (4 if len(prefix) > 1 else 5):
            root = root[len(prefix):]
            break
    root = re.sub(r"^z(?=[kptcsf])", "s", root.replace("ou", "u").replace("ie", "e"))
    return frozenset({folded, "k:" + stem_word(word), "r:" + root[:ROOT]}) if len(root) >= 4 else frozenset(
        {folded, "k:" + stem_word(word)})

def translation_forms(word: str, dictionary: Translations) -> frozenset[str]:
    """The :func:`czech_forms` of every translation of an English word (of any headword it may be a form
    of): of a translation of one or two content words, each (``polévková lžíce``: both)."""
    found: set[str] = set()
    for lemma in lexicon.english_lemmas(word):
        for translation in dictionary.translations(lemma):
            words = [w for w in words_of(translation, False) if w.content]
            if len(words) <= 2:
                for w in words:
                    found |= czech_forms(w.text)
    return frozenset(found)

def negated_side(claim_word: str, passage_word: str) -> str:
    """Which of two folded words is the other with a ne- prefix, by their keys (``schvalila`` and
    ``neschvalila``): "p" the passage's, "c" the claim's, "" neither."""
    for plain, negated, side in ((claim_word, passage_word, "p"), (passage_word, claim_word, "c")):
        if negated.startswith("ne") and len(negated) > 4 and len(plain) > 2 and keys(plain) & keys(negated[2:]):
            return side
    return ""
