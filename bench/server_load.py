"""Load on /api/search: p50/p95 latency and requests/s at 1, 8 and 32 concurrent clients.

Bounded and loopback only: the server (`notes-portal serve`, a real uvicorn
process) listens on 127.0.0.1 and each client sends a fixed number of requests.

    python bench/server_load.py --corpus examples            # the bundled example notes
    python bench/server_load.py --corpus synthetic --chunks 100000

The synthetic index holds real text (runs of lines sampled from the shared
kemt-wiki and naucse corpora, so word frequencies are those of real notes) and
random unit vectors for the `local` provider; the query path is the real one:
BM25 over 100,000 chunks, the query embedded by the bundled model, KNN over
100,000 vectors. Queries are the dev-set queries of ../shared/eval/dev.jsonl.
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
QUERIES = [json.loads(line)["query"] for line in (SHARED / "eval" / "dev.jsonl").read_text("utf-8").splitlines()]


# The clients draw the dev queries at random, so they repeat; a server keeping the latest queries'
# vectors would not embed a repeat again. These figures measure every query's whole work.
NO_QUERY_CACHE = "search:\n  query_cache: 0\n"


def _corpus_lines() -> list[list[str]]:
    """Non-empty lines of every markdown file in the shared corpora, file by file."""
    files = sorted((SHARED / "corpora").rglob("*.md"))
    out = []
    for path in files:
        lines = [line for line in path.read_text("utf-8", errors="replace").splitlines() if line.strip()]
        if len(lines) >= 10:
            out.append(lines)
    return out


def synthetic_index(work: Path, chunks: int) -> Path:
    """A config plus an index with ``chunks`` chunks (10 per note) and random unit vectors, and a
    stand-in page per note in the site folder (``/api/search`` leaves out hits whose page is not
    on the site, and the notes are never rendered)."""
    import numpy as np

    from builder.core import index as db
    from builder.core.config import load_config
    from builder.core.index import FileRecord
    from builder.core.urls import note_url, site_file
    from builder.ingest import sha256_text
    from builder.render.output import claim

    (work / "notes").mkdir(parents=True)
    config_path = work / "portal.yaml"
    config_path.write_text("index: data/index.sqlite\nembedding:\n  provider: local\n"
                           "sources:\n  notes:\n    folder: notes\n" + NO_QUERY_CACHE, encoding="utf-8")
    config = load_config(config_path)
    config.index.parent.mkdir(parents=True)
    claim(config.site.output)  # the portal's own site folder, as a render marks it
    conn = db.connect(config.index)
    db.migrate(conn)
    with db.transaction(conn):
        db.set_meta(conn, db.expected_identity(config))
        db.upsert_source(conn, "notes", "folder", None, None)
    db.ensure_vec_table(conn, config.embedding.dims)
    rng = random.Random(1)
    nrng = np.random.default_rng(1)
    sources = _corpus_lines()
    for n in range(chunks // 10):
        path = f"topic{n % 50}/note{n}.md"
        rows = []
        lines = rng.choice(sources)
        for i in range(10):
            start = rng.randrange(0, len(lines) - 8)
            text = "\n".join(lines[start:start + 8])
            rows.append({"chunk_idx": i, "breadcrumb": f"Poznámka {n} > Sekce {i}", "anchor": f"sekce-{i}",
                         "line_start": i * 10 + 1, "line_end": i * 10 + 9, "text": text,
                         "embed_sha": sha256_text(text)})
        record = FileRecord(path=path, title=f"Poznámka {n}", tags=("t",), headings=(), front_matter={}, status="ok",
                            status_note=None, sha256=f"{n:064x}", size=1, mtime_ns=1, changed_at=None)
        db.replace_file(conn, "notes", record, rows, "2026-01-01T00:00:00+00:00")
        page = config.site.output / site_file(note_url("notes", path))
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(f"<!doctype html><title>Poznámka {n}</title>\n", encoding="utf-8")
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id")]
    for start in range(0, len(ids), 5000):
        part = ids[start:start + 5000]
        vectors = nrng.standard_normal((len(part), config.embedding.dims)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        db.store_vectors(conn, [(i, v.tobytes()) for i, v in zip(part, vectors, strict=True)],
                         "2026-01-01T00:00:00+00:00")
    db.merge_words(conn)  # as a first build of these chunks does
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return config_path


def examples_index(work: Path) -> Path:
    """A config plus an index of the bundled example notes, built by the CLI with the local model."""
    shutil.copytree(ROOT / "examples" / "notes", work / "notes")
    config = work / "portal.yaml"
    config.write_text("index: data/index.sqlite\nembedding:\n  provider: local\n"
                      "sources:\n  notes:\n    folder: notes\n" + NO_QUERY_CACHE, encoding="utf-8")
    subprocess.run(["notes-portal", "build", "--config", str(config)], check=True)
    return config


LAST_ERRORS: list[str] = []
LAST_NOTES: list[str] = []  # the answers' other notes (a corrected word, a word no note mentions)
# an answer's note saying its vector half is missing: the answer is degraded, counted as an error
DEGRADED = ("embeddings unavailable", "search by meaning is still being prepared")


def client_run(port: int, mode: str, count: int, latencies: list[float], errors: list[str], seed: int,
               notes: list[str] | None = None) -> None:
    """One client: ``count`` dev-set queries on one keep-alive connection; appends latencies, errors
    (HTTP errors, exceptions, degraded answers) and the answers' other notes."""
    rng = random.Random(seed)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for _ in range(count):
        query = urlencode({"q": rng.choice(QUERIES), "mode": mode, "limit": 10})
        start = time.perf_counter()
        try:
            conn.request("GET", f"/api/search?{query}")
            response = conn.getresponse()
            body = json.loads(response.read())
            if response.status != 200 or "hits" not in body:
                errors.append(f"HTTP {response.status}")
            else:
                for note in body["notes"]:
                    if mode != "bm25" and any(marker in note for marker in DEGRADED):
                        errors.append(f"degraded: {note}")
                    elif notes is not None:
                        notes.append(note)
        except (OSError, http.client.HTTPException) as exc:
            errors.append(type(exc).__name__)
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        latencies.append(time.perf_counter() - start)
    conn.close()


