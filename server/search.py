"""Hybrid search over chunks: BM25 (FTS5, exact forms and Czech/Slovak word keys) and KNN (vectors),
fused by rank, grouped by note, with an honest word when nothing matches.

The order of work for one query:
1. its words (:mod:`server.query`); in a query written in English, each word is searched also as
   its Czech translations the notes hold (:mod:`server.translate`); a word no note holds in any
   form is replaced by a close one that some note holds (:mod:`server.spelling`), and the answer
   says what was searched instead;
2. BM25 over chunks: every word, else any content word; the vector half: the nearest chunks;
3. fusion (:mod:`server.fusion`): Reciprocal Rank Fusion at k=10, except that a BM25 winner far
   ahead of its runner-up stays first (and a leading pair far ahead of the third);
4. results by note: when the first hit holds every word of the query, the chunks found by meaning
   alone that hold none of them are left out (:func:`_earned`); at most ``max_per_note`` chunks of a
   note among the hits (its other matching sections are listed under its first hit, whatever the
   limit), and chunks with byte-identical text (copied notes) are one hit naming the other places;
5. ``weak``: true when neither half found anything confident (see :func:`server.fusion.is_weak`), or
   when no note holds a word typed as a name (:func:`server.spelling.unknown_names`).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core import messages
from builder.core.config import Config
from builder.core.embedding import Embedder, EmbeddingError
from builder.core.errors import UserError
from builder.core.urls import hit_url
from server import fusion, spelling, translate
from server.query import (
    MAX_QUERY_CHARS,
    Term,
    common_only,
    content,
    marks,
    match_all,
    match_any,
    parse,
)
from server.snippets import coverage, excerpt, matcher, plain_text, typed_without_accents

if TYPE_CHECKING:
    from sqlite3 import Connection, Row

Nearest = Callable[[bytes, int], "list[tuple[int, float]] | None"]
VectorLater = Callable[[], "tuple[bytes | None, str | None]"]  # waits for the query's vector (or why not)
# How a search gets its query's vector, asked with the query once its words are searched (so a server that
# started embedding first overlaps the two): the vector, or None and why not (see embedded_by and made_before).
QueryVector = Callable[[str], "tuple[bytes | None, str | None]"]

MODES = ("hybrid", "bm25", "vector")
MAX_LIMIT = 100
MAX_PER_NOTE = 2
CANDIDATES = 30  # each half's list, before fusion (more than the hits: grouping drops some)
COMMON_CHUNKS = 2000  # a word key in more chunks is common: it alone does not make a chunk a candidate
COMMON_SAVED = 5000  # ... once the common words are in this many chunks together (BM25 costs ~0.7 µs a chunk)


@dataclass(frozen=True)
class OtherSection:
    """Another matching section of a shown note, listed under the note's first hit."""

    breadcrumb: str
    anchor: str
    line_start: int
    url: str  # its place on the note's page, site-relative


@dataclass(frozen=True)
class TextCopy:
    """The same text as a hit's in another note, listed under the hit instead of shown again."""

    source: str
    path: str
    url: str
    breadcrumb: str
    line_start: int
    line_end: int


@dataclass(frozen=True)
class Hit:
    source: str
    path: str
    title: str
    breadcrumb: str
    anchor: str
    line_start: int
    line_end: int
    snippet: str  # HTML-escaped text with <mark> around matched words
    score: float
    ranks: dict[str, int | None]  # where each half ranked the chunk (1-based), or None
    url: str  # the note page, site-relative, with the section anchor
    more: tuple[OtherSection, ...] = ()  # the note's other matching sections
    copies: tuple[TextCopy, ...] = ()  # the same text elsewhere
    words: tuple[str, ...] = ()  # the chunk's words that match (snippets.excerpt): the page it leads to marks them


Said = tuple[str, tuple[tuple[str, str | int], ...]]  # what a search says: a key of builder.core.messages, values


def said(key: str, **values: str | int) -> Said:
    """A note of a search, to be said in any language (the CLI and ``notes``: English)."""
    return key, tuple(values.items())


