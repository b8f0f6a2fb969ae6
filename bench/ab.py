"""A/B of two checkouts in one sitting: builds, the search path or the HTTP server, alternating runs.

    git worktree add /tmp/before HEAD~1
    python bench/ab.py build --config /tmp/bc10k/portal.yaml --note notes/work/x.md --edit heading \\
        --rounds 9 /tmp/before .
    python bench/ab.py build --config /tmp/bc10k/portal.yaml --first --rounds 5 /tmp/before .
    python bench/ab.py search --config portal.yaml --queries ../shared/eval/dev.jsonl /tmp/before .
    python bench/ab.py serve --config <portal.yaml> --rounds 2 /tmp/before .

Each run is a fresh process with one checkout's code first on its import path; the sides alternate
so that a machine whose load drifts favours neither.

``build``: one-note (or, with ``--first``, first) builds. Each side gets its own copy of the portal's
index and site (made once from the config's, or built on the first run), so its render state is its
own; the notes are shared. Every round edits one note (``bench_corpus.edit_body`` or
``edit_heading``; ``--edit added`` writes a note beside it in even rounds and deletes it in odd ones, reported
apart; ``--edit none`` times no-op builds), then runs ``notes-portal build`` once per side,
in the order A B, B A, B A, A B, …. Each run reports its wall time, the time until its render began (start-up,
scan, index), the time ``render_site`` took and its peak RSS; the medians and their ratio are printed. Both checkouts'
bytecode is written first. On a busy machine the render's own time separates the sides when the
whole process's does not. With ``--first`` a round deletes each side's index and site instead.

``search``: ``server.search.search`` (or, with ``--mode app-…``, the web app's ``/api/search``
through Starlette's TestClient: its embedder, connection pool and vectors in memory) over the
queries, after one warm-up pass; p50 and p95 per run, A, B, A, B, …

``serve``: ``notes-portal serve`` of each checkout on a built portal, warmed up (the model, the page
cache, the vectors in memory), then the hybrid dev-set queries of ``server_load.load``: one client,
then 8 side by side. Loopback only.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_corpus import ADDED_NOTE, add_beside, edit_body, edit_heading  # a sibling module, not a package

BUILD_CHILD = """
import json, sys, time
root, config = sys.argv[1:3]
sys.path.insert(0, root)
started = time.perf_counter()
from builder.render import site
assert site.__file__.startswith(root), site.__file__
rendering = []
rendering_started = []
real = site.render_site
def timed(*args, **kwargs):
    begun = time.perf_counter()
    rendering_started.append(begun)
    try:
        return real(*args, **kwargs)
    finally:
        rendering.append(time.perf_counter() - begun)
site.render_site = timed  # builder.sync imports it when it renders
from builder.cli import main
try:
    main(["build", "--config", config])
except SystemExit as exc:
    if exc.code:
        raise
