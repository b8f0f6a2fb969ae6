"""Fusing the two halves' rankings, and deciding whether the result is confident at all.

Reciprocal Rank Fusion with a small k (10, not the textbook 60): the first places of each list
weigh clearly more than the tail, which is where the answer is when the halves disagree. The
lexical list counts ``CONFIDENT_WEIGHT`` times when some note among BM25's best holds every content
word of the query (an identifier, a command, a name, a question asked in the notes' own words): the
words then say more than the vector's sense of meaning. A Czech or Slovak query typed without
accents (``ake nastroje su povolene``) is ordered by its words alone, and the vector list only adds,
after them, chunks the words did not find: the words half folds accents, while the model reads each
unaccented word as another, rarer token, and its list drifts (the weak rule below does not trust it
for such a query either). So is a query written in English whose words were searched in Czech and
Slovak as well (:mod:`server.translate`): the dictionary crosses the languages, while the small
model connects few English questions to Czech and Slovak text (on the dev set's crosslang queries,
vector MRR 0.50 against the translated words' 0.84; its weak mark still asks the vectors, below) —
unless a note among BM25's best holds ``OWN_WORDS`` of the query's English words as typed: the notes
are then English too, which the model reads well, and the query is fused as any other.
And a lexical winner stays first when its BM25 score is ``STRONG_RATIO`` times its runner-up's: the
words point at it unmistakably, and a vector list that missed it must not push it down; so do the
first two, in their order, when they are that far ahead of the third (a note and its copy in
another folder, :func:`strong_leaders`). Equal fused scores are common (with both lists counting
the same, ranks 1 and 2 in one and 2 and 1 in the other): the tie goes to the list trusted more,
the words when they count more, else the meaning.
The variants measured on the dev set (other k, a bonus for first places, a convex combination of
normalised scores, the dense half leading when BM25 matches little) are in docs/QUALITY.md.

Weak: the answer is "nothing confident" when no note among BM25's best chunks holds most of the
query's content words (``COVERAGE``) *and* the two halves agree on no note among their first
``AGREEMENT_DEPTH`` chunks. Each signal alone is common in real answers (a paraphrase shares few
words; a long question rarely has all its words in one chunk); together they mark questions the
notes do not answer, and nonsense. The depth is 12, chosen on the tuning fold of the dev set
(depths 10-15 did as well there; docs/QUALITY.md): at 5 it marked 8 of the 63 held-out answers weak,
mostly questions in a person's own words, at 12 one, and every held-out question the notes do not
answer stayed marked; a small collection looks less deep (:func:`agreement_depth`). With the words
alone there is no second opinion (nor is there for a query typed without accents, whose vector list
drifts as above; a query searched in translation keeps it), and a question in a person's own words
carries several a note would not repeat (how, use, set up): the answer is then weak only when no
note holds a third of the content words (``LEXICAL_ONLY_COVERAGE``). The thresholds and their
sweep on the dev set are in docs/QUALITY.md.
"""

from __future__ import annotations

from dataclasses import dataclass

RRF_K = 10
STRONG_RATIO = 1.3
CONFIDENT_WEIGHT = 1.5
COVERAGE = 3 / 4
LEXICAL_ONLY_COVERAGE = 1 / 3
AGREEMENT_DEPTH = 12
SMALL_COLLECTION = 480  # chunks: below it, the agreement depth shrinks with them (agreement_depth)
OWN_WORDS = 1 / 2  # of an English query's words, as typed, in one of BM25's best notes: the notes are English


@dataclass(frozen=True)
class Ranked:
    """One chunk after fusion."""

    chunk_id: int
    score: float
    bm25_rank: int | None
    vector_rank: int | None