def english(note: Said) -> str:
    """A note of a search in English, as the CLI prints it and ``/api/search``'s ``notes`` hold it."""
    return messages.text("en", note[0], **dict(note[1]))


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str
    hits: tuple[Hit, ...]
    said: tuple[Said, ...] = field(default=())  # what the search says about itself (``notes``: in English)
    weak: bool = False  # nothing confident: the hits are only the closest there is
    corrected: str | None = None  # the words searched instead of the typed ones
    marked: tuple[str, ...] = ()  # the words the snippets mark: as searched, function words left out
    translated: tuple[tuple[str, tuple[str, ...]], ...] = ()  # English words and the translations searched too
    vectors: tuple[int, int] | None = None  # (chunks with a vector, all chunks) while some still wait

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(english(note) for note in self.said)

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "weak": self.weak, "corrected": self.corrected,
                "translated": {word: list(found) for word, found in self.translated},
                "marked": list(self.marked), "notes": list(self.notes),
                "said": [{"key": key, "values": dict(values)} for key, values in self.said],
                "vectors": {"ready": self.vectors[0], "total": self.vectors[1]} if self.vectors else None,
                "hits": [asdict(h) for h in self.hits]}


def check_mode(mode: str) -> str:
    """``mode`` when it is one of :data:`MODES`, else a :class:`UserError` naming the choices."""
    if mode not in MODES:
        raise UserError(f"mode must be one of {', '.join(MODES)}, got {mode[:20]!r}")
    return mode


def check_limit(limit: int | str) -> int:
    """``limit`` (an int, or its decimal digits as typed) when it is from 1 to :data:`MAX_LIMIT`."""
    text = str(limit)
    if not re.fullmatch(r"[0-9]{1,3}", text) or not 1 <= int(text) <= MAX_LIMIT:
        raise UserError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {text[:20]!r}")
    return int(text)


def unknown_tag(conn: Connection, tag: str) -> str:
    """``unknown tag 'x' (tags: a, b, … 40 in all)``: the message of a 400 and of the CLI's exit 2."""
    known = db.tag_names(conn)
    listed = ", ".join(name for name, _ in known[:12]) + (f", … {len(known)} in all" if len(known) > 12 else "")
    return f"unknown tag {tag[:40]!r} ({f'tags: {listed}' if known else 'no note has tags'})"


def search(conn: Connection, config: Config, query: str, *, limit: int = 10, source: str | None = None,
           tag: str | None = None, mode: str = "hybrid", vector: QueryVector | None = None,
           nearest: Nearest | None = None, max_per_note: int = MAX_PER_NOTE, correct: bool = True) -> SearchResult:
    """Answer one query. Raises :class:`ReindexNeeded` when the index speaks another embedding space.

    ``vector`` gives the query's vector (:func:`embedded_by` an embedder, :func:`made_before` one made before, or
    the server's own); with none, the results are BM25-only and a note says why. ``nearest`` (the server's
    in-memory vectors) may answer the KNN scan instead of sqlite-vec. ``correct=False`` searches the words as
    typed (no word is replaced by a close one: the way out when a correct word the notes lack was taken for
    a typo).
    """
    check_mode(mode)
    check_limit(limit)
    db.check_identity(conn, config)
    terms = parse(query)
    if not terms:
        return SearchResult(query, mode, (), (said("said.no_words"),))
    common = common_only(terms)
    if common:  # function words alone are in nearly every note: no hit would be an answer
        return SearchResult(query, mode, (), (said("said.common", words=common),), weak=True)
    words = _words(conn, config, terms, correct)
    notes = list(words.said)
    within = db.tag_chunk_ids(conn, tag, source) if tag is not None else None
    lexical = _bm25(conn, words.terms, words.stems, source, tag, words.counts, within)
    semantic: list[tuple[int, float]] = []
    if mode in ("hybrid", "vector"):
        query_vector, why = vector(query) if vector is not None else (None, None)
        semantic, note = _vector(conn, config, source, tag, query_vector, why, nearest)
        if note:
            notes.append(note)
    progress = db.vector_progress(conn) if config.embedding.enabled else None
    if progress and mode != "bm25":
        notes.append(said("said.waiting", ready=progress[0], total=progress[1]))
    hits, weak = _fused_hits(conn, words, lexical, semantic, mode, bool(progress), limit, max_per_note, source)
    if tag is not None and not hits and not db.tag_exists(conn, tag):  # asked only then: it reads every note's tags
        raise UserError(unknown_tag(conn, tag))
    if not hits and not db.counts(conn)["chunks"]:
        notes.append(said("said.empty"))
    return SearchResult(query, mode, tuple(hits), tuple(notes), weak, words.corrected, tuple(marks(words.terms)),
                        words.translated, progress)


def embedded_by(embedder: Embedder) -> QueryVector:
    """The query's vector made by ``embedder`` when the search asks for it."""
    return lambda query: query_vector_of(embedder, query)


