"""The check an answer passes before anyone sees it: pure functions, no I/O, no model.

An answer is written from numbered passages (:mod:`server.answer`). It is accepted only when

- every sentence carries at least one ``[n]`` and every ``n`` is a passage's number;
- every quoted span occurs verbatim in a passage the sentence cites (after :func:`normalize`);
- every number and date in a sentence occurs in a passage the sentence cites;
- it holds no URL or link of its own: the links are made from the sources, never by the model.

Each failure is a :class:`Problem`; the list is what the repair request shows the model, and what a
refused answer reports. Sentences are split for Czech, Slovak and English text: abbreviations
(``napr.``, ``tzv.``, ``e.g.``), ordinals and dates (``4. 12. 2026``), code spans and list items.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# Every quotation mark a model or a note may use, and the one each becomes in :func:`normalize`.
DOUBLE_QUOTES = "\"„“”«»‟″"
SINGLE_QUOTES = "'‚‘’‛′`´"
_UNIFY = str.maketrans({**{c: '"' for c in DOUBLE_QUOTES}, **{c: "'" for c in SINGLE_QUOTES if c != "`"}})
# Pairs that open and close a quotation (the model quotes passages with any of them).
QUOTE_PAIRS = {"„": "“", "“": "”", "”": "”", '"': '"', "«": "»", "»": "«", "‚": "‘", "‘": "’", "'": "'"}
CITE_RE = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
URL_RE = re.compile(r"(?:https?|ftp)://[^\s<>\"'\])]+|\bwww\.[^\s<>\"'\])]+|\]\([^)\s]*\)", re.IGNORECASE)
MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)\s]*\)")
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:[.,:/]\d+)*")
# A word before a full stop that does not end a sentence (lower case; Czech, Slovak, English).
ABBREVIATIONS = frozenset("""
    napr např tzv tj t.j resp atď atd apod pod príp popr str s č čís roč obr tab kap odd ods pozn
    viz vid cca mj mil tis ing mgr bc doc prof dr phdr judr mudr rndr csc hod min sek
    max e.g i.e etc vs cf fig no nr approx mr mrs ms st jr sr ca al incl
