"""Whether a passage supports a claim, and where: the check behind :mod:`server.verify`.

One window of the passage (:mod:`server.passage_text`) must say the whole claim: every content word
(:mod:`server.wordforms`: the same word, another form of it, a translation), every number as digits or a
number word (counted: a claim saying 2 twice needs two 2s), every quotation word for word, every symbol of a
command (``{``, ``|``), in the same polarity (each word in a negation's scope exactly when the claim's is).
A number must stand with what the claim says it counts (``150 GB per month``: the month is said of
1–2 GB), a table cell with its own row and column, and a name found only in a heading must not stand for
a sentence about another.

A claim of several parts (cut at commas that list and coordinating conjunctions) may be said part by part by
neighbouring sentences of one paragraph, list or table — each part by one sentence — when no sentence it
takes from names something the claim does not, none of their numbers is left out, and a place or time it
opens with is said of every part that has none of its own. docs/ANSWERS.md has the rules, the attacks each
one stops and the measurements behind them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from server import claims as claim_words
from server import lexicon
from server.claims import Claim, Token, number_in, quote_spans, quotes, words_of
from server.passage_text import (
    PassageText,
    Window,
    clauses_of,
    negation_scope,
    occurrences,
)
from server.wordforms import (
    Translations,
    as_czech,
    negated_side,
    same_word,
    spelled_alike,
    translates,
    translation_forms,
)

@dataclass(frozen=True)
class Support:
    """Where a passage says a claim: the window the check matched."""

    start: int
    end: int

@dataclass(frozen=True)
class Shortfall:
    """Why the best window of a passage does not support a claim."""

    missing: tuple[str, ...] = ()  # content words found nowhere in it, as the claim writes them
    numbers: tuple[str, ...] = ()  # numbers not in it
    polarity: str | None = None  # how the claim's words or negations relate otherwise than the passage's
    window: tuple[int, int] | None = None  # the window that came closest
    kind: str = "claim"  # the problem's kind: claim | number | polarity



@dataclass
class _Found:
    """A claim word's occurrences in a window: each word's index (-1: the title or heading) and how it was
    reached: as itself (""), or only through a ne- prefix of the passage's word ("p") or the claim's ("c")."""

    places: list[tuple[int, str]] = field(default_factory=list)  # via: "" the word, "p"/"c" the ne- side

@dataclass(frozen=True)
class _Part:
    """A part of a claim between commas and coordinating conjunctions: in a window of several sentences,
    each part must be said by one of them."""

    text: str
    words: tuple[Token, ...]
    numbers: tuple[str, ...]

# Coordinating conjunctions, by language: "a" and "i" are Czech and Slovak "and", but English articles.
_CONJUNCTION = {
    False: re.compile(r"[,;]|\s(?:a|i|aj|ale|nebo|alebo|plus|a také|a tiež|zatímco|kdežto|zatiaľ čo)\s", re.IGNORECASE),
    True: re.compile(r"[,;]|\s(?:and|or|but|plus|as well as|while|whereas)\s", re.IGNORECASE),
}

# A clause these open belongs to the clause next to it: a comma before one (or after a clause opened by
# one) joins, it does not list ("Ak sa výpis zhoduje, vypíše sa…"; "…, který…").
_SUBORDINATE = re.compile(r"\s*(?:ak|keď|ked|když|kdyz|pokud|jestli|jestliže|jakmile|až|aby|že|protože|pretože|lebo|"
                          r"ktor\w*|kter\w*|kde|kam|kdy|kedy|čo|co|if|when|whenever|once|unless|until|because|"
                          r"since|which|who|whom|whose|that|where|while|so that)\b", re.IGNORECASE)

def _part_cuts(text: str, english: bool) -> list[int]:
    """Where a claim's parts begin: at semicolons, at commas that list, and before coordinating
    conjunctions."""
    cuts = [0]
    for m in _CONJUNCTION[english].finditer(text):
        if m.group(0) == ",":
            before, after = text[cuts[-1]:m.start()], text[m.end():]
            if _SUBORDINATE.match(after) or _SUBORDINATE.match(before.lstrip(" \"'„“”")):
                continue
        cuts.append(m.start())
    return cuts

def _parts(claim: Claim) -> list[_Part]:
    """The claim cut into parts (:func:`_part_cuts`)."""
    text = claim.text
    cuts = [*_part_cuts(text, claim.english), len(text)]
    content = claim.content
    found = []
    for start, end in zip(cuts, cuts[1:], strict=False):
        piece = text[start:end]
        words = tuple(t for t in content if any(start <= u.start < end and u.folded == t.folded
                                                for u in claim.tokens))
        numbers = claim_words.numbers_said(words_of(piece, claim.english), piece)
        if words or numbers:
            found.append(_Part(piece, words, numbers))
    return found

def support(claim: Claim, passage: PassageText, dictionary: Translations | None = None) -> Support | Shortfall:
    """The smallest window of ``passage`` that supports ``claim``, or why the closest one does not.

    One sentence (or the sentences a quotation runs over) must say the whole claim; failing that, a claim
    of several parts (between commas and coordinating conjunctions) may be said part by part by sentences
    of one paragraph, list or table, each part by one sentence."""
    quotes = _claim_quotes(claim.text)
    whole = _Part(claim.text, tuple(claim.content), claim.numbers)
    best: Shortfall | None = None
    for window in _single(passage, quotes):
        verdict = _window_supports(claim, passage, window, [whole], [window], quotes, dictionary)
        if isinstance(verdict, Support):
            return verdict
        if best is None or _closeness(verdict) > _closeness(best):
            best = verdict
    parts = _parts(claim)
    if len(parts) > 1:
        gathered = _gathered(claim, passage, parts, quotes, dictionary)
        if gathered is not None:
            if isinstance(gathered, Support):
                return gathered
            if best is None or not gathered.missing and not gathered.numbers:
                best = gathered  # every part was found: why they cannot be joined says more
    return best or Shortfall(missing=tuple(t.text for t in claim.content), numbers=claim.numbers)


def _closeness(verdict: Shortfall) -> int:
    return -4 * (len(verdict.missing) + len(verdict.numbers)) - (verdict.polarity is not None)

def _single(passage: PassageText, quotes: list[str]) -> list[Window]:
    """Every sentence, smallest first, and for each quotation found in the passage the sentences it runs
    over, as one window."""
    units = passage.windows
    found = sorted(units, key=lambda u: u.end - u.start)
    for quote in quotes:
        for start, end in occurrences(quote, passage.text):
            around = [u for u in units if u.start < end and start < u.end]
            if len(around) > 1:
                found.append(Window(min(u.start for u in around), max(u.end for u in around),
                                    tuple(dict.fromkeys(c for u in around for c in u.context)), around[0].run))
    return found

def _gathered(claim: Claim, passage: PassageText, parts: list[_Part], quotes: list[str],
              dictionary: Translations | None) -> Support | Shortfall | None:
    """The smallest run of neighbouring sentences (of one paragraph, list or table) in which each part of
    the claim is said by one sentence; None when no run holds every part."""
    units = passage.windows
    saying = [{u for u, unit in enumerate(units) if isinstance(
                   _window_supports(claim, passage, unit, [part], [unit], [], dictionary, polarity=False), Support)}
              for part in parts]
    if not all(saying):
        return None
    best: tuple[int, int] | None = None
    for first in range(len(units)):
        for last in range(first + 1, len(units)):
            if units[last].run != units[first].run:
                break
            if all(any(first <= u <= last for u in said) for said in saying):
                if best is None or last - first < best[1] - best[0]:
                    best = (first, last)
                break
    if best is None:
        return None
    run = units[best[0]:best[1] + 1]
    window = Window(run[0].start, run[-1].end, tuple(dict.fromkeys(c for u in run for c in u.context)), run[0].run)
    return _window_supports(claim, passage, window, parts, list(run), quotes, dictionary)

def _inside(passage: PassageText, unit: Window) -> list[int]:
    return [i for i, w in enumerate(passage.words)
            if unit.start <= w.start < unit.end or any(a <= w.start < b for a, b in unit.context)]

def _unit_text(passage: PassageText, unit: Window) -> str:
    return passage.text[unit.start:unit.end] + " " + " ".join(passage.text[a:b] for a, b in unit.context)

def _window_supports(claim: Claim, passage: PassageText, window: Window, parts: list[_Part], units: list[Window],
           quotes: list[str], dictionary: Translations | None, *, polarity: bool = True) -> Support | Shortfall:
    """Does ``window`` support ``claim``: each of its ``parts`` (words and numbers) said by one of the
    window's ``units`` (with its context), each quotation inside the window, the polarity the same, and —
    when the parts come from several sentences — no part taken from a sentence about a name the claim
    does not hold while it holds one of its own?"""
    missing: list[str] = []
    numbers: list[str] = []
    found: dict[str, _Found] = {}
    used: set[int] = set()
    homes: list[int] = []  # the unit each part was found in
    for part in parts:
        best: tuple[int, dict[str, _Found], list[str], list[str]] | None = None
        for index, unit in enumerate(units):
            inside = _inside(passage, unit)
            here = {w.text: f for w in part.words if (f := _places(w, claim, passage, inside, dictionary)).places}
            lost = [w.text for w in part.words if w.text not in here]
            absent = _numbers_missing(part.numbers, part.text, claim.english, passage, inside,
                                      _unit_text(passage, unit))
            if best is None or len(lost) + len(absent) < len(best[2]) + len(best[3]):
                best = (index, here, lost, absent)
            if not lost and not absent:
                break
        assert best is not None
        index, here, lost, absent = best
        used.add(index)
        homes.append(index)
        found.update(here)
        missing += [w for w in lost if w not in missing]
        numbers += [n for n in absent if n not in numbers]
    for quote in quotes:
        if not any(window.start <= s and e <= window.end for s, e in occurrences(quote, passage.text)):
            missing.append(f"„{quote}“")
    shown = passage.text[window.start:window.end] + "".join(passage.text[a:b] for a, b in window.context)
    missing += [f"'{char}'" for char in dict.fromkeys(_SYMBOLS.findall(_unquoted_claim(claim.text)))
                if char not in shown]
    differs, kind = None, "number" if numbers and not missing else "claim"
    if polarity and not missing and not numbers:
        taken = [units[i] for i in sorted(used)]
        checks = [("polarity", lambda: _polarity(claim, passage, found)),
                  ("claim", lambda: _turned(claim, passage, window, found)),
                  ("number", lambda: _bound(claim, passage, window, found)),
                  ("claim", lambda: _crossed(claim, passage, window, found)),
                  ("claim", lambda: _named_elsewhere(passage, found, taken))]
        if len(used) > 1:
            checks += [("claim", lambda: _moved(passage, found, taken)),
                       ("number", lambda: _numbers_left(claim, passage, taken)),
                       ("claim", lambda: _shared_opening(claim, passage, parts, [units[i] for i in homes], dictionary))]
        for rule_kind, rule in checks:
            differs = rule()
            if differs is not None:
                kind = rule_kind
                break
    if not missing and not numbers and differs is None:
        return Support(window.start, window.end)
    return Shortfall(tuple(missing), tuple(numbers), differs, (window.start, window.end), kind)

def _bound(claim: Claim, passage: PassageText, window: Window, found: dict[str, _Found]) -> str | None:
    """A number the claim says of something the passage says of another number: the words that follow a
    number in the claim (its unit, what it counts: ``150 GB per month``) must stand in the phrase of one of
    its occurrences in the window, where the window holds them, the first of them within :data:`NEAR`
    words of it (``dvě lžíce … 3–5 minut``: three spoons are not said)."""
    text = claim_words.mask_marks(claim.text)
    cuts = sorted({*(a for a, _ in clauses_of(text)), *_part_cuts(text, claim.english), len(text)})
    content = [t for t in claim.tokens if t.content]
    spots = [(m.group(0), m.start(), m.end()) for m in claim_words.NUMBER_RE.finditer(text)]
    spots += [(claim_words.format_number(t.number), t.start, t.end) for t in claim.tokens if t.number is not None]
    starts = sorted(start for _, start, _ in spots)
    for number, start, stop in spots:
        end = min(next((c for c in cuts if c > start), len(text)), next((s for s in starts if s >= stop), len(text)))
        after = [t for t in content if stop <= t.start < end][:FOLLOWERS]
        places = [[i for i, _ in found[t.text].places if i >= 0 and window.start <= passage.words[i].start < window.end]
                  for t in after if t.text in found]
        places = [p for p in places if p]
        if not places:
            continue
        value = _value(number)
        held = [w for w in _number_spots(passage, window) if w[0] == value]
        if not held:
            continue
        if not any(all(any(_phrase_at(passage, passage.words[i].start) == _phrase_at(passage, at) for i in p)
                       for p in places) and any(abs(i - _word_at(passage, at)) <= NEAR for i in places[0])
                   for _, at in held):
            said = " ".join(passage.words[p[0]].text for p in places)
            return (f"it says {number} of {said!r}, which the passage says of another number: "
                    f"«{_clause_text(passage, places[0][0])}»")
    return None

FOLLOWERS = 2  # the words after a number that say what it counts
NEAR = 4  # words from a number in the passage within which the first of them must stand

def _value(number: str) -> str:
    number = number.rstrip(".,:/")
    return number.replace(",", ".") if re.fullmatch(r"\d+,\d+", number) else number

def _number_spots(passage: PassageText, window: Window) -> list[tuple[str, int]]:
    """The numbers of the window as (value, offset): digit groups and number words."""
    spots = [(_value(m.group(0)), m.start()) for m in claim_words.NUMBER_RE.finditer(passage.plain, window.start,
                                                                                      window.end)]
    spots += [(claim_words.format_number(w.number), w.start) for w in passage.words
              if w.number is not None and window.start <= w.start < window.end]
    return spots

def _crossed(claim: Claim, passage: PassageText, window: Window, found: dict[str, _Found]) -> str | None:
    """Two words the claim puts side by side, which the passage says in two clauses where the second
    clause opens with a word the claim leaves out (``maso zprudka opéct, zeleninu orestovat``: the claim
    "maso se orestuje" moved the browning from the vegetables to the meat). A claim may still join a
    clause's opening to the next clause (``Druhý den`` with ``zeleninu orestovat``)."""
    said = [t for t in claim.tokens if t.content and t.text in found]
    matched = {i for f in found.values() for i, _ in f.places if i >= 0}
    cuts = _part_cuts(claim.text, claim.english)
    previous: int | None = None
    part = -1
    for token in said:
        here_part = sum(1 for c in cuts if c <= token.start)
        if here_part != part:  # a new part of the claim: it may join another clause
            part, previous = here_part, None
        places = [i for i, _ in found[token.text].places
                  if i >= 0 and window.start <= passage.words[i].start < window.end]
        if not places:
            continue
        if previous is None:
            previous = places[0]
            continue
        last = previous
        here = min(places, key=lambda i: abs(i - last))
        if _clause_index(passage, here) != _clause_index(passage, previous):
            start = passage.clauses[_clause_index(passage, here)][0]
            skipped = [w for j, w in enumerate(passage.words[:here])
                       if w.start >= start and w.content and j not in matched]
            if skipped and here > previous:
                return (f"it says {passage.words[previous].text!r} with {token.text!r}, which the passage says of "
                        f"{skipped[0].text!r}: «{_clause_text(passage, here)}»")
        previous = here
    return None


