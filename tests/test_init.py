"""``notes-portal init [FOLDER | GIT_URL]`` (issue 45): a commented portal.yaml for the notes — their scope, the
site's language guessed from them, the model, where the site goes — that the next two commands build and serve;
never written over a file."""

from __future__ import annotations

import shutil
import subprocess
import sys

import yaml

from builder.cli import main
from builder.core.config import load_config
from tests.conftest import PROJECT
from tests.git_support import git

EXAMPLES = PROJECT / "examples" / "notes"
SLOVAK = "Toto je poznámka, ktorá je napísaná po slovensky, aby sa dalo vidieť, ako to funguje.\n"


def test_init_writes_a_commented_config_for_a_folder_that_builds(tmp_path, capsys, monkeypatch):
    notes = tmp_path / "moje-poznamky"
    shutil.copytree(EXAMPLES, notes)
    portal = tmp_path / "portal"
    portal.mkdir()
    monkeypatch.chdir(portal)
    monkeypatch.delenv("NOTES_PORTAL_CONFIG", raising=False)
    assert main(["init", "../moje-poznamky"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("wrote portal.yaml for ../moje-poznamky: 34 notes, language cs, embedding ")
    assert out.endswith("next:\n  notes-portal build\n  notes-portal serve\n")
    text = (portal / "portal.yaml").read_text(encoding="utf-8")
    assert "#   provider: ollama" in text and "# its folders of notes: cestovani/ (4), devops/ (5)," in text
    data = yaml.safe_load(text)
    assert data["site"] == {"title": "moje-poznamky", "language": "cs", "output": ".portal/site"}
    assert data["sources"] == {"moje-poznamky": {"folder": "../moje-poznamky", "paths": ["**"]}}
    config = load_config(portal / "portal.yaml")
    assert config.sources[0].root == notes.resolve() and config.site.language == "cs"
    # the build that follows (words only here: the model is another test's)
    (portal / "portal.yaml").write_text(text.replace("provider: local ", "provider: none  "), encoding="utf-8")
    assert main(["build"]) == 0
    home = (portal / ".portal/site/index.html").read_text(encoding="utf-8")
    assert home.startswith('<!doctype html>\n<html lang="cs">') and "Nedávno změněné" in home


def test_init_never_overwrites(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NOTES_PORTAL_CONFIG", raising=False)
    (tmp_path / "notes").mkdir()
    (tmp_path / "portal.yaml").write_text("mine\n", encoding="utf-8")
    assert main(["init", "notes"]) == 2
    assert capsys.readouterr().err == ("notes-portal: portal.yaml: already exists; init never overwrites a config "
                                       "(edit it, or name another with --config FILE)\n")
    assert (tmp_path / "portal.yaml").read_text(encoding="utf-8") == "mine\n"
    assert main(["init", "nowhere", "--config", "other.yaml"]) == 2
    assert capsys.readouterr().err == ("notes-portal: nowhere: not a folder (nor a git URL: https://…, ssh://…, "
                                       "git@host:path)\n")
    assert not (tmp_path / "other.yaml").exists()
    assert main(["init", "notes", "--config", "other.yaml"]) == 0  # an empty folder: English until it says
    out = capsys.readouterr().out
    assert "0 notes, language en" in out and "notes-portal build --config other.yaml\n" in out
    assert "(the notes did not say (too few, or could not be read): set it)" in (tmp_path / "other.yaml").read_text()


def test_init_reads_a_git_repository_through_a_shallow_clone(tmp_path, capsys, monkeypatch):
    repo = tmp_path / "slovak-notes"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    for n in range(3):
        (repo / f"n{n}.md").write_text(f"# Poznámka {n}\n\n{SLOVAK}", encoding="utf-8")
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "notes", cwd=repo)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NOTES_PORTAL_CONFIG", raising=False)
    url = repo.as_uri()
    assert main(["init", url]) == 0
    assert capsys.readouterr().out.startswith(f"wrote portal.yaml for {url}: 3 notes, language sk")
    data = yaml.safe_load((tmp_path / "portal.yaml").read_text(encoding="utf-8"))
    assert data["sources"] == {"slovak-notes": {"git": url, "paths": ["**"]}} and data["site"]["language"] == "sk"
    gone = (tmp_path / "gone.git").as_uri()
    assert main(["init", gone, "--config", "gone.yaml"]) == 0  # cannot be read now: the config all the same
    assert "the repository could not be read now; the first build clones it, language en" in capsys.readouterr().out
    assert load_config(tmp_path / "gone.yaml").sources[0].url == gone


def test_the_help_lists_init():
    shown = subprocess.run([sys.executable, "-m", "builder.cli", "--help"], capture_output=True, text=True, cwd=PROJECT)
    assert shown.stdout.count("\n    init ") == 1
