"""The renderer's code fingerprint comes from its package and what that imports, not from a list.

Runs a copy of the project (``builder/`` and ``templates/``) in a subprocess, edits its files the
way an upgrade would, and asks the every-minute build whether the site is stale.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import write_config, write_note

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import json, sys
from builder.core.config import load_config
from builder.core import index as db
from builder.render.stamp import site_is_stale
from builder.sync import build
from builder.core.synclog import SyncLog

config = load_config(sys.argv[1])
content = db.content_token(db.open_index(config.index, vec=False)) if config.index.exists() else "none"
stale = site_is_stale(config, content)
if sys.argv[2] == "build":
    build(config, log=SyncLog(config.log_path, echo_info=False))
print(json.dumps({"stale": stale, "heavy": [m in sys.modules for m in ("jinja2", "markdown_it")]}))
"""


@pytest.fixture
def project(tmp_path: Path):
    copy = tmp_path / "project"
    for folder in ("builder", "templates"):
        shutil.copytree(ROOT / folder, copy / folder, ignore=shutil.ignore_patterns("__pycache__"))
    write_note(tmp_path / "notes", "a.md", "# A\n\n[b](b.md)\n")
    write_note(tmp_path / "notes", "b.md", "# B\n\ntext\n")
    config = write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                    "site:\n  output: site\nsources:\n  notes:\n    folder: notes\n")
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")

    def probe(action: str = "check") -> dict:
        out = subprocess.run([sys.executable, str(tmp_path / "probe.py"), str(config), action], check=True,
                             capture_output=True, text=True, cwd=copy,
                             env={**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1"})
        return json.loads(out.stdout)

    assert probe("build")["stale"] is True  # no site yet
    page = tmp_path / "site" / "notes" / "a.html"
    assert page.is_file()
    return copy, probe, page


@pytest.mark.parametrize("changed", [
    "builder/render/output.py",  # a renderer module no hand-kept list named
    "builder/core/urls.py",  # a shared module the renderer imports
    "builder/notes/parse.py",  # imported lazily, inside a function
    "templates/note.html",
])
def test_a_change_to_code_the_renderer_uses_makes_the_site_stale(project, changed):
    copy, probe, page = project
    assert probe() == {"stale": False, "heavy": [False, False]}
    before = page.stat().st_mtime_ns
    with (copy / changed).open("a", encoding="utf-8") as handle:
        handle.write("\n" if changed.endswith(".html") else "\n# an upgrade\n")
    assert probe("build")["stale"] is True
    assert page.stat().st_mtime_ns != before  # re-rendered
    assert probe()["stale"] is False


def test_a_change_to_code_the_renderer_does_not_use_leaves_the_site_alone(project):
    copy, probe, page = project
    with (copy / "builder/notes/grep.py").open("a", encoding="utf-8") as handle:
        handle.write("\n# not the renderer's business\n")
    assert probe() == {"stale": False, "heavy": [False, False]}


def test_a_module_that_starts_importing_another_brings_it_into_the_fingerprint(project, tmp_path):
    copy, probe, page = project
    assert (tmp_path / "site/.render-cache/imports.json").is_file()  # each module's imports, kept by stat
    with (copy / "builder/render/output.py").open("a", encoding="utf-8") as handle:
        handle.write("\n\ndef _later() -> None:\n    import builder.notes.grep  # noqa: F401\n")
    assert probe("build")["stale"] is True
    assert probe()["stale"] is False
    with (copy / "builder/notes/grep.py").open("a", encoding="utf-8") as handle:
        handle.write("\n# now the renderer's business\n")
    assert probe()["stale"] is True
