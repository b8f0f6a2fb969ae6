"""How the cost grows with the collection (issue 47): builds, what a reader downloads, and the read commands, at
several sizes of one generated collection, their floors, and the pictures of the slopes.

    python bench/run.py --steps scale --notes 1000,10000,100000 --runs 3

Each size is a corpus of ``bench_corpus``'s generated notes (real Czech, Slovak and English text of the shared
corpora, links, tags, code, tables; half of the notes in flat folders, half in a folder each, as Grav keeps
pages) with provider ``none``: a first build beside markdown-it-py alone over the same notes, a ``--full`` build,
and at the end, the sizes in turns round by round, the every-minute builds (no-op, a body edit, a heading edit, a
note added, then removed) beside the stat floor (``bench_floors``); each build the real CLI in a fresh process
with its peak RSS; the index's and the site's sizes; the largest page and file of the site and what a note page
makes the browser download (the page and the scripts, styles and data it loads, the diagram library aside);
``toc --json`` and ``grep`` over the whole collection. ``pictures`` draws one PNG per family (builds, memory,
weight) with notes on a log axis, from the same figures (matplotlib, the ``dev`` extra).
"""

from __future__ import annotations

import re
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import bench_builds
import bench_floors
from bench_builds import EDITED_NOTE
from bench_corpus import Pools, make_notes, note_path
from bench_env import cli, run_measured, size_mb


REPEATED_UP_TO = 10_000  # notes: up to this size the first and --full builds are repeated (``runs``), and medians kept


