"""How well smaller copies of the vectors find the exact nearest ones, and what re-scoring costs.

For the server's memory (issue 11: RSS at 100,000 chunks ≤ 250 MB, the float32 matrix alone is
154 MB): int8 per dimension and PCA to fewer dimensions, each followed by exact re-scoring of its
best candidates, measured as recall of the exact top 50 over the dev queries (the eval index's real
vectors, the embedded model); then the cost of fetching exact vectors back from ``vec0``; then the
server's own copy (:class:`server.vectors.VectorMemory`) against ``vec0``'s exact scan over the same
queries, on the eval index and on ``--lookup-index``: the same ids, the same similarities, the time.

    python bench/vector_quantization.py --config examples/portal.yaml --queries ../shared/eval/dev.jsonl \
        [--lookup-index /path/to/a/100k/index.sqlite]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from builder.cli.evaluate import eval_config, load_queries
from builder.core import index as db
from builder.core.config import load_config
from builder.core.embedding import make_embedder
from server.vectors import VectorMemory

TOP = 50


def recall(exact: np.ndarray, approx: np.ndarray, candidates: int) -> tuple[float, int]:
    """Mean share of the exact top ``TOP`` scores found by re-scoring ``approx``'s best
    ``candidates`` (by score, so byte-identical copies count alike), and how many queries got the
    exact first place."""
    shares, firsts = [], 0
    for row_exact, row_approx in zip(exact, approx):
        true = np.sort(row_exact)[::-1][:TOP]
        best = np.argpartition(-row_approx, candidates - 1)[:candidates]
        got = np.sort(row_exact[best])[::-1][:TOP]
        shares.append(len(np.intersect1d(np.round(got, 6), np.round(true, 6))) / len(np.unique(np.round(true, 6))))
        firsts += int(np.isclose(got[0], true[0]))
    return float(np.mean(shares)), firsts


def against_vec0(path: Path, vectors: list[bytes], k: int = 30) -> None:
    """The server's in-memory copy of ``path``'s vectors against vec0's scan: ids, similarities, time."""
    conn = db.open_index(path)
    identity = (0, 0)
    memory = VectorMemory(lambda: (identity, db.open_index(path)), min_vectors=1)
    memory.nearest(conn, identity, vectors[0], k)
    while memory.loaded() is None and memory.state()["error"] is None:
        time.sleep(0.05)
    same_ids = same_scores = 0
    fast, scan = [], []
    for vector in vectors:
        start = time.perf_counter()
        mine = memory.nearest(conn, identity, vector, k) or []
        fast.append(time.perf_counter() - start)
        start = time.perf_counter()
        exact = db.knn_search(conn, vector, k, None, None)
        scan.append(time.perf_counter() - start)
        same_ids += [i for i, _ in mine] == [i for i, _ in exact]
        same_scores += bool(np.allclose([s for _, s in mine], [s for _, s in exact], atol=1e-5))
    print(f"{path.name} ({db.count_vectors(conn)} vectors), top {k}: same ids {same_ids} of {len(vectors)}, "
          f"same similarities {same_scores} of {len(vectors)}; p50 in memory "
          f"{statistics.median(fast) * 1000:.1f} ms, vec0 {statistics.median(scan) * 1000:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--queries", required=True)
    parser.add_argument("--lookup-index", type=Path, help="an index with many vectors, for the lookup costs")
    args = parser.parse_args()
    queries = load_queries(Path(args.queries))
    corpora = Path(args.queries).resolve().parent.parent / "corpora"
    config = eval_config(load_config(args.config), corpora, sorted({q.corpus for q in queries}))
    conn = db.open_index(config.index)
    matrix = np.stack([np.frombuffer(blob, dtype=np.float32) for _, blob in db.iter_chunk_vectors(conn)])
    embedder = make_embedder(config.embedding, for_queries=True)
    assert embedder is not None, "the eval index needs an embedding provider"
    q = np.stack([np.frombuffer(embedder.embed_query(query.text), dtype=np.float32) for query in queries])
    exact = q @ matrix.T
    print(f"{matrix.shape[0]} vectors × {matrix.shape[1]}, {len(queries)} queries; recall of the exact top {TOP}")
    print("| copy | memory per 100,000 | re-scored | recall@50 | exact first place |")
    print("|---|---|---|---|---|")
    low, high = matrix.min(0), matrix.max(0)
    step = (high - low) / 255
    codes = np.round((matrix - low) / step).astype(np.uint8)
    variants = {"int8 per dimension": (q * step) @ codes.T.astype(np.float32)}
    centered = matrix - matrix.mean(0)
    _, vectors = np.linalg.eigh(centered.T @ centered)
    for dims in (128, 192, 256):
        basis = vectors[:, ::-1][:, :dims]
        variants[f"PCA {dims}"] = (q @ basis) @ (centered @ basis).T
    for name, approx in variants.items():
        size = 100_000 * (matrix.shape[1] if name.startswith("int8") else int(name.split()[1]) * 4) / 1e6
        for candidates in (TOP, 2 * TOP, 4 * TOP, 8 * TOP):
            share, firsts = recall(exact, approx, candidates)
            print(f"| {name} | {size:.0f} MB | {candidates} | {share:.3f} | {firsts} of {len(queries)} |")
    print()
    vectors = [row.tobytes() for row in q]
    against_vec0(config.index, vectors)
    if args.lookup_index:
        against_vec0(args.lookup_index, vectors)
        lookup = db.open_index(args.lookup_index)
        ids = [row[0] for row in lookup.execute("SELECT rowid FROM vec_chunks")]
        print(f"\nexact vectors back from vec0 ({len(ids)} rows), median of 20:")
        for count in (20, 50, 100):
            point, many = [], []
            for _ in range(20):
                sample = random.sample(ids, count)
                start = time.perf_counter()
                for chunk_id in sample:
                    lookup.execute("SELECT embedding FROM vec_chunks WHERE rowid = :id", {"id": chunk_id}).fetchone()
                point.append(time.perf_counter() - start)
                marks = ",".join("?" * count)
                start = time.perf_counter()
                lookup.execute(f"SELECT rowid, embedding FROM vec_chunks WHERE rowid IN ({marks})", sample).fetchall()
                many.append(time.perf_counter() - start)
            print(f"{count} vectors: one by one {statistics.median(point) * 1000:.1f} ms, "
                  f"rowid IN (…) {statistics.median(many) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
