"""Asking the notes: an answer written by a model from the sections the hybrid search finds, shown only
when :mod:`server.verify` has checked every sentence against them.

The pipeline, one plain function each:

1. the search's hits (sections) become numbered passages (:func:`passages`), their text as the index has it;
   a ``weak`` search (nothing confident) answers ``not_in_notes`` without asking the model;
2. the model gets the passages and the rules (:data:`SYSTEM`, :func:`prompt`): answer from them only, in
   the question's language, each sentence ending with its ``[n]``, exact quotes in quotation marks,
   ``NOT_IN_NOTES`` when they do not say;
3. the answer is checked (:func:`server.verify.verdict`: every claim of every sentence against each passage it
   cites); when it fails, the model is asked once to repair it, with the problems listed (a bounded
   excerpt of its answer and at most :data:`MAX_PROBLEMS` of them); when the repair fails too, the answer is
   ``refused`` and never shown;
4. links are made from the sources, never taken from the model: each citation carries the span of its
   passage the check matched (``citations[].span``) and a link that marks it on the note's page.

A provider that cannot answer (down, slow, busy, a body not in its protocol) makes the status
``unavailable``; the caller still has the search's hits to show. A process answers at most
``answer.max_in_flight`` questions at once (:class:`Asker`); the next is ``busy`` at once, without
searching or asking, so a hanging provider cannot take the server's threads from search.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from builder.core import index as db
from server import verify
from server.chat import Chat, ChatUnavailable, Message, make_chat
from server.claims import CITE_RE, quotes
from server.passage_text import PassageText

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.core.config import Config
    from server.search import Hit, SearchResult
    from server.wordforms import Translations

STATUSES = ("answered", "not_in_notes", "refused", "unavailable", "busy")
MAX_PASSAGES = 5  # the sections sent to the model: the search's best
MAX_PASSAGE_CHARS = 1500  # of each section's text, cut at a word
MAX_ECHO = 2000  # characters of a failed answer sent back with the repair request
MAX_PROBLEMS = 8  # problems listed in the repair request
NOT_IN_NOTES = "NOT_IN_NOTES"
SEARCH_LIMIT = MAX_PASSAGES
# What each status says to a reader where there is no answer (the CLI, /search; search.js says the same).
STATUS_TEXT = {
    "not_in_notes": "Your notes do not say: nothing in them answers this.",
    "refused": "No answer: the model’s answer did not pass the check against your notes, so it is not shown.",
    "unavailable": "No answer: the answer provider is unavailable. The search results still work.",
    "busy": "No answer now: the portal is answering other questions. Try again in a moment; the search results "
            "still work.",
}

SYSTEM = f"""\
You answer questions from the user's own notes, using only the numbered passages given with the question.
Every sentence you write is checked word by word against the passage it cites, without a model: a sentence
with a word, a name, a number or a negation the passage does not have there is not shown.
Rules:
- Use only what the passages say. Never add facts, names, numbers or dates they do not contain.
- Write in the language of the question, with the passage's own words: its names, its numbers, its nouns
  and verbs (any grammatical form), and its negations ("ne", "nie", "not", "never", "without") where it
  has them. Do not explain, qualify or add what you know.
- Take each sentence from one place in a passage (a sentence, a list item, a table row); end it with that
  passage's number in square brackets: [1]. A sentence joining two places cites each part right after it:
  "… [1], … [2]."
- When the question is in English and the passage in Czech or Slovak, answer in English and quote the
  passage's original words that say it, exactly, between quotation marks.
- When you quote, copy one whole span of the passage exactly, between quotation marks; never shorten a
  quotation with "…" or "...".
- Write no links and no URLs: the reader gets links to the passages from their numbers.
- If the passages do not answer the question, reply with exactly {NOT_IN_NOTES} and nothing else.
- Be brief: one to four sentences."""


@dataclass(frozen=True)
class Passage:
    """One section sent to the model, as it was sent."""

    n: int
    url: str  # site-relative, with the section's anchor
    title: str
    heading: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "url": self.url, "title": self.title, "heading": self.heading, "text": self.text}


@dataclass(frozen=True)
class Citation:
    """One sentence's citation of one passage, and where in the passage the check found the sentence said."""

    n: int
    sentence: int  # 1-based, in the answer
    url: str  # the section's page and anchor
    link: str  # the same, with a text fragment that marks the span on the page (Chromium, Safari, Firefox)
    span: tuple[int, int]  # offsets into the passage's text (sources[n].text) the check matched
    quote: str | None  # the sentence's quotation from this passage, or None
    marks: tuple[int, ...] = ()  # which of the answer's [n] numbers, counted from 0 in order, are this citation
    verified: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "sentence": self.sentence, "url": self.url, "link": self.link,
                "span": list(self.span), "quote": self.quote, "marks": list(self.marks), "verified": self.verified}