def made_before(vector: bytes | None, error: str | None = None) -> QueryVector:
    """A vector made before the search (or None and why not)."""
    return lambda _query: (vector, error)


@dataclass(frozen=True)
class _Words:
    """The query's words as searched: translated, respelled, and what the search says of them."""

    terms: list[Term]
    said: tuple[Said, ...]
    counts: spelling.KeyCounts  # the words' chunk counts, for translations, the typo check and BM25
    stems: bool  # the index holds word keys
    translated: tuple[tuple[str, tuple[str, ...]], ...]  # English words and the translations searched too
    corrected: str | None  # the words searched instead of the typed ones
    unknown: tuple[str, ...]  # names no note holds


def _words(conn: Connection, config: Config, terms: list[Term], correct: bool) -> _Words:
    """``terms`` with their translations (English searched in Czech and Slovak too), respelled unless not
    ``correct`` (another form of a word the notes hold, or the closest word for a typo), and the remarks."""
    notes: list[Said] = []
    counts = spelling.KeyCounts(conn)
    stems = db.has_stems(conn)
    if config.dictionary is not None and stems and db.has_vocabulary(conn):  # translations are searched by word keys
        terms = translate.translated(terms, config.dictionary, counts)
    translated = tuple((t.text, t.translations) for t in terms if t.translations)
    if translated:
        notes.append(said("said.translated", pairs="; ".join(f"{word} → {', '.join(found)}"
                                                            for word, found in translated)))
    corrections: dict[str, str] = {}
    if correct:  # as typed: no word is searched as another
        terms, corrections = spelling.respell(conn, terms, counts)
        notes += [said("said.forms", word=repr(t.text), forms=", ".join(t.forms)) for t in content(terms) if t.forms]
    corrected = None
    if corrections:
        terms = spelling.replaced(terms, corrections)
        corrected = " ".join(t.text for t in terms)
        notes.append(said("said.corrected", words=", ".join(repr(w) for w in corrections), corrected=repr(corrected)))
    unknown = spelling.unknown_names(conn, terms)
    if unknown:
        notes.append(said("said.unknown", words=", ".join(repr(w) for w in unknown)))
    return _Words(terms, tuple(notes), counts, stems, translated, corrected, tuple(unknown))


def _fused_hits(conn: Connection, words: _Words, lexical: list[tuple[int, float]], semantic: list[tuple[int, float]],
            mode: str, waiting: bool, limit: int, max_per_note: int, source: str | None) -> tuple[list[Hit], bool]:
    """The two halves fused, grouped into hits, and whether the answer is weak (``waiting``: some chunks
    have no vector yet)."""
    terms = words.terms
    rows = db.chunk_details(conn, [i for i, _ in lexical] + [i for i, _ in semantic])
    texts = _best_notes_texts(lexical, rows)
    best = max((coverage(text, terms) for text in texts), default=0.0)
    unaccented = typed_without_accents("\n".join(texts), terms)
    unembedded: frozenset[int] = frozenset()
    if waiting and semantic:  # a chunk may have been removed by a build since the lists were made
        unembedded = frozenset(i for i, _ in lexical if i in rows and rows[i]["waiting"])
    # the model reads such a query poorly: typed without accents, or English over Czech and Slovak text
    across = bool(words.translated) and max((coverage(text, translate.untranslated(terms)) for text in texts),
                                            default=0.0) < fusion.OWN_WORDS
    ranked = fusion.fuse(lexical if mode != "vector" else [], semantic if mode != "bm25" else [], best,
                         words_lead=unaccented or across, unembedded=unembedded)
    hits = _group(_earned(ranked, rows, terms), rows, terms, limit, max_per_note)
    weak = bool(words.unknown) or _weak(best, lexical, semantic, rows, mode, unaccented, fusion.agreement_depth(
        db.count_chunks_up_to(conn, fusion.SMALL_COLLECTION, source)))
    return hits, weak


def waiting_for_vectors(ready: int, total: int) -> str:
    """The note of a search while the vectors are backfilled (the search box and the CLI show it)."""
    return english(said("said.waiting", ready=ready, total=total))


def query_vector_of(embedder: Embedder, query: str) -> tuple[bytes | None, str | None]:
    """The query's vector (:meth:`Embedder.embed_query` on its first ``MAX_QUERY_CHARS``), or None and the
    provider's error: a search goes on by its words when the model fails."""
    try:
        return embedder.embed_query(query[:MAX_QUERY_CHARS]), None
    except EmbeddingError as exc:
        return None, str(exc)