def _word_at(passage: PassageText, offset: int) -> int:
    """The index of the passage's word at (or just after) ``offset``."""
    return next((i for i, w in enumerate(passage.words) if w.end > offset), len(passage.words))


def _phrase_at(passage: PassageText, offset: int) -> int:
    """The phrase of the passage at ``offset``: its clause, brackets not cutting it (``1 can (400 g) chopped
    tomatoes`` is one phrase)."""
    return next((k for k, (a, b) in enumerate(passage.phrases) if a <= offset < b), -1)

def _clause_at(passage: PassageText, offset: int) -> int:
    return next((k for k, (a, b) in enumerate(passage.clauses) if a <= offset < b), -1)

def _numbers_left(claim: Claim, passage: PassageText, units: list[Window]) -> str | None:
    """A claim gathered from several sentences must keep each one's numbers: leaving out one (``1 minute``
    of the garlic) and taking the next line's (``10 minutes`` of the tomatoes) is how facts are spliced."""
    said = set(claim.numbers) | {n.replace(",", ".") for n in claim.numbers}
    for unit in units:
        for value, _ in _number_spots(passage, unit):
            if value not in said:
                return (f"it joins several sentences of the passage but leaves out {value} of "
                        f"«{_excerpt(passage, unit)}»")
    return None