@dataclass(frozen=True)
class Answer:
    status: str  # one of STATUSES
    answer: str  # the checked text with its [n]; empty unless answered
    citations: tuple[Citation, ...] = ()
    sources: tuple[Passage, ...] = ()
    problems: tuple[verify.Problem, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "answer": self.answer,
                "citations": [c.to_json() for c in self.citations],
                "sources": [s.to_json() for s in self.sources],
                "problems": [p.to_json() for p in self.problems]}


def passages(conn: Connection, hits: Sequence[Hit], limit: int = MAX_PASSAGES) -> tuple[Passage, ...]:
    """The first ``limit`` hits as numbered passages, each its chunk's text under the chunk's breadcrumb
    (cut at a word after :data:`MAX_PASSAGE_CHARS`); a hit whose chunk a build has replaced since is left
    out."""
    found: list[Passage] = []
    for hit in hits:
        if len(found) == limit:
            break
        chunk = db.stored_chunk(conn, hit.source, hit.path, hit.anchor, hit.line_start)
        if chunk is None or not chunk.text.strip():
            continue
        found.append(Passage(len(found) + 1, hit.url, hit.title, chunk.breadcrumb, _cut(chunk.text.strip())))
    return tuple(found)


def _cut(text: str) -> str:
    if len(text) <= MAX_PASSAGE_CHARS:
        return text
    cut = text[:MAX_PASSAGE_CHARS]
    return cut[:cut.rfind(" ")] if " " in cut else cut


def prompt(question: str, sources: Sequence[Passage]) -> str:
    """The user message: the numbered passages, then the question."""
    blocks = [f"[{p.n}] {p.title} › {p.heading}\n{p.text}" if p.heading != p.title else f"[{p.n}] {p.title}\n{p.text}"
              for p in sources]
    return "Passages:\n\n" + "\n\n".join(blocks) + f"\n\nQuestion: {question}"


def repair_request(answer: str, problems: Sequence[verify.Problem]) -> str:
    """The one request to fix an answer that failed the check: the problems (at most :data:`MAX_PROBLEMS`),
    never more than a bounded excerpt of what the model wrote (its own answer, in the conversation, is cut
    at :data:`MAX_ECHO` too)."""
    listed = "\n".join(f"- {p.message}" for p in problems[:MAX_PROBLEMS])
    more = f"\n- and {len(problems) - MAX_PROBLEMS} more" if len(problems) > MAX_PROBLEMS else ""
    return (f"Your answer cannot be shown, because the check of it against the passages found:\n{listed}{more}\n"
            f"Write the answer again following the rules: each sentence from one place of a passage, in its own "
            f"words, names, numbers and negations, ending with that passage's [n]; quotations copied whole, "
            f"without \"…\"; no links. If the passages do not answer the question, reply with exactly "
            f"{NOT_IN_NOTES}.")


@dataclass(frozen=True)
class Asker:
    """What asking needs, made once per process: the provider, the dictionary the check reads English claims
    about Czech and Slovak notes with, and the slots that cap the answers in flight."""

    chat: Chat
    dictionary_path: Path | None  # read on the first English claim (server.translate keeps it per process)
    slots: threading.BoundedSemaphore

    @property
    def dictionary(self) -> Translations | None:
        from server import translate

        return translate.load(self.dictionary_path)

    @contextmanager
    def slot(self) -> Iterator[bool]:
        """A slot for one answer, if one is free now (never waits): True while it is held, False when every
        slot is taken (the caller answers ``busy``)."""
        taken = self.slots.acquire(blocking=False)
        try:
            yield taken
        finally:
            if taken:
                self.slots.release()


def make_asker(config: Config) -> Asker:
    """The :class:`Asker` of ``config`` (its answer provider must be configured)."""
    return Asker(make_chat(config.answer), config.dictionary, threading.BoundedSemaphore(config.answer.max_in_flight))


BUSY = Answer("busy", "", problems=(verify.Problem("busy", 0, "every answer slot is taken; try again in a moment"),))


