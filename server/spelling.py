"""Typos: a query word that no note holds, in any form, is replaced by a close word the notes do hold.

"Close" is a Damerau–Levenshtein distance of 1 (2 for words of 10+ letters) between folded words
(lower case, no diacritics: what the full-text index holds). Among close words the nearest wins,
then the one in more chunks. Only words of 4+ letters that are not identifiers (no digits) are
corrected, and a candidate must share the typed word's first letter: the first letter is rarely the
mistyped one, and it keeps the look-up to a short slice of the vocabulary.

Before that, a word is tried as another form of a word the notes hold (:func:`respell`): when
the notes hold words that are its beginning without its ending plus a short ending, it is searched
as those words and is no typo.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core.analysis import inflection_base, stem_word
from builder.core.slug import fold
from server.query import Term, content

if TYPE_CHECKING:
    from sqlite3 import Connection

MIN_LETTERS = 4
MIN_BASE = 5  # letters an inflection's base must have (shorter ones begin too many words)
MAX_ENDING = 3  # letters a form may have after the base (napájen-í, odsaden-ie; not zprav-idla)
MAX_FORMS = 12
MAX_CANDIDATES = 10_000  # words of one first letter compared, the most frequent (the rest are rare words)
MAX_WORD = 1000  # longer than any word FTS5 holds
SHORTEST = MIN_LETTERS - 1  # the shortest candidate: one edit from the shortest word corrected


MAX_KNOWN_KEYS = 100_000  # word keys' counts kept (~10 MB at most); past it they are read again


class _PerContent:
    """A dict shared by the searches while the index's content is the same: a new one for another
    index file or content token (or once it holds ``limit`` items). Reading the token before what
    is kept makes what is kept at least as new as the token says."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._index: tuple[str, str] | None = None
        self._items: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def of(self, conn: Connection) -> dict[Any, Any]:
        """What is kept for the content behind ``conn``."""
        index = (db.database_file(conn), db.content_token(conn))
        with self._lock:
            if index != self._index or len(self._items) >= self._limit:
                self._index, self._items = index, {}
            return self._items


class _Candidates:
    """The candidate words of an index by first letter (the ``MAX_CANDIDATES`` most frequent, by
    length), kept while the index's content is the same: reading the words from ``chunks_vocab``
    again for each word no note holds cost ~240 ms per pass over the dev queries at 100,000 chunks
    (docs/BENCHMARKS.md), 2 ms once the lists are kept.
    One list per letter (at most 26: only ASCII words are corrected, ≤ ~1 MB each) serves every
    length, so a long-running server reads each letter once per content version."""

    def __init__(self) -> None:
        self._lists = _PerContent(limit=64)

    def get(self, conn: Connection, letter: str, lengths: tuple[int, int]) -> list[tuple[str, int]]:
        """The letter's candidate words of ``lengths[0]`` to ``lengths[1]`` letters, with their chunk counts."""
        lists = self._lists.of(conn)
        by_length: dict[int, list[tuple[str, int]]] | None = lists.get(letter)
        if by_length is None:
            by_length = {}
            for word, chunks in db.frequent_words(conn, letter, SHORTEST, MAX_CANDIDATES):
                by_length.setdefault(len(word), []).append((word, chunks))
            lists[letter] = by_length
        return [found for length in range(lengths[0], lengths[1] + 1) for found in by_length.get(length, ())]


_CANDIDATES = _Candidates()
# Word keys' chunk counts: ``fts5vocab`` reads a key's whole list of chunks to count them (~1 ms for
# ``na``, 40,312 chunks, at 100,000), and the common keys that cost the most come back query after query.
_KNOWN_COUNTS = _PerContent(limit=MAX_KNOWN_KEYS)


class KeyCounts:
    """How many chunks hold each word key (the stems column) for one query: the typo check, the
    translations and BM25's common-terms split ask about the same words. Each key is read from
    ``chunks_vocab`` once per content of the index (:data:`_KNOWN_COUNTS`)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._known: dict[str, int] | None = None  # looked up on the first question

    def of(self, keys: list[str]) -> dict[str, int]:
        """The chunk count of each of ``keys`` (0 for a key no chunk holds)."""
        if self._known is None:
            self._known = _KNOWN_COUNTS.of(self._conn)
        known = self._known
        missing = [key for key in dict.fromkeys(keys) if key not in known]
        if missing:
            found = db.key_chunk_counts(self._conn, missing)
            known.update({key: found.get(key, 0) for key in missing})
        return {key: known[key] for key in keys}


def distance(a: str, b: str, limit: int) -> int:
    """Damerau–Levenshtein distance (optimal string alignment) of ``a`` and ``b``, or ``limit + 1``
    as soon as it is certain to exceed ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            cost = 0 if ca == cb else 1
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return previous[-1]