""".split())
MAX_SHOWN = 80  # characters of a sentence or quote a problem shows


@dataclass(frozen=True)
class Problem:
    """One reason an answer cannot be shown: its kind, the sentence (1-based, 0: the whole answer) and why."""

    kind: str  # uncited | unknown_source | quote | number | link; provider: no answer came (server.answer)
    sentence: int
    message: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "sentence": self.sentence, "message": self.message}


@dataclass(frozen=True)
class Sentence:
    text: str  # as written, citations included
    cited: tuple[int, ...]  # the passage numbers it cites, in order, each once


def normalize(text: str) -> str:
    """NFC, one kind of double and of single quotation mark, markdown's emphasis and code marks
    dropped, whitespace collapsed: the form quotes and passages are compared in."""
    text = unicodedata.normalize("NFC", text).translate(_UNIFY)
    text = MD_LINK_RE.sub(r"\1", text)  # a link reads as its text
    text = re.sub(r"\\([\\`*_{}\[\]()#+\-.!>~|])", r"\1", text)  # markdown's escapes: LiquidCrystal\_I2C
    text = text.replace("*", "").replace("`", "").replace("\u00ad", "")
    return re.sub(r"\s+", " ", text).strip()


def citations(text: str) -> tuple[int, ...]:
    """The passage numbers ``[1]``, ``[2, 3]`` in ``text``, in order, each once."""
    found = [int(n) for m in CITE_RE.finditer(text) for n in re.split(r"\s*[,;]\s*", m.group(1))]
    return tuple(dict.fromkeys(found))


def sentences(answer: str) -> tuple[Sentence, ...]:
    """The answer's sentences. A list item or a line is a sentence of its own; citations written after
    the full stop (``… end. [2]``) belong to the sentence before them."""
    parts: list[str] = []
    for line in answer.splitlines():
        line = re.sub(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+", "", line).strip()  # a list item's marker
        if line:
            parts.extend(_split_line(line))
    merged: list[str] = []
    for part in parts:
        if merged and not CITE_RE.sub("", part).strip(" .,;:!?"):
            merged[-1] = f"{merged[-1]} {part}"  # only citations: they close the sentence before
        else:
            merged.append(part)
    return tuple(Sentence(text, citations(text)) for text in merged)


def _split_line(line: str) -> list[str]:
    """One line cut after ``.``, ``!``, ``?`` or ``…`` (a closing quotation mark and citations may follow)
    where a new sentence starts; never inside a code span or a quotation, nor after an abbreviation,
    an initial or an ordinal."""
    protected = _protected_spans(line)
    out, start = [], 0
    for m in re.finditer(r"[.!?…]+[\"”“»«']?(?:\s*\[[\d,;\s]+\])*(?=\s+\S)", line):
        if any(a < m.end() < b for a, b in protected):
            continue
        if m.group(0)[0] == "." and not _ends_sentence(line[start:m.start()], line[m.end():].lstrip()):
            continue
        out.append(line[start:m.end()].strip())
        start = m.end()
    out.append(line[start:].strip())
    return [part for part in out if part]


def _protected_spans(line: str) -> list[tuple[int, int]]:
    """Where a full stop ends no sentence: code spans and quotations."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"`[^`]*`", line)]
    return spans + [(q.start, q.end) for q in _quotes(line)]


def _ends_sentence(before: str, rest: str) -> bool:
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


def _quotes(text: str) -> list[Quote]:
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


def quotes(sentence: str) -> tuple[str, ...]:
    """The quoted spans of a sentence, as written: quotations and code spans (code is always copied)."""
    spans = [(q.start, q.text) for q in _quotes(sentence)]
    spans += [(m.start(), m.group(1)) for m in re.finditer(r"`([^`]+)`", sentence)]
    return tuple(text for _, text in sorted(spans) if text.strip())


def occurs(quote: str, passage: str) -> bool:
    """Is ``quote`` in ``passage`` verbatim, after :func:`normalize`? An ellipsis in the quote (``…``,
    ``...``, ``[…]``) stands for text left out: the parts must occur in order."""
    text = normalize(passage)
    at = 0
    for part in re.split(r"\s*(?:\[…\]|\[\.\.\.\]|…|\.\.\.)\s*", normalize(quote)):
        part = part.strip()
        if not part:
            continue
        found = text.find(part, at)
        if found == -1:
            return False
        at = found + len(part)
    return True


def numbers(sentence: str) -> tuple[str, ...]:
    """The numbers and dates of a sentence outside its citations, links, code and quotations (those are
    checked whole)."""
    text = URL_RE.sub(" ", CITE_RE.sub(" ", sentence))  # a URL is checked as a link …
    text = re.sub(r"`[^`]*`", " ", text)  # … and code as a quotation
    for q in sorted(_quotes(text), key=lambda q: -q.start):
        text = text[:q.start] + " " + text[q.end:]
    return tuple(dict.fromkeys(m.group(0).rstrip(".,:/") for m in NUMBER_RE.finditer(text)))


def number_in(number: str, passage: str) -> bool:
    """Does the number occur in the passage as a number (not as a part of a longer one)? A decimal comma
    and point are the same number; a date's parts may be spaced (``4.12.2026`` = ``4. 12. 2026``)."""
    text = normalize(passage)
    parts = re.split(r"[.,:/]", number)
    pattern = r"\s?[.,:/]\s?".join(re.escape(p) for p in parts)
    return re.search(rf"(?<![\d]){pattern}(?![\d])", text) is not None


def check(answer: str, passages: Sequence[str], urls: Sequence[str] = ()) -> tuple[Problem, ...]:
    """Every problem of ``answer`` written from ``passages`` (passage ``n`` is ``passages[n - 1]``);
    ``urls`` are the sources' own links, the only ones an answer may hold. Empty: the answer may be shown."""
    problems: list[Problem] = []
    found = sentences(answer)
    if not found:
        return (Problem("uncited", 0, "the answer is empty"),)
    known = range(1, len(passages) + 1)
    for number, sentence in enumerate(found, start=1):
        problems.extend(_sentence_problems(number, sentence, passages, known))
    problems.extend(_link_problems(answer, passages, urls))
    return tuple(problems)


def _sentence_problems(number: int, sentence: Sentence, passages: Sequence[str], known: range) -> list[Problem]:
    shown = _clipped(sentence.text)
    if not sentence.cited:
        return [Problem("uncited", number, f"sentence {number} cites no passage: {shown}")]
    problems = [Problem("unknown_source", number, f"sentence {number} cites [{n}], but the passages are "
                                                  f"[1] to [{len(passages)}]: {shown}")
                for n in sentence.cited if n not in known]
    cited = [passages[n - 1] for n in sentence.cited if n in known]
    if not cited:
        return problems
    names = ", ".join(f"[{n}]" for n in sentence.cited if n in known)
    for quote in quotes(CITE_RE.sub(" ", sentence.text)):
        if not any(occurs(quote, p) for p in cited):
            problems.append(Problem("quote", number, f"sentence {number} quotes {_clipped(quote)!r}, which is not "
                                                     f"word for word in {names}"))
    for value in numbers(sentence.text):
        if not any(number_in(value, p) for p in cited):
            problems.append(Problem("number", number, f"sentence {number} says {value}, which is not in {names}: "
                                                      f"{shown}"))
    return problems


def _link_problems(answer: str, passages: Sequence[str], urls: Sequence[str]) -> list[Problem]:
    """A URL is the answer's own unless it is a source's link or one a passage writes, whole; a markdown
    link ``[text](url)`` is never allowed: links are made from the sources."""
    problems = []
    allowed = set(urls) | {link for p in passages for link in links_in(p)}
    for m in URL_RE.finditer(answer):
        link = m.group(0)
        if link.startswith("]("):
            problems.append(Problem("link", 0, f"the answer makes a link of its own ({_clipped(link[2:-1])}): "
                                               "cite the passage with [n] instead"))
        elif _bare(link) not in allowed:
            problems.append(Problem("link", 0, f"the answer holds a URL no passage gives: {_clipped(link)}"))
    return problems


def links_in(text: str) -> set[str]:
    """The URLs a text writes: bare ones and markdown links' targets."""
    found = {_bare(m.group(0)) for m in URL_RE.finditer(text) if not m.group(0).startswith("](")}
    return found | {_bare(m.group(0)[2:-1]) for m in URL_RE.finditer(text) if m.group(0).startswith("](")}


def _bare(link: str) -> str:
    return link.rstrip(".,;:!?")


def _clipped(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 1] + "…"
