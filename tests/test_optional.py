"""The portal runs without its optional Debian packages (issue 45): without the English–Czech dictionary, serve says
once that English questions are searched as typed, and searches (the browser tests without Chromium, and the
accessibility tests without npm's axe-core and Lighthouse, skip with the reason: conftest's ``unavailable``)."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import pytest

from tests.conftest import PROJECT, free_port, listens
from tests.render_support import build_and_render, make_config
from tests.sync_support import wait_for

pytestmark = pytest.mark.slow


def test_without_a_dictionary_serve_says_so_once_and_searches(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "caj.md").write_text("# Čaj\n\nČaj s mlékem.\n", encoding="utf-8")
    config = make_config(tmp_path, {"notes": notes}, extra="search:\n  dictionary: false\n")
    build_and_render(config)
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "builder.cli", "serve", "--no-mcp", "--port", str(port),
                               "--config", str(config.path)], cwd=PROJECT, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: server.poll() is None and listens(server.pid, port), timeout=60, step=0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/search?q=tea+with+milk") as response:
            assert response.status == 200
    finally:
        server.terminate()
        _, err = server.communicate(timeout=30)
    said = [line for line in err.splitlines() if "English questions" in line]
    assert said == ["notes-portal: English questions are searched as typed, not also in Czech (no dictionary: "
                    "apt-get install dict-freedict-eng-ces, or search.dictionary in the config)"]
