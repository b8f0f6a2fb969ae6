"""``--json`` on every read command: one versioned shape (docs/CLI-JSON.md), errors included.

The expected documents are written out whole: a key added, renamed or dropped fails here first, and
docs/CLI-JSON.md must say so (and bump the version when a key changes meaning or goes away).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from builder.cli import main
from server.read_commands import MAX_READ_CHARS
from builder.core.config import Config
from builder.notes.grep import MAX_LINE_CHARS
from builder.sync import build
from tests.conftest import (
    copy_config,
    quiet,
    require_ripgrep,
    sample_config,
    write_config,
    write_note,
    write_sample_notes,
)

SCHEMA = "notes-portal/1"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample notes built once for the module; each test gets a copy."""
    home = tmp_path_factory.mktemp("built")
    write_sample_notes(home / "notes")
    config = sample_config(home, "embedding:\n  provider: none\n")
    assert build(config, log=quiet(config)) == 0
    return home


@pytest.fixture
def built(template: Path, tmp_path: Path, notes_dir: Path) -> Config:
    return copy_config(template, tmp_path)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """Exit code, the JSON on stdout, and stderr."""
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


def test_search(built, capsys):
    code, body, err = run(capsys, "search", "powerbanka", "--config", str(built.path))
    assert (code, err) == (0, "")
    assert body == {
        "schema": SCHEMA, "command": "search", "query": "powerbanka", "mode": "hybrid", "weak": False,
        "corrected": None, "translated": {}, "marked": ["powerbanka"], "vectors": None,
        "notes": ["embeddings disabled (provider: none): FTS-only results"],
        "said": [{"key": "said.disabled", "values": {}}],
        "hits": [{"source": "notes", "path": "cestovani/snezka.md", "title": "Balicí seznam – Sněžka",
                  "breadcrumb": "Balicí seznam – Sněžka", "anchor": "", "line_start": 5, "line_end": 7,
                  "snippet": "rozbočovač do zásuvky <mark>powerbanka</mark> sluchátka Sony s ANC",
                  "score": body["hits"][0]["score"], "ranks": {"bm25": 1, "vector": None},
                  "url": "notes/cestovani/snezka.html", "more": [], "copies": [], "words": ["powerbanka"],
                  "provenance": "words #1"}]}


def test_toc(built, capsys):
    code, body, err = run(capsys, "toc", "--config", str(built.path))
    assert (code, err) == (0, "")
    assert body == {
        "schema": SCHEMA, "command": "toc", "source": None, "tag": None, "folder": None, "total": 3,
        "truncated": False, "notes": [
            {"source": "notes", "path": "cestovani/snezka.md", "title": "Balicí seznam – Sněžka",
             "tags": ["cestovani", "hory"], "headings": [], "url": "notes/cestovani/snezka.html"},
            {"source": "notes", "path": "projekty/sauter-bus.md", "title": "Sauter Bus", "tags": [],
             "headings": [{"level": 1, "text": "Sauter Bus", "anchor": "sauter-bus", "line": 1},
                          {"level": 2, "text": "Zapojení", "anchor": "zapojeni", "line": 5}],
             "url": "notes/projekty/sauter-bus.html"},
            {"source": "notes", "path": "recepty/teh-tarik.md", "title": "Teh Tarik", "tags": ["recepty", "čaj"],
             "headings": [{"level": 1, "text": "Teh Tarik", "anchor": "teh-tarik", "line": 5},
                          {"level": 2, "text": "Suroviny", "anchor": "suroviny", "line": 9},
                          {"level": 2, "text": "Postup", "anchor": "postup", "line": 15}],
             "url": "notes/recepty/teh-tarik.html"}]}
    _, folder, _ = run(capsys, "toc", "--folder", "projekty/", "--config", str(built.path))
    assert ([n["path"] for n in folder["notes"]], folder["folder"], folder["total"]) == (
        ["projekty/sauter-bus.md"], "projekty", 1)


