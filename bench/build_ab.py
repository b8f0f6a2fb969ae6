"""A/B of one-note (or first) builds between two checkouts, in one sitting: alternate runs, same notes.

Each side gets its own copy of the portal's index and site (made once from the config's, or built
on the first run), so its render state is its own; the notes are shared. Every round edits one
note (``bench_corpus.edit_body`` or ``edit_heading``), then runs ``notes-portal build`` once per
side, each in a fresh process with that checkout first on ``sys.path``, in alternating order (A B,
then B A) so that a machine whose load drifts favours neither. Each run reports its wall time,
the time until its render began (start-up, scan, index), the time ``render_site`` took and its
peak RSS; the medians and their ratio are printed. Both checkouts' bytecode is written first.
On a busy machine the render's own time separates the sides when the whole process's does not.
With ``--first`` a round deletes each side's index and site instead and times a first build: the
time before the render is the index's (scan, parse, chunk, write).

    git worktree add /tmp/before HEAD~1
    python bench/build_ab.py --config /tmp/bc10k/portal.yaml --note notes/work/x.md --edit heading \\
        --rounds 9 /tmp/before .
    python bench/build_ab.py --config /tmp/bc10k/portal.yaml --first --rounds 5 /tmp/before .
"""

from __future__ import annotations

import argparse
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
from bench_corpus import edit_body, edit_heading  # noqa: E402

CHILD = """
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
    """The children's environment: their checkout alone on the import path, bytecode caches used (a
    side without them would compile every module at every start: ~90 ms of a one-note build)."""
    env = {**os.environ, "PYTHONPATH": ""}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def compile_checkout(checkout: Path) -> None:
    """Write the checkout's bytecode caches before the first timed run, as an installed package has them."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(checkout / "builder"), str(checkout / "server")],
                   env=child_env(), stdout=subprocess.DEVNULL, check=True)


def run(checkout: Path, config: Path) -> dict[str, float | None]:
    """One build in a fresh process: its wall time, render time and peak RSS (MB, the build's own
    process: a one-note build forks no workers)."""
    begun = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CHILD, str(checkout), str(config)], capture_output=True, check=False,
                          env=child_env())
    wall = time.perf_counter() - begun
    if done.returncode:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise SystemExit(f"the build with {checkout} failed (exit {done.returncode}): {' '.join(tail)}")
    found = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return {"wall": wall, "index": found["index"], "render": found["render"], "rss": found["rss"]}


def clear(config: Path) -> None:
    """Delete a side's index folder and site (``side_config`` put both inside its folder)."""
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    shutil.rmtree(Path(raw["index"]).parent, ignore_errors=True)
    shutil.rmtree(raw["site"]["output"], ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="a portal whose notes are edited")
    parser.add_argument("--note", type=Path, help="the note to edit (a file of a folder source)")
    parser.add_argument("--edit", choices=("body", "heading"), default="body")
    parser.add_argument("--first", action="store_true", help="time first builds (no note is edited)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("a", type=Path, help="checkout A (the one before)")
    parser.add_argument("b", type=Path, help="checkout B")
    args = parser.parse_args()
    if args.note is None and not args.first:
        parser.error("--note is required unless --first")
    edit = edit_body if args.edit == "body" else edit_heading
    sides = {"A": args.a.resolve(), "B": args.b.resolve()}
    for checkout in sides.values():
        compile_checkout(checkout)
    with tempfile.TemporaryDirectory(prefix="build-ab-") as tmp:
        configs = {name: side_config(args.config.resolve(), Path(tmp) / name) for name in sides}
        if not args.first:
            for name in sides:  # a render-code change re-renders everything once: not a round
                run(sides[name], configs[name])
        results: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
        for round_no in range(args.rounds):
            if not args.first:
                edit(args.note, 1000 + round_no)
            for name in ("A", "B") if round_no % 2 == 0 else ("B", "A"):
                if args.first:
                    clear(configs[name])
                results[name].append(run(sides[name], configs[name]))
    what = "first builds" if args.first else f"{args.edit} edit of {args.note}"
    print(f"{what}, {args.rounds} rounds (medians; the runs in order)")
    for measure, unit, scale in (("wall", "ms", 1000), ("index", "ms", 1000), ("render", "ms", 1000),
                                 ("rss", "MB", 1)):
        if any(r[measure] is None for name in sides for r in results[name]):
            continue  # a build that rendered nothing has no "until the render"
        medians = {name: statistics.median(r[measure] for r in results[name]) * scale for name in sides}
        for name in sides:
            runs = " ".join(f"{r[measure] * scale:.0f}" for r in results[name])
            print(f"  {measure:6} {name} {medians[name]:7.0f} {unit}   ({runs})")
        print(f"  {measure:6} B/A {medians['B'] / medians['A']:.2f}")


if __name__ == "__main__":
    main()