def _bm25(conn: Connection, terms: list[Term], stems: bool, source: str | None, tag: str | None,
          counts: spelling.KeyCounts, within: str | None = None) -> list[tuple[int, float]]:
    """Chunks holding every word (in some form; ``stems``: or its key), then chunks holding any content
    word; ``within``: only these chunks (a rare tag's, :func:`builder.core.index.tag_chunk_ids`)."""
    found = db.fts_search(conn, match_all(terms, stems), CANDIDATES, source, tag, stems, within)
    if len(found) < CANDIDATES and (len(content(terms)) > 1 or not found):
        seen = {chunk_id for chunk_id, _ in found}
        found += [hit for hit in _any_word(conn, terms, stems, source, tag, counts, within) if hit[0] not in seen]
    return found[:CANDIDATES]


def _any_word(conn: Connection, terms: list[Term], stems: bool, source: str | None,
              tag: str | None, counts: spelling.KeyCounts | None = None,
              within: str | None = None) -> list[tuple[int, float]]:
    """The best :data:`CANDIDATES` chunks holding any content word, by BM25 over all of them.

    On a large index a question's common words (``hodnota``, ``typ``) are each in thousands of
    chunks, and FTS5 scores every chunk that holds any word (over the dev queries at 100,000 chunks
    the query's p95 was 47 ms, 24 ms with the split: docs/BENCHMARKS.md).
    When the query also has rarer words, a chunk must hold one of those (Lucene's common-terms
    query): the common words still count in every score, and the answer is exactly the reference
    query's best chunks among those that hold a rare word. Two statements give it, each scoring
    only chunks with a rare word: those that also hold a common one (their full score: FTS5's BM25
    adds up what each word's phrases score), and the best by the rare words alone (the full score
    of a chunk without a common word; one with a common word that the first statement did not
    return scores below all its rows). ``(rare) NOT (common)`` for the second scores fewer chunks
    but is slower: BM25 still counts the chunks of each common word's phrases for their weight.
    """
    rare, common = _common_split(conn, terms, stems, counts)
    if not rare or not common:
        return db.fts_search(conn, match_any(terms, stems), CANDIDATES, source, tag, stems, within)
    rare_any, common_any = match_any(rare, stems), match_any(common, stems)
    both = db.fts_search(conn, f"({rare_any}) AND ({common_any})", CANDIDATES, source, tag, stems, within)
    scores = dict(db.fts_search(conn, rare_any, CANDIDATES, source, tag, stems, within))
    scores.update(both)
    return sorted(scores.items(), key=lambda hit: (-hit[1], hit[0]))[:CANDIDATES]


def _common_split(conn: Connection, terms: list[Term], stems: bool,
                  counts: spelling.KeyCounts | None = None) -> tuple[list[Term], list[Term]]:
    """The content words split into rare and common (a word key in more than :data:`COMMON_CHUNKS`
    chunks; an English word with its translations' chunks as well); no split (nothing common) unless
    the common words together are in at least :data:`COMMON_SAVED` chunks, where leaving them out of
    the candidates pays, and some chunk holds a rare word's key (else the rare words could find
    nothing and the common ones nothing more)."""
    words = content(terms)
    if not stems or len(words) < 2 or not db.has_vocabulary(conn):  # no counts before schema step 4
        return words, []
    counts = counts or spelling.KeyCounts(conn)
    phrases = {t: [phrase.split() for phrase in t.translation_keys] for t in words}
    found = counts.of([key for t in words for key in [t.key, *(k for phrase in phrases[t] for k in phrase)]])
    # a word's chunks: its key's, plus each translation's (at most its rarest key's): a bound, not a count
    chunks = {t: found[t.key] + sum(min(found[k] for k in phrase) for phrase in phrases[t]) for t in words}
    common = [t for t in words if chunks[t] > COMMON_CHUNKS]
    rare = [t for t in words if t not in common]
    if sum(chunks[t] for t in common) < COMMON_SAVED or not any(chunks[t] for t in rare):
        return words, []
    return rare, common