def _named_elsewhere(passage: PassageText, found: dict[str, _Found], units: list[Window]) -> str | None:
    """A name the claim found only in the title, the heading or a lead-in line, while the sentence it took
    the rest from names something else: the sentence is about that, not about the name."""
    for word, f in found.items():
        if any(i >= 0 and any(u.start <= passage.words[i].start < u.end for u in units) for i, _ in f.places):
            continue
        if not word[:1].isupper() and not any(i >= 0 and passage.name_like[i] for i, _ in f.places) \
                and not any(i < 0 and w[:1].isupper() for i, w in [(i, word) for i, _ in f.places]):
            continue
        matched = {i for g in found.values() for i, _ in g.places if i >= 0}
        for unit in units:
            own = [w.text for i, w in enumerate(passage.words)
                   if unit.start <= w.start < unit.end and passage.name_like[i] and i not in matched]
            if own:
                return (f"it names {word!r}, which the passage names only around «{_excerpt(passage, unit)}», "
                        f"a sentence about {own[0]!r}")
    return None

_SYMBOLS = re.compile(r"[{}<>|=+~^\\#@$%&]")  # in commands and code: a key, an operator is a fact too

def _blank_quotes(text: str) -> str:
    """``text`` with its quotations and code spans as spaces."""
    spans = quote_spans(text)
    return "".join(" " if any(a <= i < b for a, b in spans) else c for i, c in enumerate(text))


