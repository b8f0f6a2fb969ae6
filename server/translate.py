"""English words of a query searched in Czech and Slovak too, through a bilingual dictionary.

The notes are Czech and Slovak; people ask in English as well (``holey cheese cut into slices of
equal weight``). The model connects some English questions to Czech and Slovak text, but a small
one misses many, and the words half finds nothing: the notes say ``syr``, not ``cheese``. So a
query written in English (no Czech or Slovak letter, and most of its words English: see
:func:`is_english`) has each English word searched also as its translations that some note holds, by
their word keys (:mod:`builder.core.analysis`): dictionary-based query translation, the classic
way to cross languages without a translation model. Czech and Slovak share most roots, and the
keys fold accents, so a Czech translation (``sýr``, ``překlad``, ``váha``) finds Slovak notes too
(``syra``, ``preklad``, ``váhy``).

The dictionary is FreeDict's English–Czech (Debian ``dict-freedict-eng-ces``, GPL), read where
the package puts it, in the ``dictd`` format: ``<name>.index`` (headword, offset and length in
base 64, a line each) and ``<name>.dict`` or ``<name>.dict.dz`` (gzip, the entries one after
another). An entry is the headword line, then one sense: its translations, comma-separated, a
``[domain]`` before them or a ``(remark)`` beside one at times, a ``Note:`` after. The dictionary
is read once per process (installed later, it is used from the next start). A word's senses are many (``line``: 30)
and unordered, so the ones searched are the translations the notes hold most often
(:data:`MAX_TRANSLATIONS`): in a programmer's notes ``line`` is ``řádek``, not ``vlasec``.
"""

from __future__ import annotations

import gzip
import re
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core.config import dictd_files
from server.query import CZECH_SLOVAK_FUNCTION_WORDS, ENGLISH_FUNCTION_WORDS, Term, content, content_words, keys_of

if TYPE_CHECKING:
    from server.spelling import KeyCounts

MAX_TRANSLATIONS = 4  # per English word: the ones the notes hold most often
MIN_ENGLISH = 0.5  # a query is English when more than this share of its words are English (is_english)
# function words both languages spell alike (``to``, ``do``, ``a``, ``i``, ``my``, ``no``; ``at``, ``me``: ``ať``,
# ``mě`` typed without accents): they say nothing of the query's language
SHARED_FUNCTION_WORDS = ENGLISH_FUNCTION_WORDS & CZECH_SLOVAK_FUNCTION_WORDS | {"a", "i", "my", "no", "at", "me"}

_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_ASIDE = re.compile(r"\[[^\]]*\]|\([^)]*\)")  # a [domain] or a (remark) beside a translation


@dataclass(frozen=True)
class Dictionary:
    """The single-word headwords of a dictd dictionary and their entries (offset, length in ``data``)."""

    entries: dict[str, str]  # headword -> its index lines' "offset<TAB>length" (base 64), one a line
    data: bytes

    def __contains__(self, word: str) -> bool:
        return word in self.entries

    def translations(self, word: str) -> tuple[str, ...]:
        """The translations of ``word`` (lower case), each once, in the dictionary's order; never a single
        character or one without a letter (``x`` → ``10``, ``ampersand`` → ``&``: no word to search), and
        none of a single letter."""
        found: dict[str, None] = {}
        if not translatable(word):
            return ()
        for place in self.entries.get(word, "").splitlines():
            try:
                offset, length = (_number(part) for part in place.split("\t")[:2])
            except (KeyError, ValueError):  # a damaged index line
                continue
            lines = self.data[offset:offset + length].decode("utf-8", "replace").split("\n")[1:]
            for line in lines:
                line = line.strip()
                if not line or line.startswith("Note:"):
                    continue
                for part in _ASIDE.sub("", line).split(","):
                    part = " ".join(part.split())
                    if translatable(part) and part.lower() != word:
                        found.setdefault(part, None)
        return tuple(found)


def translatable(word: str) -> bool:
    """Can ``word`` be looked up, or searched as a translation? Not a single character (a letter is a
    variable, a grade, a size: ``x`` is also the Roman ten) nor a number, which no language owns."""
    return len(word) > 1 and any(char.isalpha() for char in word)


