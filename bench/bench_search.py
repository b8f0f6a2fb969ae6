"""Query figures of ``bench/run.py``: in-process latency per mode beside a ``vec0`` scan, and HTTP load.

The indexes are ``bench/server_load.py``'s synthetic ones (runs of real corpus lines, 10 chunks per
note, random unit vectors). In-process queries take the server's own read path: connections from
:class:`server.reader.IndexReader`, the KNN from :class:`server.vectors.VectorMemory` (numpy over an
in-memory matrix from 20,000 vectors on, ``vec0`` below), :func:`server.search.search`. ``vector``
and ``hybrid`` get a precomputed query vector (the model's, computed once beforehand); ``hybrid+embed``
embeds each query with :class:`server.embedder.QueryEmbedder` first, as ``/api/search`` does. The
``vec0`` row is :func:`builder.core.index.knn_search` over the same vectors in the same run.
"""

from __future__ import annotations

import collections
import http.client
import json
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import server_load
from bench_env import child_env, cli, proc_status_mb, summary

CANDIDATES = 30  # server.search.CANDIDATES: what each half fetches


def query_sets(corpora: Path, common: int = 20) -> dict[str, list[str]]:
    """The dev-set queries, 3-letter prefixes of frequent words, and common words (single, in pairs,
    and queries of function words only, which then match as ordinary words)."""
    from server.query import FUNCTION_WORDS

    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(corpora.rglob("*.md")):
        counts.update(set(re.findall(r"[^\W\d_]{4,}", path.read_text("utf-8", errors="replace").lower())))
    frequent = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if w not in FUNCTION_WORDS]
    prefixes = list(dict.fromkeys(w[:3] for w in frequent if len(w) >= 5))[:common]
    words = frequent[:common]
    pairs = [f"{a} {b}" for a, b in zip(words[0::2], words[1::2])]
    return {"dev": list(server_load.QUERIES), "prefix3": prefixes, "common": words + pairs + ["the", "je to", "na"]}


def _embed_all(config: Any, queries: list[str]) -> dict[str, bytes]:
    from builder.core.embedding import make_embedder

    embedder = make_embedder(config.embedding, for_queries=True)
    assert embedder is not None, "the synthetic index uses the local provider"
    return {q: embedder.embed_query(q) for q in dict.fromkeys(queries)}


def in_process(config_path: Path, sets: dict[str, list[str]], rounds: int) -> dict[str, Any]:
    """p50/p95 (ms) per mode over ``rounds`` passes of every query; modes interleaved query by query."""
    from builder.core import index as db
    from builder.core.config import load_config
    from server.embedder import QueryEmbedder
    from server.reader import IndexReader
    from server.search import search
    from server.vectors import VectorMemory

    config = load_config(config_path)
    everything = [q for queries in sets.values() for q in queries]
    started = time.perf_counter()
    vectors = _embed_all(config, everything)
    embed_all_s = time.perf_counter() - started
    reader = IndexReader(config.index, time_limit_s=30.0)
    memory = VectorMemory(reader.open_fresh)
    embedder = QueryEmbedder(config.embedding, time_limit_s=30.0)
    embedder.embed("warm-up")
    with reader.connection() as lease:
        total = db.count_vectors(lease.conn)
        memory.nearest(lease.conn, lease.identity, vectors[everything[0]], CANDIDATES)  # starts the load
        deadline = time.monotonic() + 120
        while total >= memory.min_vectors and memory.loaded() is None and time.monotonic() < deadline:
            time.sleep(0.1)
    times: dict[str, list[float]] = collections.defaultdict(list)
    empty: collections.Counter[str] = collections.Counter()

    def timed(label: str, call: Any) -> None:
        start = time.perf_counter()
        result = call()
        times[label].append((time.perf_counter() - start) * 1000)
        if not (result.hits if hasattr(result, "hits") else result):
            empty[label] += 1

    def one_query(q: str, kind: str, lease: Any) -> None:
        """Every mode for one query on one connection, back to back (the same noise for each)."""
        def nearest(v: bytes, k: int) -> list[tuple[int, float]] | None:
            return memory.nearest(lease.conn, lease.identity, v, k)

        def run(mode: str, vector: bytes | None) -> Any:
            return search(lease.conn, config, q, mode=mode, query_vector=vector, nearest=nearest)

        timed(f"bm25 {kind}", lambda: run("bm25", None))
        timed("vector", lambda: run("vector", vectors[q]))
        timed("hybrid", lambda: run("hybrid", vectors[q]))
        timed("hybrid+embed", lambda: run("hybrid", embedder.embed(q)[0]))
        timed("embed", lambda: [embedder.embed(q)[0]])
        timed("vec0", lambda: db.knn_search(lease.conn, vectors[q], CANDIDATES, None, None))

    for _ in range(rounds):
        for kind, queries in sets.items():
            for q in queries:
                with reader.connection() as lease:
                    one_query(q, kind, lease)
    rows = {label: {k: v for k, v in summary(values).items() if k in ("n", "median", "p95")}
            for label, values in times.items()}
    rows["bm25 all"] = {k: v for k, v in summary([t for label, values in times.items()
                                                  if label.startswith("bm25") for t in values]).items()
                        if k in ("n", "median", "p95")}
    return {"chunks": total, "in_memory_vectors": memory.loaded() is not None, "rows": rows,
            "empty_results": dict(empty), "queries": {k: len(v) for k, v in sets.items()},
            "embed_all_s": embed_all_s,
            "vec0_over_hybrid_p50": rows["vec0"]["median"] / rows["hybrid"]["median"],
            "vec0_over_vector_p50": rows["vec0"]["median"] / rows["vector"]["median"]}


