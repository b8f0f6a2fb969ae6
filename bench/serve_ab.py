"""A/B of ``notes-portal serve`` between two checkouts, over HTTP, in one sitting.

Each run starts the server of one checkout (its code first on ``PYTHONPATH``) on a built portal,
warms it up (the model, the page cache, the vectors in memory), then sends the hybrid dev-set
queries of ``server_load.load``: one client, then 8 side by side. Runs alternate A, B, A, B, …
so that a machine whose load drifts favours neither side. Loopback only.

    git worktree add /tmp/before HEAD~1
    python bench/serve_ab.py --config <portal.yaml> --rounds 2 /tmp/before .
"""

from __future__ import annotations

import argparse
import http.client
import os
import subprocess
import sys
import time
from pathlib import Path

import server_load


def _config_for(root: Path, config: Path) -> Path:
    """``config`` as the checkout at ``root`` is to read it. The clients repeat queries: a checkout
    whose server keeps the latest queries' vectors gets a copy beside it with ``search.query_cache: 0``,
    so that every request costs its whole work, as in a checkout from before that cache."""
    if "query_cache" not in (root / "builder" / "core" / "config.py").read_text("utf-8"):
        return config
    import yaml

    data = yaml.safe_load(config.read_text("utf-8")) or {}
    data["search"] = {**(data.get("search") or {}), "query_cache": 0}
    copy = config.with_name(f".{config.stem}.no-query-cache.yaml")  # beside it: relative paths still hold
    copy.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return copy


def _serve(root: Path, config: Path, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(root.resolve())}
    server = subprocess.Popen([sys.executable, "-m", "builder.cli", "serve", "--config", str(config),
                               "--port", str(port), "--no-mcp"], env=env, cwd=root,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
                connection.request("GET", "/api/health")
                connection.getresponse().read()
                break
            except OSError:
                time.sleep(0.1)
        server_load.load(port, "hybrid", 1, 10)  # the model, the page cache; starts loading the vectors
        time.sleep(4)
        server_load.load(port, "hybrid", 1, 10)
    except BaseException:  # a server that never answered is not left running
        server.terminate()
        server.wait(timeout=10)
        raise
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, type=Path, help="a built portal's config")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", type=int, default=80, help="requests of the one client")
    parser.add_argument("--eight", type=int, default=320, help="requests of the 8 clients in all")
    parser.add_argument("--port", type=int, default=8800)
    parser.add_argument("checkouts", nargs=2, type=Path)
    args = parser.parse_args()
    for _ in range(args.rounds):
        for root in args.checkouts:
            config = _config_for(root, args.config.resolve())
            try:
                server = _serve(root, config, args.port)
            finally:  # read at the server's start (or it failed): no copy is left beside the user's config
                if config != args.config.resolve():
                    config.unlink(missing_ok=True)
            try:
                one = server_load.load(args.port, "hybrid", 1, args.one)
                eight = server_load.load(args.port, "hybrid", 8, args.eight)
            finally:
                server.terminate()
                server.wait(timeout=10)
            print(f"{root}: 1 client p50 {one['p50_ms']:.1f} ms, p95 {one['p95_ms']:.1f} ms; "
                  f"8 clients {eight['rps']:.1f} req/s, p50 {eight['p50_ms']:.0f} ms, p95 {eight['p95_ms']:.0f} ms; "
                  f"errors {one['errors'] + eight['errors']}", flush=True)


if __name__ == "__main__":
    main()
