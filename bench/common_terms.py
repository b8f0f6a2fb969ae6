"""BM25's any-word query with and without the common-terms split, in one sitting.

For each dev-set query (as the search corrects it), when not every word is in one chunk, time the
reference statement (every content word may make a candidate) and :func:`server.search._any_word`
(a chunk must hold one of the rarer words when the query also has words in more than
``COMMON_CHUNKS`` chunks), alternately, and count the queries the split applies to and whose best
10 / 30 chunks it changes (chunks holding common words alone drop out). Prints p50/p95/mean (ms).
Needs a large index, e.g. ``bench/run.py --steps queries --chunks 100000 --keep``'s.

    python bench/common_terms.py --config <portal.yaml> --queries ../shared/eval/dev.jsonl --rounds 3
"""

from __future__ import annotations

import time

from bench_env import query_bench_parser, read_queries, summary


def main() -> None:
    parser = query_bench_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from builder.core import index as db
    from builder.core.config import load_config
    from server import search as search_module
    from server import spelling
    from server.query import match_all, match_any, parse
    from server.reader import IndexReader

    config = load_config(args.config)
    queries = read_queries(args.queries)
    reader = IndexReader(config.index, time_limit_s=60.0)
    times: dict[str, list[float]] = {"reference": [], "split": []}
    split = changed10 = changed30 = asked = 0
    with reader.connection() as lease:
        conn = lease.conn
        stems = db.has_stems(conn)
        for query in queries:
            terms, corrections = spelling.respell(conn, parse(query))
            terms = spelling.replaced(terms, corrections) if corrections else terms
            if len(db.fts_search(conn, match_all(terms, stems), search_module.CANDIDATES, None, None, stems)) \
                    >= search_module.CANDIDATES:
                continue  # the any-word query is not asked
            asked += 1
            reference = db.fts_search(conn, match_any(terms, stems), search_module.CANDIDATES, None, None, stems)
            found = search_module._any_word(conn, terms, stems, None, None)
            if search_module._common_split(conn, terms, stems)[1]:
                split += 1
                changed10 += [i for i, _ in reference[:10]] != [i for i, _ in found[:10]]
                changed30 += [i for i, _ in reference] != [i for i, _ in found]
            for _ in range(args.rounds):
                started = time.perf_counter()
                db.fts_search(conn, match_any(terms, stems), search_module.CANDIDATES, None, None, stems)
                times["reference"].append(time.perf_counter() - started)
                started = time.perf_counter()
                search_module._any_word(conn, terms, stems, None, None)
                times["split"].append(time.perf_counter() - started)
    print(f"{len(queries)} queries, the any-word query asked for {asked}; split for {split}, "
          f"their best 10 changed for {changed10}, best 30 for {changed30}")
    for name, found_times in times.items():
        figures = summary([t * 1000 for t in found_times])
        print(f"{name:9s} p50 {figures['median']:.1f} ms, p95 {figures['p95']:.1f} ms, "
              f"mean {sum(found_times) / len(found_times) * 1000:.1f} ms (n={figures['n']})")


if __name__ == "__main__":
    main()
