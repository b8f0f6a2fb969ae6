"""Typo look-ups over the dev-set queries, pass after pass, as a long-running server meets them.

``server.spelling.respell`` of every query, ``--passes`` times in one process (the first pass reads
the candidate words from ``chunks_vocab``; later ones find them kept, as a server does once it has
seen the letters): per pass the total, p50 and p95 (ms), and how many of them went to reading
words from ``chunks_vocab`` (candidate lists; forms and names, the same in both versions). Run it from the checkout to measure, or with another checkout first on
``PYTHONPATH`` to compare two in one sitting.

    python bench/respell_passes.py --config <a built portal> --queries ../shared/eval/dev.jsonl
"""

from __future__ import annotations

import statistics
import time

from bench_env import query_bench_parser, read_queries


def main() -> None:
    parser = query_bench_parser(__doc__)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()

    from builder.core import index as db
    from builder.core.config import load_config
    from server import spelling
    from server.query import parse
    from server.reader import IndexReader

    queries = read_queries(args.queries)
    reader = IndexReader(load_config(args.config).index, time_limit_s=60.0)
    print(f"{spelling.__file__}: {len(queries)} queries")
    reading = [0.0]
    for name in ("frequent_words", "words_starting"):  # reads of words (this version's and the one before)
        if hasattr(db, name):
            original = getattr(db, name)

            def timed(*args: object, _original: object = original) -> object:
                started = time.perf_counter()
                try:
                    return _original(*args)  # type: ignore[operator]
                finally:
                    reading[0] += time.perf_counter() - started

            setattr(db, name, timed)
    with reader.connection() as lease:
        for number in range(1, args.passes + 1):
            reading[0] = 0.0
            times = []
            for query in queries:
                started = time.perf_counter()
                spelling.respell(lease.conn, parse(query))
                times.append((time.perf_counter() - started) * 1000)
            times.sort()
            print(f"pass {number}: total {sum(times):.0f} ms (reading words {reading[0] * 1000:.0f} ms), "
                  f"p50 {statistics.median(times):.2f} ms, p95 {times[int(0.95 * (len(times) - 1))]:.2f} ms")


if __name__ == "__main__":
    main()