def test_json_is_one_line_for_a_pipe_and_indented_for_a_terminal(built, capsys, monkeypatch):
    """A program reads a pipe (one line: the C encoder, a whole collection's toc in a tenth of the time);
    a person reads a terminal."""
    assert main(["toc", "--json", "--config", str(built.path)]) == 0
    piped = capsys.readouterr().out
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    assert main(["toc", "--json", "--config", str(built.path)]) == 0
    shown = capsys.readouterr().out
    assert piped.count("\n") == 1 and shown.count("\n") > 40
    assert shown.startswith('{\n  "schema": "notes-portal/1",\n') and json.loads(shown) == json.loads(piped)


@pytest.mark.parametrize("use_rg", [True, False])
def test_grep(built, notes_dir, capsys, monkeypatch, use_rg):
    if use_rg:
        require_ripgrep()
    else:
        monkeypatch.setattr("builder.notes.grep.shutil.which", lambda name: None)
    write_note(notes_dir, "projekty/capture.txt", "0x7e 0xA1 RS485 frame\n" + "RS485 " + "x" * 600 + "\n")
    write_note(notes_dir, "projekty/z-tajne.md", "---\npublished: false\n---\nRS485 heslo\n")
    code, body, err = run(capsys, "grep", "RS48[0-9]", "--config", str(built.path))
    assert (code, err) == (0, "")
    assert body == {
        "schema": SCHEMA, "command": "grep", "pattern": "RS48[0-9]", "ignore_case": False, "source": None,
        "max_results": None, "max_line_chars": MAX_LINE_CHARS, "count": 3, "truncated": False, "warnings": [],
        "matches": [
            {"source": "notes", "path": "projekty/capture.txt", "line": 1, "text": "0x7e 0xA1 RS485 frame"},
            {"source": "notes", "path": "projekty/capture.txt", "line": 2,
             "text": ("RS485 " + "x" * 600)[:MAX_LINE_CHARS] + " […]"},
            {"source": "notes", "path": "projekty/sauter-bus.md", "line": 3,
             "text": "RS485 proxy, která odposlouchává a upravuje provoz sběrnice. Běží na micro:bitu."}]}
    code, body, err = run(capsys, "grep", "rs485", "-i", "--max-results", "2", "--config", str(built.path))
    assert (code, body["count"], body["truncated"], body["ignore_case"], err) == (0, 2, True, True, "")
    code, body, _ = run(capsys, "grep", "nothing-matches-this", "--config", str(built.path))
    assert (code, body["count"], body["matches"]) == (1, 0, [])  # exit 1 as grep: nothing matched


def test_read(built, capsys):
    code, body, err = run(capsys, "read", "notes", "recepty/teh-tarik.md", "--from-line", "5", "--max-lines", "3",
                          "--config", str(built.path))
    assert (code, err) == (0, "")
    assert body == {
        "schema": SCHEMA, "command": "read", "source": "notes", "path": "recepty/teh-tarik.md",
        "url": "notes/recepty/teh-tarik.html", "section": None, "line_start": 5, "line_end": 7, "total_lines": 17,
        "truncated": True, "next_line": 8, "index": "current",
        "text": "5: # Teh Tarik\n6: \n7: Malajsijský čaj s mlékem.\n"
                "[truncated: lines 8–17 not shown; continue from line 8]"}
    _, section, _ = run(capsys, "read", "notes", "recepty/teh-tarik.md", "--section", "Teh Tarik > Suroviny",
                        "--config", str(built.path))
    assert (section["section"], section["text"]) == (
        {"level": 2, "text": "Suroviny", "anchor": "suroviny"},
        ("9: ## Suroviny\n10: \n11: - 700–800 ml vody\n12: - dvě polévkové lžíce černého čaje\n"
         "13: - kondenzované mléko\n14: "))


def test_read_bounds_one_huge_line(built, notes_dir, capsys):
    write_note(notes_dir, "dlouha.md", "# Dlouhá\n" + "y" * (MAX_READ_CHARS + 10) + "\nkonec\n")
    _, body, _ = run(capsys, "read", "notes", "dlouha.md", "--from-line", "2", "--config", str(built.path))
    assert (body["truncated"], body["line_end"], body["next_line"]) == (True, 2, 3)
    assert body["text"] == ("2: " + "y" * MAX_READ_CHARS)[:MAX_READ_CHARS] + " […]\n" \
        "[truncated: lines 3–3 not shown; continue from line 3]"


