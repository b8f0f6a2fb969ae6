"""Snippets: the densest window of a chunk's text around the query's words, escaped, words marked.

A word is marked when it begins with a content word of the query (diacritics optional, as BM25
matched it), is one of the forms searched for a word no note holds as typed, or has the same
Czech/Slovak word key (``Převodník`` for ``převodníkem``), or is one of the Czech translations
searched for an English word (:mod:`server.translate`), or has one's key. A function word of the
text (``na``, ``tedy``, which ``ted`` begins) is never marked, unless written in capitals (``NA``: a
name, as the query reads it).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

from builder.core.analysis import stem_word
from builder.core.slug import fold
from server.query import FUNCTION_WORDS, WORD, Term, content

# The same words come back in every snippet and every query: each is folded once.
cached_fold = lru_cache(maxsize=131_072)(fold)
# Markdown shown as read: the same snippet in the drop-down, on /search and in the CLI. Whole lines first
# (heading hashes, quote and list markers, rules, fences), then links, then inline markup outside code.
_LINES = [
    (re.compile(r"^[ \t]*(?:([-*_])[ \t]*)(?:\1[ \t]*){2,}$", re.M), ""),  # thematic breaks: ---, ***, ___
    (re.compile(r"^[ \t]*(?:>[ \t]?)*(?:#{1,6}[ \t]+|[-*+][ \t]+(?:\[[ xX]\][ \t]+)?|\d+[.)][ \t]+)?", re.M), ""),
    (re.compile(r"[ \t]+#+[ \t]*$", re.M), ""),  # a heading's closing hashes
    # [ \t], not \s, which spans lines: a chunk's blank lines cost their cube
    (re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*:?-*:?[ \t]*$", re.M), ""),  # table rule rows
    (re.compile(r"^[ \t]*(?:```|~~~).*$", re.M), ""),  # fence lines
    # no bracket inside the brackets: an unclosed one must not make a long line cost its square
    (re.compile(r"!?\[([^\[\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)"), r"\1"),  # [text](url), ![alt](src) → text, alt
    (re.compile(r"\[\[(?:[^\[\]|\n]*\|)?([^\[\]\n]*)\]\]"), r"\1"),  # [[note|label]] → label
    (re.compile(r"\[([^\[\]\n]+)\]\[[^\[\]\n]*\]"), r"\1"),  # [text][ref] → text
    (re.compile(r"<((?:https?|mailto):[^<>\s]+)>"), r"\1"),  # <https://…> → the address
]
# `code`, ``a ` b``: shown as written inside; emphasis: *a*, **a**, ***a***, ~~a~~ anywhere, _a_, __a__ only
# between words (snake_case stays). Each spans at most 300 characters of a line: an opener without its
# closer must not make a long line cost its square.
_CODE = re.compile(r"(`+)[ ]?([^`\n](?:.{0,300}?[^`\n])??)[ ]?\1(?!`)")
_EMPHASIS = re.compile(r"(?<![\\*])(\*{1,3}|~~)(?=[^\s*])(.{1,300}?)(?<=[^\s\\*])\1(?!\*)"
                       r"|(?<![\w\\])(_{1,3})(?=[^\s_])(.{1,300}?)(?<=[^\s\\_])\3(?![\w_])")
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # \* → *


def _inline(text: str) -> str:
    """Emphasis markers, stray backticks, backslash escapes and table bars taken out of text that is not code."""
    for _ in range(3):  # nested emphasis: **a *b* c**
        plain = _EMPHASIS.sub(lambda m: m.group(2) if m.group(1) else m.group(4), text)
        if plain == text:
            break
        text = plain
    return _ESCAPE.sub(r"\1", text.replace("|", " ").replace("`", ""))


def plain_text(markdown: str) -> str:
    """Chunk text as read, without the markdown punctuation (``*teh ais*`` → ``teh ais``, ``[text](url)``
    → ``text``, ``# Heading`` → ``Heading``): a snippet shows words, not the syntax around them."""
    for pattern, replacement in _LINES:
        markdown = pattern.sub(replacement, markdown)
    out, pos = [], 0
    for code in _CODE.finditer(markdown):
        out += [_inline(markdown[pos:code.start()]), code.group(2)]
        pos = code.end()
    out.append(_inline(markdown[pos:]))
    return "".join(out)


def _exact(term: Term) -> Callable[[str], bool]:
    """Does a folded word match ``term`` as BM25's exact columns matched it: one of its ``forms``,
    else the word as a prefix (3+ letters) or whole."""
    if term.forms:
        return frozenset(term.forms).__contains__
    typed = cached_fold(term.text)
    return (lambda word: word.startswith(typed)) if len(typed) >= 3 else typed.__eq__


def matcher(terms: list[Term]) -> Callable[[str], bool]:
    """Is a word (as written) one the snippets of ``terms`` mark? Each word is decided once: the
    hits of one query share most of their words, so a query makes one and hands it to every
    :func:`excerpt`."""
    wanted = content(terms)
    exact = [_exact(t) for t in wanted]
    keys = {t.key for t in wanted} | {key for t in wanted for phrase in t.translation_keys for key in phrase.split()}
    translated = {cached_fold(word) for t in wanted for word in t.translation_words}
    decided: dict[str, bool] = {}

    def is_match(word: str) -> bool:
        found = decided.get(word)
        if found is None:
            folded = cached_fold(word)
            function = word.lower() in FUNCTION_WORDS and not (len(word) > 1 and word.isupper())
            found = decided[word] = not function and (folded in translated or any(m(folded) for m in exact)
                                                      or len(folded) > 3 and stem_word(word) in keys)
        return found

    return is_match


MAX_MARKED_WORDS = 20  # of one hit's words for its landing page: a URL stays short


@dataclass(frozen=True)
class Excerpt:
    """A chunk's snippet and the words it marks."""

    snippet: str  # a window of the text, HTML-escaped, the matches in <mark>
    words: tuple[str, ...]  # every word of the whole text that is a match, lower-cased, each once, in order


def snippet(text: str, terms: list[Term], width: int = 36) -> str:
    """A window of ``width`` words around the densest matches, HTML-escaped, matches in <mark>."""
    return excerpt(text, terms, width).snippet


def excerpt(text: str, terms: list[Term], width: int = 36, *,
            is_match: Callable[[str], bool] | None = None) -> Excerpt:
    """:func:`snippet`, and the words of all of ``text`` that it would mark (at most
    :data:`MAX_MARKED_WORDS`): the page a hit leads to marks them, the forms that only share
    the query's word key (``převodník`` for ``prevodniku``) among them. ``is_match``: the
    query's :func:`matcher`, when it has one."""
    text = plain_text(text)
    is_match = is_match or matcher(terms)
    words = list(WORD.finditer(text))
    flags = list(map(is_match, map(re.Match.group, words)))
    found = tuple(dict.fromkeys(m.group().lower() for m, flag in zip(words, flags, strict=True)
                                if flag))[:MAX_MARKED_WORDS]
    marked = list(accumulate(flags, initial=0))  # marked[i]: the matches among the first i words
    best, best_score = 0, -1
    for start in range(0, max(1, len(words) - width + 1), 4):
        score = marked[min(start + width, len(words))] - marked[start]
        if score > best_score:
            best, best_score = start, score
    window = words[best:best + width]
    if not window:
        return Excerpt(html.escape(text[:240]), found)
    at_start, at_end = best == 0, best + width >= len(words)
    begin = 0 if at_start else window[0].start()
    end = len(text) if at_end else window[-1].end()
    out, pos = [], begin
    for m, flag in zip(window, flags[best:best + width], strict=True):
        out.append(html.escape(text[pos:m.start()]))
        out.append(f"<mark>{html.escape(m.group())}</mark>" if flag else html.escape(m.group()))
        pos = m.end()
    out.append(html.escape(text[pos:end]))
    body = " ".join("".join(out).split())
    return Excerpt(("…" if begin > 0 else "") + body + ("…" if end < len(text) else ""), found)


def typed_without_accents(text: str, terms: list[Term]) -> bool:
    """Was the query typed without the accents its language has? None of its words carries one (a
    function word typed with its accent, ``aké``, shows the writer types them too), and one of its
    content words begins, in ``text``, only words that do (``nastroje`` where the notes say
    ``nástroje``). The words half folds accents; the model reads ``nastroje`` as another token."""
    wanted = content(terms)
    if not wanted or any(cached_fold(t.text) != t.text.lower() for t in terms):
        return False
    words = {w.lower() for w in WORD.findall(text)}
    for term in wanted:
        typed = term.text.lower()
        if term.forms:  # in no note as typed: its forms the notes hold
            begun = [w for w in words if cached_fold(w) in term.forms]
        else:
            begun = [w for w in words if cached_fold(w).startswith(typed)] if len(typed) >= 3 else []
        if begun and all(cached_fold(w) != w for w in begun):
            return True
    return False


def coverage(text: str, terms: list[Term]) -> float:
    """The share of the query's content words that ``text`` holds (in any form, or translated): how well
    it answers."""
    wanted = content(terms)
    if not wanted:
        return 0.0
    written = set(WORD.findall(text))  # each word once: a note repeats most of its words
    words = {cached_fold(w) for w in written}
    keys = {stem_word(w) for w in written if len(w) > 3}
    found = 0
    for term in wanted:
        exact = _exact(term)
        # a word of 3 letters or fewer is its own key (folded): ``keys`` leaves such words out, ``words`` has them
        translated = any(all(key in keys or key in words for key in phrase.split()) for phrase in term.translation_keys)
        if term.key in keys or translated or any(exact(w) for w in words):
            found += 1
    return found / len(wanted)