def _unquoted_claim(text: str) -> str:
    spans = quote_spans(text)
    return "".join(" " if any(a <= i < b for a, b in spans) else c for i, c in enumerate(claim_words.mask_marks(text)))

_PREPOSITION = re.compile(r"\s*(?:v|ve|na|u|při|pri|pro|pre|do|z|ze|zo|za|po|od|k|ke|ku|s|se|so|in|at|on|for|with|"
                          r"during|by|from|to)\s", re.IGNORECASE)

_COPULA = re.compile(r"\b(?:je|jsou|sú|su|byl|byla|bylo|byli|bol|bola|boli|bude|budou|budú|má|mají|majú|is|are|was|"
                     r"were|has|have|had)\b", re.IGNORECASE)

def _shared_opening(claim: Claim, passage: PassageText, parts: list[_Part], homes: list[Window],
                    dictionary: Translations | None) -> str | None:
    """A claim gathered from several sentences that opens with a place or time (``V asijském obchodě …``)
    says it of every part that has none of its own: each such part's sentence must say it too."""
    if not parts or not _PREPOSITION.match(parts[0].text) or not parts[0].words:
        return None
    opening: list[Token] = []
    for token in claim_words.words_of(parts[0].text, claim.english)[1:]:
        if token.free or len(opening) == 2:
            break
        if token.content:
            opening += [w for w in parts[0].words if w.folded == token.folded][:1]
    for part, unit in zip(parts[1:], homes[1:], strict=False):
        own = re.sub(r"^[\W\s]*(?:(?:a|i|aj|and|or|nebo|alebo|ale|but)\s)?", " ", part.text)
        if unit == homes[0] or _PREPOSITION.match(own) or _COPULA.search(own):
            continue  # a part with its own place, or a clause of its own
        inside = _inside(passage, unit)
        lost = [w.text for w in opening if not _places(w, claim, passage, inside, dictionary).places]
        if lost:
            return (f"it says {' '.join(w.text for w in opening)!r} of «{_excerpt(passage, unit)}» too, "
                    f"which the passage does not")
    return None

