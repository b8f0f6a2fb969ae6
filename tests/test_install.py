"""A non-editable install works away from the checkout: a wheel built from the project, installed into a fresh
virtual environment, builds the example notes and serves a note page, mermaid and a search (issue 45: only
``builder`` and ``server`` used to be packaged, so every install that was not an editable checkout had no
templates and rendered nothing)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import IN_CI, PROJECT, free_port, listens
from tests.sync_support import wait_for

pytestmark = pytest.mark.slow

SHIPPED = ("builder", "server", "templates", "pyproject.toml", "setup.py", "README.md")


def _wheel(tmp_path: Path) -> Path:
    """The project's wheel, built from a copy of what ships (the checkout is never written into)."""
    source = tmp_path / "src"
    source.mkdir()
    for name in SHIPPED:
        src = PROJECT / name
        if src.is_dir():
            shutil.copytree(src, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, source / name)
    dist = tmp_path / "dist"
    # without build isolation where this Python has setuptools and wheel: no index needed to build
    isolation = ["--no-build-isolation"] if _has_setuptools() else []
    command = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(dist), str(source)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    (wheel,) = dist.glob("notes_portal-*.whl")
    return wheel


def _has_setuptools() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in ("setuptools", "wheel"))


def _get(port: int, path: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, "", error.read().decode()


def test_a_wheel_in_a_fresh_venv_builds_and_serves_the_examples(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python, portal = venv / "bin/python", venv / "bin/notes-portal"
    # the dependencies from pip's cache or the index (CI reaches PyPI); the wheel itself from its file
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", "--only-binary", ":all:", str(wheel)],
                             capture_output=True, text=True, timeout=600)
    if install.returncode != 0:
        reason = f"pip could not install the wheel's dependencies (offline?): {install.stderr.strip()[-300:]}"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(reason)
    # the installed package, not this checkout: its templates lie in site-packages
    where = subprocess.run([str(python), "-c", "import builder.core.templates as t; print(t.TEMPLATE_DIR)"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout.strip()
    assert where.startswith(str(venv)) and where.endswith("site-packages/builder/templates"), where

    examples = tmp_path / "examples"
    shutil.copytree(PROJECT / "examples", examples, ignore=shutil.ignore_patterns(".portal"))
    config = examples / "portal.yaml"
    # the bundled model is the [local] extra, not installed here: words only
    config.write_text(config.read_text(encoding="utf-8").replace("provider: local ", "provider: none  "),
                      encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("NOTES_PORTAL_CONFIG", "PYTHONPATH")}
    built = subprocess.run([str(portal), "build", "--config", str(config)], capture_output=True, text=True,
                           cwd=tmp_path, env=env, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "not found in search path" not in built.stdout + built.stderr
    note = (examples / ".portal/site/notes/recepty/teh-tarik.html").read_text(encoding="utf-8")
    assert "Teh Tarik" in note and note.startswith('<!doctype html>\n<html lang="cs">')  # the examples: Czech

    port = free_port()
    server = subprocess.Popen([str(portal), "serve", "--no-mcp", "--port", str(port), "--config", str(config)],
                              cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: server.poll() is None and listens(server.pid, port), timeout=60, step=0.1)
        status, kind, page = _get(port, "/notes/recepty/teh-tarik.html")
        assert (status, kind.split(";")[0]) == (200, "text/html")
        assert "Teh Tarik" in page and "Odkazují sem" in page
        status, kind, script = _get(port, "/static/vendor/mermaid/mermaid.min.js")
        assert status == 200 and len(script) > 1_000_000  # the diagram library came with the install
        status, _, results = _get(port, "/search?q=teh+tarik")
        assert status == 200 and 'href="notes/recepty/teh-tarik.html' in results
    finally:
        server.terminate()
        server.wait(timeout=30)
