"""What a typed query means to BM25: its words, which of them are function words, their word keys,
and the FTS5 expressions built from them.

User text never becomes FTS5 syntax: it is cut into words and every word is a quoted phrase.
Each word matches its exact form — as a prefix when it has 3+ letters, diacritics optional —
in the breadcrumb and the text, **or** its Czech/Slovak word key (:mod:`builder.core.analysis`)
in the ``stems`` column, so ``převodníkem`` finds ``Převodník`` while an exact form still scores
in more columns and ranks first. A word no note holds as typed may be searched as the forms of
it they hold instead (``forms``: see :func:`server.spelling.respell`). Function words (``a``,
``na``, ``the``…) are recognised on the form as typed — ``byt`` (a flat) is not ``být`` — never in
an all-capitals word (``NA`` may be a name); they find nothing by themselves, so a query of function
words only has nothing to search (:func:`common_only`).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from builder.core.analysis import inflection_base, stem_word

MAX_TERMS = 24
MAX_QUERY_CHARS = 500  # the longest query /api/search, /search and the MCP tools take; the CLI's is cut here
WORD = re.compile(r"[^\W_]+", re.UNICODE)  # FTS5's unicode61 splits at "_" as well

# Czech and Slovak function words, spelled with their diacritics as typed.
CZECH_SLOVAK_FUNCTION_WORDS = frozenset("""
a aby aj ak ako ale alebo ani asi až bez bol bola boli bolo by byl byla byli bylo být byť co čo což do
ho i já ja jak jaké jako je jeho jej její jemu jen jenž ještě ji jí jsem jsi jsme jsou jste k kam
kde kdy když keď keby kto která které který ktorá ktoré ktorý ku lebo len ma má mám máte mi mu my na
nad nám nás nebo nej nie no o od on ona oni ono po pod pre pred před pri při pro proč prečo preto s sa
se si sme so sú ste ta tá tak také tam te teda tedy ten ti tie tiež tj to toho tom tu ty u už v vo vy
z za zo ze že
kterého kterému kterém kterým kterou kteří kterých kterými ktorého ktorému ktorom ktorým ktorú ktorí
ktorých ktorými jaký jaká jakého jakou jakým jakých aký aká aké akého akú akým akých akom
som bude budú budem budeme bych bys bychom byste cez přes mezi medzi
či jestli jestliže zda zdali protože pretože však nějaký nějaká nějaké nějakou nějakého nějakým nějakých
nejaký nejaká nejaké nejakú nejakého nejakým nejakých
kdo koho komu kom kým čeho čemu čem čím čoho čomu čom
budu budeš budeme budete budou podle podľa kvůli kvôli během počas kolem okolo proti
""".split())
ENGLISH_FUNCTION_WORDS = frozenset("""
about an and are as at be but by can do does for from how if in into is it its of on or so that the
their then there these this to was what when where which who why will with you your
me we our us they them he she his her has have been were would should could than those any some each
""".split())
FUNCTION_WORDS = CZECH_SLOVAK_FUNCTION_WORDS | ENGLISH_FUNCTION_WORDS


@dataclass(frozen=True)
class Term:
    """One word of the query."""

    text: str  # lower-cased, as typed (diacritics kept)
    key: str  # its word key for the stems column
    function: bool  # a function word: it must match, but it finds nothing by itself and is not marked
    name: bool = False  # typed as a name: a capital inside it (GPIO, DataFrame) or opening a later word (Heroku)
    forms: tuple[str, ...] = ()  # in no note as typed: the forms of it they hold (server.spelling.respell)
    translations: tuple[str, ...] = ()  # an English word: its Czech translations the notes hold (server.translate)

    @property
    def searched(self) -> tuple[str, ...]:
        """What the exact columns and the snippets look for: the forms the notes hold, else the word."""
        return self.forms or (self.text,)

    @property
    def exact(self) -> str:
        """Its phrase for the exact columns: a prefix from 3 letters on (endings vary), or each of its
        ``forms`` whole."""
        if self.forms:
            return "(" + " OR ".join(f'"{form}"' for form in self.forms) + ")"
        return f'"{self.text}"*' if len(self.text) >= 3 else f'"{self.text}"'

    @property
    def translation_keys(self) -> tuple[str, ...]:
        """Each translation as the stems column holds it: its words' keys, space-separated (a phrase)."""
        return tuple(keys_of(translation) for translation in self.translations)

    @property
    def translation_words(self) -> tuple[str, ...]:
        """The words of its translations, function words left out (``se`` of ``rovnající se``)."""
        return tuple(word for translation in self.translations for word in content_words(translation))


def content_words(text: str) -> list[str]:
    """The words of ``text`` that are not function words, as written."""
    return [word for word in WORD.findall(text) if word.lower() not in FUNCTION_WORDS]


def keys_of(text: str) -> str:
    """The word keys of ``text``'s words, space-separated."""
    return " ".join(stem_word(word) for word in WORD.findall(unicodedata.normalize("NFC", text)))


def parse(text: str) -> list[Term]:
    """The words of ``text`` in order, without repeats (at most ``MAX_TERMS``)."""
    seen: dict[str, bool] = {}
    names: set[str] = set()
    for i, word in enumerate(WORD.findall(unicodedata.normalize("NFC", text[:MAX_QUERY_CHARS]))):
        lower = word.lower()
        capitals = len(word) > 1 and word.isupper()
        seen[lower] = seen.get(lower, True) and not capitals and lower in FUNCTION_WORDS
        if len(word) > 1 and (word[0].isupper() and i > 0 or any(c.isupper() for c in word[1:])):
            names.add(lower)
    return [Term(w, stem_word(w), function, w in names) for w, function in list(seen.items())[:MAX_TERMS]]


def content(terms: list[Term]) -> list[Term]:
    """The terms that can find something by themselves."""
    return [t for t in terms if not t.function]


def common_only(terms: list[Term]) -> str | None:
    """The words of a query of function words only (``na``, ``a to``), which would find every note: it
    has nothing to search (the search says so, and what to add); None when it has a word to search."""
    if not terms or content(terms):
        return None
    return " ".join(t.text for t in terms)


def _term_group(term: Term, stems: bool) -> str:
    exact = f"{{breadcrumb text}} : {term.exact}"
    if not stems or term.function:
        return f"({exact})"
    translated = "".join(f' OR stems : "{keys}"' for keys in term.translation_keys)
    return f'({exact} OR stems : "{term.key}"{translated})'


def match_all(terms: list[Term], stems: bool) -> str:
    """An FTS5 expression that every term must match (its exact form, or its key when ``stems``)."""
    return " AND ".join(_term_group(t, stems) for t in terms)


def match_any(terms: list[Term], stems: bool) -> str:
    """An FTS5 expression that any content term may match."""
    return " OR ".join(_term_group(t, stems) for t in content(terms) or terms)


def marks(terms: list[Term]) -> list[str]:
    """What snippets and the landing page mark: the content words as searched (never a function
    word), and of each translation's words the beginning their forms share (``mlek`` for ``mléko``:
    the page marks words that begin with one, and a note writes ``mléka``, ``mlékem``)."""
    translated = [inflection_base(word) for t in content(terms) for word in t.translation_words]
    return [word for t in content(terms) for word in t.searched] + translated
