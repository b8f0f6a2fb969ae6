"""English words of a query searched in Czech and Slovak too, through a bilingual dictionary.

The notes are Czech and Slovak; people ask in English as well (``holey cheese cut into slices of
equal weight``). The model connects some English questions to Czech and Slovak text, but a small
one misses many, and the words half finds nothing: the notes say ``syr``, not ``cheese``. So a
query written in English (no Czech or Slovak letter, and most of its content words headwords of
the dictionary) has each English word searched also as its translations that some note holds, by
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
from server.query import Term, content, content_words, keys_of

if TYPE_CHECKING:
    from server.spelling import KeyCounts

MAX_TRANSLATIONS = 4  # per English word: the ones the notes hold most often
MIN_ENGLISH = 0.5  # a query is English when more than this share of its content words are headwords

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
        """The translations of ``word`` (lower case), each once, in the dictionary's order."""
        found: dict[str, None] = {}
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
                    if part and part.lower() != word:
                        found.setdefault(part, None)
        return tuple(found)


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
    """Is a query with these content words (lower case, as typed) written in English? None has a
    letter outside ASCII (Czech and Slovak words typed with their accents), and more than
    :data:`MIN_ENGLISH` of them are headwords (a Czech question typed without accents has a few:
    ``text``, ``program``)."""
    if not words or any(not word.isascii() for word in words):
        return False
    return sum(word in dictionary for word in words) > MIN_ENGLISH * len(words)


def translated(terms: list[Term], dictionary: Path | None, counts: KeyCounts) -> list[Term]:
    """``terms`` with each English content word's translations that some note holds (at most
    :data:`MAX_TRANSLATIONS`, the ones in most chunks first), when the query is English; else
    ``terms`` as they are. A translation searched already (the word's own key) or made of function
    words only is left out. The dictionary at ``dictionary`` is read for the first query that may be
    English."""
    words = content(terms)
    if not words or not all(t.text.isascii() for t in words):
        return terms
    found = load(dictionary)
    if found is None or not is_english([t.text for t in words], found):
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
