"""The commands behind ``notes-portal``: each composes the write path (``builder``) and the read path
(``server``) it needs, importing them inside the command so the every-minute no-op build loads only
what it needs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from builder.core.config import Config, load_config

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.core.embedding import Embedder

DEFAULT_CONFIG = "portal.yaml"


def config_of(args: argparse.Namespace) -> Config:
    return load_config(args.config or os.environ.get("NOTES_PORTAL_CONFIG") or DEFAULT_CONFIG)


def cmd_build(args: argparse.Namespace) -> int:
    from builder.sync import build

    config = config_of(args)
    if args.source:
        config.source(args.source)
    return build(config, full=args.full, source_id=args.source, wait=args.wait)


def _open_index(config: Config) -> Connection:
    from builder.core import index as db

    return db.open_index(config.index)


def _query_embedder(config: Config) -> tuple[Embedder | None, str | None]:
    from builder.core.embedding import make_embedder

    if not config.embedding.enabled:
        return None, None
    try:
        return make_embedder(config.embedding, for_queries=True), None
    except Exception as exc:  # a broken local install degrades to FTS-only, loudly
        return None, f"{type(exc).__name__}: {exc}"


def cmd_search(args: argparse.Namespace) -> int:
    from server.search import WEAK, provenance, search

    config = config_of(args)
    if args.source:
        config.source(args.source)
    conn = _open_index(config)
    embedder, error = _query_embedder(config) if args.mode != "bm25" else (None, None)
    result = search(conn, config, args.query, limit=args.limit, source=args.source, tag=args.tag,
                    mode=args.mode, embedder=embedder, embedder_error=error)
    if args.json:
        print(json.dumps(result.to_json(), ensure_ascii=False, indent=2))
        return 0
    for note in result.notes:
        print(f"note: {note}")
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
            print(f"      also {other['breadcrumb']}  {hit.source}:{hit.path}:{other['line_start']}#{other['anchor']}")
        for copy in hit.copies:
            print(f"      the same text in {copy['source']}:{copy['path']}")
    return 0


def _plain_snippet(snippet: str) -> str:
    import html

    bold = sys.stdout.isatty()
    text = snippet.replace("<mark>", "\x1b[1m" if bold else "[").replace("</mark>", "\x1b[0m" if bold else "]")
    return html.unescape(text)


def cmd_toc(args: argparse.Namespace) -> int:
    from builder.core import index as db

    config = config_of(args)
    if args.source:
        config.source(args.source)
    conn = _open_index(config)
    rows = db.notes_for_toc(conn, args.source, args.tag)
    current_source, current_dir = None, None
    for row in rows:
        if row["source_id"] != current_source:
            current_source, current_dir = row["source_id"], None
            print(f"== {current_source} ==")
        directory = row["path"].rpartition("/")[0]
        if directory != current_dir:
            current_dir = directory
            print(f"{directory or '.'}/")
        tags = json.loads(row["tags"])
        print(f"  {row['path'].rpartition('/')[2]} — {row['title']}" + (f"  [{', '.join(tags)}]" if tags else ""))
        for heading in json.loads(row["headings"]):
            if heading["level"] <= 3:
                print(f"    {'  ' * (heading['level'] - 1)}{'#' * heading['level']} {heading['text']}")
    if not rows:
        print("(no notes)")
    return 0


def cmd_grep(args: argparse.Namespace) -> int:
    from builder.grep import grep

    config = config_of(args)
    sources = [config.source(args.source)] if args.source else list(config.sources)
    found = grep(config, sources, args.pattern, ignore_case=args.ignore_case)
    return 0 if found else 1


def cmd_status(args: argparse.Namespace) -> int:
    from builder.status import collect_status, format_status

    config = config_of(args)
    status = collect_status(config)
    print(json.dumps(status, ensure_ascii=False, indent=2) if args.json else format_status(status))
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from functools import cache

    from builder.cli.evaluate import (
        MODES,
        HitRef,
        Query,
        eval_config,
        evaluate,
        format_report,
        load_queries,
    )
    from builder.core import index as db
    from builder.core.errors import ReindexNeeded
    from builder.sync import EXIT_PARTIAL, build
    from builder.synclog import SyncLog
    from server.search import search

    config = config_of(args)
    queries_path = Path(args.queries)
    queries = load_queries(queries_path)
    corpora = Path(args.corpora) if args.corpora else queries_path.resolve().parent.parent / "corpora"
    evaluated = eval_config(config, corpora, sorted({q.corpus for q in queries}))
    log = SyncLog(evaluated.log_path, echo_info=False)
    try:
        code = build(evaluated, log=log, render=False, wait=True)
    except ReindexNeeded:  # the eval's own index, made by an older chunker or model: make it again
        code = build(evaluated, log=log, render=False, wait=True, full=True)
    if code not in (0, EXIT_PARTIAL):
        return code
    conn = _open_index(evaluated)
    embedder, error = _query_embedder(evaluated)
    modes = [m for m in MODES if m in args.modes.split(",")] if args.modes else list(MODES)

    def ask(query: Query, mode: str) -> tuple[list[HitRef], bool | None]:
        result = search(conn, evaluated, query.text, limit=10, mode=mode, embedder=embedder, embedder_error=error,
                        source=query.corpus if args.per_corpus else None)
        hits = [HitRef(h.source, h.path, h.breadcrumb, h.line_start, h.line_end,
                       tuple(HitRef(c["source"], c["path"], c["breadcrumb"], c["line_start"], c["line_end"])
                             for c in h.copies))
                for h in result.hits]
        return hits, result.weak

    @cache
    def headings(source: str, path: str) -> tuple[tuple[str, int], ...]:
        return tuple((h["text"], h["line"]) for h in db.note_headings(conn, source, path))

    report = evaluate(queries, ask, headings, modes)
    print(json.dumps(report.to_json(), ensure_ascii=False, indent=1) if args.json
          else format_report(report.summary()))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from server.app import create_app

    config = config_of(args)
    print(f"notes-portal: serving {config.site.output} and search on http://{args.host}:{args.port}/",
          file=sys.stderr)
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning")
    return 0