def fuse(bm25: list[tuple[int, float]], vector: list[tuple[int, float]], best_coverage: float = 0.0, *,
         words_lead: bool = False, unembedded: frozenset[int] = frozenset()) -> list[Ranked]:
    """Both halves' (chunk id, score) lists, best first, as one ranking (ties: see the module);
    ``best_coverage``: the largest share of the query's content words one note of BM25's best holds;
    ``words_lead``: the model reads the query poorly (typed without the accents of the notes'
    language, or English words searched in translation): the words' order, the vectors' after it;
    ``unembedded``: chunks that have no vector yet (a backfill is running). The vector list has not
    seen them, so their place in the words' list counts for both halves: a note embedded later must
    not lose to one embedded sooner."""
    bm25_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(bm25, start=1)}
    vector_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(vector, start=1)}
    if words_lead:  # the words' order, then what only the vectors found (scores fall along the order)
        ordered = {chunk_id: 1.0 / (RRF_K + rank) for chunk_id, rank in bm25_rank.items()}
        for chunk_id, rank in vector_rank.items():
            ordered.setdefault(chunk_id, 1.0 / (RRF_K + len(bm25) + rank))
        return _ranked(ordered, bm25_rank, vector_rank, bm25_rank)
    scores: dict[int, float] = {}
    lexical_weight = CONFIDENT_WEIGHT if best_coverage >= 1.0 else 1.0
    for ranks, weight in ((bm25_rank, lexical_weight), (vector_rank, 1.0)):
        for chunk_id, rank in ranks.items():
            scores[chunk_id] = scores.get(chunk_id, 0.0) + weight / (RRF_K + rank)
    for chunk_id in (unembedded & bm25_rank.keys()) - vector_rank.keys():
        scores[chunk_id] += 1.0 / (RRF_K + bm25_rank[chunk_id])
    leaders = strong_leaders(bm25)
    top = max(scores.values(), default=0.0)
    for place, chunk_id in enumerate(leaders):
        scores[chunk_id] = top + (len(leaders) - place) / (RRF_K + 1)
    return _ranked(scores, bm25_rank, vector_rank, bm25_rank if lexical_weight > 1.0 else vector_rank)


def strong_leaders(bm25: list[tuple[int, float]]) -> list[int]:
    """BM25's first chunk, or its first two, when it scores ``STRONG_RATIO`` times the next: the words
    point at it unmistakably. Two lead together when the pair is far ahead of the rest, though not of
    each other: a note and its copy in another folder (another course year, an archive) score alike,
    and the copy must not hide how far ahead of everything else both are."""
    for size in (1, 2):
        if len(bm25) > size and bm25[size][1] > 0 and bm25[size - 1][1] >= STRONG_RATIO * bm25[size][1]:
            return [chunk_id for chunk_id, _ in bm25[:size]]
    return []


def _ranked(scores: dict[int, float], bm25_rank: dict[int, int], vector_rank: dict[int, int],
            second: dict[int, int]) -> list[Ranked]:
    """``scores`` best first; equal scores by their rank in ``second`` (the list trusted more), then id."""
    order = sorted(scores, key=lambda chunk_id: (-scores[chunk_id], second.get(chunk_id, len(second) + 1),
                                                 chunk_id))
    return [Ranked(chunk_id, scores[chunk_id], bm25_rank.get(chunk_id), vector_rank.get(chunk_id))
            for chunk_id in order]


def agreement_depth(chunks: int) -> int:
    """How many chunks of each half :func:`is_weak` looks among for a common note, when ``chunks`` are
    searched (counted up to ``SMALL_COLLECTION``): ``AGREEMENT_DEPTH``, but never more than a 40th of
    them (at least 2). Twelve chunks of a hundred are an eighth of all notes, where the halves meet
    by chance on a question the notes do not answer; twelve of 4,000 are not."""
    return max(2, min(AGREEMENT_DEPTH, chunks * AGREEMENT_DEPTH // SMALL_COLLECTION))


def is_weak(best_coverage: float, lexical_notes: set[tuple[str, str]],
            semantic_notes: set[tuple[str, str]] | None) -> bool:
    """Nothing confident: no note holds most of the words, and the halves agree on no note. With no
    vector half to trust (``semantic_notes`` is None: mode bm25, provider none, a failed embedder, a
    query typed without accents) the words
    alone decide, and a note holding a third of them is a lead worth showing."""
    if semantic_notes is None:
        return best_coverage < LEXICAL_ONLY_COVERAGE
    if best_coverage >= COVERAGE:
        return False
    return not (lexical_notes & semantic_notes)
