"""The check an answer passes before anyone sees it: pure functions, no I/O, no model.

An answer is written from numbered passages (:mod:`server.answer`). It is accepted only when

- every sentence carries at least one ``[n]`` and every ``n`` is a passage's number;
- every claim of a sentence (:mod:`server.claims`: the text before each group of citations) is supported
  by **each** passage it cites, in one window of it (:mod:`server.evidence`): its content words, its
  numbers, its quotations word for word and as whole words, its polarity;
- a quotation is one contiguous span (no ``…`` or ``...`` joining fragments, unless the passage itself
  writes them there);
- it holds no URL or link of its own: the links are made from the sources, never by the model.

:func:`verdict` returns the problems (each a :class:`Problem`: what the repair request shows the model,
and what a refused answer reports) and, for an answer without problems, the **evidence**: for every
claim and every passage it cites, the span of that passage the check matched. Sentences are split for
Czech, Slovak and English text: abbreviations (``napr.``, ``tzv.``, ``e.g.``), ordinals and dates
(``4. 12. 2026``), code spans and list items.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from server import claims as claim_parts
from server.claims import CITE_RE, URL_RE, ends_sentence, quotations, quotes
from server.evidence import Shortfall, support
from server.passage_text import PassageText, occurrences
from server.wordforms import Translations

MAX_SHOWN = 80  # characters of a sentence or quote a problem shows


@dataclass(frozen=True)
class Problem:
    """One reason an answer cannot be shown: its kind, the sentence (1-based, 0: the whole answer) and why."""

    kind: str  # uncited | unknown_source | quote | claim | number | polarity | citation | link;
    # provider, busy: no answer came (server.answer)
    sentence: int
    message: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "sentence": self.sentence, "message": self.message}


@dataclass(frozen=True)
class Sentence:
    text: str  # as written, citations included
    cited: tuple[int, ...]  # the passage numbers it cites, in order, each once


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
        if m.group(0)[0] == "." and not ends_sentence(line[start:m.start()], line[m.end():].lstrip()):
            continue
        out.append(line[start:m.end()].strip())
        start = m.end()
    out.append(line[start:].strip())
    return [part for part in out if part]


def _protected_spans(line: str) -> list[tuple[int, int]]:
    """Where a full stop ends no sentence: code spans and quotations."""
    spans = [(m.start(), m.end()) for m in re.finditer(r"`[^`]*`", line)]
    return spans + [(q.start, q.end) for q in quotations(line)]


def occurs(quote: str, passage: str) -> bool:
    """Is ``quote`` in ``passage`` word for word and as whole words, after :func:`normalize` (blockquote and
    list markers of the passage read as spaces)? An ellipsis stands for nothing: a quotation is one span."""
    return bool(occurrences(quote, passage))


ELLIPSIS = re.compile(r"\[…\]|\[\.\.\.\]|…|\.\.\.")


@dataclass(frozen=True)
class Evidence:
    """Where a cited passage says a claim: sentence ``sentence`` (1-based) cites passage ``n``, whose text
    from ``start`` to ``end`` the check matched."""

    sentence: int
    n: int
    start: int
    end: int


@dataclass(frozen=True)
class Verdict:
    """What the check found: the problems (none: the answer may be shown) and the evidence of each claim."""

    problems: tuple[Problem, ...]
    evidence: tuple[Evidence, ...] = ()


def check(answer: str, passages: Sequence[str | PassageText], urls: Sequence[str] = (),
          dictionary: Translations | None = None) -> tuple[Problem, ...]:
    """Every problem of ``answer`` written from ``passages`` (see :func:`verdict`). Empty: it may be shown."""
    return verdict(answer, passages, urls, dictionary).problems


def verdict(answer: str, passages: Sequence[str | PassageText], urls: Sequence[str] = (),
           dictionary: Translations | None = None) -> Verdict:
    """The check of ``answer`` written from ``passages`` (passage ``n`` is ``passages[n - 1]``: its text, or
    a :class:`~server.evidence.PassageText` with the title and heading it was sent under). ``urls`` are the
    sources' own links, the only ones an answer may hold; ``dictionary`` reads English claims about Czech
    and Slovak passages (without one, their English words must be in the passage as written)."""
    read = tuple(p if isinstance(p, PassageText) else PassageText(p) for p in passages)
    found = sentences(answer)
    if not found:
        return Verdict((Problem("uncited", 0, "the answer is empty"),))
    problems: list[Problem] = []
    evidence: list[Evidence] = []
    for number, sentence in enumerate(found, start=1):
        sentence_problems, sentence_evidence = _sentence(number, sentence, read, dictionary)
        problems += sentence_problems
        evidence += sentence_evidence
    problems.extend(_link_problems(answer, [p.text for p in read], urls))
    return Verdict(tuple(problems), () if problems else tuple(evidence))


def _sentence(number: int, sentence: Sentence, passages: Sequence[PassageText],
              dictionary: Translations | None) -> tuple[list[Problem], list[Evidence]]:
    shown = _clipped(sentence.text)
    if not sentence.cited:
        return [Problem("uncited", number, f"sentence {number} cites no passage: {shown}")], []
    known = range(1, len(passages) + 1)
    problems = [Problem("unknown_source", number, f"sentence {number} cites [{n}], but the passages are "
                                                  f"[1] to [{len(passages)}]: {shown}")
                for n in sentence.cited if n not in known]
    if problems:
        return problems, []
    names = ", ".join(f"[{n}]" for n in sentence.cited)
    for quote in quotes(CITE_RE.sub(" ", sentence.text)):
        if ELLIPSIS.search(quote) and not any(occurs(quote, passages[n - 1].text) for n in sentence.cited):
            problems.append(Problem("quote", number, f"sentence {number} quotes {_clipped(quote)!r} with an "
                                                     "ellipsis: quote one whole span, word for word"))
        elif not any(occurs(quote, passages[n - 1].text) for n in sentence.cited):
            problems.append(Problem("quote", number, f"sentence {number} quotes {_clipped(quote)!r}, which is not "
                                                     f"word for word in {names}"))
    if problems:
        return problems, []
    evidence: list[Evidence] = []
    for claim in claim_parts.claims(number, sentence.text):
        if claim.bare:
            problems.append(Problem("claim", number, f"sentence {number} says only yes or no ({shown}): say what "
                                                     "the passage says, in its words"))
            continue
        verdicts = {n: support(claim, passages[n - 1], dictionary) for n in claim.cited}
        held = {n: v for n, v in verdicts.items() if not isinstance(v, Shortfall)}
        lacking = {n: v for n, v in verdicts.items() if isinstance(v, Shortfall)}
        if not lacking:
            evidence += [Evidence(number, n, v.start, v.end) for n, v in held.items()]
        elif held:
            n, why = next(iter(lacking.items()))
            problems.append(Problem("citation", number, f"sentence {number} cites {_names(claim.cited)}, but "
                                                        f"[{n}] does not say it: {_shortfall(why, n, passages)}"))
        else:
            n, why = next(iter(lacking.items()))
            problems.append(Problem(_kind(why), number, f"sentence {number}: {_shortfall(why, n, passages)}; "
                                                        f"it says: {_clipped(claim.text)}"))
    return problems, evidence


def _names(cited: Sequence[int]) -> str:
    return "".join(f"[{n}]" for n in cited)


def _kind(why: Shortfall) -> str:
    if why.missing and all(word.startswith("„") for word in why.missing):
        return "quote"
    return why.kind


def _shortfall(why: Shortfall, n: int, passages: Sequence[PassageText]) -> str:
    """One line on why passage ``n`` does not support a claim, naming the words, numbers or negation."""
    near = ""
    if why.window is not None:
        start, end = why.window
        near = f" (closest: «{_clipped(passages[n - 1].text[start:end])}»)"
    if why.missing:
        words = ", ".join(repr(word) for word in why.missing[:8])
        also = f" (nor {', '.join(why.numbers)})" if why.numbers else ""
        return f"{words}{also} {'is' if len(why.missing) == 1 else 'are'} not in [{n}] beside the rest of it{near}"
    if why.numbers:
        return f"it says {', '.join(why.numbers)}, which [{n}] does not say there{near}"
    return (why.polarity or "").replace("the passage", f"[{n}]")


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
