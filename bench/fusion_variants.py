"""Fusion variants on the dev set, through the real search pipeline: which way of merging BM25 and
the vectors ranks the answering note first most often.

    notes-portal eval --config examples/portal.yaml --queries ../shared/eval/dev.jsonl   # builds the index
    python bench/fusion_variants.py --config examples/portal.yaml --queries ../shared/eval/dev.jsonl

Each variant replaces ``server.fusion.fuse`` for the run; everything else (the two halves' lists,
results by note, copies) is the shipped code. The table goes to docs/QUALITY.md.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builder.cli.evaluate import (  # noqa: E402
    TYPE_ORDER,
    HitRef,
    eval_config,
    load_queries,
    metrics,
    rank,
)
from builder.core import index as db  # noqa: E402
from builder.core.config import load_config  # noqa: E402
from builder.core.embedding import make_embedder  # noqa: E402
from server import fusion, search  # noqa: E402

Pairs = list[tuple[int, float]]


def rrf(k: int, strong: bool, confident: float, unaccented_words: bool = False,
        trusted_ties: bool = False) -> Callable[..., list[fusion.Ranked]]:
    def fuse(bm25: Pairs, vector: Pairs, best_coverage: float = 0.0, *, words_lead: bool = False) -> list[fusion.Ranked]:
        weights = (confident if best_coverage >= 1.0 or (words_lead and unaccented_words) else 1.0, 1.0)
        trusted = bm25 if weights[0] > 1.0 else vector
        return _ranked(bm25, vector, {i: weights[0] / (k + r) for r, (i, _) in enumerate(bm25, 1)},
                       {i: weights[1] / (k + r) for r, (i, _) in enumerate(vector, 1)}, strong,
                       {i: r for r, (i, _) in enumerate(trusted, 1)} if trusted_ties else {})
    return fuse


def dense_leads(below: float, weight: float) -> Callable[..., list[fusion.Ranked]]:
    """The "×1.5" row (the fusion shipped in session 5), except that the vector list counts ``weight``
    times when no note holds ``below`` of the query's content words (an English question over Slovak
    notes matches few)."""
    def fuse(bm25: Pairs, vector: Pairs, best_coverage: float = 0.0, *,
             words_lead: bool = False) -> list[fusion.Ranked]:
        lexical = 1.5 if best_coverage >= 1.0 or words_lead else 1.0
        dense = weight if best_coverage < below and not words_lead else 1.0
        return _ranked(bm25, vector, {i: lexical / (10 + r) for r, (i, _) in enumerate(bm25, 1)},
                       {i: dense / (10 + r) for r, (i, _) in enumerate(vector, 1)}, True)
    return fuse


def vectors_alone(below: float) -> Callable[..., list[fusion.Ranked]]:
    """The shipped fusion, except that when no note holds ``below`` of the query's content words the
    vector list alone orders and BM25's chunks follow it (the mirror of the rule for unaccented queries)."""
    shipped = fusion.fuse  # taken now: the run replaces the module's attribute by each variant

    def fuse(bm25: Pairs, vector: Pairs, best_coverage: float = 0.0, *,
             words_lead: bool = False) -> list[fusion.Ranked]:
        if words_lead or not bm25 or not vector or best_coverage >= below:
            return shipped(bm25, vector, best_coverage, words_lead=words_lead)
        b_rank = {i: r for r, (i, _) in enumerate(bm25, 1)}
        v_rank = {i: r for r, (i, _) in enumerate(vector, 1)}
        scores = {i: 1.0 / (fusion.RRF_K + r) for i, r in v_rank.items()}
        for i, r in b_rank.items():
            scores.setdefault(i, 1.0 / (fusion.RRF_K + len(vector) + r))
        return [fusion.Ranked(i, scores[i], b_rank.get(i), v_rank.get(i))
                for i in sorted(scores, key=lambda i: (-scores[i], v_rank.get(i, len(vector) + 1), i))]
    return fuse


def convex(alpha: float) -> Callable[..., list[fusion.Ranked]]:
    def norm(pairs: Pairs) -> dict[int, float]:
        if not pairs:
            return {}
        hi, lo = max(s for _, s in pairs), min(s for _, s in pairs)
        return {i: (s - lo) / (hi - lo) if hi > lo else 1.0 for i, s in pairs}

    def fuse(bm25: Pairs, vector: Pairs, best_coverage: float = 0.0, *, words_lead: bool = False) -> list[fusion.Ranked]:
        return _ranked(bm25, vector, {i: alpha * s for i, s in norm(bm25).items()},
                       {i: (1 - alpha) * s for i, s in norm(vector).items()}, False)
    return fuse


def _ranked(bm25: Pairs, vector: Pairs, a: dict[int, float], b: dict[int, float], strong: bool,
            second: dict[int, int] | None = None) -> list[fusion.Ranked]:
    scores = {i: a.get(i, 0.0) + b.get(i, 0.0) for i in {*a, *b}}
    if strong and len(bm25) >= 2 and bm25[1][1] > 0 and bm25[0][1] >= fusion.STRONG_RATIO * bm25[1][1]:
        scores[bm25[0][0]] = max(scores.values()) + 1.0
    b_rank = {i: r for r, (i, _) in enumerate(bm25, 1)}
    v_rank = {i: r for r, (i, _) in enumerate(vector, 1)}
    return [fusion.Ranked(i, scores[i], b_rank.get(i), v_rank.get(i))
            for i in sorted(scores, key=lambda i: (-scores[i], (second or {}).get(i, len(second or {}) + 1), i))]


