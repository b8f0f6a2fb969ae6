"""/api/search while /api/answer is flooded and the answer provider hangs: search must keep its idle latency.

    python bench/answer_flood.py [--clients 120] [--searches 400] [--provider local|none]

The example notes are built (``--provider``: the bundled model, or words only) and served by a real
``notes-portal serve`` on 127.0.0.1 with ``answer:`` pointing at a stand-in provider that accepts every
request and never answers (tests/answer_support.py's ``hang``: what a stuck model server does) and
``timeout_s: 120``. First one client searches ``--searches`` times (idle); then ``--clients`` clients ask
``/api/answer`` (the first ``max_in_flight`` wait on the provider, the others are ``busy`` at once and ask
again after the ``Retry-After`` the server gives; with ``--hostile``, at once, as fast as the server
answers them), and the same client searches the same queries. Printed: p50 and p95 of each run, their
ratio, and what the flood's answers were.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.answer_support import FakeChat  # noqa: E402

QUERIES = ["kolik vody na teh tarik", "zapojeni prevodniku", "what is a VLAN", "restic restore test",
           "jak pájet SMD", "bryndzové halušky postup", "tmux rozdělit okno", "vlak do Krkonoš"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=180)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def searches(port: int, count: int) -> list[float]:
    took = []
    for i in range(count):
        started = time.perf_counter()
        status, _ = get(port, "/api/search?q=" + quote(QUERIES[i % len(QUERIES)]))
        took.append((time.perf_counter() - started) * 1000)
        assert status == 200, status
    return took


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[18]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=120)
    parser.add_argument("--searches", type=int, default=400)
    parser.add_argument("--provider", default="none", choices=("none", "local"))
    parser.add_argument("--hostile", action="store_true", help="the clients ask again at once, not after Retry-After")
    parser.add_argument("--rounds", type=int, default=3, help="idle and flooded runs, alternating")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeChat("openai") as chat:
        chat.fail = "hang"
        config = Path(tmp) / "portal.yaml"
        config.write_text(
            f"site:\n  output: {tmp}/site\nindex: {tmp}/index.sqlite\nembedding:\n  provider: {args.provider}\n"
            f"sources:\n  notes:\n    folder: {ROOT / 'examples' / 'notes'}\n    paths: ['**']\n"
            f"{chat.yaml(timeout_s=120)}", encoding="utf-8")
        subprocess.run([sys.executable, "-m", "builder.cli", "build", "--config", str(config)], check=True,
                       cwd=ROOT, capture_output=True)
        subprocess.run([sys.executable, "-m", "builder.cli", "embed", "--config", str(config)], cwd=ROOT,
                       capture_output=True)
        port = free_port()
        server = subprocess.Popen([sys.executable, "-m", "builder.cli", "serve", "--no-mcp", "--port", str(port),
                                   "--config", str(config)], cwd=ROOT, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        try:
            for _ in range(600):
                try:
                    if get(port, "/api/health")[0] == 200:
                        break
                except OSError:
                    time.sleep(0.1)
            searches(port, 20)  # warm: the model, the vectors in memory, the dictionary
            idle: list[list[float]] = []
            flooded: list[list[float]] = []
            seen: Counter[str] = Counter()
            waiting = 0
            for _ in range(args.rounds):
                idle.append(searches(port, args.searches))
                stop = threading.Event()

                def flood(stop: threading.Event = stop) -> None:
                    while not stop.is_set():
                        try:
                            status, body = get(port, "/api/answer?q=" + quote("kolik vody na teh tarik"))
                            seen[f"{status} {json.loads(body).get('status')}"] += 1
                        except OSError as exc:
                            seen[type(exc).__name__] += 1
                        if not args.hostile:
                            stop.wait(5)  # the busy answer's Retry-After

                chat.hanging.clear()
                clients = [threading.Thread(target=flood, daemon=True) for _ in range(args.clients)]
                before = len(chat.requests)
                for client in clients:
                    client.start()
                time.sleep(2)
                waiting = len(chat.requests) - before
                flooded.append(searches(port, args.searches))
                stop.set()
                chat.release()
                for client in clients:
                    client.join(60)
        finally:
            server.terminate()
            server.wait(30)
    print(f"provider {args.provider}, {args.searches} searches a run, {args.clients} clients asking"
          f"{' again at once (hostile)' if args.hostile else ' again after Retry-After'}, {args.rounds} rounds")
    for number, (quiet, busy) in enumerate(zip(idle, flooded, strict=True), start=1):
        print(f"round {number}: idle p50 {statistics.median(quiet):5.1f} ms p95 {p95(quiet):5.1f} ms | flooded p50 "
              f"{statistics.median(busy):5.1f} ms p95 {p95(busy):5.1f} ms | p95 ratio {p95(busy) / p95(quiet):.2f}")
    ratios = [p95(busy) / p95(quiet) for quiet, busy in zip(idle, flooded, strict=True)]
    print(f"median p95 ratio {statistics.median(ratios):.2f}; answers waiting on the provider: {waiting}; "
          f"the flood's answers: {dict(seen)}")


if __name__ == "__main__":
    main()
