"""The one benchmark command: builds, renders, queries and the server, in one table and as JSON.

    python bench/run.py [--quick] [--json out.json]
    python bench/run.py --steps builds --notes 10000 --runs 5     # re-measure some rows only
    python bench/run.py --steps queries,serve --chunks 100000
    python bench/run.py --steps git --runs 15                        # the every-minute build, git sources

Steps: ``builds`` (generated corpus, CLI builds), ``local`` (first build with the local model),
``render`` (kemt-wiki full renders), ``queries`` (in-process, beside vec0), ``serve`` (HTTP load),
``git`` (three git sources beside a folder: no-op and one note pushed).

What it measures (``docs/BENCHMARKS.md`` has a full run and the targets it is judged against):

- a deterministic corpus of notes cut from the shared corpora (``bench/bench_corpus.py``) at 1,000
  and 10,000 notes: first build with provider ``none``, no-op build, one note changed (a body edit
  and a heading edit, each checked: the note re-indexed, its page and table of contents rewritten),
  each the real CLI in a fresh process (start-up included, with bytecode caches as an installed
  package has them; the no-op also without), medians and p95;
- a first build with the local model on a subset (200 notes), chunks/s;
- a full render of kemt-wiki (``bench/render_bench.py``'s functions);
- in-process query latency per mode at 1,000 / 10,000 / 100,000 chunks (``bench/server_load.py``'s
  synthetic index), each beside a ``vec0`` scan of the same vectors in the same run;
- ``notes-portal serve`` at 100,000 chunks under 8 clients (``server_load.load``), and its peak RSS;
- the every-minute build with three git sources (200 notes each, ``file://``) beside a 1,000-note
  folder: no-op builds, and builds after one note was pushed (``bench_builds.git_builds``);
- index and site sizes on disk, peak RSS of the builds.

The machine is shared and noisy: every figure is repeated, and the load average is printed at
the start and the end. ``--quick`` is a small version (a few minutes) that checks the script.
Every child process imports this checkout (``PYTHONPATH``; checked before the first figure).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))  # this checkout's code, before an editable install of another one
sys.path.insert(0, str(BENCH))

# sibling scripts, not a package, and this checkout's code: imported after the path is set
import bench_builds  # noqa: E402
import bench_floors  # noqa: E402
import bench_report  # noqa: E402
import bench_scale  # noqa: E402
import bench_search  # noqa: E402
import server_load  # noqa: E402
from bench_corpus import CORPORA, load_pools  # noqa: E402
from bench_env import check_children, index_mb, load_average, machine, prepare_children  # noqa: E402


@dataclass(frozen=True)
class Plan:
    """How much to measure: sizes and repetitions."""

    notes: tuple[int, ...]  # corpus sizes for the build figures
    first_runs: int  # first builds per size
    runs: int  # no-op and one-note builds per size and kind
    local_notes: int  # the subset built with the local model
    local_runs: int
    render_runs: int  # full renders of kemt-wiki per cache state
    chunks: tuple[int, ...]  # synthetic index sizes for the query figures
    rounds: int  # passes over every query per index size
    dev_queries: int  # how many dev-set queries (0: all)
    serve_chunks: int  # the index the HTTP load runs against
    requests: int  # requests per 8-client load row
    repeats: int  # 8-client hybrid rows
    git_notes: int  # the folder beside the three git sources
    git_repo_notes: int  # notes in each git source


FULL = Plan(notes=(1000, 10000), first_runs=3, runs=11, local_notes=200, local_runs=2, render_runs=5,
            chunks=(1000, 10000, 100000), rounds=3, dev_queries=0, serve_chunks=100000, requests=320, repeats=3,
            git_notes=1000, git_repo_notes=200)
QUICK = Plan(notes=(300, 1000), first_runs=1, runs=3, local_notes=40, local_runs=1, render_runs=1,
             chunks=(1000, 10000), rounds=1, dev_queries=20, serve_chunks=10000, requests=80, repeats=1,
             git_notes=300, git_repo_notes=50)
STEPS = ("builds", "local", "render", "queries", "serve", "git", "scale")
DEFAULT_STEPS = tuple(step for step in STEPS if step != "scale")  # the scale run takes hours: asked for by name


class Progress:
    """One line on stderr per step, with the time since the start and the load average then (the
    machine is shared: the load says how far to trust the step's figures); kept in ``log``."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.log: list[dict[str, Any]] = []

    def __call__(self, message: str) -> None:
        seconds, load = round(time.perf_counter() - self.start, 1), load_average()
        self.log.append({"s": seconds, "step": message, "load": load})
        print(f"[{seconds:7.1f} s] {message} (load {load})", file=sys.stderr, flush=True)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_builds(plan: Plan, work: Path, results: dict[str, Any], say: Progress) -> None:
    """First, no-op and one-note builds of the generated corpus at each size."""
    pools = load_pools()
    results["corpus_pools"] = pools.summary()
    results["bare_python"] = bench_builds.bare_python(plan.runs)
    results["builds"] = {}
    for notes in plan.notes:
        say(f"corpus of {notes:,} notes")
        corpus = bench_builds.make_corpus(work / f"notes-{notes}", notes, pools)
        say(f"{notes:,} notes: {plan.first_runs} first builds")
        row: dict[str, Any] = {"first": bench_builds.first_builds(corpus, plan.first_runs)}
        say(f"{notes:,} notes: markdown-it-py alone, {plan.first_runs} times (the first build's floor)")
        row["markdown_floor"] = bench_builds.markdown_floor(corpus, plan.first_runs)
        say(f"{notes:,} notes: {plan.runs} no-op builds, and as many without bytecode caches")
        row["noop"] = bench_builds.noop_builds(corpus, plan.runs)
        row["noop_no_bytecode"] = bench_builds.noop_builds(corpus, plan.runs, bytecode=False)
        for kind in ("body", "heading"):
            say(f"{notes:,} notes: {plan.runs} builds after a {kind} edit")
            row[kind] = bench_builds.one_note_builds(corpus, plan.runs, kind)
        shutil.rmtree(corpus.folder)
        say(f"{notes:,} notes, a folder per note (Grav's shape): a first build, {plan.runs} no-op builds")
        corpus = bench_builds.make_corpus(work / f"folders-{notes}", notes, pools, per_folder=True)
        bench_builds.first_builds(corpus, 1)
        row["noop_per_folder"] = bench_builds.noop_builds(corpus, plan.runs)
        results["builds"][str(notes)] = row
        shutil.rmtree(corpus.folder)


def run_queries(plan: Plan, work: Path, results: dict[str, Any], say: Progress) -> Path | None:
    """In-process query latency at each index size; returns the config of the index to serve."""
    sets = bench_search.query_sets(CORPORA)
    if plan.dev_queries:
        sets["dev"] = sets["dev"][:plan.dev_queries]
    results["query_sets"] = sets
    results["queries"] = {}
    serve_config = None
    for chunks in plan.chunks:
        say(f"synthetic index of {chunks:,} chunks")
        started = time.perf_counter()
        config = server_load.synthetic_index(work / f"chunks-{chunks}", chunks)
        made_s = time.perf_counter() - started
        say(f"{chunks:,} chunks: {plan.rounds} rounds of {sum(len(v) for v in sets.values())} queries")
        q = bench_search.in_process(config, sets, plan.rounds)
        q.update(index_mb=index_mb(config.parent / "data" / "index.sqlite"), made_s=made_s)
        results["queries"][str(chunks)] = q
        if chunks == plan.serve_chunks:
            serve_config = config
        else:
            shutil.rmtree(config.parent)
    return serve_config


def run_serve(plan: Plan, work: Path, config: Path | None, results: dict[str, Any], say: Progress) -> None:
    """8 clients against ``notes-portal serve`` at ``plan.serve_chunks`` chunks."""
    if config is None:
        say(f"synthetic index of {plan.serve_chunks:,} chunks (for the server)")
        config = server_load.synthetic_index(work / f"chunks-{plan.serve_chunks}", plan.serve_chunks)
    say(f"notes-portal serve at {plan.serve_chunks:,} chunks: 1 and 8 clients")
    serve = bench_search.serve_load(config, free_port(), plan.requests, plan.repeats)
    results["serve"] = {"chunks": plan.serve_chunks, **serve}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a small run (minutes) that checks the script")
    parser.add_argument("--json", type=Path, help="also write every figure to this JSON file")
    parser.add_argument("--steps", "--only", dest="steps", default=",".join(DEFAULT_STEPS),
                        help=f"comma-separated steps to run (default: {','.join(DEFAULT_STEPS)}; also: scale)")
    parser.add_argument("--notes", help="comma-separated corpus sizes for the builds (overrides the plan's)")
    parser.add_argument("--chunks", help="comma-separated index sizes for the queries (overrides the plan's)")
    parser.add_argument("--runs", type=int, help="no-op and one-note builds per size and kind, and git builds "
                        "per kind (overrides)")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (printed) for a look after")
    args = parser.parse_args()
    steps = set(args.steps.split(","))
    if steps - set(STEPS):
        parser.error(f"unknown steps: {', '.join(sorted(steps - set(STEPS)))}")
    plan = QUICK if args.quick else FULL
    if args.notes:
        plan = replace(plan, notes=tuple(int(n) for n in args.notes.split(",")))
    if args.chunks:
        chunks = tuple(int(n) for n in args.chunks.split(","))
        plan = replace(plan, chunks=chunks, serve_chunks=max(chunks))
    if args.runs:
        plan = replace(plan, runs=args.runs)
    say = Progress()
    started = datetime.datetime.now(datetime.UTC)
    info: dict[str, Any] = {"machine": machine(), "load_start": load_average(),
                            "started": started.isoformat(timespec="seconds"),
                            "plan": {"name": "quick" if args.quick else "full", **asdict(plan)},
                            "steps": [step for step in STEPS if step in steps],
                            "command": " ".join(["python", "bench/run.py", *sys.argv[1:]])}
    say(f"{info['plan']['name']} run")
    results: dict[str, Any] = {}
    work = Path(tempfile.mkdtemp(prefix="np-bench-all-"))
    try:
        prepare_children(work / "pycache")
        info["children"] = check_children()
        say(f"children import {info['children']['builder']}; builds run {info['children']['cli']}")
        if steps & {"builds", "local", "git", "scale"}:
            bench_builds.warm_up(work / "warm-up", load_pools())
        if "builds" in steps:
            run_builds(plan, work, results, say)
        if "local" in steps:
            say(f"{plan.local_notes} notes with the local model: {plan.local_runs} first builds")
            results["local"] = bench_builds.local_builds(work / "local", plan.local_notes, load_pools(),
                                                         plan.local_runs)
        if "render" in steps:
            say(f"kemt-wiki: {plan.render_runs} full renders per cache state")
            results["kemt_render"] = bench_builds.kemt_render(work, plan.render_runs)
        serve_config = run_queries(plan, work, results, say) if "queries" in steps else None
        if "serve" in steps:
            run_serve(plan, work, serve_config, results, say)
        if "git" in steps:
            say(f"3 git sources of {plan.git_repo_notes} notes + {plan.git_notes:,} notes: {plan.runs} no-op builds, "
                f"{plan.runs} after a push")
            results["git"] = bench_builds.git_builds(work / "git", plan.git_notes, plan.git_repo_notes, plan.runs)
        if "queries" in steps and len(results.get("queries", {})) >= 2:
            results["scale_pictures"] = [str(bench_scale.query_picture(results["queries"], ROOT / "docs"))]
        if "scale" in steps:
            pools = load_pools()
            say(f"scale: the yardstick, {plan.runs} times")
            before = bench_floors.yardstick(plan.runs)
            results["scale"] = bench_scale.scale_rows(work, list(plan.notes), pools, plan.runs, say)
            say(f"scale: the yardstick, {plan.runs} times")
            results["scale_yardstick"] = {"start": before, "end": bench_floors.yardstick(plan.runs)}
            results["scale_pictures"] = [*results.get("scale_pictures", ()),
                                         *(str(p) for p in bench_scale.pictures(results["scale"], ROOT / "docs"))]
    finally:
        if args.keep:
            say(f"work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    info["load_end"] = load_average()
    info["progress"] = say.log
    info["seconds"] = round(time.perf_counter() - say.start, 1)
    table = bench_report.rows(results)
    checks = bench_report.targets(results) + bench_report.million_targets(results)
    m = info["machine"]
    print(f"notes-portal benchmark ({info['plan']['name']}), commit {m['commit']}, {info['started']}, "
          f"{info['seconds']:.0f} s")
    print(f"machine: {m['cpus']} CPUs ({m['cpu']}), {m['memory_gb']} GB; Python {m['python']}; SQLite {m['sqlite']} "
          f"({m['sqlite_module']}); sqlite-vec {m['sqlite_vec']}; {m['libraries']}")
    print(f"load average (1, 5, 15 min): {info['load_start']} at the start, {info['load_end']} at the end")
    print(f"steps: {', '.join(info['steps'])}; code: {info.get('children', {}).get('builder', '?')}\n")
    if table:
        print(bench_report.markdown(table))
    if "scale" in results:
        print("\n" + bench_report.scale_markdown(results["scale"], results.get("scale_yardstick")))
        checks += bench_report.scale_targets(results["scale"])
    print("\nTargets (issue 11; the git sources' own; issue 47's that the scale step measures):")
    print(bench_report.verdicts(checks))
    if args.json:
        args.json.write_text(json.dumps({**info, "results": results, "table": table, "targets": checks},
                                        ensure_ascii=False, indent=2, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
