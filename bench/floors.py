"""What this machine and the chosen parts allow: the floors under issue 11's query targets, in one sitting.

    python bench/floors.py --config <100,000-chunk portal.yaml> --queries ../shared/eval/dev.jsonl \
        --real examples/.portal/eval/<model>/index-….sqlite

``--config`` is a big index, such as the one ``bench/run.py --steps queries --keep`` leaves;
``--real`` any index whose vectors the bundled model made from real notes (``notes-portal eval``
makes one). Each part is timed alone, on an otherwise idle machine:

1. the query embedding (the bundled model) of each query: on one core, on every core, and in
   batches of 8 on one core (what embedding the queries of several clients together would save);
2. FTS5 alone: one phrase, of the words the most chunks hold, its matching rows and the time BM25
   takes to rank them (FTS5 scores every matching row: the cost per row is the floor);
3. the KNN scan alone over the vectors kept in memory, on one thread and on ``SCAN_PARTS``, and the
   share of it spent widening the one-byte codes to float32;
4. cheaper candidate filters over the real vectors: sign bits (mean-centred) and PCA to k
   dimensions; how deep in each one's order the exact 30 nearest lie (a filter has to keep that
   many candidates for the answer to stay exact);
5. the CPU one hybrid request needs (1, 2 and 3, and a whole BM25 search), and the requests per
   second that allows on this machine's cores.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_env import query_bench_parser, read_queries, summary

Timed = dict[str, float]


def _timed(call: Callable[[], Any], repeat: int = 1) -> float:
    """The best of ``repeat`` runs of ``call()``, in ms."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


def _short(values: list[float]) -> Timed:
    return {k: round(v, 1) for k, v in summary(values).items() if k in ("median", "p95")}


def embedding(queries: list[str]) -> tuple[dict[str, Timed], list[bytes]]:
    """The bundled model on each query: one core, every core, batches of 8 (per query), on one thread;
    and the queries' vectors."""
    from concurrent.futures import ThreadPoolExecutor

    from builder.core.config import EmbeddingConfig
    from builder.core.embedding import LocalEmbedder
    from server.searcher import ALONE_THREADS

    with ThreadPoolExecutor(1) as thread:  # one thread embeds, as in the server
        model = thread.submit(LocalEmbedder, EmbeddingConfig(provider="local"), threads=1).result()

        def each(threads: int) -> list[float]:
            model.use_threads(threads)
            model.embed_query(queries[0])
            return [_timed(lambda q=q: model.embed_query(q)) for q in queries]

        def batches() -> list[float]:
            model.use_threads(1)
            return [_timed(lambda i=i: model.embed_passages(queries[i:i + 8])) / len(queries[i:i + 8])
                    for i in range(0, len(queries), 8)]

        one, every, batched = (thread.submit(each, 1).result(), thread.submit(each, ALONE_THREADS).result(),
                               thread.submit(batches).result())
        vectors = thread.submit(lambda: [model.embed_query(q) for q in queries]).result()
    return {"one core": _short(one), f"every core ({ALONE_THREADS})": _short(every),
            "batches of 8 (as passages), one core, per query": _short(batched)}, vectors


def fts_rows(conn: Any) -> list[dict[str, Any]]:
    """FTS5 ranking one phrase that many chunks match: a frequent word whole, its first 3 letters, its key."""
    from builder.core import index as db
    from builder.core.analysis import stem_word

    out = []
    for word, _ in db.frequent_words(conn, "", 3, 3):
        for label, match in ((f"word {word!r}", f'{{breadcrumb text}} : "{word}"'),
                             (f"prefix {word[:3]!r}*", f'{{breadcrumb text}} : "{word[:3]}"*'),
                             (f"word key {stem_word(word)!r}", f'stems : "{stem_word(word)}"')):
            rows = len(db.fts_search(conn, match, 10**9, None, None))
            ms = _timed(lambda m=match: db.fts_search(conn, m, 30, None, None), repeat=5)
            out.append({"phrase": label, "rows": rows, "ms": round(ms, 2), "us_per_row": round(1000 * ms / rows, 3)})
    return out


