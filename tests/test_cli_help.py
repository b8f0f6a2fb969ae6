"""The CLI explains itself: help with every default, ``--version``, the subcommand's usage for an unknown
option, plain text (no markup) and a missing config file that says how to name one.

Help is laid out by argparse for an 80-column terminal (``COLUMNS=80``); the expected texts are
argparse's layout on Python 3.11 and 3.12.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from pathlib import Path

import pytest

from builder.cli import main, parser

PROJECT = Path(__file__).resolve().parents[1]

TOP_HELP = """\
usage: notes-portal [-h] [--version] COMMAND ...

Your markdown notes as a searchable portal: for a browser, a shell and agents.

options:
  -h, --help  show this help message and exit
  --version   show the version and exit

commands:
  COMMAND
    init      write a commented portal.yaml for a folder or a git repository
    build     sync the sources, refresh the index and the site (cron)
    embed     embed the sections still waiting for vectors (a build starts it)
    search    search the index by words and meaning
    ask       answer a question from the notes, each citation checked
    toc       list the indexed notes: folder, note, title, tags, headings
    grep      search the files of the sources on disk by regular expression
    read      print one note as it is on disk now, with line numbers
    status    show the index and each source: notes, vectors, last sync
    eval      measure retrieval quality over judged queries
    serve     serve the site, the search API and MCP over HTTP
    watch     build on every save in a folder source; poll git sources
    mcp       serve the MCP tools on stdin and stdout, for agents

Every command reads its config from --config FILE, else $NOTES_PORTAL_CONFIG,
else ./portal.yaml. Run notes-portal COMMAND --help for a command's options.
"""

SEARCH_USAGE = """\
usage: notes-portal search [-h] [--config FILE] [--limit N] [--source ID]
                           [--tag TAG] [--mode MODE] [--as-typed] [--json]
                           QUERY
"""

SEARCH_HELP = SEARCH_USAGE + """
Search the index by words (BM25) and by meaning (vectors), fused by rank.
Each hit says which half found it. The index is as of the last build.

positional arguments:
  QUERY          what to look for: any text, never parsed as a query syntax

options:
  -h, --help     show this help message and exit
  --config FILE  the portal's YAML config (default: $NOTES_PORTAL_CONFIG, else
                 ./portal.yaml)
  --limit N      hits to show, 1 to 100 (default: 10)
  --source ID    only this source (default: every source)
  --tag TAG      only notes with this tag (default: any tag)
  --mode MODE    hybrid (words and meaning), bm25 (words only) or vector
                 (meaning only) (default: hybrid)
  --as-typed     search the words as typed, none replaced by a close word the
                 notes hold (default: a word no note holds is replaced)
  --json         print JSON (schema notes-portal/1, see docs/CLI-JSON.md),
                 errors included (default: text)
"""

READ_HELP = """\
usage: notes-portal read [-h] [--config FILE] [--section ANCHOR]
                         [--from-line N] [--max-lines N] [--json]
                         SOURCE PATH

Print one published note of a source as it is on disk now (not as the index
has it), each line as N: text.

positional arguments:
  SOURCE            the source's id (a key under sources: in the config)
  PATH              the note's path inside the source, as search and toc show
                    it

options:
  -h, --help        show this help message and exit
  --config FILE     the portal's YAML config (default: $NOTES_PORTAL_CONFIG,
                    else ./portal.yaml)
  --section ANCHOR  only this section: its anchor or heading text (default:
                    the whole note)
  --from-line N     start at line N (default: 1)
  --max-lines N     print at most N lines, up to 2000 (default: 400)
  --json            print JSON (schema notes-portal/1, see docs/CLI-JSON.md),
                    errors included (default: text)
"""


@pytest.fixture(autouse=True)
def terminal(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("NOTES_PORTAL_CONFIG", raising=False)


def help_of(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*args, "--help"])
    captured = capsys.readouterr()
    assert (exited.value.code, captured.err) == (0, "")
    return captured.out


@pytest.mark.parametrize("args, expected", [((), TOP_HELP), (("search",), SEARCH_HELP), (("read",), READ_HELP)])
def test_help_text(capsys, args, expected):
    assert help_of(capsys, *args) == expected


def commands() -> dict[str, argparse.ArgumentParser]:
    return parser().commands


def test_every_option_says_its_default():
    undescribed = [f"{name} {action.option_strings[-1]}"
                   for name, command in commands().items() for action in command._actions
                   if action.option_strings and not isinstance(action, argparse._HelpAction)
                   and not action.required and action.help != argparse.SUPPRESS
                   and "(default: " not in (action.help or "")]
    assert undescribed == []
    assert sorted(commands()) == ["ask", "build", "embed", "eval", "grep", "init", "mcp", "read", "search", "serve",
                                  "status", "toc", "watch"]


def test_every_read_command_has_json():
    assert sorted(name for name, command in commands().items()
                  if any("--json" in a.option_strings for a in command._actions)) == [
        "ask", "eval", "grep", "read", "search", "status", "toc"]


def test_no_markup_in_any_help(capsys):
    texts = [help_of(capsys)] + [help_of(capsys, name) for name in commands()]
    markup = re.compile(r"`|\*\*|:(?:mod|func|class|data):|<[a-z/]|\]\(")
    assert [m.group() for text in texts for m in markup.finditer(text)] == []


def test_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    project = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert (exited.value.code, capsys.readouterr().out) == (0, f"notes-portal {project['version']}\n")


def test_an_unknown_option_prints_the_commands_usage(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["search", "čaj", "--frobnicate", "3"])
    captured = capsys.readouterr()
    assert (exited.value.code, captured.out) == (2, "")
    assert captured.err == SEARCH_USAGE + "notes-portal search: error: unrecognized arguments: --frobnicate 3\n"
    with pytest.raises(SystemExit):
        main(["status", "--limit", "3"])
    assert capsys.readouterr().err == ("usage: notes-portal status [-h] [--config FILE] [--json]\n"
                                       "notes-portal status: error: unrecognized arguments: --limit 3\n")


HINT = "point at one with --config FILE or $NOTES_PORTAL_CONFIG, or write one: notes-portal init FOLDER"


def test_a_missing_config_file_says_how_to_name_one(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["status"]) == 2
    assert capsys.readouterr().err == f"notes-portal: portal.yaml: config file not found; {HINT}\n"
    monkeypatch.setenv("NOTES_PORTAL_CONFIG", str(tmp_path / "env.yaml"))
    assert main(["toc"]) == 2
    assert capsys.readouterr().err == (f"notes-portal: {tmp_path}/env.yaml: config file not found "
                                       f"(from $NOTES_PORTAL_CONFIG); {HINT}\n")
    assert main(["search", "x", "--config", "given.yaml"]) == 2
    assert capsys.readouterr().err == f"notes-portal: given.yaml: config file not found (from --config); {HINT}\n"
