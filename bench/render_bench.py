"""Render speed: full renders of kemt-wiki and of a synthetic corpus, and one-note incremental renders.

Every figure is the median of --runs runs of ``render_site`` over an index built beforehand
(embedding provider ``none``: rendering does not read vectors). Full renders run ``--full`` in a
fresh process each (imports and pool start-up included, as in a real ``build --full``) and
report notes/s = published notes / render_site time, twice: with the site's cache of highlighted
code blocks as the previous render left it, and with that cache deleted before each run (a first
render, or the first after a Pygments upgrade). The incremental figures change one note,
re-index it (``builder.sync.build`` without its render, timed separately) and time
``render_site`` both in-process and as a whole fresh process (what the every-minute cron build
pays).

    python bench/render_bench.py --notes 10000 --runs 5
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KEMT = ROOT.parent / "shared" / "corpora" / "kemt-wiki" / "pages"
WORDS = ("čaj voda mléko vlak hory záloha server docker síť projekt sběrnice poznámka kniha recept trasa "
         "výlet git větev commit python funkce seznam tabulka ľadový príprava učiteľ cvičenie úloha "
         "the quick brown fox backup restic systemd timer kernel disk").split()
TAGS = ("recepty čaj hory vlaky zálohy docker k8s python git sieť škola cvičenie linux projekty "
        "knihy osobní zdraví běh elektronika homelab").split()


def note_path(i: int) -> tuple[str, str]:
    """(source, path) of synthetic note ``i``."""
    return ("work" if i % 5 < 3 else "home"), f"area{i % 8}/topic{i % 23}/note-{i}.md"


def make_corpus(root: Path, notes: int, seed: int = 11) -> None:
    """``notes`` markdown notes in two sources (60/40), 3 folder levels, with front matter, tags,
    H2/H3 sections, lists, relative links and wikilinks to other notes, some code and tables."""
    rng = random.Random(seed)
    for i in range(notes):
        source, rel = note_path(i)
        words = lambda n: " ".join(rng.choice(WORDS) for _ in range(n))  # noqa: E731
        other = next(o for o in iter(lambda: rng.randrange(notes), None) if note_path(o)[0] == source)
        other_rel = note_path(other)[1]
        parts = [f"---\ntitle: Poznámka {i} – {words(2)}\ntags: [{', '.join(rng.sample(TAGS, 2))}]\n---\n",
                 f"# Poznámka {i} – intro\n\n{words(40)}\n\nViz [[note-{rng.randrange(notes)}]] a "
                 f"[související]({os.path.relpath(other_rel, os.path.dirname(rel))}).\n"]
        for s in range(rng.randint(2, 4)):
            parts.append(f"\n## Sekce {s} {words(2)}\n\n{words(50)}\n\n- {words(6)}\n- {words(8)}\n- [ ] {words(4)}\n")
            if rng.random() < 0.4:
                parts.append(f"\n### Detail {s}\n\n{words(30)} **{words(2)}** `{words(1)}`.\n")
        if i % 3 == 0:
            parts.append("\n```python\ndef f(x):\n    return [y * 2 for y in range(x)]  # " + words(4) + "\n```\n")
        if i % 10 == 0:
            parts.append("\n| a | b |\n|---|---|\n| " + words(2) + " | " + words(3) + " |\n")
        path = root / source / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts), encoding="utf-8")


def write_config(work: Path, sources: dict[str, Path]) -> Path:
    """``work/portal.yaml`` with a site, provider ``none`` and the given folder sources."""
    config = work / "portal.yaml"
    lines = ["site:\n  title: Bench\n  output: site\n", "index: data/index.sqlite\n",
             "embedding:\n  provider: none\n", "sources:\n"]
    lines += [f"  {sid}:\n    folder: {folder}\n" for sid, folder in sources.items()]
    config.write_text("".join(lines), encoding="utf-8")
    return config


def index(config: Path) -> float:
    """Index the config's sources in this process without rendering; the seconds it took."""
    from builder.core.config import load_config
    from builder.sync import build
    from builder.core.synclog import SyncLog

    cfg = load_config(config)
    start = time.perf_counter()
    with contextlib.redirect_stderr(io.StringIO()):  # the corpora's broken links: one WARN line each
        build(cfg, log=SyncLog(cfg.log_path, echo_info=False), render=False)
    return time.perf_counter() - start


