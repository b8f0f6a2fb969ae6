"""The server's KNN over the vectors in memory on one thread and on ``SCAN_PARTS``, in one sitting.

For each dev-set query (embedded once beforehand), alternately with the scan on one thread and on
:data:`server.vectors.SCAN_PARTS` threads: :meth:`server.vectors.VectorMemory.nearest` alone, and a
whole hybrid :func:`server.search.search` with the precomputed vector (BM25, fusion and snippets
included). Prints p50 and p95 (ms) of each. Needs an index of at least ``MIN_VECTORS`` vectors,
e.g. ``bench/run.py --steps queries --chunks 100000 --keep``'s.

    python bench/knn_threads.py --config <portal.yaml> --queries ../shared/eval/dev.jsonl --rounds 3
"""

from __future__ import annotations

import time

from bench_env import query_bench_parser, read_queries


def main() -> None:
    parser = query_bench_parser(__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from builder.core.config import load_config
    from builder.core.embedding import make_embedder
    from server import vectors
    from server.reader import IndexReader
    from server.search import search

    config = load_config(args.config)
    queries = read_queries(args.queries)
    embedder = make_embedder(config.embedding, for_queries=True)
    assert embedder is not None, "the portal has no embedding provider"
    embedded = [embedder.embed_query(q) for q in queries]
    reader = IndexReader(config.index, time_limit_s=60.0)
    memory = vectors.VectorMemory(reader.open_fresh)
    threads = vectors.SCAN_PARTS
    times: dict[tuple[str, int], list[float]] = {(what, n): [] for what in ("knn", "hybrid") for n in (1, threads)}
    with reader.connection() as lease:
        memory.nearest(lease.conn, lease.identity, embedded[0], 30)  # starts the load
        deadline = time.monotonic() + 300
        while memory.loaded() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        if memory.loaded() is None:
            raise SystemExit(f"the vectors were not loaded into memory: {memory.state()}")

        def nearest(vector: bytes, k: int) -> list[tuple[int, float]] | None:
            return memory.nearest(lease.conn, lease.identity, vector, k)

        for _ in range(args.rounds):
            for query, vector in zip(queries, embedded):
                for parts in (1, threads):
                    vectors.SCAN_PARTS = parts
                    started = time.perf_counter()
                    nearest(vector, 30)
                    times[("knn", parts)].append(time.perf_counter() - started)
                    started = time.perf_counter()
                    search(lease.conn, config, query, mode="hybrid", query_vector=vector, nearest=nearest)
                    times[("hybrid", parts)].append(time.perf_counter() - started)
    vectors.SCAN_PARTS = threads
    for (what, parts), found in times.items():
        found.sort()
        print(f"{what:6s} scan on {parts} thread(s): p50 {found[len(found) // 2] * 1000:.1f} ms, "
              f"p95 {found[int(0.95 * (len(found) - 1))] * 1000:.1f} ms (n={len(found)})")


if __name__ == "__main__":
    main()
