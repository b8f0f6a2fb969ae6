"""Asking the notes: an answer written by a model from the sections the hybrid search finds, shown only
when :mod:`server.verify` has checked every sentence against them.

The pipeline, one plain function each:

1. the search's hits (sections) become numbered passages (:func:`passages`), their text as the index has it;
   a ``weak`` search (nothing confident) answers ``not_in_notes`` without asking the model;
2. the model gets the passages and the rules (:data:`SYSTEM`, :func:`prompt`): answer from them only, in
   the question's language, each sentence ending with its ``[n]``, exact quotes in quotation marks,
   ``NOT_IN_NOTES`` when they do not say;
3. the answer is checked (:func:`server.verify.check`); when it fails, the model is asked once to repair it,
   with the problems listed; when the repair fails too, the answer is ``refused`` and never shown;
4. links are made from the sources, never taken from the model (``citations``, ``sources``).

A provider that cannot answer (down, slow, busy, a body not in its protocol) makes the status
``unavailable``; the caller still has the search's hits to show.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from server import verify
from server.chat import Chat, ChatUnavailable, Message

if TYPE_CHECKING:
    from sqlite3 import Connection

    from server.search import Hit, SearchResult

STATUSES = ("answered", "not_in_notes", "refused", "unavailable")
MAX_PASSAGES = 5  # the sections sent to the model: the search's best
MAX_PASSAGE_CHARS = 1500  # of each section's text, cut at a word
NOT_IN_NOTES = "NOT_IN_NOTES"
SEARCH_LIMIT = MAX_PASSAGES
# What each status says to a reader where there is no answer (the CLI, /search; search.js says the same).
STATUS_TEXT = {
    "not_in_notes": "Your notes do not say: nothing in them answers this.",
    "refused": "No answer: the model’s answer did not pass the check against your notes, so it is not shown.",
    "unavailable": "No answer: the answer provider is unavailable. The search results still work.",
}

SYSTEM = f"""\
You answer questions from the user's own notes, using only the numbered passages given with the question.
Rules:
- Use only what the passages say. Never add facts, names, numbers or dates they do not contain.
- Write in the language of the question.
- End every sentence with the number of the passage it comes from, in square brackets: [1]. A sentence
  from two passages ends with both: [1][2].
- When you quote, copy the words from the passage exactly, between quotation marks.
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
    n: int
    url: str
    quote: str | None  # the answer's first quotation from this passage, or None
    verified: bool

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, "url": self.url, "quote": self.quote, "verified": self.verified}


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
    """The first ``limit`` hits as numbered passages, each its chunk's text (cut at a word after
    :data:`MAX_PASSAGE_CHARS`); a hit whose chunk a build has replaced since is left out."""
    found: list[Passage] = []
    for hit in hits:
        if len(found) == limit:
            break
        text = db.chunk_text(conn, hit.source, hit.path, hit.anchor, hit.line_start)
        if text is None or not text.strip():
            continue
        found.append(Passage(len(found) + 1, hit.url, hit.title, hit.breadcrumb, _cut(text.strip())))
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


def repair_request(problems: Sequence[verify.Problem]) -> str:
    """The one request to fix an answer that failed the check."""
    listed = "\n".join(f"- {p.message}" for p in problems)
    return (f"Your answer cannot be shown, because the check of it against the passages found:\n{listed}\n"
            f"Write the answer again following the rules: every sentence ends with the [n] of a passage that "
            f"says it, quotes are copied exactly, numbers and dates only as a cited passage gives them, no links. "
            f"If the passages do not answer the question, reply with exactly {NOT_IN_NOTES}.")


def ask(question: str, result: SearchResult, sources: Sequence[Passage], chat: Chat) -> Answer:
    """The checked answer to ``question`` from the search ``result`` and its passages ``sources``."""
    if result.weak or not sources:
        return Answer("not_in_notes", "")
    sources = tuple(sources)
    texts = [p.text for p in sources]
    urls = [p.url for p in sources]
    conversation: tuple[Message, ...] = (Message("user", prompt(question, sources)),)
    problems: tuple[verify.Problem, ...] = ()
    for attempt in range(2):  # the answer, and at most one repair
        try:
            text = chat(SYSTEM, conversation)
        except ChatUnavailable as exc:
            return Answer("unavailable", "", sources=sources,
                          problems=(verify.Problem("provider", 0, str(exc)),))
        if _says_not_in_notes(text):
            return Answer("not_in_notes", "", sources=sources)
        problems = verify.check(text, texts, urls)
        if not problems:
            return Answer("answered", text, _citations(text, sources), sources)
        if attempt == 0:
            conversation += (Message("assistant", text), Message("user", repair_request(problems)))
    return Answer("refused", "", sources=sources, problems=problems)


def answer_parts(reply: Answer) -> list[tuple[str, Passage | None]]:
    """The answer's text cut at its citations: each piece of text with None, each ``[n]`` as its passage
    (what a page shows as a link: the link is the source's, never the model's)."""
    by_n = {p.n: p for p in reply.sources}
    parts: list[tuple[str, Passage | None]] = []
    at = 0
    for m in verify.CITE_RE.finditer(reply.answer):
        parts.append((reply.answer[at:m.start()], None))
        parts += [(f"[{n}]", by_n[n]) for n in verify.citations(m.group(0))]
        at = m.end()
    parts.append((reply.answer[at:], None))
    return [(text, source) for text, source in parts if text]


def _says_not_in_notes(text: str) -> bool:
    return text.strip().strip(".").strip() == NOT_IN_NOTES


def _citations(text: str, sources: Sequence[Passage]) -> tuple[Citation, ...]:
    """One citation per passage the answer cites, in the order it first cites them, with the answer's first
    quotation from it."""
    first_quote: dict[int, str] = {}
    order: list[int] = []
    for sentence in verify.sentences(text):
        for n in sentence.cited:
            if n not in order:
                order.append(n)
        for quote in verify.quotes(verify.CITE_RE.sub(" ", sentence.text)):
            for n in sentence.cited:
                if n not in first_quote and verify.occurs(quote, sources[n - 1].text):
                    first_quote[n] = quote
    return tuple(Citation(n, sources[n - 1].url, first_quote.get(n), True) for n in order)

