"""``notes-portal``: build, search, toc, grep, status, serve.

The CLI is the composition root: the one place that imports both the write
path (``builder``) and the read path (``server``), each inside the command that
needs it (:mod:`builder.cli.commands`). A user error prints one line and exits
with its code (2 usage/config, 1 the index cannot answer, 3 a build where some
source failed); never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from builder.cli.commands import (
    DEFAULT_CONFIG,
    cmd_build,
    cmd_eval,
    cmd_grep,
    cmd_search,
    cmd_serve,
    cmd_status,
    cmd_toc,
)
from builder.core.errors import IndexUnreadable, UserError


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="notes-portal", description=__doc__.splitlines()[0])
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--config", metavar="FILE",
                        help=f"the portal's YAML config (default: $NOTES_PORTAL_CONFIG or ./{DEFAULT_CONFIG})")
    sub = top.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", parents=[common], help="sync sources and refresh the index (cron: every minute)")
    p.add_argument("--full", action="store_true", help="rebuild into a new index file and swap it in")
    p.add_argument("--wait", action="store_true",
                   help="when another build is running, wait for it and run after it (default: leave at once)")
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

    p = sub.add_parser("eval", parents=[common],
                       help="retrieval quality over judged queries (Hit@k, MRR, per mode and query type)")
    p.add_argument("--queries", metavar="FILE", required=True,
                   help="judged queries, one JSON object per line (see ../shared/eval/README.md)")
    p.add_argument("--corpora", metavar="DIR",
                   help="the folder holding one folder per corpus (default: ../corpora beside the queries file)")
    p.add_argument("--modes", metavar="LIST", help="comma-separated modes to score (default: bm25,vector,hybrid)")
    p.add_argument("--per-corpus", action="store_true",
                   help="search only the query's own corpus (default: every corpus, as a user would)")
    p.add_argument("--json", action="store_true", help="machine-readable report with per-query ranks")
    p.set_defaults(func=cmd_eval)

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
    from builder.core.index import (
        sqlite_module,  # the sqlite3 module is loaded only by a command
    )

    try:
        try:
            return int(args.func(args) or 0)
        except sqlite_module().DatabaseError as exc:
            raise IndexUnreadable(exc) from None
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