def make_mixed(folder: Path, notes: int, pools: Pools) -> bench_builds.Corpus:
    """``notes`` notes: the first half in flat folders (two sources), the second in a folder each (two more)."""
    flat = make_notes(folder / "notes", notes // 2, pools)
    grav = make_notes(folder / "grav", notes - notes // 2, pools, seed=20260102, per_folder=True)
    lines = ["site:\n  title: Bench\n  output: site\n", "index: data/index.sqlite\n", "embedding:\n  provider: none\n",
             "sources:\n"]
    lines += [f"  {sid}:\n    folder: {path}\n" for sid, path in flat.items()]
    lines += [f"  {sid}-g:\n    folder: {path}\n" for sid, path in grav.items()]
    (folder / "portal.yaml").write_text("".join(lines), encoding="utf-8")
    return bench_builds.Corpus(folder, notes, "none")


def corpus_folders(corpus: bench_builds.Corpus) -> list[Path]:
    """The note folders of ``corpus`` (its config's sources)."""
    from builder.core.config import load_config

    config = load_config(corpus.config)
    return [config.source_root(source) for source in config.sources]


_LOADED = re.compile(r"""<(?:script|link)\b[^>]*?(?:src|href)="([^"]+\.(?:js|css|json))(?:\?[^"]*)?\"""")


def page_weight(site: Path, page: Path, source: str, note_path: str) -> dict[str, Any]:
    """What ``page`` (the page of ``note_path`` in ``source``) makes the browser download: its HTML, each
    script, style and data file it names (the diagram library aside: it loads only on a page that draws one),
    and the parts of its source's navigation tree that nav.js loads to show the note in its folder."""
    html = page.read_text("utf-8")
    files = {page}
    for ref in _LOADED.findall(html):
        if "mermaid" in ref or ref.startswith(("http:", "https:", "//")):
            continue
        target = (page.parent / ref).resolve()
        if target.is_file() and site.resolve() in target.parents:
            files.add(target)
    files |= tree_parts_loaded(site, source, note_path)
    return {"kb": round(sum(f.stat().st_size for f in files) / 1024, 1), "files": len(files)}


def tree_parts_loaded(site: Path, source: str, note_path: str) -> set[Path]:
    """The tree's root part, the part of each folder above the note that is a part of its own, and its
    folder's continuations up to the one that lists the note (builder/render/tree.py)."""
    from builder.render.tree import part_id

    base = site / "static" / "tree"
    found = {base / f"{source}.js"}
    folders = note_path.split("/")[:-1]
    for depth in range(1, len(folders) + 1):
        part = base / source / f"{part_id('/'.join(folders[:depth]))}.js"
        if part.is_file():
            found.add(part)
    own = part_id("/".join(folders))
    name = Path(note_path).with_suffix(".html").name
    for number in range(2, 10_000):
        if any(name in p.read_text("utf-8") for p in found if p.is_file()):
            break
        more = base / source / f"{own}-{number}.js"
        if not more.is_file():
            break
        found.add(more)
    return {p for p in found if p.is_file()}


def site_weights(site: Path, source: str, note_path: str) -> dict[str, Any]:
    """The largest file the site serves, the tree scripts, the tables of contents, and a note page's weight."""
    files = [p for p in site.rglob("*") if p.is_file() and not p.name.startswith(".") and "mermaid" not in p.name
             and ".render-state" not in p.parts and not any(part.startswith(".") for part in p.relative_to(site).parts)]
    largest = max(files, key=lambda p: p.stat().st_size)
    trees = [p for p in files if "tree" in p.relative_to(site).parts]
    tocs = [p for p in files if p.name == "index.html" and len(p.relative_to(site).parts) == 2]
    return {"largest_file": str(largest.relative_to(site)), "largest_file_kb": round(largest.stat().st_size / 1024, 1),
            "tree_kb_max": round(max((p.stat().st_size for p in trees), default=0) / 1024, 1),
            "toc_kb_max": round(max((p.stat().st_size for p in tocs), default=0) / 1024, 1),
            "note_page": page_weight(site, site / source / Path(note_path).with_suffix(".html"), source, note_path)}


def read_commands(corpus: bench_builds.Corpus, runs: int) -> dict[str, Any]:
    """``toc --json`` and ``grep`` over the whole collection: median seconds (the real CLI), after one run that
    is not timed (the build before leaves other files in the page cache: the notes are read from disk once)."""
    found: dict[str, Any] = {}
    for name, args in (("toc", ["toc", "--json"]), ("grep", ["grep", "kontajner", "--max-results", "100000"])):
        run_measured([*cli(), *args, "--config", str(corpus.config)], check=False)
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            run_measured([*cli(), *args, "--config", str(corpus.config)], check=False)
            times.append(time.perf_counter() - started)
        found[name] = sorted(times)[len(times) // 2]
    return found


def scale_rows(work: Path, sizes: list[int], pools: Pools, runs: int, say: Any) -> dict[str, dict[str, Any]]:
    """Every figure of every size (notes → its row): each size's :func:`scale_row`, then the every-minute builds
    and the stat floor, the sizes in turns (``bench_builds.every_minute_builds``): their slopes are the issue's
    verdicts."""
    rows: dict[str, dict[str, Any]] = {}
    corpora = []
    try:
        for notes in sizes:
            row, corpus = scale_row(work, notes, pools, runs, say)
            rows[str(notes)] = row
            corpora.append(corpus)
        say(f"scale: {runs} rounds of the every-minute builds ({', '.join(bench_builds.EVERY_MINUTE)}) and the stat "
            "floor, the sizes in turns")

        def floor(corpus: bench_builds.Corpus) -> dict[str, Any]:
            return bench_floors.stat_floor(corpus_folders(corpus), corpus.folder / "site", 2)

        for corpus, found in zip(corpora, bench_builds.every_minute_builds(corpora, runs, floor), strict=True):
            rows[str(corpus.notes)].update(found)
    finally:
        for corpus in corpora:
            shutil.rmtree(corpus.folder, ignore_errors=True)
    return rows


def scale_row(work: Path, notes: int, pools: Pools, runs: int, say: Any) -> tuple[dict[str, Any], bench_builds.Corpus]:
    """Every figure of one size but the every-minute builds (:func:`scale_rows`), and its corpus (kept for those)."""
    say(f"scale: {notes:,} notes: writing them")
    corpus = make_mixed(work / f"scale-{notes}", notes, pools)
    # the small sizes' builds last seconds, as long as the machine's swings: a slope is judged on their medians
    whole_runs = runs if notes <= REPEATED_UP_TO else 1
    say(f"scale: {notes:,} notes: {whole_runs} first build(s)")
    row: dict[str, Any] = {"first": bench_builds.first_builds(corpus, whole_runs)}
    say(f"scale: {notes:,} notes: markdown-it-py alone, {whole_runs} time(s) (the first build's floor)")
    row["markdown_floor"] = bench_builds.markdown_floor(corpus, whole_runs, corpus_folders(corpus))
    say(f"scale: {notes:,} notes: {whole_runs} --full build(s)")
    fulls = [run_measured([*cli(), "build", "--full", "--config", str(corpus.config)]) for _ in range(whole_runs)]
    row["full"] = {"seconds": statistics.median(r.seconds for r in fulls),
                   "peak_rss_mb": max(r.peak_rss_mb for r in fulls), "runs": [r.seconds for r in fulls]}
    site = corpus.folder / "site"
    row["weights"] = site_weights(site, *note_path(EDITED_NOTE % notes))
    grav_source, grav_rel = note_path(EDITED_NOTE % notes, per_folder=True)
    grav_page = site / f"{grav_source}-g" / Path(grav_rel).with_suffix(".html")
    row["weights"]["grav_note_page"] = page_weight(site, grav_page, f"{grav_source}-g", grav_rel)
    row["site_mb"] = size_mb(site)
    say(f"scale: {notes:,} notes: toc and grep")
    row["read"] = read_commands(corpus, runs)
    return row, corpus


def pictures(rows: dict[str, dict[str, Any]], out: Path) -> list[Path]:
    """One PNG per family — builds (seconds), memory (peak RSS), weight (KB a reader downloads) — notes on a
    log axis, each line a figure of :func:`scale_rows`."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(int(n) for n in rows)
    get = {n: rows[str(n)] for n in sizes}
    families = {
        "scale-builds.png": ("seconds", {
            "first build": lambda r: r["first"]["seconds"]["median"],
            "--full": lambda r: r["full"]["seconds"],
            "no-op": lambda r: r["noop"]["seconds"]["median"],
            "body edit": lambda r: r["body"]["seconds"]["median"],
            "heading edit": lambda r: r["heading"]["seconds"]["median"],
            "a note added": lambda r: r["added"]["seconds"]["median"],
            "a note removed": lambda r: r["removed"]["seconds"]["median"],
            "toc --json": lambda r: r["read"]["toc"],
            "grep": lambda r: r["read"]["grep"],
            "floor: markdown-it-py alone": lambda r: r["markdown_floor"]["seconds"]["median"],
            "floor: stat every note and site folder": lambda r: r["floor"]["with_site_s"]}),
        "scale-memory.png": ("peak RSS, MB", {
            "first build": lambda r: r["first"]["peak_rss_mb"],
            "--full": lambda r: r["full"]["peak_rss_mb"],
            "no-op": lambda r: r["noop"]["peak_rss_mb"],
            "body edit": lambda r: r["body"]["peak_rss_mb"],
            "a note added": lambda r: r["added"]["peak_rss_mb"]}),
        "scale-weight.png": ("KB", {
            "a note page and what it loads": lambda r: max(r["weights"]["note_page"]["kb"],
                                                           r["weights"]["grav_note_page"]["kb"]),
            "largest tree script": lambda r: r["weights"]["tree_kb_max"],
            "largest table of contents": lambda r: r["weights"]["toc_kb_max"],
            "largest file of the site": lambda r: r["weights"]["largest_file_kb"]}),
    }
    written = []
    for name, (unit, lines) in families.items():
        fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
        for label, value in lines.items():
            floor = label.startswith("floor")  # black and dashed: the default cycle has ten colours
            ax.plot(sizes, [value(get[n]) for n in sizes], label=label, linestyle="--" if floor else "-",
                    marker=("s" if "stat" in label else "^") if floor else "o", color="black" if floor else None)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("notes")
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = out / name
        fig.savefig(path)
        plt.close(fig)
        written.append(path)
    return written


def query_picture(queries: dict[str, dict[str, Any]], out: Path) -> Path:
    """The queries' family: p95 in ms of each mode at each index size (``bench/run.py --steps queries``'s
    figures), sections on a log axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted(int(n) for n in queries)
    lines = {"bm25 (every query set)": "bm25 all", "hybrid, the server's path, with the query embedding":
             "server hybrid+embed", "hybrid, the server's path, precomputed vector": "server hybrid",
             "query embedding alone": "embed", "one plain FTS5 MATCH (the engine alone)": "plain match",
             "vec0 scan": "vec0"}
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    for label, row in lines.items():
        points = [(n, queries[str(n)]["rows"][row]["p95"]) for n in sizes if row in queries[str(n)]["rows"]]
        if points:
            ax.plot([n for n, _ in points], [v for _, v in points], marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("sections (chunks)")
    ax.set_ylabel("p95, ms (one client)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "scale-queries.png"
    fig.savefig(path)
    plt.close(fig)
    return path
