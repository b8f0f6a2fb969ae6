"""``notes-portal``: build, search, toc, grep, status.

A user error prints one line and exits with its code (2 usage/config, 1 the
index cannot answer, 3 a build where some source failed); never a traceback.
Imports stay inside the commands so that the every-minute no-op build loads
only what it needs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from builder.config import Config, load_config
from builder.errors import IndexMissing, UserError

DEFAULT_CONFIG = "portal.yaml"


def _config(args: argparse.Namespace) -> Config:
    return load_config(args.config or os.environ.get("NOTES_PORTAL_CONFIG") or DEFAULT_CONFIG)


def cmd_build(args: argparse.Namespace) -> int:
    from builder.sync import build

    config = _config(args)
    if args.source:
        config.source(args.source)
    return build(config, full=args.full, source_id=args.source)


def _open_index(config: Config) -> Any:
    from builder import index as db
    from builder import indexfile

    path = indexfile.resolve(config.index)
    if path is None:
        raise IndexMissing(f"no index at {config.index}: run `notes-portal build` first")
    return db.connect(path, readonly=True)


def _query_embedder(config: Config) -> tuple[Any, str | None]:
    from builder.embedding import make_embedder

    if not config.embedding.enabled:
        return None, None
    try:
        return make_embedder(config.embedding, for_queries=True), None
    except Exception as exc:  # a broken local install degrades to FTS-only, loudly
        return None, f"{type(exc).__name__}: {exc}"


def cmd_search(args: argparse.Namespace) -> int:
    from server.search import provenance, search

    config = _config(args)
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
    for rank, hit in enumerate(result.hits, start=1):
        anchor = f"#{hit.anchor}" if hit.anchor else ""
        print(f"{rank:2}. {hit.breadcrumb}  [{provenance(hit)}]")
        print(f"    {hit.source}:{hit.path}:{hit.line_start}{anchor}")
        print(f"    {_plain_snippet(hit.snippet)}")
    return 0


def _plain_snippet(snippet: str) -> str:
    import html

    bold = sys.stdout.isatty()
    text = snippet.replace("<mark>", "\x1b[1m" if bold else "[").replace("</mark>", "\x1b[0m" if bold else "]")
    return html.unescape(text)


def cmd_toc(args: argparse.Namespace) -> int:
    from builder import index as db

    config = _config(args)
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

    config = _config(args)
    sources = [config.source(args.source)] if args.source else list(config.sources)
    found = grep(config, sources, args.pattern, ignore_case=args.ignore_case)
    return 0 if found else 1


def cmd_status(args: argparse.Namespace) -> int:
    from builder.status import collect_status, format_status

    config = _config(args)
    status = collect_status(config)
    print(json.dumps(status, ensure_ascii=False, indent=2) if args.json else format_status(status))
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from server.app import create_app

    config = _config(args)
    print(f"notes-portal: serving {config.site.output} and search on http://{args.host}:{args.port}/",
          file=sys.stderr)
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="warning")
    return 0


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="notes-portal", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE",
                        help=f"the portal's YAML config (default: $NOTES_PORTAL_CONFIG or ./{DEFAULT_CONFIG})")
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", parents=[common], help="sync sources and refresh the index (cron: every minute)")
    p.add_argument("--full", action="store_true", help="rebuild into a new index file and swap it in")
    p.add_argument("--source", metavar="ID", help="only this source")
    p.set_defaults(func=cmd_build)

    p = sub.add_parser("search", parents=[common], help="hybrid search (BM25 + vectors, RRF)")
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--source", metavar="ID")
    p.add_argument("--tag", metavar="TAG")
    p.add_argument("--mode", choices=("hybrid", "bm25", "vector"), default="hybrid")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("toc", parents=[common], help="directory → note → title, tags, headings")
    p.add_argument("--source", metavar="ID")
    p.add_argument("--tag", metavar="TAG")
    p.set_defaults(func=cmd_toc)

    p = sub.add_parser("grep", parents=[common], help="regular expression over every file of the sources")
    p.add_argument("pattern")
    p.add_argument("--source", metavar="ID")
    p.add_argument("-i", "--ignore-case", action="store_true")
    p.set_defaults(func=cmd_grep)

    p = sub.add_parser("serve", parents=[common], help="serve the site and the search API (uvicorn)")
    p.add_argument("--host", default="127.0.0.1", help="127.0.0.1 (default) or 0.0.0.0 for the LAN")
    p.add_argument("--port", type=int, default=8080)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("status", parents=[common], help="per source: notes, chunks, pending vectors, last sync")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_status)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from builder.index import sqlite_module

    try:
        try:
            return int(args.func(args) or 0)
        except sqlite_module().DatabaseError as exc:
            raise IndexMissing(f"the index cannot be read ({exc}); rebuild it with `notes-portal build --full`") from None
    except UserError as exc:
        print(f"notes-portal: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:  # unreadable config dir, full disk, permissions: the user can fix these
        print(f"notes-portal: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
