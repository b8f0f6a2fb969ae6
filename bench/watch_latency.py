"""Watch mode's latency: from saving a note to a search hit on it with its page on disk.

The real CLI runs `notes-portal serve --watch` (uvicorn on 127.0.0.1, the job runner and the folder
watcher in one process) over a folder of --notes generated notes, with the bundled embedding model
(`provider: local`). Each run saves a new note holding a word no other note has, then asks
`/api/search` for that word every --poll seconds until a hit names the note and its page is a file
in the site folder (the server leaves out hits whose page is not there yet). The clock starts when the
note's file is closed. Between runs the portal goes idle again. A warm-up run (the model loaded, the
renderer imported) is left out of the figures.

    python bench/watch_latency.py --notes 200 --runs 20
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noop_build import make_corpus  # a sibling script, not a package

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "builder.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def hits(port: int, word: str) -> list[str]:
    """The paths of the notes /api/search finds for ``word`` (words only: the poll must not load the
    server with query embeddings; the hit still needs the note's vectors, which come before its page)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/api/search?" + urlencode({"q": word, "mode": "bm25"}))
        response = conn.getresponse()
        body = response.read()
        return [hit["path"] for hit in json.loads(body)["hits"]] if response.status == 200 else []
    except OSError:
        return []
    finally:
        conn.close()


def one_run(notes: Path, site: Path, port: int, n: int, poll: float, timeout: float) -> float:
    """Save a new note and return the seconds until it is found and its page is on disk."""
    word = f"latence{n:03d}kvx"
    rel = f"watch-bench/run{n:03d}.md"
    path = notes / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        handle.write(f"# Měření {n}\n\nPoznámka uložená v editoru, slovo {word} je jen v ní.\n")
    started = time.perf_counter()
    page = site / "notes" / rel.replace(".md", ".html")
    while True:
        if rel in hits(port, word) and page.is_file():
            return time.perf_counter() - started
        if time.perf_counter() - started > timeout:
            sys.exit(f"run {n}: no hit after {timeout} s")
        time.sleep(poll)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=200, help="notes in the folder (default: 200)")
    parser.add_argument("--runs", type=int, default=20, help="measured saves (default: 20)")
    parser.add_argument("--debounce", type=float, default=None,
                        help="watch.debounce in seconds (default: the config's default)")
    parser.add_argument("--poll", type=float, default=0.01, help="seconds between searches (default: 0.01)")
    parser.add_argument("--pause", type=float, default=1.0, help="seconds of quiet between runs (default: 1)")
    args = parser.parse_args()
    if args.runs < 2:
        parser.error("--runs must be at least 2 (a median and a p95 need several runs)")
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="np-watch-"))
    server = None
    try:
        notes = work / "notes"
        make_corpus(notes, args.notes)
        watch = f"watch:\n  debounce: {args.debounce}\n" if args.debounce is not None else ""
        config = work / "portal.yaml"
        config.write_text(f"index: data/index.sqlite\nsite:\n  output: site\nembedding:\n  provider: local\n{watch}"
                          "sources:\n  notes:\n    folder: notes\n", encoding="utf-8")
        started = time.perf_counter()
        subprocess.run([*CLI, "build", "--config", str(config)], cwd=ROOT, check=True, capture_output=True)
        first = time.perf_counter() - started
        port = free_port()
        server = subprocess.Popen([*CLI, "serve", "--watch", "--no-mcp", "--port", str(port), "--config", str(config)],
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while hits(port, "poznámka") == [] and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2.0)  # the build at start (a no-op) and the watches in place
        site = work / "site"
        warm = one_run(notes, site, port, 0, args.poll, 120)
        times = []
        for n in range(1, args.runs + 1):
            time.sleep(args.pause)
            times.append(one_run(notes, site, port, n, args.poll, 60))
        cores = len(os.sched_getaffinity(0))
        print(f"notes: {args.notes}, runs: {args.runs}, embedding provider: local, cores: {cores}, "
              f"watch.debounce: {args.debounce if args.debounce is not None else 'default'}")
        print("load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}, after: {:.2f} {:.2f} {:.2f}".format(
            *load_before, *os.getloadavg()))
        print(f"first build (CLI):             {first:.1f} s")
        print(f"warm-up save (left out):       {warm:.3f} s")
        # p95 by the "inclusive" method: with 20 runs it lies between the two slowest
        p95 = statistics.quantiles(times, n=20, method="inclusive")[-1]
        print(f"save → search hit + page: median {statistics.median(times):.3f} s, p95 {p95:.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f})")
        print("runs: " + " ".join(f"{t:.3f}" for t in times))
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