def _number(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _B64[char]
    return value


def read(path: Path) -> Dictionary:
    """The dictionary named ``path``; raises OSError (or ValueError, KeyError on a damaged file)."""
    found = dictd_files(path)
    if found is None:
        raise FileNotFoundError(f"no {path}.index with {path}.dict or {path}.dict.dz")
    index, data_file = found
    raw = data_file.read_bytes()
    data = gzip.decompress(raw) if data_file.suffix == ".dz" else raw
    entries: dict[str, str] = {}
    for line in index.read_text(encoding="utf-8").splitlines():
        word, _, place = line.partition("\t")
        word = word.lower()
        if place and word.isalpha() and word.isascii():  # phrases and the 00-database entries are not looked up
            entries[word] = f"{entries[word]}\n{place}" if word in entries else place
    return Dictionary(entries, data)


_LOADED: dict[Path, Dictionary | str] = {}  # a dictionary read, or why it could not be
_LOCK = threading.Lock()


def load(path: Path | None) -> Dictionary | None:
    """The dictionary at ``path``, read once per process; None when there is none or it cannot be
    read (the search then goes on without translations, and :func:`state` says why)."""
    if path is None:
        return None
    with _LOCK:
        if path not in _LOADED:
            try:
                _LOADED[path] = read(path)
            except (OSError, ValueError, KeyError, EOFError, gzip.BadGzipFile) as exc:
                _LOADED[path] = f"cannot read the dictionary ({type(exc).__name__}: {exc})"
        found = _LOADED[path]
    return found if isinstance(found, Dictionary) else None


def state(path: Path | None) -> dict[str, object]:
    """For ``/api/health``: the dictionary's path, whether this process has read it (None: not yet),
    and why it could not be read."""
    if path is None:
        return {"path": None, "loaded": False, "error": None}
    with _LOCK:
        found = _LOADED.get(path)
    return {"path": str(path), "loaded": None if found is None else isinstance(found, Dictionary),
            "error": found if isinstance(found, str) else None}


def is_english(words: list[str], dictionary: Dictionary) -> bool:
    """Is a query with these words (lower case, as typed, function words too) written in English? None
    has a letter outside ASCII (Czech and Slovak words typed with their accents), and more than
    :data:`MIN_ENGLISH` of those that tell are English: an English function word (``how``, ``for``)
    or a headword. A Czech or Slovak function word (``jak``, ``na``, ``v``) and a word the dictionary
    lacks tell the other way: a Czech question typed without accents has a few headwords (``text``,
    ``program``), and an English one a name or two (``teh tarik``), which the English words outnumber.
    Numbers and the function words both languages spell alike (:data:`SHARED_FUNCTION_WORDS`) tell
    nothing; another single letter is a headword (Czech and Slovak have no one-letter words but
    function words: ``-t``, ``C`` come from technical English)."""
    if not words or any(not word.isascii() for word in words):
        return False
    telling = [word for word in words if word not in SHARED_FUNCTION_WORDS and any(c.isalpha() for c in word)]
    english = sum(word in ENGLISH_FUNCTION_WORDS or word not in CZECH_SLOVAK_FUNCTION_WORDS and word in dictionary
                  for word in telling)
    return english > MIN_ENGLISH * len(telling)


def translated(terms: list[Term], dictionary: Path | None, counts: KeyCounts) -> list[Term]:
    """``terms`` with each English content word's translations that some note holds (at most
    :data:`MAX_TRANSLATIONS`, the ones in most chunks first), when the query is English; else
    ``terms`` as they are. A translation searched already (the word's own key) or made of function
    words only is left out. The dictionary at ``dictionary`` is read for the first query that may be
    English."""
    words = content(terms)
    if not words or not all(t.text.isascii() for t in terms):
        return terms
    found = load(dictionary)
    if found is None or not is_english([t.text for t in terms], found):
        return terms
    offered = {t.text: [(text, keys_of(text)) for text in found.translations(t.text) if content_words(text)]
               for t in words}
    held = counts.of([key for pairs in offered.values() for _, keys in pairs for key in keys.split()])
    out = []
    for term in terms:
        chosen: dict[str, tuple[int, int, str]] = {}  # keys -> (-chunks, order, text)
        for order, (text, keys) in enumerate(offered.get(term.text, ())):  # content words only
            if not keys or keys == term.key or keys in chosen:
                continue
            chunks = min(held[key] for key in keys.split())
            if chunks:
                chosen[keys] = (-chunks, order, text)
        best = sorted(chosen.values())[:MAX_TRANSLATIONS]
        out.append(replace(term, translations=tuple(text for _, _, text in best)) if best else term)
    return out


def untranslated(terms: list[Term]) -> list[Term]:
    """``terms`` as typed, without the translations :func:`translated` gave them."""
    return [replace(term, translations=()) if term.translations else term for term in terms]
