"""Wall time of the every-minute build with git sources: a no-op, and a build after one pushed note.

Three git sources (bare repositories served over file://) and one folder source
of 1,000 notes, embedding provider none. Each figure is the median of --runs
runs of the real CLI in a fresh process (`notes-portal build`, process start-up
included); the commit and push before each "one note changed" run are not timed.

    python bench/git_noop.py --runs 15
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from noop_build import make_corpus, timed_build  # noqa: E402  (a sibling script, not a package)

IDENTITY = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
            "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **IDENTITY})


def make_repo(work: Path, name: str, notes: int, seed: int) -> tuple[Path, Path]:
    """A working copy with ``notes`` notes pushed to a bare repository; returns (working copy, bare)."""
    tree, bare = work / "work" / name, work / "served" / f"{name}.git"
    make_corpus(tree, notes, seed=seed)
    git("init", "--quiet", "-b", "main", str(tree))
    git("add", "--all", cwd=tree)
    git("commit", "--quiet", "-m", "notes", cwd=tree)
    git("init", "--quiet", "--bare", "-b", "main", str(bare))
    git("push", "--quiet", str(bare), "main", cwd=tree)
    return tree, bare


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1000, help="notes in the folder source")
    parser.add_argument("--git-notes", type=int, default=200, help="notes in each of the three git sources")
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="np-bench-git-"))
    try:
        make_corpus(work / "notes", args.notes)
        repos = [make_repo(work, f"repo{i}", args.git_notes, seed=10 + i) for i in range(3)]
        sources = "".join(f"  repo{i}:\n    git: file://{bare}\n" for i, (_, bare) in enumerate(repos))
        config = work / "portal.yaml"
        config.write_text("index: data/index.sqlite\nembedding:\n  provider: none\n"
                          f"sources:\n{sources}  notes:\n    folder: notes\n", encoding="utf-8")
        first = timed_build(config)
        noop = [timed_build(config) for _ in range(args.runs)]
        tree, bare = repos[1]
        target = tree / "topic3" / "sub3" / "note3.md"
        changed = []
        for run in range(args.runs):
            target.write_text(target.read_text(encoding="utf-8") + f"\nzměna {run}\n", encoding="utf-8")
            git("commit", "--quiet", "-am", f"change {run}", cwd=tree)
            git("push", "--quiet", str(bare), "main", cwd=tree)
            changed.append(timed_build(config))
        bare_python = []
        for _ in range(args.runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], capture_output=True)
            bare_python.append(time.perf_counter() - start)
        print(f"sources: 3 git (file://, {args.git_notes} notes each) + 1 folder ({args.notes} notes); "
              f"runs: {args.runs}; embedding provider: none; {os.cpu_count()} CPUs")
        print(f"first build:                         {first:.3f} s")
        print(f"no-op build (median):                {statistics.median(noop):.3f} s"
              f"  (min {min(noop):.3f}, max {max(noop):.3f})")
        print(f"one note pushed to one repo (median): {statistics.median(changed):.3f} s"
              f"  (min {min(changed):.3f}, max {max(changed):.3f})")
        print(f"bare `python -c pass` (median):      {statistics.median(bare_python):.3f} s")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
