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
import functools
import http.client
import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import server_load
from bench_env import child_env, cli, proc_status_mb, summary

from server.search import CANDIDATES  # what each half of a search fetches: the vec0 row asks as many
from server.vectors import MIN_VECTORS

Nearest = Callable[[bytes, int], "list[tuple[int, float]] | None"]


def _words(text: str) -> list[str]:
    """The prose words of a markdown file: front matter, code fences, URLs and link targets left out."""
    text = re.sub(r"\A---\n.*?\n---\n", "", text, flags=re.S)
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"\]\([^)]*\)|https?://\S+", " ", text)
    return re.findall(r"[^\W\d_]{4,}", text.lower())


def query_sets(corpora: Path, common: int = 20) -> dict[str, list[str]]:
    """The dev-set queries, 3-letter prefixes of frequent words (each matches as a prefix), and common
    words (single, in pairs, and queries of function words only, which then match as ordinary words)."""
    from server.query import FUNCTION_WORDS

    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(corpora.rglob("*.md")):
        counts.update(set(_words(path.read_text("utf-8", errors="replace"))))
    frequent = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])) if w not in FUNCTION_WORDS]
    prefixes = list(dict.fromkeys(w[:3] for w in frequent if len(w) >= 5))[:common]
    words = frequent[:common]
    pairs = [f"{a} {b}" for a, b in zip(words[0::2], words[1::2], strict=False)]
    return {"dev": list(server_load.QUERIES), "prefix3": prefixes, "common": words + pairs + ["the", "je to", "na"]}


def _embed_all(config: Any, queries: list[str]) -> dict[str, bytes]:
    from builder.core.embedding import make_embedder

    embedder = make_embedder(config.embedding, for_queries=True)
    if embedder is None:
        raise SystemExit("the synthetic index must use the local provider")
    return {q: embedder.embed_query(q) for q in dict.fromkeys(queries)}