def _moved(passage: PassageText, found: dict[str, _Found], units: list[Window]) -> str | None:
    """When a claim is gathered from several sentences and holds a name of its own: the name of a sentence
    it took words from that it does not hold (a fact moved to another person), or None."""
    matched = {i for f in found.values() for i, _ in f.places if i >= 0}
    if not any(passage.name_like[i] for i in matched):
        return None
    for unit in units:
        for i, word in enumerate(passage.words):
            if unit.start <= word.start < unit.end and passage.name_like[i] and i not in matched:
                return (f"it joins what the passage says of different things: «{_excerpt(passage, unit)}» "
                        f"is about {word.text!r}, which the sentence does not name")
    return None

def _excerpt(passage: PassageText, unit: Window) -> str:
    text = " ".join(passage.text[unit.start:unit.end].split())
    return text if len(text) <= 80 else text[:79] + "…"

def _places(word: Token, claim: Claim, passage: PassageText, inside: list[int],
            dictionary: Translations | None) -> _Found:
    """Where ``word`` occurs among the window's words (and the title and heading): the same word or a form
    of it; else through a ne- prefix on either side; else, for an English claim, as a translation."""
    found = _Found()
    pool = [(i, passage.words[i]) for i in inside] + [(-1 - k, w) for k, w in enumerate(passage.outside)]
    marked = passage.accented and claim.accented  # both written with diacritics: hořká is not horká
    found.places = [(i, "") for i, w in pool if same_word(word, w) and (not marked or spelled_alike(word.text, w.text)
                                                                        and not _free_homograph(w, word))]
    if found.places:
        return found
    found.places = [(i, side) for i, w in pool if (side := negated_side(word.folded, w.folded))]
    if found.places or not (claim.english and dictionary is not None and word.folded.isascii()):
        return found
    forms = translation_forms(word.folded, dictionary)
    read = as_czech if passage.slovak else str
    found.places = [(i, "") for i, w in pool if translates(forms, read(w.text), passage.accented)]
    found.places = found.places or [(i, "p") for i, w in pool if w.folded[:2] == "ne" and len(w.folded) > 4
                                    and translates(forms, read(w.text[2:]), passage.accented)]
    return found

