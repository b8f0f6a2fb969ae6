"""Build figures of ``bench/run.py``: the real CLI (``notes-portal build``) in a fresh process each time.

First builds (fresh index and site), no-op builds, one note changed (a body edit and a heading
edit: indexed and re-rendered), a first build with the local model, and kemt-wiki's full render
through ``bench/render_bench.py``'s own functions.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_corpus import Pools, edit_body, edit_heading, make_notes, note_path
from bench_env import cli, index_mb, run_measured, size_mb, summary

Edit = Callable[[Path, int], None]
EDITS: dict[str, Edit] = {"body": edit_body, "heading": edit_heading}
EDITED_NOTE = 70  # a note of the larger source (``work``)


@dataclass(frozen=True)
class Corpus:
    """A generated corpus with its config: ``folder/portal.yaml``, ``data/``, ``site/``."""

    folder: Path
    notes: int
    provider: str

    @property
    def config(self) -> Path:
        return self.folder / "portal.yaml"

    def edited(self) -> Path:
        source, rel = note_path(EDITED_NOTE % self.notes)
        return self.folder / "notes" / source / rel


def make_corpus(folder: Path, notes: int, pools: Pools, provider: str = "none") -> Corpus:
    """``notes`` generated notes in two folder sources, a config with a site and the given provider."""
    sources = make_notes(folder / "notes", notes, pools)
    lines = ["site:\n  title: Bench\n  output: site\n", "index: data/index.sqlite\n",
             f"embedding:\n  provider: {provider}\n", "sources:\n"]
    lines += [f"  {sid}:\n    folder: {path}\n" for sid, path in sources.items()]
    (folder / "portal.yaml").write_text("".join(lines), encoding="utf-8")
    return Corpus(folder, notes, provider)


def build(corpus: Corpus, *extra: str) -> tuple[float, float]:
    """One ``notes-portal build`` in a fresh process: (wall seconds, peak RSS MB)."""
    run = run_measured([*cli(), "build", "--config", str(corpus.config), *extra])
    return run.seconds, run.peak_rss_mb


def _counts(corpus: Corpus) -> dict[str, int]:
    from builder.core import index as db

    conn = db.open_index(corpus.folder / "data" / "index.sqlite", vec=False)
    try:
        chunks = int(conn.execute("SELECT count(*) FROM chunks").fetchone()[0])
        files = int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
        vectors = db.count_vectors(conn)
    finally:
        conn.close()
    return {"files": files, "chunks": chunks, "vectors": vectors}


def _fresh(corpus: Corpus) -> None:
    for name in ("data", "site"):
        shutil.rmtree(corpus.folder / name, ignore_errors=True)


def first_builds(corpus: Corpus, runs: int) -> dict[str, Any]:
    """``runs`` first builds (index and site deleted before each); sizes and counts of the last."""
    seconds, rss = [], []
    for _ in range(runs):
        _fresh(corpus)
        wall, peak = build(corpus)
        seconds.append(wall)
        rss.append(peak)
    counts = _counts(corpus)
    data = corpus.folder / "data"
    return {"seconds": summary(seconds), "runs": seconds, "peak_rss_mb": max(rss), **counts,
            "notes_per_s": corpus.notes / summary(seconds)["median"],
            "index_mb": index_mb(data / "index.sqlite"), "data_mb": size_mb(data),
            "site_mb": size_mb(corpus.folder / "site"), "notes_mb": size_mb(corpus.folder / "notes")}


def noop_builds(corpus: Corpus, runs: int) -> dict[str, Any]:
    """``runs`` builds with nothing changed (after one settling build)."""
    build(corpus)
    results = [build(corpus) for _ in range(runs)]
    return {"seconds": summary([s for s, _ in results]), "peak_rss_mb": max(r for _, r in results)}


def one_note_builds(corpus: Corpus, runs: int, kind: str) -> dict[str, Any]:
    """``runs`` builds, each after one edit of the same note (``kind``: body or heading)."""
    target = corpus.edited()
    build(corpus)
    results = []
    for run in range(runs):
        EDITS[kind](target, run)
        results.append(build(corpus))
    return {"seconds": summary([s for s, _ in results]), "peak_rss_mb": max(r for _, r in results),
            "note": str(target.relative_to(corpus.folder / "notes"))}


def bare_python(runs: int) -> dict[str, Any]:
    """``python -c pass``: the floor of any fresh process."""
    return {"seconds": summary([run_measured([sys.executable, "-c", "pass"]).seconds for _ in range(runs)])}


def local_builds(work: Path, notes: int, pools: Pools, runs: int) -> dict[str, Any]:
    """First builds of ``notes`` notes with the local model, beside the same notes with provider none
    (same run): chunks/s of the whole build, and of the embedding (the difference of the two)."""
    with_model = make_corpus(work / "local", notes, pools, "local")
    without = make_corpus(work / "local-none", notes, pools, "none")
    local, none = first_builds(with_model, runs), first_builds(without, runs)
    embed_s = local["seconds"]["median"] - none["seconds"]["median"]
    return {**local, "notes": notes, "without_model_s": none["seconds"]["median"],
            "chunks_per_s": local["chunks"] / local["seconds"]["median"],
            "embed_chunks_per_s": local["vectors"] / embed_s if embed_s > 0 else float("nan")}


def kemt_render(work: Path, runs: int) -> dict[str, Any]:
    """Full renders of kemt-wiki by ``render_bench.py``'s functions, each in a fresh process; the
    site's cache as the previous render left it, and deleted before each run."""
    import render_bench

    if not render_bench.KEMT.is_dir():
        return {"skipped": f"{render_bench.KEMT} is missing"}
    folder = work / "kemt"
    folder.mkdir()
    config = render_bench.write_config(folder, {"kemt": render_bench.KEMT})
    index_s = render_bench.index(config)
    render_bench.render_child(config, full=True)  # the site and its cache as a previous render leaves them
    out: dict[str, Any] = {"index_s": index_s}
    for kind in ("cache_kept", "no_cache"):
        reports = []
        for _ in range(runs):
            if kind == "no_cache":
                shutil.rmtree(folder / "site" / ".render-cache", ignore_errors=True)
            reports.append(render_bench.render_child(config, full=True)[0])
        seconds = summary([r["seconds"] for r in reports])
        notes = int(reports[0]["notes"])
        out[kind] = {"seconds": seconds, "notes": notes, "notes_per_s": notes / seconds["median"]}
    return out