class _Timer:
    """Milliseconds per label, and how many calls of each label found nothing."""

    def __init__(self) -> None:
        self.times: dict[str, list[float]] = collections.defaultdict(list)
        self.empty: collections.Counter[str] = collections.Counter()

    def __call__(self, label: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        result = call(*args, **kwargs)
        self.times[label].append((time.perf_counter() - start) * 1000)
        if not (result.hits if hasattr(result, "hits") else result):
            self.empty[label] += 1
        return result


def _hybrid_embedding(embedder: Any, conn: Any, config: Any, query: str, nearest: Nearest) -> Any:
    """What ``/api/search`` does for a hybrid query: embed it (the server's embedder), then search."""
    from server.search import made_before, search

    vector, error = embedder.embed(query)
    if vector is None:
        raise SystemExit(f"the query embedder failed: {error}")
    return search(conn, config, query, mode="hybrid", vector=made_before(vector), nearest=nearest)


class _Precomputed:
    """A query "embedder" that looks the vector up: the server's path with no inference in it."""

    fingerprint = "precomputed"

    def __init__(self, vectors: dict[str, bytes]) -> None:
        self.vectors = vectors

    def embed_query(self, text: str) -> bytes:
        return self.vectors[text]

    def embed_passages(self, texts: Any) -> list[bytes]:
        raise NotImplementedError


def _one_query(timer: _Timer, lease: Any, config: Any, memory: Any, embedder: Any, query: str, kind: str,
               vector: bytes) -> None:
    """Every mode for one query on one connection, back to back (the same noise for each)."""
    from builder.core import index as db
    from server.search import made_before, search
    from server.engine import ALONE_THREADS

    nearest = functools.partial(memory.nearest, lease.conn, lease.identity)
    timer(f"bm25 {kind}", search, lease.conn, config, query, mode="bm25")
    timer("plain match", _plain_match, lease.conn, query)
    timer("vector", search, lease.conn, config, query, mode="vector", vector=made_before(vector), nearest=nearest)
    timer("hybrid", search, lease.conn, config, query, mode="hybrid", vector=made_before(vector), nearest=nearest)
    timer("hybrid+embed", _hybrid_embedding, embedder, lease.conn, config, query, nearest)
    timer("embed", embedder.embed, query)
    timer("embed every core", embedder.embed, query, ALONE_THREADS)
    timer("vec0", db.knn_search, lease.conn, vector, CANDIDATES, None, None)


def _plain_match(conn: Any, query: str) -> list[Any]:
    """The floor of a words search: one FTS5 ``MATCH`` of the query's words as typed (any of them,
    as the search's own expression joins them), ranked by FTS5, the best 10; no stems, typos,
    translations or splits, no snippets."""
    words = re.findall(r"\w+", query)
    if not words:
        return []
    match = " OR ".join(f'"{word}"' for word in words)
    return conn.execute("SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :match ORDER BY rank LIMIT 10",
                        {"match": match}).fetchall()


def _server_path(timer: _Timer, searchers: tuple[Any, Any, Any], query: str) -> None:
    """``/api/search``'s own path (:class:`server.engine.Searcher`: the words read while the query is
    embedded, the KNN scan on its thread as soon as the vector is there), with the model, with
    the vector looked up, and for a query asked before (the server keeps the latest queries' vectors)."""
    model, looked_up, remembering = searchers
    timer("server hybrid", looked_up.search, query)
    timer("server hybrid+embed", model.search, query)
    remembering.embedder.embed(query)  # asked before (the first round embeds it, untimed)
    timer("server hybrid+embed again", remembering.search, query)


def _wait_for_memory(reader: Any, memory: Any, vector: bytes) -> int:
    """Start the in-memory load as the server does and wait for it when the index is big enough;
    the number of vectors."""
    from builder.core import index as db

    with reader.connection() as lease:
        total = db.count_vectors(lease.conn)
        memory.nearest(lease.conn, lease.identity, vector, CANDIDATES)
    deadline = time.monotonic() + 300
    while total >= memory.min_vectors and memory.loaded() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if total >= memory.min_vectors and memory.loaded() is None:
        raise SystemExit(f"the in-memory vectors did not load: {memory.state()}")
    return total


def _short(values: list[float]) -> dict[str, float]:
    return {k: v for k, v in summary(values).items() if k in ("n", "median", "p95")}


def in_process(config_path: Path, sets: dict[str, list[str]], rounds: int) -> dict[str, Any]:
    """p50/p95 (ms) per mode over ``rounds`` passes of every query; modes interleaved query by query."""
    from builder.core.config import load_config
    from server.embedder import QueryEmbedder
    from server.reader import IndexReader
    from server.engine import Searcher
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
    total = _wait_for_memory(reader, memory, vectors[everything[0]])
    searchers = (Searcher(config, reader, embedder, memory),
                 Searcher(config, reader, QueryEmbedder(config.embedding, lambda _: _Precomputed(vectors)), memory),
                 Searcher(config, reader, QueryEmbedder(config.embedding, time_limit_s=30.0,
                                                        cache_size=len(everything)), memory))
    timer = _Timer()
    for _ in range(rounds):
        for kind, queries in sets.items():
            for query in queries:
                with reader.connection() as lease:
                    _one_query(timer, lease, config, memory, embedder, query, kind, vectors[query])
                _server_path(timer, searchers, query)
    rows = {label: _short(values) for label, values in timer.times.items()}
    rows["bm25 all"] = _short([t for label, values in timer.times.items() if label.startswith("bm25") for t in values])
    # the embedder's floor is the better of its two ways: on a busy machine OpenMP's threads stall on
    # cores another process holds (p95 in seconds), and a server under load embeds on one core
    one_core, every_core = timer.times["embed"], timer.times["embed every core"]
    embed_p95 = min(rows["embed"]["p95"], rows["embed every core"]["p95"])
    return {"chunks": total, "in_memory_vectors": memory.loaded() is not None, "rows": rows,
            "empty_results": dict(timer.empty), "queries": {k: len(v) for k, v in sets.items()},
            "embed_all_s": embed_all_s,
            # the floors of issue 35's ratios, each beside what it bounds in this run
            "machinery_over_plain_match_p95": rows["bm25 all"]["p95"] / rows["plain match"]["p95"],
            "server_hybrid_embed_minus_embed_p95_ms": rows["server hybrid+embed"]["p95"] - embed_p95,
            "embedder_rps": 1000 * max(len(one_core) / sum(one_core), len(every_core) / sum(every_core)),
            "vec0_over_hybrid_p50": rows["vec0"]["median"] / rows["hybrid"]["median"],
            "vec0_over_hybrid_p95": rows["vec0"]["p95"] / rows["hybrid"]["p95"],
            "vec0_over_vector_p50": rows["vec0"]["median"] / rows["vector"]["median"],
            "vec0_over_server_hybrid_p50": rows["vec0"]["median"] / rows["server hybrid"]["median"],
            "vec0_over_server_hybrid_p95": rows["vec0"]["p95"] / rows["server hybrid"]["p95"]}


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
            return _load(server, port, requests, repeats)
        finally:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def _wait_until_up(server: subprocess.Popen[bytes], port: int) -> dict[str, Any]:
    for _ in range(600):
        if server.poll() is not None:
            raise SystemExit(f"notes-portal serve ended ({server.returncode}) before answering")
        try:
            return _get(port, "/api/health")
        except OSError:
            time.sleep(0.1)
    raise SystemExit("notes-portal serve did not answer within 60 s")


def _load(server: subprocess.Popen[bytes], port: int, requests: int, repeats: int) -> dict[str, Any]:
    health = _wait_until_up(server, port)
    server_load.load(port, "hybrid", 1, 10)  # the model, the page cache; starts loading the vectors
    vectors = health.get("counts", {}).get("vec_chunks", 0)
    for _ in range(3000):  # the server loads a large index's vectors in the background
        state = _get(port, "/api/health").get("vector_memory", {})
        if state.get("loaded") or state.get("error") or vectors < MIN_VECTORS:
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
                                "weak": sum(r["weak"] for r in eight),
                                "error_messages": sorted({m for r in eight for m in r["error_messages"]})[:3]}
    rows["bm25 8 clients"] = _row(port, "bm25", 8, requests)
    health = _get(port, "/api/health")
    return {"rows": rows, "peak_rss_mb": proc_status_mb(server.pid, "VmHWM"),
            "rss_mb": proc_status_mb(server.pid, "VmRSS"), "vector_memory": health.get("vector_memory")}


def _row(port: int, mode: str, clients: int, requests: int) -> dict[str, Any]:
    """``server_load.load``: its errors are HTTP errors, exceptions and degraded answers (the vector
    half missing); answers noting a corrected word (``showing results for``) or a word no note
    mentions (a weak answer) are counted apart."""
    server_load.LAST_ERRORS.clear()
    server_load.LAST_NOTES.clear()
    row = server_load.load(port, mode, clients, requests)
    notes = server_load.LAST_NOTES
    return {**row, "corrected": sum(n.startswith("no note holds") for n in notes),
            "weak": sum(n.startswith("no note mentions") for n in notes),
            "error_messages": sorted(set(server_load.LAST_ERRORS))[:3]}