def _free_homograph(passage_word: Token, claim_word: Token) -> bool:
    """Is the passage's word the free word that the claim's content word only folds alike (být "to be" for byt
    "flat"), both written with diacritics?"""
    return passage_word.folded in lexicon.FREE_SPELLINGS and passage_word.free and not claim_word.free

def _polarity(claim: Claim, passage: PassageText, found: dict[str, _Found]) -> str | None:
    """How the claim's polarity differs from the window's, or None when they agree.

    A negator (and a word found only through its ne-, on the side that has the ne-) negates what follows
    it in its clause: its **scope**. Each content word of the claim needs an occurrence that is in a
    negation's scope exactly when the claim's word is in one (the subject before a negation stays outside
    it on both sides). A limit word in the passage's scope (``ne jen``: not only) must be in the claim's
    too. A quotation is read the same way: cut out after a negation, its words lose their scope."""
    tokens_ = claim.tokens
    content_at = {t.text: i for i, t in reversed(list(enumerate(tokens_))) if t.content}
    claim_self = {content_at[w] for w, f in found.items() if w in content_at and f.places
                  and all(via == "c" for _, via in f.places)}
    claim_scoped = negation_scope(tokens_, clauses_of(claim.text), claim_self)
    passage_self = {i for f in found.values() for i, via in f.places if via == "p" and i >= 0}
    if claim.negated and not passage.english:
        # an English "don't use numbers …" about "Nepoužívej čísla …": a ne- word the claim does not hold
        # (its "use" is a free word) negates what follows it, as a negator does
        itself = {i for f in found.values() for i, via in f.places if via == "" and i >= 0}
        passage_self |= {i for i, w in enumerate(passage.words) if i not in itself and lexicon.looks_negated(w.folded)}
    passage_scoped = negation_scope(passage.words, passage.clauses, passage_self)
    for word, f in found.items():
        at = content_at.get(word)
        if at is None:
            continue
        want = claim_scoped[at]
        inside = [i for i, _ in f.places if i >= 0] or [i for i, _ in f.places]  # the headings when nothing else
        if any((passage_scoped[i] if i >= 0 else passage.outside_scoped[-1 - i]) == want for i in inside):
            continue
        shown = next((i for i, _ in f.places if i >= 0), -1)
        clause = _clause_text(passage, shown)
        if want:
            negators = " ".join(t.text for t in tokens_ if t.negator) or tokens_[at].text
            return f"it says {word!r} with a negation ({negators}); the passage says it without one: «{clause}»"
        return f"it says {word!r} without a negation; the passage says it with one: «{clause}»"
    held = {i for f in found.values() for i, _ in f.places if i >= 0 and passage_scoped[i]}
    negated_words = {tokens_[content_at[w]].folded for w in found if w in content_at and claim_scoped[content_at[w]]}
    for i in held:
        where = _clause_index(passage, i)
        for j, other in enumerate(passage.words):
            if (passage_scoped[j] and _clause_index(passage, j) == where and other.folded in lexicon.LIMITS
                    and other.folded not in negated_words and j not in held):
                return (f"it leaves out {other.text!r} of the passage's negation: "
                        f"«{_clause_text(passage, j)}»")
    return None