def ask(question: str, result: SearchResult, sources: Sequence[Passage], asker: Asker) -> Answer:
    """The checked answer to ``question`` from the search ``result`` and its passages ``sources``."""
    if result.weak or not sources:
        return Answer("not_in_notes", "")
    sources = tuple(sources)
    read = [PassageText(p.text, p.title, p.heading) for p in sources]
    urls = [p.url for p in sources]
    conversation: tuple[Message, ...] = (Message("user", prompt(question, sources)),)
    problems: tuple[verify.Problem, ...] = ()
    for attempt in range(2):  # the answer, and at most one repair
        try:
            text = asker.chat(SYSTEM, conversation)
        except ChatUnavailable as exc:
            return Answer("unavailable", "", sources=sources,
                          problems=(verify.Problem("provider", 0, str(exc)),))
        if _says_not_in_notes(text):
            return Answer("not_in_notes", "", sources=sources)
        found = verify.verdict(text, read, urls, asker.dictionary)
        problems = found.problems
        if not problems:
            return Answer("answered", text, _citations(text, sources, found.evidence), sources)
        if attempt == 0:
            conversation += (Message("assistant", _echo(text)), Message("user", repair_request(text, problems)))
    return Answer("refused", "", sources=sources, problems=problems)


def _echo(text: str) -> str:
    """The model's failed answer as it is sent back: at most :data:`MAX_ECHO` characters."""
    return text if len(text) <= MAX_ECHO else text[:MAX_ECHO] + " […]"


def answer_parts(reply: Answer) -> list[tuple[str, Citation | None]]:
    """The answer's text cut at its citations: each piece of text with None, each ``[n]`` with its sentence's
    citation of passage ``n`` (what a page shows as a link: the link is the source's, never the model's)."""
    by_mark = {mark: c for c in reply.citations for mark in c.marks}
    parts: list[tuple[str, Citation | None]] = []
    at, count = 0, 0
    for m in CITE_RE.finditer(reply.answer):
        parts.append((reply.answer[at:m.start()], None))
        for n in verify.citations(m.group(0)):
            parts.append((f"[{n}]", by_mark.get(count)))
            count += 1
        at = m.end()
    parts.append((reply.answer[at:], None))
    return [(text, citation) for text, citation in parts if text]


def _marks(text: str) -> list[tuple[int, int]]:
    """(sentence, n) of each number of the answer's citation marks, in order."""
    return [(sentence, n) for sentence, found in enumerate(verify.sentences(text), start=1)
            for m in CITE_RE.finditer(found.text) for n in verify.citations(m.group(0))]


def _says_not_in_notes(text: str) -> bool:
    return text.strip().strip(".").strip() == NOT_IN_NOTES


def _citations(text: str, sources: Sequence[Passage], evidence: Sequence[verify.Evidence]) -> tuple[Citation, ...]:
    """One citation for each sentence and passage it cites, in the answer's order, with the span the check
    matched and the sentence's quotation from that passage."""
    quoted = {number: quotes(CITE_RE.sub(" ", sentence.text))
              for number, sentence in enumerate(verify.sentences(text), start=1)}
    found: dict[tuple[int, int], Citation] = {}
    for e in evidence:
        source = sources[e.n - 1]
        quote = next((q for q in quoted.get(e.sentence, ()) if verify.occurs(q, source.text[e.start:e.end])), None)
        span = (e.start, e.end)
        if (e.sentence, e.n) in found:  # a sentence of several claims citing one passage: the whole span
            kept = found[(e.sentence, e.n)].span
            span = (min(kept[0], e.start), max(kept[1], e.end))
        link = text_link(source.url, source.text[span[0]:span[1]])
        found[(e.sentence, e.n)] = Citation(e.n, e.sentence, source.url, link, span, quote)
    marks = _marks(text)
    return tuple(replace(c, marks=tuple(k for k, key in enumerate(marks) if key == (c.sentence, c.n)))
                 for c in found.values())


def text_link(url: str, span: str) -> str:
    """``url`` with a text fragment that marks ``span`` where the page shows it (its first and last few
    words, markdown's marks left out; a browser that cannot find them lands at the section's anchor)."""
    words = re.findall(r"[^\s*_`#>|\[\]()]+", re.sub(r"\]\([^)]*\)", "]", span))
    if len(words) < 2:
        return url
    start, end = " ".join(words[:4]), " ".join(words[-3:]) if len(words) > 7 else ""
    directive = "text=" + quote(start, safe="") + ("," + quote(end, safe="") if end else "")
    return f"{url}:~:{directive}" if "#" in url else f"{url}#:~:{directive}"