def knn_scan(conn: Any, identity: Any, memory: Any, vectors: list[bytes]) -> dict[str, Timed]:
    """The in-memory scan alone (no re-scoring): one thread, ``SCAN_PARTS`` threads, and the widening alone."""
    import numpy as np

    from server.vectors import SCAN_PARTS, SCAN_ROWS, rescored

    snapshot = memory.snapshot(conn, identity)
    helpers = memory._helpers()  # noqa: SLF001 (the scan's own threads)
    out: dict[str, list[float]] = {"one thread": [], f"{SCAN_PARTS} threads": [], "widening alone, one thread": []}
    wide = np.empty((SCAN_ROWS, snapshot.codes.shape[1]), dtype=np.float32)

    def widen() -> None:
        for start in range(0, snapshot.codes.shape[0], SCAN_ROWS):
            block = snapshot.codes[start:start + SCAN_ROWS]
            np.copyto(wide[:block.shape[0]], block, casting="unsafe")

    for vector in vectors:
        query = np.frombuffer(vector, dtype=np.float32)
        out["one thread"].append(_timed(lambda: snapshot.candidates(query, rescored(30))))
        out[f"{SCAN_PARTS} threads"].append(_timed(lambda: snapshot.candidates(query, rescored(30), helpers, SCAN_PARTS)))
        out["widening alone, one thread"].append(_timed(widen))
    return {label: _short(values) for label, values in out.items()}


def candidate_filters(real: Path, queries: list[str]) -> dict[str, Any]:
    """How deep the exact 30 nearest lie in the order of cheaper scores over real vectors."""
    import numpy as np

    from builder.core import index as db
    from builder.core.config import EmbeddingConfig
    from builder.core.embedding import LocalEmbedder

    conn = db.connect(real, readonly=True)
    try:
        found = list(db.iter_chunk_vectors(conn))
    finally:
        conn.close()
    vectors = np.frombuffer(b"".join(blob for _, blob in found), dtype=np.float32).reshape(len(found), -1)
    model = LocalEmbedder(EmbeddingConfig(provider="local"), threads=1)
    asked = np.array([np.frombuffer(model.embed_query(q), dtype=np.float32) for q in queries])
    mean = vectors.mean(axis=0)
    _, _, axes = np.linalg.svd(vectors - mean, full_matrices=False)
    signs = np.where(vectors - mean > 0, 1.0, -1.0).astype(np.float32)
    scorers: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "sign bits, mean-centred (48 bytes a vector)": lambda q: signs @ (q - mean)}
    for k in (64, 128, 192):
        projected = (vectors - mean) @ axes[:k].T
        scorers[f"PCA to {k} dimensions"] = lambda q, p=projected, a=axes[:k]: p @ (a @ (q - mean))
    out: dict[str, Any] = {"vectors": len(found), "queries": len(queries)}
    for label, score in scorers.items():
        deepest = []
        for query in asked:
            exact = np.argsort(-(vectors @ query), kind="stable")[:30]
            rank = np.empty(len(vectors), dtype=np.int64)
            rank[np.argsort(-score(query), kind="stable")] = np.arange(len(vectors))
            deepest.append(int(rank[exact].max()) + 1)
        out[label] = {"median": statistics.median(deepest), "max": max(deepest)}
    return out


def main() -> None:
    parser = query_bench_parser(__doc__)
    parser.add_argument("--real", type=Path, required=True, help="an index with the model's vectors of real notes")
    args = parser.parse_args()

    from builder.core.config import load_config
    from server.reader import IndexReader
    from server.search import search
    from server.vectors import VectorMemory

    queries = read_queries(args.queries)
    config = load_config(args.config)
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    embedded, vectors = embedding(queries)
    print("1. query embedding, ms:", embedded)
    reader = IndexReader(config.index, time_limit_s=60.0)
    memory = VectorMemory(reader.open_fresh)
    with reader.connection() as lease:
        print("2. FTS5, one phrase:")
        for row in fts_rows(lease.conn):
            print(f"   {row['phrase']:28} {row['rows']:>7,} rows {row['ms']:7.2f} ms  {row['us_per_row']:.3f} µs a row")
        memory.snapshot(lease.conn, lease.identity)  # starts the load
    while memory.loaded() is None:
        time.sleep(0.1)
    with reader.connection() as lease:
        scan = knn_scan(lease.conn, lease.identity, memory, vectors)
        print("3. KNN scan alone, ms:", scan)
        bm25 = _short([_timed(lambda q=q: search(lease.conn, config, q, mode="bm25")) for q in queries])
    print("   a whole BM25 search, ms:", bm25)
    print("4. cheaper candidate filters over real vectors (rank of the deepest of the exact 30):",
          candidate_filters(args.real, queries))
    cpu = embedded["one core"]["median"] + scan["one thread"]["median"] + bm25["median"]
    print(f"5. CPU of one hybrid request, medians of 1 + 3 (one thread) + BM25: {cpu:.1f} ms, before HTTP, "
          f"fusion and snippets: at most {1000 * (os.cpu_count() or 1) / cpu:.0f} requests/s on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