def _turned(claim: Claim, passage: PassageText, window: Window, found: dict[str, _Found]) -> str | None:
    """A word or number the claim says with a preposition of direction (``do Brna``, ``to Brno``, ``into the
    pot``, ``od 10 hodin``) that the window says with the opposite one (``z Brna``, ``z hrnca``, ``do 10
    hodin``) and never with the same: where from and where to, since and until, turned round. A word the
    claim says with both, or the window only without such a preposition, is not judged."""
    tokens = claim.tokens
    said: list[tuple[str, list[int]]] = []  # the claim's word, and its places in the window
    for word, f in found.items():
        said.append((word, [i for i, _ in f.places if i >= 0 and window.start <= passage.words[i].start < window.end]))
    for t in tokens:
        if t.folded.isdigit():
            said.append((t.text, [i for i, w in enumerate(passage.words) if w.folded == t.folded
                                  and window.start <= w.start < window.end]))
    for word, places in said:
        folded = next((t.folded for t in tokens if t.text == word), None)
        ways = {_direction(tokens, k, claim.text, claim.english) for k, t in enumerate(tokens) if t.folded == folded}
        if len(ways) != 1 or None in ways or not places:
            continue
        want = ways.pop()
        there = {_direction(passage.words, i, passage.plain, passage.english) for i in places}
        if want not in there and there - {None}:
            other = next(iter(there - {None}))
            return f"it says {want} {word!r} where the passage says {other}: «{_clause_text(passage, places[0])}»"
    return None