def _vector(conn: Connection, config: Config, source: str | None, tag: str | None, vector: bytes | None,
            embedder_error: str | None, nearest: Nearest | None) -> tuple[list[tuple[int, float]], Said | None]:
    if not config.embedding.enabled:
        return [], said("said.disabled")
    if vector is None:
        return [], said("said.no_vectors", why=embedder_error or "no embedder")
    filtered = source is not None or tag is not None
    found = nearest(vector, db.vector_candidates(CANDIDATES, filtered)) if nearest else None
    if found is None:
        return db.knn_search(conn, vector, CANDIDATES, source, tag), None
    if not filtered:
        return found[:CANDIDATES], None
    kept = set(db.filter_chunk_ids(conn, [chunk_id for chunk_id, _ in found], source, tag))
    return [hit for hit in found if hit[0] in kept][:CANDIDATES], None


def _group(ranked: list[fusion.Ranked], rows: dict[int, Row], terms: list[Term], limit: int,
           max_per_note: int) -> list[Hit]:
    """The hits in fused order, at most ``limit``: at most ``max_per_note`` per note, the note's other
    sections listed under its first hit (those past the limit too: the limit shortens the list of hits,
    never what a shown note offers), one per text (copies listed under the hit that shows it)."""
    hits: list[_Shown] = []
    by_text: dict[str, _Shown] = {}  # the hit that shows a text
    by_note: dict[tuple[str, str], list[_Shown]] = {}
    for item in ranked:
        row = rows.get(item.chunk_id)
        if row is None:  # removed by a build since the lists were made
            continue
        text_key = hashlib.sha1(row["text"].encode("utf-8")).hexdigest()
        note_key = (row["source_id"], row["path"])
        url = hit_url(row["source_id"], row["path"], row["anchor"])
        if text_key in by_text:
            first = by_text[text_key].row
            if row["path"] != first["path"] or row["source_id"] != first["source_id"]:
                by_text[text_key].copies.append(TextCopy(row["source_id"], row["path"], url, row["breadcrumb"],
                                                         row["line_start"], row["line_end"]))
            continue
        shown = by_note.setdefault(note_key, [])
        if len(shown) >= max_per_note or shown and len(hits) >= limit:  # a shown note lists it, whatever the limit
            listed = {h.row["anchor"] for h in shown} | {m.anchor for m in shown[0].more}
            if row["anchor"] not in listed:  # a long section cut in several chunks is one place to go
                shown[0].more.append(OtherSection(row["breadcrumb"], row["anchor"], row["line_start"], url))
            continue
        if len(hits) >= limit:
            continue
        hit = _Shown(row, item, url)
        hits.append(hit)
        shown.append(hit)
        by_text[text_key] = hit
    is_match = matcher(terms)  # one for all the snippets: their words recur
    return [_hit(h, terms, is_match, _elsewhere(h, by_note[(h.row["source_id"], h.row["path"])])) for h in hits]


def _elsewhere(hit: _Shown, shown: list[_Shown]) -> set[str]:
    """The anchors that other hits of ``hit``'s note, and the sections listed under them, already lead to: its
    link does not lead there too (a long section cut in chunks: the first chunk holds the H4 the second
    starts at)."""
    return ({h.row["anchor"] for h in shown} | {m.anchor for h in shown for m in h.more}) - {hit.row["anchor"]}


@dataclass(frozen=True)
class _Shown:
    """A hit while :func:`_group` decides what goes under it (its lists grow; the record does not change)."""

    row: Row
    item: fusion.Ranked
    url: str
    more: list[OtherSection] = field(default_factory=list)
    copies: list[TextCopy] = field(default_factory=list)


def _hit(found: _Shown, terms: list[Term], is_match: Callable[[str], bool], elsewhere: set[str]) -> Hit:
    row, item = found.row, found.item
    shown = excerpt(row["text"], terms, is_match=is_match)
    landing = _landing(row, terms, elsewhere)
    moved = landing.anchor != row["anchor"]
    snippet = excerpt(landing.text, terms, is_match=is_match).snippet if moved else shown.snippet
    url = hit_url(row["source_id"], row["path"], landing.anchor) if moved else found.url
    return Hit(source=row["source_id"], path=row["path"], title=row["title"], breadcrumb=landing.breadcrumb,
               anchor=row["anchor"], line_start=row["line_start"], line_end=row["line_end"],
               snippet=snippet, score=round(item.score, 6),
               ranks={"bm25": item.bm25_rank, "vector": item.vector_rank}, url=url,
               more=tuple(found.more), copies=tuple(found.copies), words=shown.words)


@dataclass(frozen=True)
class _Landing:
    """A part of a hit's chunk: a section it holds, where a hit's link may lead."""

    breadcrumb: str
    anchor: str
    text: str


