"""What a sentence of an answer claims, in the terms the answer check compares: its words, numbers and
negations, and the parts of it each citation stands for.

A sentence ``A [1] and B [2].`` makes two claims: ``A``, which [1] must support, and ``and B``, which [2]
must; text after its last citation belongs to the claim before it (``Podle [1] je to X.``). A claim's
**content words** are its words that are not free words (:mod:`server.lexicon`), numbers aside: each must
be found in one window of each passage the claim cites (:mod:`server.evidence`). Its **numbers** are its
digits and number words, as values. It is **negated** when it holds a negator.

The same tokenizer reads passages (:func:`tokens`), so both sides are cut into words alike: offsets into
the text as given, English contractions split (``doesn't`` → ``does`` + a negator), possessive ``'s``
dropped.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from builder.core.analysis import stem_word
from builder.core.slug import fold
from server import lexicon

CITE_RE = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
URL_RE = re.compile(r"(?:https?|ftp)://[^\s<>\"'\])]+|\bwww\.[^\s<>\"'\])]+|\]\([^)\s]*\)", re.IGNORECASE)
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,:/]\d+)*")
# A word: letters (an apostrophe inside: it's, don't, O'Brien), or letters and digits together (max485, 3x).
_WORD = re.compile(r"[^\W_]+(?:['’][^\W\d_]+)*")
_CZECH_SLOVAK_LETTERS = re.compile(r"[áäčďéěíĺľňóôŕřšťúůýžÁÄČĎÉĚÍĹĽŇÓÔŔŘŠŤÚŮÝŽ]")
_ENGLISH_MARKERS = frozenset("the is are was were of and to in that with for this it be not what how does do an"
                             .split())
_CZECH_SLOVAK_MARKERS = frozenset("je jsou se na v ve a je sa sú som ako aby že ze to do pro pre při pri z za "
                                  "ktery který ktorý není nie".split())


# Every quotation mark a model or a note may use, and the one each becomes in :func:`normalize`.
DOUBLE_QUOTES = "\"„“”«»‟″"

SINGLE_QUOTES = "'‚‘’‛′`´"

_UNIFY = str.maketrans({**{c: '"' for c in DOUBLE_QUOTES}, **{c: "'" for c in SINGLE_QUOTES if c != "`"}})

# Pairs that open and close a quotation (the model quotes passages with any of them).
QUOTE_PAIRS = {"„": "“", "“": "”", "”": "”", '"': '"', "«": "»", "»": "«", "‚": "‘", "‘": "’", "'": "'"}

MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")

# A word before a full stop that does not end a sentence (lower case; Czech, Slovak, English).
ABBREVIATIONS = frozenset("""
    napr např tzv tj t.j resp atď atd apod pod príp popr str s č čís roč obr tab kap odd ods pozn
    viz vid cca mj mil tis ing mgr bc doc prof dr phdr judr mudr rndr csc hod min sek
    max e.g i.e etc vs cf fig no nr approx mr mrs ms st jr sr ca al incl
