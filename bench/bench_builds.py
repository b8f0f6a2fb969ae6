"""Build figures of ``bench/run.py``: the real CLI (``notes-portal build``) in a fresh process each time.

First builds (fresh index and site), no-op builds, one note changed (a body edit and a heading
edit: indexed and re-rendered), a first build with the local model, kemt-wiki's full render
through ``bench/render_bench.py``'s own functions, and the every-minute build with git sources.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_corpus import ADDED_NOTE, Pools, add_beside, edit_body, edit_heading, make_notes, note_path, word_notes
from bench_env import Run, cli, index_mb, run_measured, size_mb, summary

Edit = Callable[[Path, int], None]
EDITS: dict[str, Edit] = {"body": edit_body, "heading": edit_heading}
EDITED_NOTE = 70  # a note of the larger source (``work``)
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
                "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}


@dataclass(frozen=True)
class Corpus:
    """A generated corpus with its config: ``folder/portal.yaml``, ``data/``, ``site/``."""

    folder: Path
    notes: int
    provider: str

    @property
    def config(self) -> Path:
        """The corpus's ``portal.yaml``."""
        return self.folder / "portal.yaml"

    def edited(self) -> Path:
        """The note the one-note builds edit."""
        source, rel = note_path(EDITED_NOTE % self.notes)
        return self.folder / "notes" / source / rel


def make_corpus(folder: Path, notes: int, pools: Pools, provider: str = "none", per_folder: bool = False) -> Corpus:
    """``notes`` generated notes in two folder sources (``per_folder``: a folder per note, as Grav keeps
    them), a config with a site and the given provider."""
    sources = make_notes(folder / "notes", notes, pools, per_folder=per_folder)
    lines = ["site:\n  title: Bench\n  output: site\n", "index: data/index.sqlite\n",
             f"embedding:\n  provider: {provider}\n", "sources:\n"]
    lines += [f"  {sid}:\n    folder: {path}\n" for sid, path in sources.items()]
    (folder / "portal.yaml").write_text("".join(lines), encoding="utf-8")
    return Corpus(folder, notes, provider)


def build(corpus: Corpus, *, bytecode: bool = True) -> Run:
    """One ``notes-portal build`` in a fresh process (wall time, peak RSS, exit code)."""
    return run_measured([*cli(), "build", "--config", str(corpus.config)], bytecode=bytecode)


def _measured(runs: list[Run]) -> dict[str, Any]:
    """Wall-time summary, the largest peak RSS and how many builds ended partial (exit code 3)."""
    return {"seconds": summary([r.seconds for r in runs]), "peak_rss_mb": max(r.peak_rss_mb for r in runs),
            "partial": sum(r.returncode != 0 for r in runs)}


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
    """``runs`` first builds (index, embedding cache and site deleted before each); sizes and counts of
    the last."""
    results = []
    for _ in range(runs):
        _fresh(corpus)
        results.append(build(corpus))
    counts = _counts(corpus)
    if counts["files"] != corpus.notes:
        raise SystemExit(f"{corpus.config}: {counts['files']} notes indexed, {corpus.notes} written")
    data = corpus.folder / "data"
    out = _measured(results)
    return {**out, "runs": [r.seconds for r in results], **counts,
            "notes_per_s": corpus.notes / out["seconds"]["median"],
            "index_mb": index_mb(data / "index.sqlite"), "data_mb": size_mb(data),
            "site_mb": size_mb(corpus.folder / "site"), "notes_mb": size_mb(corpus.folder / "notes")}


