"""Heading anchors and URL slugs: one function, shared by the chunker and the renderer.

Slugs are ASCII (diacritics folded: "Čaj a mléko" → "caj-a-mleko") so that they
are readable, stable across platforms and safe in every URL, and unique within
one note ("poznamky", "poznamky-1", ...).
"""

from __future__ import annotations

import re
import unicodedata

NON_WORD = re.compile(r"[^a-z0-9]+")  # what a slug turns into "-"
# Letters that NFKD does not decompose into base letter + combining mark.
_SPECIAL = str.maketrans({"ß": "ss", "æ": "ae", "ø": "o", "đ": "d", "ł": "l", "œ": "oe", "þ": "th", "ı": "i"})


def fold(text: str) -> str:
    """Lowercase ``text`` and strip diacritics ("Příliš Žluťoučký" → "prilis zlutoucky")."""
    if text.isascii():  # most words of a query's snippets: nothing to decompose
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower().translate(_SPECIAL))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def slugify(text: str, fallback: str = "section") -> str:
    """An ASCII slug for ``text``; ``fallback`` when nothing sluggable is left."""
    slug = NON_WORD.sub("-", fold(text)).strip("-")
    return slug[:80].rstrip("-") or fallback


class Slugger:
    """Hands out slugs that are unique within one note, in document order."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def slug(self, text: str) -> str:
        base = slugify(text)
        candidate, n = base, 0
        while candidate in self._used:
            n += 1
            candidate = f"{base}-{n}"
        self._used.add(candidate)
        return candidate
