"""The CLI as a person or a script uses it: search, toc, grep, status, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from builder.cli import main
from builder.core.config import Config
from builder.sync import build
from tests.conftest import (
    HashEmbedder,
    copy_config,
    quiet,
    require_ripgrep,
    sample_config,
    write_config,
    write_note,
    write_sample_notes,
)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample notes built once for the module; each test gets a copy."""
    home = tmp_path_factory.mktemp("built")
    write_sample_notes(home / "notes")
    config = sample_config(home, "embedding:\n  provider: none\n")
    assert build(config, embedder_factory=HashEmbedder, log=quiet(config)) == 0
    return home


@pytest.fixture
def built(template: Path, tmp_path: Path, notes_dir: Path) -> Config:
    return copy_config(template, tmp_path)


def test_search_json_has_the_api_shape(built, capsys):
    assert main(["search", "powerbanka", "--config", str(built.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["query"] == "powerbanka" and data["mode"] == "hybrid"
    assert data["notes"] == ["embeddings disabled (provider: none): FTS-only results"]
    hit = data["hits"][0]
    assert {k: hit[k] for k in ("source", "path", "title", "anchor", "line_start")} == {
        "source": "notes", "path": "cestovani/snezka.md", "title": "Balicí seznam – Sněžka",
        "anchor": "", "line_start": 5}
    assert hit["ranks"] == {"bm25": 1, "vector": None}
    assert hit["url"] == "notes/cestovani/snezka.html"  # the note page (top of the note: no anchor)
    assert "<mark>powerbanka</mark>" in hit["snippet"]


def test_search_text_output(built, capsys):
    assert main(["search", "převodník MAX485", "--config", str(built.path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "note: embeddings disabled (provider: none): FTS-only results"
    assert out[1] == " 1. Sauter Bus > Zapojení  [words #1]"
    assert out[2] == "    notes:projekty/sauter-bus.md:5#zapojeni"
    assert out[3] == "    ⟦Převodník⟧ ⟦MAX485⟧ na pinech P0 a P1."


def test_a_corrected_search_says_so_and_as_typed_does_not_correct(built, capsys):
    assert main(["search", "kondenzvané mléko", "--config", str(built.path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:3] == ["note: no note holds 'kondenzvané': showing results for 'kondenzovane mléko'",
                       "note: embeddings disabled (provider: none): FTS-only results",
                       "note: --as-typed searches the words as you typed them"]
    assert main(["search", "kondenzvané mléko", "--as-typed", "--config", str(built.path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["corrected"] is None and data["notes"] == ["embeddings disabled (provider: none): FTS-only results"]


def test_search_with_no_words_and_no_hits(built, capsys):
    assert main(["search", "?!", "--config", str(built.path)]) == 0
    assert capsys.readouterr().out == "note: the query has no words to search for\n(no matches)\n"


def test_search_before_any_build_exits_1(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    path = write_config(tmp_path, "embedding:\n  provider: none\nsources:\n  notes:\n    folder: notes\n")
    assert main(["search", "x", "--config", str(path)]) == 1
    assert capsys.readouterr().err == (f"notes-portal: no index at {tmp_path}/.portal/index.sqlite: "
                                       "run `notes-portal build` first\n")


def test_search_refuses_with_reindex_needed(built, capsys, tmp_path):
    text = built.path.read_text().replace("provider: none", "provider: ollama\n  model: m:1\n  dims: 8\n"
                                                             "  endpoint: http://127.0.0.1:9")
    built.path.write_text(text)
    assert main(["search", "powerbanka", "--config", str(built.path)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("notes-portal: reindex needed: embedding_provider is 'none' in the index but "
                                   "'ollama' in the config;")


def test_unknown_source_is_a_clear_error(built, capsys):
    assert main(["search", "x", "--source", "nope", "--config", str(built.path)]) == 2
    assert capsys.readouterr().err == "notes-portal: unknown source 'nope' (configured: notes)\n"


def test_toc_lists_directory_note_title_tags_headings(built, capsys):
    assert main(["toc", "--config", str(built.path)]) == 0
    assert capsys.readouterr().out == (
        "== notes ==\n"
        "cestovani/\n"
        "  snezka.md — Balicí seznam – Sněžka  [cestovani, hory]\n"
        "projekty/\n"
        "  sauter-bus.md — Sauter Bus\n"
        "    # Sauter Bus\n"
        "      ## Zapojení\n"
        "recepty/\n"
        "  teh-tarik.md — Teh Tarik  [recepty, čaj]\n"
        "    # Teh Tarik\n"
        "      ## Suroviny\n"
        "      ## Postup\n")
    assert main(["toc", "--tag", "Čaj", "--config", str(built.path)]) == 0
    assert "teh-tarik.md" in capsys.readouterr().out


@pytest.mark.parametrize("use_rg", [True, False])
def test_grep_reads_every_file_of_the_tree(built, notes_dir, capsys, monkeypatch, use_rg):
    if use_rg:
        require_ripgrep()
    if not use_rg:
        monkeypatch.setattr("builder.notes.grep.shutil.which", lambda name: None)
    write_note(notes_dir, "projekty/capture.txt", "0x7e 0xA1 RS485 frame\n")
    write_note(notes_dir, ".git/config", "RS485 hidden\n")
    assert main(["grep", "RS48[0-9]", "--config", str(built.path)]) == 0
    lines = sorted(capsys.readouterr().out.splitlines())
    assert lines == ["notes:projekty/capture.txt:1:0x7e 0xA1 RS485 frame",
                     "notes:projekty/sauter-bus.md:3:RS485 proxy, která odposlouchává a upravuje provoz "
                     "sběrnice. Běží na micro:bitu."]
    assert main(["grep", "nothing-matches-this", "--config", str(built.path)]) == 1


@pytest.mark.parametrize("use_rg", [True, False])
def test_grep_reads_notes_in_a_code_page_as_the_build_does(built, notes_dir, capsys, monkeypatch, quiet_log,
                                                           use_rg):
    if use_rg:
        require_ripgrep()
    else:
        monkeypatch.setattr("builder.notes.grep.shutil.which", lambda name: None)
    (notes_dir / "stare").mkdir()
    (notes_dir / "stare/kun.md").write_bytes("# Kůň\n\nŽluťoučký kůň úpěl ďábelské ódy.\ncat\n".encode("cp1250"))
    (notes_dir / "stare/lad.md").write_bytes("# Ľad\n\nŽltý ľad a šťava.\n".encode("iso8859_2"))
    (notes_dir / "stare/prevedena.md").write_bytes("kůň v kódu 1250, než ji převedu.\n".encode("cp1250"))
    write_note(notes_dir, "stare-nove/kun.md", "Žluťoučký kůň v UTF-8.\ncat\n")
    (notes_dir / "stare/log.txt").write_bytes("kůň, ale ne poznámka\n".encode("cp1250"))
    assert build(built, log=quiet_log(built)) == 0  # the index records how each note was read
    (notes_dir / "stare/prevedena.md").write_text("kůň v UTF-8, převedená po sestavení.\n", encoding="utf-8")
    assert main(["grep", "kůň|šťava|cat", "--config", str(built.path)]) == 0
    assert capsys.readouterr().out.splitlines() == [  # a folder's entries by name, as ripgrep lists them
        "notes:stare/kun.md:3:Žluťoučký kůň úpěl ďábelské ódy.",
        "notes:stare/kun.md:4:cat",
        "notes:stare/lad.md:3:Žltý ľad a šťava.",
        "notes:stare/prevedena.md:1:kůň v UTF-8, převedená po sestavení.",
        "notes:stare-nove/kun.md:1:Žluťoučký kůň v UTF-8.",
        "notes:stare-nove/kun.md:2:cat"]
    assert main(["grep", "-i", "ŽLTÝ", "--config", str(built.path)]) == 0
    assert capsys.readouterr().out == "notes:stare/lad.md:3:Žltý ľad a šťava.\n"
    for ascii_pattern in ("dy\\.$", "k\\u016f\\u0148 ú", "k..\\b úp"):  # ASCII patterns, accented matches
        assert main(["grep", ascii_pattern, "--config", str(built.path)]) == 0
        assert capsys.readouterr().out == "notes:stare/kun.md:3:Žluťoučký kůň úpěl ďábelské ódy.\n", ascii_pattern


def test_grep_searches_the_tree_when_its_stdin_is_a_pipe(built):
    """A script piping into ``notes-portal grep``: ripgrep must not search that pipe instead."""
    require_ripgrep()
    done = subprocess.run([sys.executable, "-m", "builder.cli", "grep", "MAX485", "--config", str(built.path)],
                          input=b"MAX485 from the pipe\n", capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode() == "notes:projekty/sauter-bus.md:7:Převodník MAX485 na pinech P0 a P1.\n"


def test_grep_invalid_pattern(built, capsys):
    assert main(["grep", "(unclosed", "--config", str(built.path)]) == 2
    assert capsys.readouterr().err.startswith("notes-portal: invalid regular expression '(unclosed'")


@pytest.mark.slow
def test_grep_stops_a_pattern_that_backtracks(built, notes_dir, capsys, monkeypatch):
    """Without ripgrep, Python's regular expressions backtrack: `(a+)+$` over thirty a's and a b runs
    for about a minute (a longer line, for ages); grep stops it at its time limit with one line."""
    monkeypatch.setattr("builder.notes.grep.shutil.which", lambda name: None)
    monkeypatch.setattr("builder.notes.grep.TIME_LIMIT_S", 1.0)
    write_note(notes_dir, "projekty/aaa.txt", "a" * 30 + "b\n")
    assert main(["grep", "(a+)+$", "--config", str(built.path)]) == 2
    assert capsys.readouterr().err == ("notes-portal: grep stopped after 1 s: the pattern is too slow to match "
                                       "(install ripgrep: it matches any pattern in linear time)\n")


def test_status_json(built, capsys):
    assert main(["status", "--json", "--config", str(built.path)]) == 0
    status = json.loads(capsys.readouterr().out)
    source = status["sources"][0]
    assert (status["exists"], source["id"], source["files"], source["pending_vectors"]) == (True, "notes", 3, 0)
    assert source["chunks"] > 3 and len(source["indexed_rev"]) == 12 and source["last_sync_at"]


def test_corrupt_index_is_one_line(built, capsys):
    from builder import indexfile

    real = indexfile.resolve(built.index)
    real.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        real.with_name(real.name + suffix).unlink(missing_ok=True)
    assert main(["search", "čaj", "--config", str(built.path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("notes-portal: the index cannot be read (file is not a database)")


def test_search_says_when_nothing_matches_the_words(built, capsys):
    assert main(["search", "qxzvv kwyjibo", "--config", str(built.path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ["note: embeddings disabled (provider: none): FTS-only results", "(no matches)"]
    assert main(["search", "qxzvv kwyjibo", "--json", "--config", str(built.path)]) == 0
    body = json.loads(capsys.readouterr().out)
    assert (body["weak"], body["hits"]) == (True, [])