def test_status(built, capsys):
    code, body, err = run(capsys, "status", "--config", str(built.path))
    assert (code, err) == (0, "")
    assert list(body) == ["schema", "command", "index", "exists", "embedding", "dictionary", "sources", "meta"]
    assert (body["schema"], body["command"], body["exists"], body["embedding"]) == (
        SCHEMA, "status", True, {"provider": "none", "model": "none", "dims": 0})
    assert body["dictionary"] == (str(built.dictionary) if built.dictionary else None)
    assert {k: body["sources"][0][k] for k in ("id", "kind", "files", "chunks", "pending_vectors", "last_error")} == {
        "id": "notes", "kind": "folder", "files": 3, "chunks": 5, "pending_vectors": 0, "last_error": None}


def test_eval_carries_the_schema(tmp_path, capsys):
    (tmp_path / "corpora" / "c1").mkdir(parents=True)
    write_note(tmp_path / "corpora" / "c1", "a.md", "# Alfa\n\nslovo alfa\n")
    queries = tmp_path / "eval" / "q.jsonl"
    queries.parent.mkdir()
    queries.write_text(json.dumps({"id": "1", "corpus": "c1", "query": "alfa", "type": "exact",
                                   "relevant": [{"path": "a.md", "heading": None}]}) + "\n", encoding="utf-8")
    config = write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                    "sources:\n  notes:\n    folder: corpora\n")
    code, body, _ = run(capsys, "eval", "--config", str(config), "--queries", str(queries), "--modes", "bm25")
    assert (code, body["schema"], body["command"], body["per_query"][0]["file_rank"]) == (0, SCHEMA, "eval", 1)


def _error(command: str, message: str, exit_code: int) -> dict[str, Any]:
    return {"schema": SCHEMA, "command": command, "error": message, "exit_code": exit_code}


def test_errors_are_json_on_stdout_and_one_line_on_stderr(built, tmp_path, capsys):
    code, body, err = run(capsys, "search", "x", "--source", "nope", "--config", str(built.path))
    assert (code, body, err) == (2, _error("search", "unknown source 'nope' (configured: notes)", 2),
                                 "notes-portal: unknown source 'nope' (configured: notes)\n")
    code, body, err = run(capsys, "toc", "--config", str(built.path), "--folder", "a/../b")
    assert (code, body) == (2, _error("toc", "folder 'a/../b' must not have empty, '.' or '..' parts", 2))
    missing = tmp_path / "nope.yaml"
    code, body, err = run(capsys, "status", "--config", str(missing))
    message = (f"{missing}: config file not found (from --config); "
               "point at one with --config FILE or $NOTES_PORTAL_CONFIG, or write one: notes-portal init FOLDER")
    assert (code, body, err) == (2, _error("status", message, 2), f"notes-portal: {message}\n")
    (tmp_path / "empty").mkdir()
    config = write_config(tmp_path / "empty", "embedding:\n  provider: none\nsources:\n  n:\n    folder: .\n")
    code, body, _ = run(capsys, "search", "x", "--config", str(config))
    assert (code, body) == (1, _error("search", f"no index at {tmp_path}/empty/.portal/index.sqlite: "
                                                "run `notes-portal build` first", 1))


def test_a_usage_error_is_json_too(capsys):
    with pytest.raises(SystemExit) as exited:  # argparse ends the process itself, with 2
        main(["search", "x", "--limit", "ten", "--json"])
    captured = capsys.readouterr()
    assert exited.value.code == 2
    assert json.loads(captured.out) == _error("search", "argument --limit: invalid int value: 'ten'", 2)
    assert captured.err.endswith("notes-portal search: error: argument --limit: invalid int value: 'ten'\n")
    with pytest.raises(SystemExit):
        main(["grep", "--json"])
    assert json.loads(capsys.readouterr().out) == _error(
        "grep", "the following arguments are required: PATTERN", 2)