import resource
print(json.dumps({"main": time.perf_counter() - started, "render": sum(rendering),
                  "index": rendering_started[0] - started if rendering_started else None,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

SEARCH_CHILD = """
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


# ---------------------------------------------------------------- build


def side_config(config_path: Path, work: Path) -> Path:
    """A copy of the config whose index and site live in ``work`` (copied there from the config's
    own when they exist: the side starts from a built portal)."""
    raw = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    base = config_path.parent
    index = (base / raw["index"]).resolve()
    site = (base / raw.get("site", {}).get("output", "site")).resolve()
    work.mkdir(parents=True)
    if index.parent.is_dir():
        shutil.copytree(index.parent, work / "data", ignore=shutil.ignore_patterns("*.lock"))
    if site.is_dir():
        shutil.copytree(site, work / "site")
    raw["index"] = str(work / "data" / index.name)
    raw.setdefault("site", {})["output"] = str(work / "site")
    for source in raw.get("sources", {}).values():
        if isinstance(source, dict) and "folder" in source:
            source["folder"] = str((base / source["folder"]).resolve())
    path = work / "portal.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return path


def child_env() -> dict[str, str]:
    """The build children's environment: their checkout alone on the import path, bytecode caches
    used (a side without them would compile every module at every start: ~90 ms of a one-note build)."""
    env = {**os.environ, "PYTHONPATH": ""}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_checkout(checkout: Path) -> None:
    """Write the checkout's bytecode caches before the first timed run, as an installed package has them."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "builder"), str(checkout / "server")],
                   env=child_env(), stdout=subprocess.DEVNULL, check=True)


def run_build(checkout: Path, config: Path) -> dict[str, float | None]:
    """One build in a fresh process: its wall time, render time and peak RSS (MB, the build's own
    process: a one-note build forks no workers)."""
    begun = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", BUILD_CHILD, str(checkout), str(config)], capture_output=True,
                          check=False, env=child_env())
    wall = time.perf_counter() - begun
    if done.returncode:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise SystemExit(f"the build with {checkout} failed (exit {done.returncode}): {' '.join(tail)}")
    found = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return {"wall": wall, "index": found["index"], "render": found["render"], "rss": found["rss"]}


def add_or_remove(note: Path, seed: int) -> None:
    """An even ``seed`` writes a note beside ``note`` that links to it (as the scale step's "a note added" does), an
    odd one deletes it again."""
    if seed % 2 == 0:
        add_beside(note, seed)
    else:
        note.with_name(ADDED_NOTE).unlink(missing_ok=True)


def clear(config: Path) -> None:
    """Delete a side's index folder and site (``side_config`` put both inside its folder)."""
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    shutil.rmtree(Path(raw["index"]).parent, ignore_errors=True)
    shutil.rmtree(raw["site"]["output"], ignore_errors=True)


def build(args: argparse.Namespace) -> None:
    """The ``build`` subcommand."""
    edit = {"body": edit_body, "heading": edit_heading, "added": add_or_remove,
            "none": lambda note, seed: None}[args.edit]
    sides = {"A": args.a.resolve(), "B": args.b.resolve()}
    for checkout in sides.values():
        compile_checkout(checkout)
    with tempfile.TemporaryDirectory(prefix="build-ab-") as tmp:
        configs = {name: side_config(args.config.resolve(), Path(tmp) / name) for name in sides}
        if not args.first:
            for name, checkout in sides.items():  # a render-code change re-renders everything once: not a round
                run_build(checkout, configs[name])
        results: dict[str, list[dict[str, float | None]]] = {name: [] for name in sides}
        for round_no in range(args.rounds):
            if not args.first:
                edit(args.note, 1000 + round_no)
            for name in ("A", "B") if round_no % 4 in (0, 3) else ("B", "A"):  # each side first in half of
                # the even rounds and of the odd ones (--edit added: the adds and the removes)
                if args.first:
                    clear(configs[name])
                results[name].append(run_build(sides[name], configs[name]))
    what = ("first builds" if args.first else "no-op builds" if args.edit == "none"
            else f"{args.edit} edit of {args.note}")
    if args.edit == "added":  # even rounds added the note, odd ones removed it
        for kind, parity in (("a note added", 0), ("a note removed", 1)):
            report(f"{kind} beside {args.note}", {name: runs[parity::2] for name, runs in results.items()})
    else:
        report(what, results)


def report(what: str, results: dict[str, list[dict[str, float | None]]]) -> None:
    """The medians of each side's builds and their ratio, measure by measure."""
    sides = list(results)
    print(f"{what}, {len(results['A'])} rounds (medians; the runs in order)")
    for measure, unit, scale in (("wall", "ms", 1000), ("index", "ms", 1000), ("render", "ms", 1000),
                                 ("rss", "MB", 1)):
        values = {name: [v for r in results[name] if (v := r[measure]) is not None] for name in sides}
        if any(len(values[name]) < len(results[name]) for name in sides) or not any(map(max, values.values())):
            continue  # a build that rendered nothing has no "until the render" and no render
        medians = {name: statistics.median(runs) * scale for name, runs in values.items()}
        for name in sides:
            runs = " ".join(f"{v * scale:.0f}" for v in values[name])
            print(f"  {measure:6} {name} {medians[name]:7.0f} {unit}   ({runs})")
        print(f"  {measure:6} B/A {medians['B'] / medians['A']:.2f}")


# ---------------------------------------------------------------- search


def search(args: argparse.Namespace) -> None:
    """The ``search`` subcommand."""
    results: dict[Path, list[str]] = {args.a: [], args.b: []}
    for _ in range(args.rounds):
        for root in (args.a, args.b):
            out = subprocess.run([sys.executable, "-c", SEARCH_CHILD, str(root.resolve()), args.config,
                                  args.queries, args.mode, str(args.passes)],
                                 capture_output=True, text=True, check=False)
            if out.returncode != 0:
                sys.exit(f"{root}: the run failed: {out.stderr.strip().splitlines()[-1]}")
            results[root].append(out.stdout.strip())
    for root, runs in results.items():
        print(f"{root}: p50 " + ", ".join(r.split()[0] for r in runs) + " ms; p95 "
              + ", ".join(r.split()[1] for r in runs) + " ms")


# ---------------------------------------------------------------- serve


def config_for(root: Path, config: Path) -> Path:
    """``config`` as the checkout at ``root`` is to read it. The clients repeat queries: a checkout
    whose server keeps the latest queries' vectors gets a copy beside it with ``search.query_cache: 0``,
    so that every request costs its whole work, as in a checkout from before that cache."""
    if "query_cache" not in (root / "builder" / "core" / "config.py").read_text("utf-8"):
        return config
    data = yaml.safe_load(config.read_text("utf-8")) or {}
    data["search"] = {**(data.get("search") or {}), "query_cache": 0}
    copy = config.with_name(f".{config.stem}.no-query-cache.yaml")  # beside it: relative paths still hold
    copy.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return copy


def start_server(root: Path, config: Path, port: int) -> subprocess.Popen[bytes]:
    """``notes-portal serve`` of the checkout at ``root``, answering and warmed up."""
    import server_load  # reads the dev queries when imported: only the serve A/B needs them

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


def serve(args: argparse.Namespace) -> None:
    """The ``serve`` subcommand."""
    import server_load

    for _ in range(args.rounds):
        for root in args.checkouts:
            config = config_for(root, args.config.resolve())
            try:
                server = start_server(root, config, args.port)
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


def parser() -> argparse.ArgumentParser:
    """The command line: one subcommand per kind of A/B."""
    top = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                  formatter_class=argparse.RawDescriptionHelpFormatter,
                                  epilog="examples:\n" + "\n".join(__doc__.splitlines()[2:8]))
    sub = top.add_subparsers(dest="command", required=True)

    what = "one-note or first builds (wall, until the render, render, peak RSS)"
    b = sub.add_parser("build", help=what, description=what)
    b.add_argument("--config", type=Path, required=True, help="a portal whose notes are edited")
    b.add_argument("--note", type=Path, help="the note to edit (a file of a folder source)")
    b.add_argument("--edit", choices=("body", "heading", "added", "none"), default="body",
                   help="what each round changes in the note (added: a note beside it, written in even rounds "
                        "and deleted in odd ones; none: no-op builds)")
    b.add_argument("--first", action="store_true", help="time first builds (no note is edited)")
    b.add_argument("--rounds", type=int, default=9)
    b.add_argument("a", type=Path, help="checkout A (the one before)")
    b.add_argument("b", type=Path, help="checkout B")
    b.set_defaults(func=build)

    what = "search() or the web app's /api/search (p50, p95 per run)"
    s = sub.add_parser("search", help=what, description=what)
    s.add_argument("--config", required=True, help="a built portal's config (its index is searched)")
    s.add_argument("--queries", required=True, help="a JSONL file with a 'query' per line")
    s.add_argument("--mode", default="bm25", choices=("bm25", "vector", "hybrid", "app-bm25", "app-hybrid"),
                   help="search() in one mode, or app-MODE: the web app's /api/search (TestClient)")
    s.add_argument("--rounds", type=int, default=3, help="runs of each side, alternating")
    s.add_argument("--passes", type=int, default=3, help="passes over the queries in one run")
    s.add_argument("a", type=Path, help="checkout A (e.g. a worktree of the commit before)")
    s.add_argument("b", type=Path, help="checkout B")
    s.set_defaults(func=search)

    what = "notes-portal serve over HTTP: 1 and 8 clients, hybrid"
    v = sub.add_parser("serve", help=what, description=what)
    v.add_argument("--config", required=True, type=Path, help="a built portal's config")
    v.add_argument("--rounds", type=int, default=2)
    v.add_argument("--one", type=int, default=80, help="requests of the one client")
    v.add_argument("--eight", type=int, default=320, help="requests of the 8 clients in all")
    v.add_argument("--port", type=int, default=8800)
    v.add_argument("checkouts", nargs=2, type=Path)
    v.set_defaults(func=serve)
    return top


def main() -> None:
    top = parser()
    args = top.parse_args()
    if args.command == "build" and args.note is None and not args.first and args.edit != "none":
        top.error("build: --note is required unless --first or --edit none")
    args.func(args)


if __name__ == "__main__":
    main()
