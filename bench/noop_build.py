"""Wall time of the every-minute build: a no-op over N notes, and a build after one note changed.

Each figure is the median of --runs runs of the real CLI in a fresh process
(`notes-portal build`, process start-up included), measured in one session.

    python bench/noop_build.py --notes 1000 --runs 15
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("čaj voda mléko vlak hory záloha server docker síť projekt sběrnice poznámka kniha recept "
         "trasa výlet git větev commit python funkce seznam tabulka").split()


def make_corpus(root: Path, notes: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(notes):
        path = root / f"topic{i % 20}" / f"sub{i % 7}" / f"note{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        sections = "\n\n".join(f"## Sekce {s}\n\n" + " ".join(rng.choice(WORDS) for _ in range(60))
                               for s in range(3))
        path.write_text(f"---\ntitle: Poznámka {i}\ntags: [t{i % 9}]\n---\n# Poznámka {i}\n\n{sections}\n",
                        encoding="utf-8")


def timed_build(config: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(["notes-portal", "build", "--config", str(config)], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"build failed: {proc.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="np-bench-"))
    try:
        make_corpus(work / "notes", args.notes)
        config = work / "portal.yaml"
        config.write_text("index: data/index.sqlite\nembedding:\n  provider: none\n"
                          "sources:\n  notes:\n    folder: notes\n", encoding="utf-8")
        first = timed_build(config)
        noop = [timed_build(config) for _ in range(args.runs)]
        changed = []
        target = work / "notes" / "topic3" / "sub3" / "note3.md"
        for run in range(args.runs):
            target.write_text(target.read_text(encoding="utf-8") + f"\nzměna {run}\n", encoding="utf-8")
            changed.append(timed_build(config))
        bare = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], capture_output=True)
            bare.append(time.perf_counter() - start)
        print(f"notes: {args.notes}, runs: {args.runs}, embedding provider: none")
        print(f"first build:              {first:.3f} s")
        print(f"no-op build (median):     {statistics.median(noop):.3f} s  (min {min(noop):.3f}, max {max(noop):.3f})")
        print(f"one note changed (median): {statistics.median(changed):.3f} s")
        print(f"bare `python -c pass` (median): {statistics.median(bare):.3f} s"
              f"  → no-op / bare = {statistics.median(noop) / statistics.median(bare):.1f}x")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