def load(port: int, mode: str, clients: int, requests: int) -> dict[str, float]:
    """``clients`` concurrent clients sending ``requests`` in all: p50/p95 ms, requests/s, errors."""
    latencies: list[float] = []
    errors: list[str] = []
    notes: list[str] = []
    per_client = max(1, requests // clients)
    threads = [threading.Thread(target=client_run, args=(port, mode, per_client, latencies, errors, i, notes))
               for i in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    LAST_ERRORS.extend(errors)
    LAST_NOTES.extend(notes)
    latencies.sort()
    return {"requests": len(latencies), "p50_ms": statistics.median(latencies) * 1000,
            "p95_ms": latencies[int(len(latencies) * 0.95) - 1] * 1000, "rps": len(latencies) / wall,
            "errors": len(errors)}


def rss_mb(pid: int) -> float:
    """The process's resident set now (``VmRSS``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("examples", "synthetic"), default="examples")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=320, help="per concurrency level and mode")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="np-load-"))
    server = None
    try:
        started = time.perf_counter()
        config = synthetic_index(work, args.chunks) if args.corpus == "synthetic" else examples_index(work)
        print(f"index ready in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        server = subprocess.Popen(["notes-portal", "serve", "--config", str(config), "--port", str(args.port)],
                                  stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                http.client.HTTPConnection("127.0.0.1", args.port, timeout=1).request("GET", "/api/health")
                break
            except OSError:
                time.sleep(0.1)
        load(args.port, "hybrid", 1, 10)  # warm-up: model load, page cache, in-memory vectors
        time.sleep(3)  # the server loads a large index's vectors in the background
        print(f"corpus: {args.corpus}" + (f" ({args.chunks:,} chunks)" if args.corpus == "synthetic" else ""))
        print(f"{'mode':7} {'clients':>7} {'requests':>8} {'p50 ms':>8} {'p95 ms':>8} {'req/s':>8} {'errors':>6}")
        for mode in ("bm25", "hybrid"):
            for clients in (1, 8, 32):
                r = load(args.port, mode, clients, args.requests)
                print(f"{mode:7} {clients:>7} {r['requests']:>8} {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f} "
                      f"{r['rps']:>8.1f} {r['errors']:>6}")
        print(f"server RSS after the run: {rss_mb(server.pid):.0f} MB")
        if LAST_ERRORS:
            print("first errors:", "; ".join(sorted(set(LAST_ERRORS))[:3]))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