VARIANTS = {
    "RRF k=60 (textbook)": rrf(60, False, 1.0),
    "RRF k=20": rrf(20, False, 1.0),
    "RRF k=10": rrf(10, False, 1.0),
    "RRF k=10 + strong BM25 leader": rrf(10, True, 1.0),
    "RRF k=10 + strong leader + confident words ×1.5": rrf(10, True, 1.5),
    "RRF k=10 + strong leader + confident or unaccented words ×1.5 (ties: the smaller id)": rrf(10, True, 1.5, True),
    "the same, a tie to the half trusted more": rrf(10, True, 1.5, True, trusted_ties=True),
    "the same, a query typed without accents ordered by its words (shipped)": fusion.fuse,
    "shipped, the vectors alone order when no note holds 1/3 of the words": vectors_alone(1 / 3),
    "RRF k=10 + strong leader + confident or unaccented words ×2": rrf(10, True, 2.0, True),
    "RRF k=10 + strong leader + confident words ×2": rrf(10, True, 2.0),
    "RRF k=60 + strong leader + confident words ×1.5": rrf(60, True, 1.5),
    "×1.5 row, the vectors ×2 when no note holds 1/3 of the words": dense_leads(0.34, 2.0),
    "×1.5 row, the vectors ×1.5 when no note holds 2/3 of the words": dense_leads(0.67, 1.5),
    "×1.5 row, the vectors ×2 when no note holds 2/3 of the words": dense_leads(0.67, 2.0),
    "convex α=0.3": convex(0.3),
    "convex α=0.5": convex(0.5),
    "convex α=0.7": convex(0.7),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--weak-sweep", action="store_true",
                        help="instead: how the weak rule's two thresholds mark noanswer and answerable queries")
    args = parser.parse_args()
    queries = load_queries(Path(args.queries))
    corpora = Path(args.queries).resolve().parent.parent / "corpora"
    config = eval_config(load_config(args.config), corpora, sorted({q.corpus for q in queries}))
    conn = db.open_index(config.index)
    embedder = make_embedder(config.embedding, for_queries=True)
    vector_of = cache(embedder.embed_query) if embedder else None

    @cache
    def headings(source: str, path: str) -> tuple[tuple[str, int], ...]:
        return tuple((h["text"], h["line"]) for h in db.note_headings(conn, source, path))

    if args.weak_sweep:
        print("| coverage below | agreement depth | noanswer marked weak | answerable marked weak |")
        print("|---|---|---|---|")
        for coverage in (0.5, 2 / 3, 0.75, 0.85, 1.0):
            for depth in (1, 3, 5, 8, 10, 15):
                fusion.COVERAGE, fusion.AGREEMENT_DEPTH = coverage, depth
                weak = {q.id: search.search(conn, config, q.text, limit=10,
                                            query_vector=vector_of(q.text) if vector_of else None).weak
                        for q in queries}
                none = [q for q in queries if not q.answerable]
                some = [q for q in queries if q.answerable]
                print(f"| {coverage:.2f} | {depth} | {sum(weak[q.id] for q in none)} of {len(none)} | "
                      f"{sum(weak[q.id] for q in some)} of {len(some)} |")
        print("\n| words alone (mode bm25): coverage below | noanswer marked weak | answerable marked weak |")
        print("|---|---|---|")
        for coverage in (1 / 4, 1 / 3, 0.4, 1 / 2, 2 / 3, 0.75):
            fusion.LEXICAL_ONLY_COVERAGE = coverage
            weak = {q.id: search.search(conn, config, q.text, limit=10, mode="bm25").weak for q in queries}
            print(f"| {coverage:.2f} | {sum(weak[q.id] for q in queries if not q.answerable)} of "
                  f"{sum(not q.answerable for q in queries)} | {sum(weak[q.id] for q in queries if q.answerable)} of "
                  f"{sum(q.answerable for q in queries)} |")
        return
    answerable = [q for q in queries if q.answerable]
    print("| variant | MRR@10 | Hit@1 | Hit@5 | " + " | ".join(TYPE_ORDER) + " |")
    print("|---|---|---|---|" + "---|" * len(TYPE_ORDER))
    for name, variant in VARIANTS.items():
        search.fusion.fuse = variant  # the module attribute the pipeline calls
        ranked = []
        for q in answerable:
            vector = vector_of(q.text) if vector_of else None
            result = search.search(conn, config, q.text, limit=10, query_vector=vector)
            hits = [HitRef(h.source, h.path, h.breadcrumb, h.line_start, h.line_end) for h in result.hits]
            ranked.append(rank(q, hits, result.weak, headings))
        m = metrics(ranked, "file")
        by_type = [metrics([r for r in ranked if r.query.type == t], "file")["mrr@10"] for t in TYPE_ORDER]
        print(f"| {name} | {m['mrr@10']:.3f} | {m['hit@1']:.3f} | {m['hit@5']:.3f} | "
              + " | ".join(f"{x:.3f}" for x in by_type) + " |")


if __name__ == "__main__":
    main()