def _landing(row: Row, terms: list[Term], elsewhere: set[str]) -> _Landing:
    """The section of a hit's chunk that holds most of the query's words, each counted once, in its
    breadcrumb or its text (the chunk's first on a tie, or when none does): a chunk holds short sibling
    sections merged, and H4–H6 (``chunks.places``), and a hit leads to the one its words are in. Every
    breadcrumb opens with the note's title: a word of it names the note and does not choose ("kolik vody
    na teh tarik" leads to the ingredients, not to the step named Tarik). Never to a section another hit
    leads to (``elsewhere``)."""
    text = row["text"]
    places = json.loads(row["places"])
    if not places:
        return _Landing(row["breadcrumb"], row["anchor"], text)
    starts = [(0, row["breadcrumb"], row["anchor"]), *((int(o), str(b), str(a)) for o, b, a in places)]
    parts = [_Landing(breadcrumb, anchor, text[start:end]) for (start, breadcrumb, anchor), (end, _, _)
             in zip(starts, [*starts[1:], (len(text), "", "")], strict=True)]
    return max((part for part in parts if part.anchor not in elsewhere),
               key=lambda part: coverage(f"{part.breadcrumb}\n{plain_text(part.text)}", terms))


def _earned(ranked: list[fusion.Ranked], rows: dict[int, Row], terms: list[Term]) -> list[fusion.Ranked]:
    """``ranked`` without the chunks found by meaning alone that hold none of the query's words, when
    the words single out the first: found by BM25, it holds every content word (a name, a rare word
    one note holds). The vectors always return their nearest chunks, however far; beneath such a hit
    they are unrelated sections presented as answers. Otherwise (no hit holds every word, a
    paraphrase) meaning is the second opinion the words need, and every hit stays."""
    top = rows.get(ranked[0].chunk_id) if ranked and ranked[0].bm25_rank is not None else None
    if top is None or coverage(_section_text(top), terms) < 1.0:
        return ranked
    return [item for item in ranked if item.bm25_rank is not None
            or item.chunk_id in rows and coverage(_section_text(rows[item.chunk_id]), terms) > 0.0]


def _section_text(row: Row) -> str:
    """A chunk's words as BM25 reads them: its breadcrumb and its text."""
    return f"{row['breadcrumb']}\n{row['text']}"


def _best_notes_texts(lexical: list[tuple[int, float]], rows: dict[int, Row]) -> list[str]:
    """The text of each note among BM25's best ten chunks, its sections joined (an answer may span
    them)."""
    texts: dict[tuple[str, str], list[str]] = {}
    for chunk_id, _ in lexical[:10]:
        if chunk_id in rows:
            row = rows[chunk_id]
            texts.setdefault((row["source_id"], row["path"]), []).append(_section_text(row))
    return ["\n".join(parts) for parts in texts.values()]


def _weak(best_coverage: float, lexical: list[tuple[int, float]], semantic: list[tuple[int, float]],
          rows: dict[int, Row], mode: str, unaccented: bool, depth: int) -> bool:
    def notes(found: list[tuple[int, float]]) -> set[tuple[str, str]]:
        return {(rows[i]["source_id"], rows[i]["path"]) for i, _ in found[:depth] if i in rows}

    # No vectors (provider none, a failed embedder), or a query typed without accents (the model reads
    # its words as other tokens, and its list drifts): the words alone decide. A query searched in
    # translation keeps the vectors' second opinion: a note holding a third of the translated words
    # says little (each word's four commonest senses are searched), while the model's list, weak
    # across languages, does not drift (English questions the notes do not answer stay weak).
    with_vectors = mode != "bm25" and bool(semantic) and not unaccented
    return fusion.is_weak(best_coverage, notes(lexical), notes(semantic) if with_vectors else None)


WEAK = str(messages.EN["search.weak"])  # what the CLI prints above weak hits (the pages say it in their language)


def provenance(hit: Hit, language: str = messages.DEFAULT_LANGUAGE) -> str:
    """``words #2, meaning #1`` — which half found the hit, at which rank (the words the search box uses; the
    results page says them in the site's language, the CLI in English)."""
    parts = []
    if hit.ranks.get("bm25"):
        parts.append(messages.text(language, "search.by_words", n=hit.ranks["bm25"]))
    if hit.ranks.get("vector"):
        parts.append(messages.text(language, "search.by_meaning", n=hit.ranks["vector"]))
    return ", ".join(parts)