def _get(port: int, path: str) -> dict[str, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        return json.loads(conn.getresponse().read())
    finally:
        conn.close()


def serve_load(config_path: Path, port: int, requests: int, repeats: int) -> dict[str, Any]:
    """``notes-portal serve`` (uvicorn) on 127.0.0.1: hybrid with 1 and 8 clients (the 8-client row
    ``repeats`` times), bm25 with 8, by ``server_load.load``; the server's peak RSS."""
    with open(config_path.parent / "serve.stderr", "wb") as err:
        server = subprocess.Popen([*cli(), "serve", "--config", str(config_path), "--port", str(port)],
                                  env=child_env(), stdout=subprocess.DEVNULL, stderr=err)
        try:
            return _load(server.pid, port, requests, repeats)
        finally:
            server.terminate()
            server.wait(timeout=15)


def _load(pid: int, port: int, requests: int, repeats: int) -> dict[str, Any]:
    for _ in range(300):
        try:
            _get(port, "/api/health")
            break
        except OSError:
            time.sleep(0.1)
    server_load.load(port, "hybrid", 1, 10)  # the model, the page cache, the in-memory vectors
    for _ in range(600):
        if _get(port, "/api/health").get("vector_memory", {}).get("loaded"):
            break
        time.sleep(0.1)
    rows = {"hybrid 1 client": _row(port, "hybrid", 1, max(40, requests // 4))}
    eight = [_row(port, "hybrid", 8, requests) for _ in range(repeats)]
    rows["hybrid 8 clients"] = {"rps": summary([r["rps"] for r in eight])["median"],
                                "rps_runs": [r["rps"] for r in eight],
                                "p50_ms": summary([r["p50_ms"] for r in eight])["median"],
                                "p95_ms": summary([r["p95_ms"] for r in eight])["median"],
                                "requests": sum(r["requests"] for r in eight),
                                "errors": sum(r["errors"] for r in eight),
                                "corrected": sum(r["corrected"] for r in eight),
                                "error_messages": sorted({m for r in eight for m in r["error_messages"]})[:3]}
    rows["bm25 8 clients"] = _row(port, "bm25", 8, requests)
    health = _get(port, "/api/health")
    return {"rows": rows, "peak_rss_mb": proc_status_mb(pid, "VmHWM"), "rss_mb": proc_status_mb(pid, "VmRSS"),
            "vector_memory": health.get("vector_memory")}


def _row(port: int, mode: str, clients: int, requests: int) -> dict[str, Any]:
    """``server_load.load``, with the answers it counts as errors because their first note says a
    mistyped word was replaced (``showing results for``) counted apart, as ``corrected``: the rest
    are HTTP errors, exceptions and degraded answers (the embedding missing)."""
    server_load.LAST_ERRORS.clear()
    row = server_load.load(port, mode, clients, requests)
    corrected = [e for e in server_load.LAST_ERRORS if e.startswith("degraded: no note holds")]
    others = sorted({e for e in server_load.LAST_ERRORS if e not in corrected})
    return {**row, "errors": row["errors"] - len(corrected), "corrected": len(corrected),
            "error_messages": others[:3]}
