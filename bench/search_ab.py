"""A/B of the search path between two checkouts, in one sitting: alternate runs, same index.

Each run is a child process with one checkout's code first on ``sys.path``; it times
``server.search.search`` (or, with ``--mode app-…``, the web app's ``/api/search`` through
Starlette's TestClient: its embedder, connection pool and vectors in memory) over the queries
(after one warm-up pass) and prints p50 and p95. Runs
alternate A, B, A, B, … so that a machine whose load drifts favours neither side.

    git worktree add /tmp/before HEAD~1
    python bench/search_ab.py --config portal.yaml --queries ../shared/eval/dev.jsonl /tmp/before .
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, statistics, sys, time
root, config_path, queries_path, mode, passes = sys.argv[1:6]
sys.path.insert(0, root)
from builder.core import index as db
from builder.core.config import load_config
import server.search
assert server.search.__file__.startswith(root), server.search.__file__
config = load_config(config_path)
if hasattr(config, "query_cache"):  # every pass embeds every query, as a checkout from before the cache does
    import dataclasses
    config = dataclasses.replace(config, query_cache=0)
queries = [json.loads(line)["query"] for line in open(queries_path, encoding="utf-8") if line.strip()]
if mode.startswith("app-"):  # the web app's whole path (its embedder, pool, vectors in memory), no HTTP
    from starlette.testclient import TestClient
    from server.app import create_app
    app = create_app(config)
    client = TestClient(app)
    run = lambda q: client.get("/api/search", params={"q": q, "mode": mode[4:]}).raise_for_status()
    run(queries[0])  # starts loading the vectors into memory (when there are enough of them)
    deadline = time.monotonic() + 60
    while (app.state.vector_memory.state()["loaded"] is False and app.state.vector_memory.min_vectors
           <= db.count_vectors(db.open_index(config.index)) and time.monotonic() < deadline):
        time.sleep(0.2)
else:
    conn = db.open_index(config.index)
    run = lambda q: server.search.search(conn, config, q, mode=mode)
for q in queries:
    run(q)
times = []
for _ in range(int(passes)):
    for q in queries:
        start = time.perf_counter()
        run(q)
        times.append(time.perf_counter() - start)
times.sort()
print(f"{statistics.median(times) * 1000:.1f} {times[int(len(times) * 0.95) - 1] * 1000:.1f}")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="a built portal's config (its index is searched)")
    parser.add_argument("--queries", required=True, help="a JSONL file with a 'query' per line")
    parser.add_argument("--mode", default="bm25", choices=("bm25", "vector", "hybrid", "app-bm25", "app-hybrid"),
                        help="search() in one mode, or app-MODE: the web app's /api/search (TestClient)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side, alternating")
    parser.add_argument("--passes", type=int, default=3, help="passes over the queries in one run")
    parser.add_argument("a", type=Path, help="checkout A (e.g. a worktree of the commit before)")
    parser.add_argument("b", type=Path, help="checkout B")
    args = parser.parse_args()
    results: dict[Path, list[str]] = {args.a: [], args.b: []}
    for _ in range(args.rounds):
        for root in (args.a, args.b):
            out = subprocess.run([sys.executable, "-c", CHILD, str(root.resolve()), args.config, args.queries,
                                  args.mode, str(args.passes)], capture_output=True, text=True, check=False)
            if out.returncode != 0:
                sys.exit(f"{root}: the run failed: {out.stderr.strip().splitlines()[-1]}")
            results[root].append(out.stdout.strip())
    for root, runs in results.items():
        print(f"{root}: p50 " + ", ".join(r.split()[0] for r in runs) + " ms; p95 "
              + ", ".join(r.split()[1] for r in runs) + " ms")


if __name__ == "__main__":
    main()