""".split())

def normalize(text: str) -> str:
    """NFC, one kind of double and of single quotation mark, markdown's emphasis and code marks
    dropped, whitespace collapsed: the form quotes and passages are compared in."""
    text = unicodedata.normalize("NFC", text).translate(_UNIFY)
    text = MD_LINK_RE.sub(r"\1", text)  # a link reads as its text
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!>~|])", r"\1", text)  # markdown's escapes: LiquidCrystal\_I2C
    text = text.replace("*", "").replace("`", "").replace("\u00ad", "")
    return re.sub(r"\s+", " ", text).strip()

def ends_sentence(before: str, rest: str) -> bool:
    """Does a full stop after ``before`` end the sentence, ``rest`` following it?"""
    word = re.search(r"(\S+)$", before)
    last = (word.group(1) if word else "").lstrip("([\"'„“«»‚‘").lower()
    if last in ABBREVIATIONS or (len(last) == 1 and last.isalpha()):
        return False  # "napr. ", "e.g. ", an initial "J. Novák", "s. 12"
    if re.fullmatch(r"\d{1,2}", last) and (rest[:1].isdigit() or rest[:1].islower()):
        return False  # an ordinal or a date: "4. 12. 2026", "3. kapitola"
    return not rest[:1].islower()

@dataclass(frozen=True)
class Quote:
    text: str  # inside the quotation marks
    start: int
    end: int

def quotations(text: str) -> list[Quote]:
    """The quotations in ``text``: from an opening mark at a word's start to its closing mark (an
    apostrophe inside a word, as in it’s or don’t, closes nothing)."""
    found: list[Quote] = []
    i = 0
    while i < len(text):
        closing = QUOTE_PAIRS.get(text[i])
        if closing is not None and (i == 0 or not text[i - 1].isalnum()):
            j = text.find(closing, i + 1)
            while j != -1 and closing in "’‘'" and j + 1 < len(text) and text[j + 1].isalpha():
                j = text.find(closing, j + 1)
            if j > i + 1:
                found.append(Quote(text[i + 1:j], i, j + 1))
                i = j + 1
                continue
        i += 1
    return found

def quote_spans(sentence: str) -> list[tuple[int, int]]:
    """Where the quotations and code spans of ``sentence`` stand (marks included)."""
    spans = [(q.start, q.end) for q in quotations(sentence)]
    return spans + [(m.start(), m.end()) for m in re.finditer(r"`[^`]+`", sentence)]

def quotes(sentence: str) -> tuple[str, ...]:
    """The quoted spans of a sentence, as written: quotations and code spans (code is always copied)."""
    spans = [(q.start, q.text) for q in quotations(sentence)]
    spans += [(m.start(), m.group(1)) for m in re.finditer(r"`([^`]+)`", sentence)]
    return tuple(text for _, text in sorted(spans) if text.strip())


@dataclass(frozen=True)
class Token:
    """One word of a claim or a passage."""

    text: str  # as written
    start: int  # offsets into the text it was read from
    end: int
    folded: str  # lower case, no diacritics
    negator: bool  # it negates its clause (not, never, ne, nie, není, bez, without…)
    number: float | None  # the value of a number word (pět → 5), else None
    marked: bool = False  # the text it was read from writes diacritics: its spelling tells words apart

    @property
    def free(self) -> bool:
        """A word that carries no fact (:func:`server.lexicon.is_free`); where the text writes diacritics, only
        as the free word is spelled (``být``, not ``byt``; ``mala``, not ``malá``)."""
        return (self.number is None and not self.negator and lexicon.is_free(self.folded)
                and (not self.marked or lexicon.free_as_written(self.folded, self.text)))

    @property
    def content(self) -> bool:
        """A word whose fact a passage must hold: not free, not a negator, not a number, not yes or no."""
        return not (self.free or self.negator or self.number is not None or self.folded in lexicon.YES_NO
                    or self.folded.isdigit())


def in_english(text: str) -> bool:
    """Is ``text`` English rather than Czech or Slovak? No Czech or Slovak letter, and at least as many
    English marker words as Czech and Slovak ones (``no``, ``ten``, ``to`` read differently in each)."""
    if _CZECH_SLOVAK_LETTERS.search(text):
        return False
    words = [w.lower() for w in _WORD.findall(text)]
    english = sum(w in _ENGLISH_MARKERS for w in words)
    czech = sum(w in _CZECH_SLOVAK_MARKERS for w in words)
    return english > 0 and english >= czech


def accented(text: str) -> bool:
    """Is ``text`` written with diacritics (a Czech or Slovak accented letter)? Czech typed without them is
    common (``kava je horka``); there ``horka`` may be ``horká`` or ``hořká``."""
    return _CZECH_SLOVAK_LETTERS.search(text) is not None


_LIMIT_PHRASES = re.compile(r"\b(?:at (most|least)|up to)\b", re.IGNORECASE)


def words_of(text: str, english: bool, *, urls: bool = False) -> list[Token]:
    """The words of ``text`` in order, citation marks (and, unless ``urls``, URLs) left out: an answer's
    URLs are checked apart, a passage's words include its links'. "At most" and "up to" read as "max",
    "at least" as "min"."""
    masked = _blank(CITE_RE, text) if urls else _blank(URL_RE, _blank(CITE_RE, text))
    masked = _LIMIT_PHRASES.sub(lambda m: ("min" if m.group(1) and m.group(1).lower() == "least" else "max")
                                .ljust(len(m.group(0))), masked)
    marked = accented(text)
    found: list[Token] = []
    for m in _WORD.finditer(masked):
        word, start = m.group(0), m.start()
        parts = re.split(r"['’]", word)
        if len(parts) > 1:  # it's, don't, Jana's, O'Brien
            head, tail = parts[0], parts[-1].lower()
            if tail == "t" and head.lower().endswith("n") and len(head) > 1:  # doesn't, can't, won't
                base = head[:-1]
                found.append(_token(base, start, start + len(base), english, marked))
                found.append(Token("n't", start + len(base), m.end(), "not", True, None))
                continue
            if tail in ("s", "re", "ve", "ll", "d", "m"):
                found.append(_token(head, start, start + len(head), english, marked))
                continue
        token = _token(word, start, m.end(), english, marked)
        if token.negator and masked[m.end():m.end() + 1] in "-‑" and masked[m.end() + 1:m.end() + 2].isalpha():
            token = Token(token.text, token.start, token.end, token.folded, False, None, marked)  # no-op, non-stop
        found.append(token)
    return found


def _token(word: str, start: int, end: int, english: bool, marked: bool) -> Token:
    folded = fold(word)
    return Token(word, start, end, folded, lexicon.is_negator(folded, english), lexicon.number_value(folded, english),
                 marked)


def mask_marks(text: str) -> str:
    """``text`` with its citation marks and URLs as spaces (offsets kept)."""
    return _blank(URL_RE, _blank(CITE_RE, text))


def number_in(number: str, text: str) -> bool:
    """Does the number occur in ``text`` as a number (not a part of a longer one)? A decimal comma and point
    are the same; a date's parts may be spaced (``4.12.2026`` = ``4. 12. 2026``)."""
    parts = re.split(r"[.,:/]", number)
    pattern = r"\s?[.,:/]\s?".join(re.escape(p) for p in parts)
    return re.search(rf"(?<![\d]){pattern}(?![\d])", text) is not None


