"""Text analysis for search: a Czech + Slovak light stemmer that needs no language tag.

What it is for
--------------
``stem_text(text)`` turns notes written in Czech, Slovak or English into a string
of *keys*, one per token and in the original order, for the ``stems`` column of
``chunks_fts`` next to the exact text (both ``tokenize = 'unicode61 remove_diacritics 2'``).  The
query goes through the same function and is matched against that column, while
matches in the exact column keep exact forms ranking first.  Inflected forms of a
word share its key::

    kontajner kontajnera kontajnerov kontajneroch   -> kontajnr
    převodník převodníku převodníkem prevodniku     -> prevodnik
    sieť siete sietí sieťach                        -> siet
    vytvoriť vytvorí vytvoríme vytvořit vytvořil    -> vytvr

Contract: call ``stem_text`` on the *raw* text on both sides (document and query),
not on words that were already split at underscores, so that identifiers are
treated alike.

How a key is computed (``stem_word``)
-------------------------------------
1. Fold: lower case, no diacritics (NFKD, combining marks dropped; ``ø ł đ ß æ œ``
   mapped by hand).  The stemmer then only ever sees folded text, so a word typed
   without diacritics (``prevodniku``) gets the key of its accented spelling
   (``převodníku``).  One exception: a final ``-š`` after a vowel (Czech/Slovak 2nd
   person singular, ``vytvoříš``, ``použiješ``) is dropped before folding, because
   once folded it could not be told from nouns in ``-es``/``-is`` (``proces``).
2. Pass through, folded but not stemmed: tokens with a digit or an underscore
   (``max485``, ``__init__``, ``zct20``), ALL-CAPS tokens (``RASA``, ``GPIO``),
   camelCase tokens (``JabRef``, ``volumeClaimTemplates``) and words of at most
   3 letters (``byt``, ``pes``, ``git``).
3. Strip endings to a fixed point, longest first, never leaving a stem shorter than
   3 letters (4 for the verb endings that also end nouns: ``-at -it -et -il``...):
   * case/number endings of both languages: the Czech ones of the light stemmer of
     Dolamic & Savoy (2009, "Indexing and stemming approaches for the Czech
     language"; it is Lucene's ``CzechStemmer``) and the Slovak ones (``-och -om
     -ov -ami -iach -iam -iou -ia -ie -iu -ii -ej -ého -ému -ým -ých -ými``);
   * verb endings: infinitive ``-at -it -et -ovat -nout`` (Sk ``-ať -iť -eť -ovať
     -núť``), present, imperative (``-ajte -ujte -ite``, and ``-te`` after the
     consonants where no noun locative ``-te`` was seen: ``vytvorte``, ``nastavte``,
     ``uložte``), past ``-il``;
   * ``-en``/``-an`` of a verbal noun (``overenie``, ``nastavení``) when one of
     its endings (``-ie -í -ia -iu -ím -iach``...) was just removed, so that it
     shares the verb's key (``overiť``, ``nastavit``).
   Stripping to a fixed point makes nouns whose stem happens to end like an
   ending consistent (``systém``/``systému``/``systémy``, ``program``/``programu``).
4. Normalise the end of the stem: a fleeting ``e``/``o`` between two consonants
   is dropped (Cz ``řádek``/``řádku``, ``větev``/``větve``, ``počet``/``počtu``,
   Sk ``riadok``/``riadku``, ``uzol``/``uzla``, ``prednášok``/``prednáška``) and the
   Czech palatalisation ``k``->``c`` of the last consonant is undone (``tabulce``/
   ``tabulka``, ``podmínce``/``podmínka``), as in Dolamic & Savoy.  Their ``z``->``h``
   (``knize``/``kniha``) is left out: once verbs are stemmed it would give
   ``uložit`` the key of ``úloha``.

Keys are not words (``kontajnr``), and being a stemmer it over-merges at times:
derivations share a key (``dátový``/``dáta`` -> ``dat``, ``hodnotenie``/
``hodnota``), and so do a few unrelated words (``trieda`` "class" / ``triediť``
"sort" -> ``tried``; ``škola``/``sklo``; ``dosť``/``dostať``).  English words are
mostly left alone (no ``-s``/``-ing``/``-ed`` rule); some lose a final vowel
(``image`` -> ``imag``) or an ``-it``/``-et`` (``commit`` -> ``comm``).  Folding
also makes ``byt`` (flat) and ``být``/``byť`` (to be) one key, as the exact FTS5
column with ``remove_diacritics 2`` already does.

Properties: standard library only, no data files, nothing to load; deterministic;
thread-safe (the only state is an ``lru_cache``, which is thread-safe).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from builder.core.slug import fold

__all__ = ["ANALYSIS_VERSION", "fold", "inflection_base", "stem_word", "stem_text", "tokens"]

# Bump when a change here gives any word another key: the index's stems are computed again.
ANALYSIS_VERSION = "czsk-light-1"

# --- endings (all folded), each with the shortest stem it may leave ------------

# Czech endings from Dolamic & Savoy's light stemmer, without the kuře/kuřata ones
# (-ata -aty -ete -eti -etem -atech -atům): rare in notes and, once folded, the
# ends of many noun stems (předmět/předmětu, formát/formátu).  Plus Slovak ones.
_CASE_ENDINGS: dict[str, int] = {
    "iach": 3, "iami": 3,
    "ech": 3, "ich": 3, "eho": 3, "emi": 3, "emu": 3, "iho": 3, "imi": 3, "imu": 3,
    "ach": 3, "ych": 3, "ama": 3, "ami": 3, "ove": 3, "ovi": 3, "ymi": 3,
    "och": 3, "iam": 3, "iou": 3,
    "em": 3, "im": 3, "um": 3, "am": 3, "us": 3, "ym": 3, "mi": 3, "ou": 3,
    "om": 3, "ej": 3, "ia": 3, "ie": 3, "iu": 3, "ii": 3,
    "ov": 3, "uv": 3,  # Sk genitive plural -ov (and adjectival -ov-), Cz possessive -ův
    "a": 3, "e": 3, "i": 3, "o": 3, "u": 3, "y": 3,
}
# Verb endings of both languages.  Those that also end common nouns need a 4-letter stem.
_VERB_ENDINGS: dict[str, int] = {
    "ovat": 3, "oval": 3, "ovan": 3,  # -ovat/-ovať verbs and their participles
    "ujeme": 3, "ujete": 3, "ujem": 3, "ujte": 3, "ujme": 3, "uje": 3, "uju": 3, "uji": 3, "uj": 3,
    "ijeme": 3, "ijete": 3, "ijem": 3, "ijte": 3, "ijme": 3, "ije": 3, "iju": 3, "iji": 3, "ij": 3,
    "ajte": 4, "ajme": 4, "ejte": 4, "ejme": 4, "aju": 4, "aji": 4, "aj": 4,
    "ame": 4, "ate": 4, "ime": 4, "ite": 4, "eme": 4, "ete": 4,
    "at": 4, "it": 4, "et": 4,  # infinitive (Sk -ať -iť -eť once folded)
    "il": 4,  # past tense; -la -li -lo -ly lose their vowel in an earlier round
    "te": 4,  # imperative plural after a consonant (vytvorte, nastavte); see _NEEDS_BEFORE
}
# Endings allowed only after (True) or never after (False) certain letters.  Imperative
# -te only after consonants that (in these corpora) end no noun stem in -t, whose
# locative is -te too (objekte, dokumente, mieste, počte); -et never after c (počet).
_NEEDS_BEFORE: dict[str, tuple[bool, str]] = {"te": (True, "rjvzdlbmt"), "et": (False, "c")}
# -en/-an of verbal nouns, removed only right after one of these endings was.
_VERBAL_NOUN_SUFFIXES: dict[str, int] = {"en": 4, "an": 4}
_VERBAL_NOUN_ENDINGS = frozenset({"i", "ie", "ia", "iu", "ii", "im", "iach", "iam", "iami"})

_MIN_STEM = 3
_MAX_ROUNDS = 4
_VOWELS = frozenset("aeiouy")
_FLEETING_BEFORE = frozenset("klcnrv")  # consonants after which e/o may be fleeting



def _by_length() -> tuple[tuple[int, dict[str, int]], ...]:
    """Every ending with its shortest stem, grouped by length, longest first."""
    by_length: dict[int, dict[str, int]] = {}
    for ending, min_stem in {**_CASE_ENDINGS, **_VERB_ENDINGS}.items():
        by_length.setdefault(len(ending), {})[ending] = min_stem
    return tuple(sorted(by_length.items(), reverse=True))


_TABLE = _by_length()


def _strip_once(word: str) -> tuple[str, str]:
    """``word`` without its longest removable ending, and that ending ("" if none)."""
    if word.endswith(("nout", "nut")):  # zvednout/zvedne, zaškrtnúť/zaškrtni
        cut = 3 if word[-4:] == "nout" else 2
        if len(word) - cut - 1 >= _MIN_STEM:
            return word[:-cut], word[-cut:]
    for length, endings in _TABLE:
        ending = word[-length:]
        min_stem = endings.get(ending)
        if min_stem is not None and len(word) - length >= min_stem:
            context = _NEEDS_BEFORE.get(ending)
            if context is not None and (word[-length - 1] in context[1]) != context[0]:
                continue
            return word[:-length], ending
    return word, ""


def _normalise_end(stem: str) -> str:
    if stem.endswith("cet") and len(stem) >= 4:  # počet/počtu, účet/účtu
        stem = stem[:-3] + "ct"
    elif (
        len(stem) >= 4
        and stem[-1] in _FLEETING_BEFORE
        and stem[-2] in "eo"
        and stem[-3] not in _VOWELS
    ):
        stem = stem[:-2] + stem[-1]  # řádek -> řádk (řádku), riadok -> riadk (riadku)
    if stem.endswith("c"):
        return stem[:-1] + "k"  # tabulce/tabulka, podmínce/podmínka, řetězec/řetězce
    return stem


def _stem_folded(word: str) -> str:
    if len(word) <= _MIN_STEM:
        return word
    last = ""
    for _ in range(_MAX_ROUNDS):
        stem, ending = _strip_once(word)
        if not ending and last in _VERBAL_NOUN_ENDINGS:
            min_stem = _VERBAL_NOUN_SUFFIXES.get(word[-2:])
            if min_stem is not None and len(word) - 2 >= min_stem:
                stem, ending = word[:-2], word[-2:]
        if not ending:
            break
        word, last = stem, ending
    return _normalise_end(word)


def inflection_base(word: str) -> str:
    """``word`` folded, without its longest case or verb ending (one round of :func:`stem_word`'s
    stripping, no normalising): what its inflected forms begin with (``napájený`` → ``napajen``,
    shared with ``napájení``, ``napájené``). The whole folded word when no ending comes off."""
    return _strip_once(fold(word))[0]


_IDENTIFIER = re.compile(r"[\d_]")


@lru_cache(maxsize=262_144)
def stem_word(word: str) -> str:
    """The index key of one token (see the module docstring for the rules).

    >>> stem_word("kontajneroch") == stem_word("kontajner")
    True
    >>> stem_word("Převodníkem") == stem_word("prevodniku")
    True
    >>> stem_word("max485"), stem_word("RASA"), stem_word("JabRef")
    ('max485', 'rasa', 'jabref')
    """
    folded = fold(word)
    if (
        len(folded) <= _MIN_STEM
        or _IDENTIFIER.search(word)
        or not folded.isalpha()
        or (len(word) >= 2 and word.isupper())  # acronym
        or any(ch.isupper() for ch in word[1:])  # camelCase identifier
    ):
        return folded
    if len(word) >= 5 and word[-1] in "šŠ" and fold(word[-2]) in _VOWELS:
        folded = folded[:-1]  # 2nd person singular -eš -íš -áš (vytvoříš, použiješ)
    return _stem_folded(folded)


# What FTS5's unicode61 tokenizer keeps together (letters and digits), except that
# inner and edge underscores stay inside the token so identifiers pass through whole.
_TOKEN = re.compile(r"_*[^\W_]+(?:_+[^\W_]+)*_*")


def tokens(text: str) -> list[str]:
    """The word and identifier tokens of ``text``, in order."""
    return _TOKEN.findall(text)


def stem_text(text: str) -> str:
    """The keys of all tokens of ``text``, space-separated, in the original order.

    >>> stem_text("Prepojenie kontajnerov sieťou; max485 a __init__!")
    'prepoj kontajnr siet max485 a __init__'
    """
    return " ".join(map(stem_word, tokens(unicodedata.normalize("NFC", text))))  # map: no generator frame per token