def render_once(config: Path, full: bool) -> dict[str, float]:
    """One render_site call in this process (used by the child processes)."""
    from builder import indexfile
    from builder.core import index as db
    from builder.core.config import load_config
    from builder.render.site import render_site
    from builder.core.synclog import SyncLog

    cfg = load_config(config)
    conn = db.connect(indexfile.resolve(cfg.index) or cfg.index, vec=False)
    report = render_site(cfg, conn, full=full, log=SyncLog(cfg.log_path, echo_info=False))
    size = sum((cfg.site.output / rel).stat().st_size for rel in report.written)
    return {"seconds": report.seconds, "notes": report.notes_rendered, "written": len(report.written), "bytes": size}


def render_child(config: Path, full: bool) -> tuple[dict[str, float], float]:
    """render_once in a fresh process: (its report, wall time of the whole process)."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--child", str(config)] + (["--full"] if full else []),
                          capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"render failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1]), wall


def full_renders(label: str, config: Path, runs: int) -> None:
    cache = config.parent / "site" / ".render-cache"
    render_child(config, full=True)  # the site and its cache as a previous render leaves them
    for kind in ("cache kept", "no cache"):
        results = []
        for _ in range(runs):
            if kind == "no cache":
                shutil.rmtree(cache, ignore_errors=True)
            results.append(render_child(config, full=True)[0])
        seconds = statistics.median(r["seconds"] for r in results)
        notes = results[0]["notes"]
        each = ", ".join(f"{r['seconds']:.2f}" for r in results)
        print(f"{label}: full render of {notes} notes ({kind}): median {seconds:.2f} s = {notes / seconds:.0f} "
              f"notes/s (runs: {each})")


CHANGES = {  # what one incremental run appends to the note
    "body text only": lambda run, mode: f"\nzměna {run} {mode}\n",
    "a new heading (TOC page too)": lambda run, mode: f"\n## Nová sekce {run} {mode}\n\nText.\n",
    "a new link (pictures of links two hops around)": lambda run, mode: f"\nViz [[note-{run * 7 + len(mode)}]].\n",
}


def incremental(config: Path, target: Path, runs: int, kind: str) -> None:
    with contextlib.redirect_stderr(io.StringIO()):
        render_once(config, full=False)  # settle (a first render: one WARN line per broken link)
    in_process, child_render, child_wall, reindex, written, sizes = [], [], [], [], [], []
    for run in range(runs):
        for mode in ("in-process", "child"):
            text = target.read_text(encoding="utf-8")
            target.write_text(text + CHANGES[kind](run, mode), encoding="utf-8")
            reindex.append(index(config))
            if mode == "in-process":
                report = render_once(config, full=False)
                in_process.append(report["seconds"])
            else:
                report, wall = render_child(config, full=False)
                child_render.append(report["seconds"])
                child_wall.append(wall)
            written.append(report["written"])
            sizes.append(report["bytes"])
    print(f"one note changed, {kind}: render_site median {statistics.median(in_process):.3f} s in-process, "
          f"{statistics.median(child_render):.3f} s in a fresh process "
          f"(whole process {statistics.median(child_wall):.3f} s); files written per run: "
          f"{sorted(set(written))}, {statistics.median(sizes) / 1e6:.2f} MB (median); "
          f"re-index median {statistics.median(reindex):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=10000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--parts", default="kemt,synthetic,incremental",
                        help="which figures: any of kemt, synthetic (full renders), incremental (default: all)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--full", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        print(json.dumps(render_once(Path(args.child), args.full)))
        return
    parts = set(args.parts.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, runs: {args.runs}")
    work = Path(tempfile.mkdtemp(prefix="np-render-bench-"))
    try:
        if "kemt" in parts and KEMT.is_dir():
            kemt = work / "kemt"
            kemt.mkdir()
            config = write_config(kemt, {"kemt": KEMT})
            print(f"kemt-wiki: index built in {index(config):.1f} s")
            full_renders("kemt-wiki", config, args.runs)
        elif "kemt" in parts:
            print(f"kemt-wiki: skipped ({KEMT} is missing)")
        if not parts & {"synthetic", "incremental"}:
            return
        synth = work / "synthetic"
        make_corpus(synth / "notes", args.notes)
        config = write_config(synth, {"work": synth / "notes" / "work", "home": synth / "notes" / "home"})
        print(f"synthetic: {args.notes} notes, index built in {index(config):.1f} s")
        if "synthetic" in parts:
            full_renders("synthetic", config, args.runs)
        if "incremental" in parts:
            source, rel = note_path(70)
            target = synth / "notes" / source / rel
            for kind in CHANGES:
                incremental(config, target, args.runs, kind)
            toc = config.parent / "site" / source / "index.html"
            print(f"the {source} source's table of contents: {toc.stat().st_size / 1e6:.2f} MB")
    finally:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