def _parse_and_render(paths: list[str]) -> int:
    """markdown-it-py alone over some notes: read, parse and render each (commonmark, tables, raw HTML)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    return sum(len(md.render(Path(path).read_text(encoding="utf-8"))) for path in paths)


def markdown_floor(corpus: Corpus, runs: int, folders: list[Path] | None = None) -> dict[str, Any]:
    """The floor of a first build: the seconds markdown-it-py alone takes to read, parse and render
    every note of ``corpus`` (under ``folders``, by default its ``notes/``) on every core (a process per core,
    batches of 100 notes)."""
    from concurrent.futures import ProcessPoolExecutor

    paths = sorted(str(p) for folder in folders or [corpus.folder / "notes"] for p in folder.rglob("*.md"))
    batches = [paths[i:i + 100] for i in range(0, len(paths), 100)]
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        with ProcessPoolExecutor(os.cpu_count() or 1) as pool:
            rendered = sum(pool.map(_parse_and_render, batches))
        seconds.append(time.perf_counter() - started)
    if len(paths) != corpus.notes or not rendered:
        raise SystemExit(f"{corpus.folder}: {len(paths)} notes read, {corpus.notes} written")
    return {"seconds": summary(seconds), "runs": seconds, "notes": len(paths)}


def noop_builds(corpus: Corpus, runs: int, *, bytecode: bool = True) -> dict[str, Any]:
    """``runs`` builds with nothing changed (after one settling build); without ``bytecode``, every
    module is compiled from source at each start."""
    build(corpus)
    return _measured([build(corpus, bytecode=bytecode) for _ in range(runs)])


def _check_edit(corpus: Corpus, kind: str, run: int, since_ns: int) -> None:
    """Stop the run unless the last build indexed the edited note and rewrote its page (and, for a
    heading edit, a table of contents showing the new heading)."""
    from builder.core import index as db

    target = corpus.edited()
    source, rel = note_path(EDITED_NOTE % corpus.notes)
    conn = db.open_index(corpus.folder / "data" / "index.sqlite", vec=False)
    try:
        row = conn.execute("SELECT sha256, headings FROM files WHERE source_id = ? AND path = ?",
                           (source, rel)).fetchone()
    finally:
        conn.close()
    problems = []
    if row is None or row[0] != hashlib.sha256(target.read_bytes()).hexdigest():
        problems.append("the index holds an older version of the note")
    page = corpus.folder / "site" / source / Path(rel).with_suffix(".html")
    if not page.is_file() or page.stat().st_mtime_ns < since_ns:
        problems.append(f"{page} was not rewritten")
    if kind == "heading":
        heading = f" v{run}</a>"
        if row is None or not any(h["text"].endswith(f" v{run}") for h in json.loads(row[1])):
            problems.append("the index lacks the new heading")
        site = corpus.folder / "site"
        tocs = [p for p in [*(site / source).rglob("index.html"), *(site / "static" / "toc" / source).glob("*.js")]
                if p.stat().st_mtime_ns >= since_ns]  # the page, or the piece of it that shows the note
        if not any(heading in p.read_text("utf-8") for p in tocs):
            problems.append("no table of contents written by the build shows the new heading")
    elif f"(úprava {run})" not in page.read_text("utf-8"):
        problems.append(f"{page} lacks the edit")
    if problems:
        raise SystemExit(f"{kind} edit of {target}: " + "; ".join(problems))


def one_note_builds(corpus: Corpus, runs: int, kind: str) -> dict[str, Any]:
    """``runs`` builds, each after one edit of the same note (``kind``: body or heading); the last one
    checked (the note re-indexed and re-rendered)."""
    target = corpus.edited()
    build(corpus)
    results = []
    since_ns = 0
    for run in range(runs):
        EDITS[kind](target, run)
        since_ns = time.time_ns()
        results.append(build(corpus))
    _check_edit(corpus, kind, runs - 1, since_ns)
    return {**_measured(results), "note": str(target.relative_to(corpus.folder / "notes"))}


EVERY_MINUTE = ("noop", "body", "heading", "added", "removed")  # the builds every_minute_builds measures


def every_minute_builds(corpora: list[Corpus], runs: int,
                        floor: Callable[[Corpus], dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """For each corpus, ``runs`` builds of each kind the every-minute build meets (:data:`EVERY_MINUTE`): nothing
    changed; one note's body edited, then its heading; a note added beside it, then removed again (every page
    that lists the notes or resolves links may change); and, with ``floor``, its figures once a round (their
    medians). The corpora take turns within each kind of each round (in the opposite order the next round), so
    that the machine's drift, which moved builds 19–33 % within 25 minutes, falls on every size alike and the
    slope between sizes stays theirs. Each build but a no-op is checked: the note re-indexed and its page
    rewritten, the added note's page there, then gone."""
    for corpus in corpora:
        build(corpus)
    results: list[dict[str, list[Any]]] = [{kind: [] for kind in EVERY_MINUTE} for _ in corpora]
    floors: list[list[dict[str, Any]]] = [[] for _ in corpora]
    for run in range(runs):
        order = list(enumerate(corpora)) if run % 2 == 0 else list(reversed(list(enumerate(corpora))))
        for kind in EVERY_MINUTE:
            for number, corpus in order:
                results[number][kind].append(_every_minute_build(corpus, run, kind))
        if floor is not None:
            for number, corpus in order:
                floors[number].append(floor(corpus))
    found: list[dict[str, Any]] = [{kind: _measured(builds) for kind, builds in result.items()} for result in results]
    for row, rounds in zip(found, floors, strict=True):
        if rounds:  # each round's runs kept; a figure of a round is the median of the rounds'
            row["floor"] = {key: [one for figures in rounds for one in figures[key]] if isinstance(value, list)
                            else statistics.median(figures[key] for figures in rounds)
                            for key, value in rounds[0].items()}
    return found


