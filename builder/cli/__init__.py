"""The ``notes-portal`` command line: init, build, search, ask, toc, grep, read, status, eval, serve, watch, mcp.

The CLI is the composition root: the one place that imports both the write
path (``builder``) and the read path (``server``), each inside the command that
needs it (:mod:`.commands`); it parses arguments and calls one side or the other
(the read commands' data, the web app and the MCP server are ``server``'s).
A user error prints one line and exits with its code (2 usage/config, 1 the index
cannot answer, 3 a build where some source failed); never a traceback. With
``--json`` the error is also printed as JSON on stdout (see docs/CLI-JSON.md).
Its other modules: :mod:`.evaluate` (``eval``: retrieval quality over judged
queries), :mod:`.portal_yaml` (``init``) and :mod:`.__main__` (``python -m builder.cli``).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import NoReturn

from builder.cli.commands import (
    DEFAULT_CONFIG,
    cmd_ask,
    cmd_build,
    cmd_embed,
    cmd_eval,
    cmd_grep,
    cmd_init,
    cmd_mcp,
    cmd_read,
    cmd_search,
    cmd_serve,
    cmd_status,
    cmd_toc,
    cmd_watch,
)
from builder.core.package import version
from server.read_commands import MAX_READ_LINES, READ_LINES, SCHEMA_VERSION, error_body
from builder.core.errors import IndexUnreadable, UserError
from builder.core.terminal import PrintableStream, printable

NOTE_TEXT_COMMANDS = frozenset({"ask", "search", "toc", "grep", "read", "status", "eval"})  # print what notes hold
DESCRIPTION = "Your markdown notes as a searchable portal: for a browser, a shell and agents."
EPILOG = (f"Every command reads its config from --config FILE, else $NOTES_PORTAL_CONFIG,\n"
          f"else ./{DEFAULT_CONFIG}. Run notes-portal COMMAND --help for a command's options.")
JSON_HELP = f"print JSON (schema {SCHEMA_VERSION}, see docs/CLI-JSON.md), errors included (default: text)"


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors can also be JSON (when the command line asks for ``--json``)."""

    json_errors = False
    commands: dict[str, argparse.ArgumentParser]  # the top parser's subcommands by name

    def error(self, message: str) -> NoReturn:
        if self.json_errors:  # JSON escapes what it quotes itself
            command = self.prog.split()[-1] if " " in self.prog else None
            print(json.dumps(error_body(command or "", UserError(message)), ensure_ascii=False, indent=2))
        # it quotes what was typed: a pasted control character is shown, not obeyed, and the error stays one line
        super().error(printable(message).replace("\n", "\\u000a"))


