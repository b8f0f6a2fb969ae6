"""The commands behind ``notes-portal``: each composes the write path (``builder``) and the read path
(``server``) it needs, importing them inside the command so the every-minute no-op build loads only
what it needs. The read commands get their data from :mod:`server.read_commands` (the same data the MCP
tools return) and print it as text or, with ``--json``, as it is."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.core.config import Config, load_config
from builder.core.errors import ConfigError
from builder.core.terminal import BOLD, NORMAL

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.job_runner import JobRunner
    from builder.watch import Watch

EXIT_UNAVAILABLE = 3  # `ask`: the answer provider failed (the JSON or text says so, with the hits)
DEFAULT_CONFIG = "portal.yaml"
PLAIN_MARKS = (("⟦", "⟧"), ("«", "»"), ("⟪", "⟫"), ("[[", "]]"))  # a match's ends in plain text
NO_DICTIONARY = ("English questions are searched as typed, not also in Czech (no dictionary: apt-get install "
                 "dict-freedict-eng-ces, or search.dictionary in the config)")
CONFIG_HINT = "point at one with --config FILE or $NOTES_PORTAL_CONFIG, or write one: notes-portal init FOLDER"


def config_of(args: argparse.Namespace) -> Config:
    """The config named by ``--config``, else ``$NOTES_PORTAL_CONFIG``, else ``./portal.yaml``;
    a missing file says how to name another one."""
    path = Path(args.config or os.environ.get("NOTES_PORTAL_CONFIG") or DEFAULT_CONFIG).expanduser()
    if not path.exists():
        origin = (" (from --config)" if args.config else " (from $NOTES_PORTAL_CONFIG)"
                  if os.environ.get("NOTES_PORTAL_CONFIG") else "")
        raise ConfigError(f"{path}: config file not found{origin}; {CONFIG_HINT}")
    return load_config(path)


def print_json(data: dict[str, Any]) -> None:
    """``--json``'s output: indented for a person at a terminal, one line for a program reading a pipe
    (Python's encoder indents in pure Python, ~10× slower: a whole collection's ``toc`` is megabytes)."""
    print(json.dumps(data, ensure_ascii=False, indent=2 if sys.stdout.isatty() else None))


def cmd_init(args: argparse.Namespace) -> int:
    """Write a commented portal.yaml for a folder or a git repository (never over a file)."""
    from builder.cli import portal_yaml

    path = Path(args.config or os.environ.get("NOTES_PORTAL_CONFIG") or DEFAULT_CONFIG).expanduser()
    written = portal_yaml.write(args.source, path)
    flag = f"--config {args.config}" if args.config and Path(args.config) != Path(DEFAULT_CONFIG) else ""
    print(portal_yaml.report(written, args.source, flag))
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    from builder.sync import build

    config = config_of(args)
    if args.source:
        config.source(args.source)
    report = None
    if args.progress:
        from builder.childbuild import report_to_parent

        report = report_to_parent()
    # pages and words now; the vectors in a process of its own, so a first build of thousands of notes
    # is browsable in minutes, not in the hours the model needs for them
    return build(config, full=args.full, source_id=args.source, wait=args.wait, report=report, vectors=args.vectors)


def cmd_embed(args: argparse.Namespace) -> int:
    from builder.embed_run import backfill
    from builder.core.synclog import SyncLog

    config = config_of(args)
    if args.background:  # started by a build (builder/embed_run.start_backfill): after it, niced, silent
        os.nice(10)
        return backfill(config, log=SyncLog(config.log_path, echo_info=False))
    return backfill(config, budget_s=args.budget, wait=True)


def _open_index(config: Config) -> Connection:
    from builder.core import index as db

    return db.open_index(config.index)


def cmd_search(args: argparse.Namespace) -> int:
    from server import read_commands
    from server.search import WEAK, provenance

    result = read_commands.search_result(read_commands.for_command(config_of(args)), args.query, limit=args.limit,
                                         source=args.source, tag=args.tag, mode=args.mode, correct=not args.as_typed)
    if args.json:
        print_json(read_commands.search_result_data(result))
        return 0
    for note in result.notes:
        print(f"note: {note}")
    if result.corrected:
        print("note: --as-typed searches the words as you typed them")
    if not result.hits:
        print("(no matches)")
    elif result.weak:
        print(WEAK)
    for rank, hit in enumerate(result.hits, start=1):
        anchor = f"#{hit.anchor}" if hit.anchor else ""
        print(f"{rank:2}. {hit.breadcrumb}  [{provenance(hit)}]")
        print(f"    {hit.source}:{hit.path}:{hit.line_start}{anchor}")
        print(f"    {_plain_snippet(hit.snippet)}")
        for other in hit.more:
            print(f"      also {other.breadcrumb}  {hit.source}:{hit.path}:{other.line_start}#{other.anchor}")
        for copy in hit.copies:
            print(f"      the same text in {copy.source}:{copy.path}")
    return 0


def cmd_ask(args: argparse.Namespace) -> int:
    from server import read_commands

    data = read_commands.answer_data(read_commands.for_command(config_of(args)), args.question, source=args.source)
    if args.json:
        print_json(data)
    else:
        print(answer_text(data))
    # as a build with a source down: the provider failed, what could be done was (the search's hits)
    return EXIT_UNAVAILABLE if data["status"] == "unavailable" else 0


def answer_text(data: dict[str, Any]) -> str:
    """``ask``'s text: the answer, each sentence's evidence under it (the passage and the words of it the
    check matched), the sources; or why there is none (the problems, the search's hits)."""
    from server.answer import STATUS_TEXT

    lines = [data["answer"]] if data["status"] == "answered" else [STATUS_TEXT[data["status"]]]
    sources = {source["n"]: source for source in data["sources"]}
    for citation in data["citations"]:
        start, end = citation["span"]
        said = " ".join(sources[citation["n"]]["text"][start:end].split())
        lines.append(f"  sentence {citation['sentence']} [{citation['n']}]: «{said}»")
    cited = {c["n"] for c in data["citations"]}
    for source in data["sources"]:
        if source["n"] in cited:
            lines.append(f"[{source['n']}] {source['heading']}  {source['url']}")
    lines += [f"  - {p['message']}" for p in data["problems"]]
    if data["status"] == "unavailable" and data.get("search", {}).get("hits"):
        lines.append("Search results:")
        lines += [f"  {hit['breadcrumb']}  {hit['url']}" for hit in data["search"]["hits"]]
    return "\n".join(lines)


def _plain_snippet(snippet: str) -> str:
    """A snippet's marked words in bold on a terminal (unless $NO_COLOR is set), elsewhere between the
    first pair of markers its text does not hold (a literal ``[Unit]`` must not look like a match)."""
    import html

    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        marks = (BOLD, NORMAL)
    else:
        plain = html.unescape(snippet.replace("<mark>", "").replace("</mark>", ""))
        marks = next((pair for pair in PLAIN_MARKS if pair[0] not in plain and pair[1] not in plain), PLAIN_MARKS[-1])
    return html.unescape(snippet.replace("<mark>", marks[0]).replace("</mark>", marks[1]))


def cmd_toc(args: argparse.Namespace) -> int:
    from server import read_commands

    data = read_commands.toc_data(read_commands.for_command(config_of(args)), source=args.source, tag=args.tag,
                                  folder=args.folder)
    if args.json:
        print_json(data)
        return 0
    current_source, current_dir = None, None
    for note in _as_the_toc_page_shows(data["notes"]):
        if note["source"] != current_source:
            current_source, current_dir = note["source"], None
            print(f"== {current_source} ==")
        directory, _, name = note["path"].rpartition("/")
        if directory != current_dir:
            current_dir = directory
            print(f"{directory or '.'}/")
        print(f"  {name} — {note['title']}" + (f"  [{', '.join(note['tags'])}]" if note["tags"] else ""))
        for heading in note["headings"]:
            print(f"    {'  ' * (heading['level'] - 1)}{'#' * heading['level']} {heading['text']}")
    if not data["notes"]:
        print("(no notes)")
    return 0


def _as_the_toc_page_shows(notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One tree per source: a folder's own notes, then its folders, each the same way (depth first)."""
    order = {source: i for i, source in enumerate(dict.fromkeys(note["source"] for note in notes))}

    def place(note: dict[str, Any]) -> tuple[int, tuple[str, ...], str]:
        folder, _, name = note["path"].rpartition("/")
        return order[note["source"]], tuple(folder.split("/")) if folder else (), name

    return sorted(notes, key=place)


def cmd_grep(args: argparse.Namespace) -> int:
    from server import read_commands

    if args.max_results is not None and args.max_results < 1:
        raise ConfigError(f"--max-results must be at least 1, got {args.max_results}")
    data = read_commands.grep_data(read_commands.for_command(config_of(args)), args.pattern, source=args.source,
                                   ignore_case=args.ignore_case, max_results=args.max_results)
    if args.json:
        print_json(data)
    else:
        for warning in data["warnings"]:
            print(f"notes-portal: {warning}", file=sys.stderr)
        for m in data["matches"]:
            print(f"{m['source']}:{m['path']}:{m['line']}:{m['text']}")
        if data["truncated"]:
            print(f"notes-portal: stopped after {args.max_results} matching lines (--max-results)", file=sys.stderr)
    return 0 if data["matches"] else 1


def cmd_read(args: argparse.Namespace) -> int:
    from server import read_commands

    data = read_commands.read_data(read_commands.for_command(config_of(args)), args.source, args.path,
                                   section=args.section, start_line=args.from_line, max_lines=args.max_lines)
    if args.json:
        print_json(data)
    elif data["text"]:
        print(data["text"])
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from server import read_commands
    from server.status import format_status

    data = read_commands.status_data(read_commands.for_command(config_of(args)))
    if args.json:
        print_json(data)
    else:
        print(format_status(data))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from functools import cache

    from builder.cli.evaluate import (
        EVAL_MODES,
        HitRef,
        Query,
        eval_config,
        evaluate,
        folds,
        format_report,
        load_queries,
    )
    from server.read_commands import envelope, query_embedder
    from builder.core import index as db
    from builder.core.errors import ReindexNeeded
    from builder.core.errors import EXIT_PARTIAL
    from builder.sync import build
    from builder.core.synclog import SyncLog
    from server.search import embedded_by, made_before, search

    config = config_of(args)
    queries_path = Path(args.queries)
    queries = load_queries(queries_path)
    fold = folds(queries)  # over the whole set, so a fold is the same whichever is scored
    if args.fold:
        queries = [q for q in queries if fold[q.id] == args.fold]
    beside = queries_path.resolve() if queries_path.is_dir() else queries_path.resolve().parent
    corpora = Path(args.corpora) if args.corpora else beside.parent / "corpora"
    evaluated = eval_config(config, corpora, sorted({q.corpus for q in queries}))
    log = SyncLog(evaluated.log_path, echo_info=False)
    try:
        code = build(evaluated, log=log, render=False, wait=True)
    except ReindexNeeded:  # the eval's own index, made with another model: make it again
        code = build(evaluated, log=log, render=False, wait=True, full=True)
    if code not in (0, EXIT_PARTIAL):
        return code
    conn = _open_index(evaluated)
    embedder, error = query_embedder(evaluated)
    modes = [m for m in EVAL_MODES if m in args.modes.split(",")] if args.modes else list(EVAL_MODES)

    vector = embedded_by(embedder) if embedder is not None else made_before(None, error)

    def ask(query: Query, mode: str) -> tuple[list[HitRef], bool | None]:
        result = search(conn, evaluated, query.text, limit=10, mode=mode, vector=vector,
                        source=query.corpus if args.per_corpus else None)
        hits = [HitRef(h.source, h.path, h.breadcrumb, h.line_start, h.line_end,
                       tuple(HitRef(c.source, c.path, c.breadcrumb, c.line_start, c.line_end)
                             for c in h.copies))
                for h in result.hits]
        return hits, result.weak

    @cache
    def headings(source: str, path: str) -> tuple[tuple[str, int], ...]:
        return tuple((h["text"], h["line"]) for h in db.note_headings(conn, source, path))

    report = evaluate(queries, ask, headings, modes, fold)
    if args.json:
        print(json.dumps(envelope("eval", report.to_json()), ensure_ascii=False, indent=1))
    else:
        print(format_report(report.summary()))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from builder.childbuild import build_in_child
    from builder.job_runner import JobRunner
    from server.app import create_app

    config = config_of(args)
    # the webhooks and the sync API queue jobs; this runs them, each build in a child process
    runner = JobRunner(config, build_function=build_in_child)
    watch = _watch(config, runner) if args.watch else None
    where = f"http://{args.host}:{args.port}/"
    print(f"notes-portal: serving {config.site.output} and search on {where}"
          + ("" if args.no_mcp else f" (MCP at {where}mcp)"), file=sys.stderr)
    if watch is not None:
        print(f"notes-portal: {watch.describe()}", file=sys.stderr)
    if config.dictionary is None:  # an optional package: said once, here (status says it too)
        print(f"notes-portal: {NO_DICTIONARY}", file=sys.stderr)
    runner.start()
    try:
        uvicorn.run(create_app(config, mcp=not args.no_mcp, host=args.host, jobs=runner), host=args.host,
                    port=args.port, log_level="warning")
    finally:
        if watch is not None:
            watch.stop()
        runner.stop()
    return 0


def _watch(config: Config, runner: JobRunner) -> Watch:
    """The watcher of ``config``'s sources, feeding ``runner``, started."""
    from builder.watch import Watch

    watch = Watch(config, runner.enqueue, build_function=runner.build_function)
    watch.start()
    return watch


def cmd_watch(args: argparse.Namespace) -> int:
    import signal

    from builder.childbuild import build_in_child
    from builder.job_runner import JobRunner

    config = config_of(args)
    runner = JobRunner(config, build_function=build_in_child)
    runner.start()
    watch = _watch(config, runner)
    signal.signal(signal.SIGTERM, lambda *_: watch.stop(timeout=0))
    print(f"notes-portal: {watch.describe()} (Ctrl-C stops)", file=sys.stderr)
    try:
        watch.wait()
    finally:
        watch.stop()
        runner.stop()
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    from server.mcp import run_stdio

    run_stdio(config_of(args))
    return 0