def _correctable(term: Term) -> bool:
    folded = fold(term.text)
    return len(folded) >= MIN_LETTERS and folded.isalpha() and folded.isascii()


def respell(conn: Connection, terms: list[Term], counts: KeyCounts | None = None) -> tuple[list[Term], dict[str, str]]:
    """What to search for the content words that no note holds in any form (each looked up once;
    a word whose key ``counts`` finds in some chunk is held without another look-up).
    Another form of a word the notes have (``napájený`` where they say ``napájení``, ``odsadený``
    where they say ``odsadenie``: forms the word keys do not join) is searched as the ``forms`` of it
    they hold: words that are its beginning without its ending
    (:func:`~builder.core.analysis.inflection_base`, 5+ letters) plus at most ``MAX_ENDING`` letters.
    Any other such word is a typo: the second value maps it to the close word to search instead."""
    if not db.has_vocabulary(conn):
        return terms, {}
    checked = [t for t in terms if not t.function and not t.translations and _correctable(t)]
    held = counts.of([t.key for t in checked]) if counts is not None and checked else {}
    out: list[Term] = []
    corrections: dict[str, str] = {}
    for term in terms:
        folded = fold(term.text)
        if term in checked and not held.get(term.key) and not db.has_word_or_key(conn, folded, term.key):
            forms = _forms(conn, folded, inflection_base(term.text))
            if forms:
                term = replace(term, forms=forms)
            elif (close := _closest(conn, folded)) is not None:
                corrections[term.text] = close
        out.append(term)
    return out, corrections


def _forms(conn: Connection, folded: str, base: str) -> tuple[str, ...]:
    if not MIN_BASE <= len(base) < len(folded):
        return ()
    return tuple(word for word, _ in db.words_starting(conn, base, (len(base), len(base) + MAX_ENDING), MAX_FORMS))


def _closest(conn: Connection, folded: str) -> str | None:
    """The indexed word nearest to ``folded`` (the more frequent on a tie), within the distance limit."""
    # a correct word the notes lack (``zvednout``) is often two edits from an unrelated one (``zvyknout``)
    limit = 2 if len(folded) >= 10 else 1
    best: tuple[int, int, str] | None = None
    lengths = (len(folded) - limit, len(folded) + limit)
    letters = set(folded)
    for word, chunks in _CANDIDATES.get(conn, folded[0], lengths):
        if len(letters.symmetric_difference(word)) > 2 * limit:
            continue  # each edit changes the set of letters by at most two: certainly too far
        d = distance(folded, word, limit)
        if d <= limit and (best is None or (d, -chunks, word) < best):
            best = (d, -chunks, word)
    return best[2] if best is not None else None


def unknown_names(conn: Connection, terms: list[Term]) -> list[str]:
    """The words typed as names (``Heroku``, ``GPIO``; see :class:`~server.query.Term`) that no note holds:
    the query asks about something the notes do not cover, however well its other words match (a
    search for Flask on Heroku over notes on Flask alone). A name the notes hold in translation
    (``Slovak``: ``slovenský``) is held."""
    if not db.has_vocabulary(conn):
        return []
    return [t.text for t in content(terms) if t.name and not t.translations and not _holds_name(conn, t)]


def _holds_name(conn: Connection, term: Term) -> bool:
    """Does a note hold the name as typed (or as the start of a word), or inflected (``Pythonu``,
    ``Dockerom``: a word that shares all but its last two letters and its word key)? The key alone is
    too loose for foreign names: ``heroku`` and ``herky`` share one."""
    folded = fold(term.text)
    if db.words_starting(conn, folded, (len(folded), MAX_WORD), 1):
        return True
    start = max(3, len(folded) - 2)
    return any(stem_word(word) == term.key
               for word, _ in db.words_starting(conn, folded[:start], (start, len(folded) + 2), MAX_CANDIDATES))


def replaced(terms: list[Term], corrections: dict[str, str]) -> list[Term]:
    """``terms`` with the corrected words in place of the typed ones."""
    return [Term(corrections[t.text], stem_word(corrections[t.text]), t.function) if t.text in corrections else t
            for t in terms]