def _command(sub: argparse._SubParsersAction, name: str, summary: str, description: str,
             common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    return sub.add_parser(name, parents=[common], help=summary, description=description, allow_abbrev=False,
                          formatter_class=argparse.RawDescriptionHelpFormatter)


class _Version(argparse.Action):
    """``--version``, looked up only when asked for: importlib.metadata costs the every-minute build
    more than the rest of its start-up."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        print(f"notes-portal {version()}")
        parser.exit()


def parser() -> Parser:
    top = Parser(prog="notes-portal", description=DESCRIPTION, epilog=EPILOG, allow_abbrev=False,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    top.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    common.add_argument("--config", metavar="FILE",
                        help=f"the portal's YAML config (default: $NOTES_PORTAL_CONFIG, else ./{DEFAULT_CONFIG})")
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands")
    _write_commands(sub, common)
    _read_commands(sub, common)
    _other_commands(sub, common)
    top.commands = dict(sub.choices)
    return top


def _write_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The commands of the write side: init, build, embed."""
    p = _command(sub, "init", "write a commented portal.yaml for a folder or a git repository",
                 "Write a commented portal.yaml (here, or --config FILE) for one source of notes: its\n"
                 "scope, the site's language guessed from the notes, the embedding model, where the\n"
                 "site goes. Never overwrites a file. Then: notes-portal build && notes-portal serve.", common)
    p.add_argument("source", metavar="FOLDER|GIT_URL", nargs="?", default=".",
                   help="the notes: a folder, or a git repository's URL (default: the current folder)")
    p.set_defaults(func=cmd_init)

    p = _command(sub, "build", "sync the sources, refresh the index and the site (cron)",
                 "Sync every source, index what changed and render its pages. A build that finds\n"
                 "nothing new prints nothing and writes nothing.", common)
    p.add_argument("--full", action="store_true",
                   help="rebuild into a new index file and swap it in; with --source, read that source again "
                        "in place, its removals accepted (default: only what changed)")
    p.add_argument("--wait", action="store_true",
                   help="when another build is running, wait for it and run after it (default: leave at once)")
    p.add_argument("--source", metavar="ID", help="only this source (default: every source)")
    p.add_argument("--vectors", choices=("background", "now", "later"), default="background",
                   help="the sections new text left waiting for vectors: embedded by a process of their own "
                        "while the site and words search are already there (background), by this build before "
                        "it ends (now), or by a later build (later) (default: background)")
    # for serve and watch, which run each build in a child process (builder/childbuild.py)
    p.add_argument("--progress", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_build)

    p = _command(sub, "embed", "embed the sections still waiting for vectors (a build starts it)",
                 "Embed the sections a build left waiting for vectors (search finds them by words\n"
                 "meanwhile). A build starts this in the background by itself; run it to wait for\n"
                 "the vectors, with a progress bar at a terminal. One runs at a time: a second waits.", common)
    p.add_argument("--budget", metavar="SECONDS", type=float,
                   help="stop after this many seconds; a later run goes on (default: until none waits)")
    p.add_argument("--background", action="store_true", help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_embed)


def _read_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """The commands that read the index or the notes: search, ask, toc, grep, read, status."""
    p = _command(sub, "search", "search the index by words and meaning",
                 "Search the index by words (BM25) and by meaning (vectors), fused by rank.\n"
                 "Each hit says which half found it. The index is as of the last build.", common)
    p.add_argument("query", metavar="QUERY", help="what to look for: any text, never parsed as a query syntax")
    p.add_argument("--limit", metavar="N", type=int, default=10, help="hits to show, 1 to 100 (default: 10)")
    p.add_argument("--source", metavar="ID", help="only this source (default: every source)")
    p.add_argument("--tag", metavar="TAG", help="only notes with this tag (default: any tag)")
    p.add_argument("--mode", metavar="MODE", choices=("hybrid", "bm25", "vector"), default="hybrid",
                   help="hybrid (words and meaning), bm25 (words only) or vector (meaning only) "
                        "(default: hybrid)")
    p.add_argument("--as-typed", action="store_true",
                   help="search the words as typed, none replaced by a close word the notes hold "
                        "(default: a word no note holds is replaced)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_search)

    p = _command(sub, "ask", "answer a question from the notes, each citation checked",
                 "Answer a question with the configured model (answer: in the config) from the\n"
                 "sections search finds. The answer is shown only when every sentence cites a\n"
                 "section that says it (quotes, numbers, dates checked); otherwise it says why not.\n"
                 "The question and the sections are sent to that provider.", common)
    p.add_argument("question", metavar="QUESTION", help="the question, in any language")
    p.add_argument("--source", metavar="ID", help="only this source (default: every source)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_ask)

    p = _command(sub, "toc", "list the indexed notes: folder, note, title, tags, headings",
                 "List the published notes the index holds, by source and folder, with their\n"
                 "titles, tags and headings down to ###.", common)
    p.add_argument("--source", metavar="ID", help="only this source (default: every source)")
    p.add_argument("--tag", metavar="TAG", help="only notes with this tag (default: any tag)")
    p.add_argument("--folder", metavar="DIR", help="only the notes below this folder (default: every folder)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_toc)

    p = _command(sub, "grep", "search the files of the sources on disk by regular expression",
                 "Search every file of the sources as it is on disk now (not only markdown; paths\n"
                 "and exclude still apply; notes marked published: false are left out), with\n"
                 "ripgrep when it is installed. Exits 1 when nothing matched.", common)
    p.add_argument("pattern", metavar="PATTERN", help="a regular expression (Python and ripgrep syntax)")
    p.add_argument("--source", metavar="ID", help="only this source (default: every source)")
    p.add_argument("-i", "--ignore-case", action="store_true", help="ignore case (default: case matters)")
    p.add_argument("--max-results", metavar="N", type=int,
                   help="stop after N matching lines (default: no limit)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_grep)

    p = _command(sub, "read", "print one note as it is on disk now, with line numbers",
                 "Print one published note of a source as it is on disk now (not as the index\n"
                 "has it), each line as N: text.", common)
    p.add_argument("source", metavar="SOURCE", help="the source's id (a key under sources: in the config)")
    p.add_argument("path", metavar="PATH", help="the note's path inside the source, as search and toc show it")
    p.add_argument("--section", metavar="ANCHOR",
                   help="only this section: its anchor or heading text (default: the whole note)")
    p.add_argument("--from-line", metavar="N", type=int, default=1, help="start at line N (default: 1)")
    p.add_argument("--max-lines", metavar="N", type=int, default=READ_LINES,
                   help=f"print at most N lines, up to {MAX_READ_LINES} (default: {READ_LINES})")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_read)

    p = _command(sub, "status", "show the index and each source: notes, vectors, last sync",
                 "Show the index, the embedding model and, per source, notes, chunks, vectors\n"
                 "still pending, the last sync, the indexed revision and the last error.", common)
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_status)


def _other_commands(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    """Evaluation and the long-running commands: eval, serve, watch, mcp."""
    p = _command(sub, "eval", "measure retrieval quality over judged queries",
                 "Index the corpora beside the queries file in a folder of their own and score\n"
                 "every query in each mode: Hit@1/3/5, MRR@10 and Recall@5, per query type, for\n"
                 "the whole set and its two folds (tune: where rules are chosen; held-out: where\n"
                 "they are checked; stratified by corpus and type, by a hash of the query id).", common)
    p.add_argument("--queries", metavar="PATH", required=True,
                   help="judged queries, one JSON object per line (see ../shared/eval/README.md): "
                        "a file, or a folder whose *.jsonl files are read together")
    p.add_argument("--fold", choices=("tune", "held-out"),
                   help="score one fold only (default: the whole set, and each fold beside it)")
    p.add_argument("--corpora", metavar="DIR",
                   help="the folder holding one folder per corpus (default: ../corpora beside the queries file)")
    p.add_argument("--modes", metavar="LIST", help="comma-separated modes to score (default: bm25,vector,hybrid)")
    p.add_argument("--per-corpus", action="store_true",
                   help="search only the query's own corpus (default: every corpus, as a user would)")
    p.add_argument("--json", action="store_true", help=JSON_HELP)
    p.set_defaults(func=cmd_eval)

    p = _command(sub, "serve", "serve the site, the search API and MCP over HTTP",
                 "Serve the built site, /search, /api/search, /api/health and the MCP tools at\n"
                 "/mcp (Streamable HTTP) with uvicorn. A key in server.api_key guards all but\n"
                 "the pages. Webhooks (/api/hooks/SOURCE) and the sync API (/api/sync) queue\n"
                 "builds, which run in this process one at a time.", common)
    p.add_argument("--host", default="127.0.0.1",
                   help="the address to listen on; 0.0.0.0 for the LAN (default: 127.0.0.1)")
    p.add_argument("--port", metavar="N", type=int, default=8080, help="the port to listen on (default: 8080)")
    p.add_argument("--no-mcp", action="store_true", help="leave /mcp out (default: serve it)")
    p.add_argument("--watch", action="store_true",
                   help="also build on every save in a folder source and poll git sources, as the watch "
                        "command does "
                        "(default: build only for webhooks, the sync API and cron)")
    p.set_defaults(func=cmd_serve)

    p = _command(sub, "watch", "build on every save in a folder source; poll git sources",
                 "Watch every folder source and build what changed within about a second of a\n"
                 "save; run an ordinary build every watch.git_poll seconds for git sources.\n"
                 "Builds take the same lock as cron's, so keep the cron line as a safety net.", common)
    p.set_defaults(func=cmd_watch)

    p = _command(sub, "mcp", "serve the MCP tools on stdin and stdout, for agents",
                 "Run the MCP server on stdin and stdout: the tools search, toc, grep, read_note\n"
                 "and status over the same index and sources (see docs/AGENTS.md).", common)
    p.set_defaults(func=cmd_mcp)



def _wants_json(argv: list[str]) -> bool:
    """Does the command line ask for JSON (``--json`` before any ``--``)?"""
    options = argv[:argv.index("--")] if "--" in argv else argv
    return "--json" in options


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = parser()
    json_errors = _wants_json(argv)
    for each in (top, *top.commands.values()):
        each.json_errors = json_errors  # type: ignore[attr-defined]
    args, unknown = top.parse_known_args(argv)
    if unknown:  # the subcommand's own usage, not the top-level one
        top.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    from builder.core.index import (
        sqlite_module,  # the sqlite3 module is loaded only by a command
    )

    stdout = sys.stdout
    if args.command in NOTE_TEXT_COMMANDS:
        sys.stdout = PrintableStream(stdout)
    try:
        try:
            return int(args.func(args) or 0)
        except sqlite_module().DatabaseError as exc:
            raise IndexUnreadable(exc) from None
        except BrokenPipeError:
            raise
        except OSError as exc:  # unreadable config dir, full disk, permissions: the user can fix these
            raise UserError(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
    except BrokenPipeError:  # `notes-portal grep … | head`
        return 0
    except UserError as exc:
        if getattr(args, "json", False):
            print(json.dumps(error_body(args.command, exc), ensure_ascii=False, indent=2))
        print(f"notes-portal: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    finally:
        sys.stdout = stdout