def _every_minute_build(corpus: Corpus, run: int, kind: str) -> Run:
    """One build of ``kind`` (:data:`EVERY_MINUTE`) after its change, checked."""
    if kind in EDITS:
        EDITS[kind](corpus.edited(), run)
        since_ns = time.time_ns()
        measured = build(corpus)
        _check_edit(corpus, kind, run, since_ns)
        return measured
    if kind == "noop":
        return build(corpus)
    return _add_or_remove(corpus, run, kind)


def _add_or_remove(corpus: Corpus, run: int, kind: str) -> Run:
    """A build after a note is written beside the edited note (``kind`` added) or deleted again (removed); the page
    checked."""
    target = corpus.edited()
    source, rel = note_path(EDITED_NOTE % corpus.notes)
    page = corpus.folder / "site" / source / Path(rel).with_name(ADDED_NOTE).with_suffix(".html")
    if kind == "added":
        add_beside(target, run)
    else:
        target.with_name(ADDED_NOTE).unlink()
    measured = build(corpus)
    if page.is_file() != (kind == "added"):
        found = "wrote no" if kind == "added" else "left"
        raise SystemExit(f"the build after a note was {kind} {found} {page}")
    return measured


def warm_up(folder: Path, pools: Pools) -> None:
    """A first build, a no-op and a one-note build of a few notes, untimed: every module the builds
    import is compiled to bytecode once, as an installed package's already is."""
    corpus = make_corpus(folder, 30, pools)
    build(corpus)
    build(corpus)
    edit_heading(corpus.edited(), 0)
    build(corpus)
    shutil.rmtree(folder)


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


def _git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY})


def _git_repo(work: Path, name: str, notes: int, seed: int) -> tuple[Path, Path]:
    """A working copy of ``notes`` notes pushed to a bare repository; returns (working copy, bare)."""
    tree, bare = work / "work" / name, work / "served" / f"{name}.git"
    word_notes(tree, notes, seed=seed)
    _git("init", "--quiet", "-b", "main", str(tree))
    _git("add", "--all", cwd=tree)
    _git("commit", "--quiet", "-m", "notes", cwd=tree)
    _git("init", "--quiet", "--bare", "-b", "main", str(bare))
    _git("push", "--quiet", str(bare), "main", cwd=tree)
    return tree, bare


def git_builds(work: Path, notes: int, repo_notes: int, runs: int) -> dict[str, Any]:
    """The every-minute build with three git sources (bare repositories of ``repo_notes`` notes over
    ``file://``) beside a folder of ``notes``, provider none, no site: a first build, ``runs`` no-op
    builds, and ``runs`` builds each after one note was committed and pushed (untimed) to one repository."""
    work.mkdir(parents=True)
    word_notes(work / "notes", notes)
    repos = [_git_repo(work, f"repo{i}", repo_notes, seed=10 + i) for i in range(3)]
    sources = "".join(f"  repo{i}:\n    git: file://{bare}\n" for i, (_, bare) in enumerate(repos))
    config = work / "portal.yaml"
    config.write_text("index: data/index.sqlite\nembedding:\n  provider: none\n"
                      f"sources:\n{sources}  notes:\n    folder: notes\n", encoding="utf-8")
    command = [*cli(), "build", "--config", str(config)]
    first = run_measured(command)
    noop = [run_measured(command) for _ in range(runs)]
    tree, bare = repos[1]
    target = tree / "topic3" / "sub3" / "note3.md"
    pushed = []
    for run in range(runs):
        target.write_text(target.read_text(encoding="utf-8") + f"\nzměna {run}\n", encoding="utf-8")
        _git("commit", "--quiet", "-am", f"change {run}", cwd=tree)
        _git("push", "--quiet", str(bare), "main", cwd=tree)
        pushed.append(run_measured(command))
    return {"notes": notes, "repo_notes": repo_notes, "first_s": first.seconds,
            "noop": _measured(noop), "pushed": _measured(pushed)}
