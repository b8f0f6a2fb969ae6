"""Searches on an index as it is and on a copy whose full-text index is merged into one segment.

    python bench/fts_merge.py --config <portal.yaml> [--rounds 4] [--hybrid]

The copy is merged by :func:`builder.core.index.merge_words` (what a build that wrote most of the
index runs). The queries are ``bench/run.py``'s (the dev set, 3-letter prefixes, common words).
Each query runs on both, one after the other, the order swapped every round, through
:func:`server.search.search` in mode ``bm25`` on one connection per index; with ``--hybrid``, also
the server's hybrid path with a precomputed query vector (``server.searcher.Searcher``, its KNN
from the vectors in memory; the index must use the local model). It prints the segments of each,
the merge's time, p50 and p95 per side and whether every answer was the same.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's code first

import bench_search  # noqa: E402
from bench_corpus import CORPORA  # noqa: E402
from bench_env import summary  # noqa: E402

from builder import indexfile  # noqa: E402
from builder.core import index as db  # noqa: E402
from builder.core.config import Config, load_config  # noqa: E402


def _merged_copy(config: Config, work: Path) -> tuple[Config, float]:
    """A copy of the config's index, merged; the time the merge took (seconds)."""
    copy = work / "index.sqlite"
    shutil.copyfile(indexfile.resolve(config.index), copy)
    conn = db.connect(copy)
    started = time.perf_counter()
    db.merge_words(conn)
    seconds = time.perf_counter() - started
    db.checkpoint(conn)
    conn.close()
    return dataclasses.replace(config, index=copy), seconds


def _answer(result: Any) -> list[tuple[str, str, str, float]]:
    return [(hit.source, hit.path, hit.anchor, hit.score) for hit in result.hits]


def _searches(config: Config, hybrid: bool, vectors: dict[str, bytes]) -> dict[str, Callable[[str], Any]]:
    """Per measured path, a function of the query that returns the hits' chunk ids."""
    from server.reader import IndexReader
    from server.search import search

    reader = IndexReader(config.index, time_limit_s=30.0)

    def bm25(query: str) -> Any:
        with reader.connection() as lease:
            return _answer(search(lease.conn, config, query, mode="bm25"))

    paths: dict[str, Callable[[str], Any]] = {"bm25": bm25}
    if hybrid:
        from server.embedder import QueryEmbedder
        from server.searcher import Searcher
        from server.vectors import VectorMemory

        memory = VectorMemory(reader.open_fresh)
        bench_search._wait_for_memory(reader, memory, next(iter(vectors.values())))
        embedder = QueryEmbedder(config.embedding, lambda _: bench_search._Precomputed(vectors))
        searcher = Searcher(config, reader, embedder, memory)
        paths["server hybrid"] = lambda query: _answer(searcher.search(query))
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--hybrid", action="store_true", help="also the server's hybrid path")
    args = parser.parse_args()
    config = load_config(args.config)
    queries = [q for group in bench_search.query_sets(CORPORA).values() for q in group]
    vectors = bench_search._embed_all(config, queries) if args.hybrid else {}
    with tempfile.TemporaryDirectory(prefix="fts-merge-") as tmp:
        merged, merge_s = _merged_copy(config, Path(tmp))
        sides = {"as built": config, "merged": merged}
        for name, side in sides.items():
            conn = db.connect(indexfile.resolve(side.index) if name == "as built" else side.index)
            print(f"{name}: {db.word_segments(conn)} segments, {db.count_chunks(conn)} chunks")
            conn.close()
        print(f"merge: {merge_s:.2f} s")
        searches = {name: _searches(side, args.hybrid, vectors) for name, side in sides.items()}
        times: dict[tuple[str, str], list[float]] = {}
        differ = 0
        for round_ in range(args.rounds):
            order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
            for query in queries:
                for path in searches[order[0]]:
                    answers = {}
                    for name in order:
                        started = time.perf_counter()
                        answers[name] = searches[name][path](query)
                        times.setdefault((path, name), []).append((time.perf_counter() - started) * 1000)
                    differ += answers["as built"] != answers["merged"]
        for (path, name), values in sorted(times.items()):
            stats = summary(values)
            print(f"{path:14s} {name:9s} p50 {stats['median']:6.2f} ms  p95 {stats['p95']:6.2f} ms  n={stats['n']}")
        for path in searches["merged"]:
            a, b = summary(times[(path, "as built")]), summary(times[(path, "merged")])
            print(f"{path}: merged / as built: p50 {b['median'] / a['median']:.2f}, p95 {b['p95'] / a['p95']:.2f}")
        print(f"answers that differ: {differ}")


if __name__ == "__main__":
    main()