_DETERMINERS = frozenset("the a an this that these those my your his her its our their".split())
# Czech and Slovak adjectives and pronouns agreeing with a noun after z, od, do, k (genitive, dative): velkého,
# našich, malému, tohoto, tohto, tej; "roku" before a year (od roku 2010). Short endings (-é, -í) are left out: a verb
# or another noun ends so too (vyndáme, lednice), and a phrase they would open is not judged.
_AGREEING = re.compile(r"(?:eho|iho|oho|oto|ohto|omto|emu|imu|ych|ich|ym|im|ymi|imi|ej|ejto|roku)$")
# Nouns whose "od", "k", "to" names what they open, not a way: klíč od bytu, heslo k wifi, the key to the flat.
_OPENED_BY = frozenset("klic klice klicu klicem heslo hesla heslem kluc kluca klucom kod kodu password passwords "
                       "key keys code codes access pin".split())

def _direction(words: list[Token], at: int, text: str, english: bool) -> str | None:
    """"from" or "to" when a preposition of direction (:data:`server.lexicon.FROM`, :data:`~server.lexicon.TO`)
    opens the phrase of the word at ``at``: right before it, or before an article (English) or up to two
    agreeing words (Czech and Slovak: ``into the pot``, ``do velkého hrnce``), in one stretch of text without
    a mark between; else None."""
    for i in range(at - 1, max(at - 4, -1), -1):
        if re.search(r"[.,;:!?()\[\]\n|]", text[words[i].end:words[i + 1].start]):
            return None
        word, before = words[i].folded, words[i - 1].folded if i > 0 else ""
        if before in _OPENED_BY:
            return None
        if word in lexicon.FROM or word == "of" and before == "out":
            return "from"
        if word in lexicon.TO or word == "po" and before == "az":  # Slovak "až po nedeľu": until Sunday
            return "to"
        if not (word in _DETERMINERS if english else _AGREEING.search(word)):
            return None
    return None


def _clause_index(passage: PassageText, word: int) -> int:
    at = passage.words[word].start
    for index, (start, end) in enumerate(passage.clauses):
        if start <= at < end:
            return index
    return -1

def _clause_text(passage: PassageText, word: int) -> str:
    index = _clause_index(passage, word) if word >= 0 else -1
    if index < 0:
        return ""
    start, end = passage.clauses[index]
    return " ".join(passage.text[start:end].split())[:80]

def _numbers_missing(wanted: tuple[str, ...], claim_text: str, english: bool, passage: PassageText,
                     inside: list[int], text: str) -> list[str]:
    """The claim's numbers the window does not hold, counted: a claim that says 2 twice (``min. 2 na dve
    strany``) needs two 2s there. A number of several parts (a date, a time) is looked for as written, its
    parts spaced or not."""
    held = _values([passage.words[i] for i in sorted(inside)], text) + _values(passage.outside, "")
    claim_text = _blank_quotes(claim_text)  # a quotation's numbers are its own: checked word for word
    missing = []
    for number in _values(words_of(claim_text, english), claim_text):
        if number in held:
            held.remove(number)
        elif number not in wanted or not re.search(r"[.:/]", number) or not number_in(number, text):
            missing.append(number)
    return list(dict.fromkeys(missing))

def _values(words: list[Token], text: str) -> list[str]:
    """The numbers of ``text`` (digit groups, a decimal comma read as a point) and of its number words."""
    found = [m.group(0).rstrip(".,:/") for m in claim_words.NUMBER_RE.finditer(claim_words.mask_marks(text))]
    found = [n.replace(",", ".") if re.fullmatch(r"\d+,\d+", n) else n for n in found]
    return found + claim_words.word_numbers(words)

def _claim_quotes(text: str) -> list[str]:
    return [q for q in quotes(text) if claim_words.words_of(q, False)]