def _blank(pattern: re.Pattern[str], text: str) -> str:
    """``text`` with each match of ``pattern`` replaced by spaces: offsets stay those of the text as given."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


@lru_cache(maxsize=65_536)
def keys(word: str) -> frozenset[str]:
    """What a word may match by: its folded form, its Czech/Slovak word key and, for an ASCII word, its
    English stem (``approved`` ↔ ``approve``)."""
    folded = fold(word)
    found = {folded, "k:" + stem_word(word)}
    if folded.isascii() and folded.isalpha():
        found.add("e:" + _english_stem(lexicon.IRREGULAR.get(folded, folded)))  # paid ~ pay, went ~ go
    return frozenset(found)


def _english_stem(word: str) -> str:
    """Snowball's English (Porter 2) stem; its stemmer object keeps state while it works, hence the lock."""
    with _STEMMING:
        return str(_english_stemmer().stemWord(word))


_STEMMING = threading.Lock()


@lru_cache(maxsize=1)
def _english_stemmer() -> Any:
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def numbers_said(found: list[Token], text: str) -> tuple[str, ...]:
    """The numbers of a claim: each digit group as written (``700``, ``1,5``, ``4.12.2026``) and each run of
    number words as its value (``dvě stě`` → ``200``, ``twenty-five`` → ``25``, ``půl`` → ``0.5``)."""
    out = [m.group(0).rstrip(".,:/") for m in NUMBER_RE.finditer(_blank(URL_RE, _blank(CITE_RE, text)))]
    return tuple(dict.fromkeys(out + word_numbers(found)))


def word_numbers(found: list[Token]) -> list[str]:
    """The values of the runs of number words among ``found`` (``tři až čtyři`` → 3 and 4)."""
    values: list[str] = []
    total = current = 0.0
    running = False
    for token in [*found, None]:
        value = token.number if token is not None else None
        if value is None:
            if running:
                values.append(format_number(total + current))
            total = current = 0.0
            running = False
            continue
        running = True
        multiplier = lexicon.MULTIPLIERS.get(token.folded) if token is not None else None
        if multiplier:
            current = (current or 1) * multiplier
            if multiplier >= 1000:
                total, current = total + current, 0.0
        else:
            current += value
    return values


def format_number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


@dataclass(frozen=True)
class Claim:
    """One part of a sentence and the passages it cites."""

    sentence: int  # 1-based, in the answer
    text: str  # the part as written (its citation marks left out)
    cited: tuple[int, ...]
    english: bool  # written in English (its words may be checked through the dictionary)

    @property
    def tokens(self) -> list[Token]:
        return words_of(self.text, self.english)

    @property
    def content(self) -> list[Token]:
        """Its content words, each once (by folded form), in order. A word capitalised inside the claim is a
        name (``written in Go``), never a free word; ``I`` stays one."""
        seen: dict[str, Token] = {}
        found = self.tokens
        for index, token in enumerate(found):
            named = (index > 0 and token.text[:1].isupper() and len(token.text) > 1 and token.number is None
                     and not token.negator and token.folded not in lexicon.YES_NO)
            framing = lexicon.is_frame_noun(token.folded) and (any(
                other.folded in lexicon.FRAME_CUES for other in found[max(0, index - 4):index + 5])
                or index == 0 and self.text[token.end:].startswith(":"))  # "Rada: pijte vodu", "Note: …"
            if (token.content and not framing or named) and token.folded not in seen:
                seen[token.folded] = token
        return list(seen.values())

    @property
    def accented(self) -> bool:
        """Written with diacritics: its words must write the marks that tell Czech words apart as the passage
        does (:func:`server.wordforms.spelled_alike`)."""
        return accented(self.text)

    @property
    def negated(self) -> bool:
        return any(token.negator for token in self.tokens)

    @property
    def numbers(self) -> tuple[str, ...]:
        return numbers_said(self.tokens, self.text)

    @property
    def bare(self) -> bool:
        """Only yes or no (and free words): nothing a passage could be found to say."""
        found = self.tokens
        return any(t.folded in lexicon.YES_NO for t in found) and not self.content and not self.numbers


def claims(sentence: int, text: str) -> tuple[Claim, ...]:
    """The claims of one sentence: the text before each group of citations, cited by that group; text
    after the last group joins the claim before it. A leading "Yes," / "Ano," is dropped (it answers the
    question; what follows is the claim). Parts without a word, number or quotation are left out."""
    english = in_english(_unquoted(CITE_RE.sub(" ", text)))
    parts: list[tuple[str, tuple[int, ...]]] = []
    at = 0
    for m in CITE_RE.finditer(text):
        cited = _numbers_of(m.group(1))
        piece = text[at:m.start()]
        if parts and not piece.strip(" \t.,;:!?"):
            parts[-1] = (parts[-1][0], tuple(dict.fromkeys(parts[-1][1] + cited)))  # [1][2], [1], [2]
        else:
            parts.append((piece, cited))
        at = m.end()
    tail = text[at:]
    if parts and words_of(tail, english):
        parts[-1] = (parts[-1][0] + " " + tail, parts[-1][1])
    found: list[Claim] = []
    for piece, cited in parts:
        stripped = lexicon.YES_NO_OPENING.sub("", piece, count=1) if not found else piece
        claim = Claim(sentence, stripped.strip() or piece.strip(), cited, english)
        if claim.content or claim.numbers or claim.bare or _has_quote(piece):
            found.append(claim)
        elif found:
            found[-1] = Claim(sentence, found[-1].text, tuple(dict.fromkeys(found[-1].cited + cited)), english)
        else:
            found.append(claim)  # only free words: "Podle [1]" — it still cites, and claims nothing
    return tuple(found)


def _unquoted(text: str) -> str:
    """``text`` without its quotations: an English sentence quoting a Czech note is still English."""
    return re.sub(r"„[^“”]*[“”]|“[^”]*”|«[^»]*»|\"[^\"]*\"|`[^`]*`", " ", text)


def _numbers_of(group: str) -> tuple[int, ...]:
    return tuple(dict.fromkeys(int(n) for n in re.split(r"\s*[,;]\s*", group)))


def _has_quote(text: str) -> bool:
    return bool(re.search(r"[\"„“”«»`]", text))
