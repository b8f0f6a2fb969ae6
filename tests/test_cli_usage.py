"""Using the CLI and the API (what a first evening with them found, issue 37): the table of contents as one
tree, no abbreviated flags, marks that cannot be mistaken for text, an unknown tag refused like an unknown
source, a folder passed as the config, a plain GET of ``/mcp``, a tag filter that follows a note's tags."""

from __future__ import annotations

import subprocess
import sys

import pytest
from starlette.testclient import TestClient

from builder.cli import main
from builder.core.config import load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from server.app import create_app
from tests.conftest import PROJECT, write_config, write_note


@pytest.fixture(scope="module")
def portal(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-usage")
    notes = root / "notes"
    write_note(notes, "index.md", "# Rozcestník\n")
    write_note(notes, "cestovani/snezka.md", "---\ntags: [hory]\n---\n# Sněžka\n\nPowerbanka a čelovka.\n")
    write_note(notes, "cestovani/malajsie/penang.md", "# Penang\n")
    write_note(notes, "cestovani/vlaky.md", "# Vlaky\n")
    write_note(notes, "en/recipes/shakshuka.md", "# Shakshuka\n")
    write_note(notes, "en/tmux.md", "# tmux\n")
    write_note(notes, "linux/sluzba.md", "# Služba\n\nSekce [Unit] a [Service]: systemd jednotka pro zálohy.\n")
    config = load_config(write_config(root, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                            "sources:\n  notes:\n    folder: notes\n"))
    assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0
    return config


def test_toc_prints_one_tree_in_the_order_of_the_toc_page(portal, capsys):
    assert main(["toc", "--config", str(portal.path)]) == 0
    folders = [line for line in capsys.readouterr().out.splitlines() if line.endswith("/")]
    assert folders == ["./", "cestovani/", "cestovani/malajsie/", "en/", "en/recipes/", "linux/"]


@pytest.mark.parametrize("argv", [["build", "--ful"], ["search", "x", "--lim", "3"], ["toc", "--conf", "x.yaml"]])
def test_abbreviated_flags_are_refused(portal, argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv + (["--config", str(portal.path)] if "--conf" not in argv else []))
    assert exit_.value.code == 2 and "unrecognized arguments: " + argv[-2 if len(argv) > 2 else -1] in \
        capsys.readouterr().err


def test_marks_in_plain_output_never_look_like_the_note_s_own_brackets(portal):
    """Piped (no terminal): the marks are a pair the snippet does not hold; the literal [Unit] stays."""
    out = subprocess.run([sys.executable, "-m", "builder.cli", "search", "systemd jednotka", "--config",
                          str(portal.path)], capture_output=True, text=True, cwd=PROJECT, check=True).stdout
    snippet = next(line for line in out.splitlines() if "[Unit]" in line)
    assert "⟦systemd⟧ ⟦jednotka⟧" in snippet and "Sekce [Unit] a [Service]" in snippet


def test_marks_on_a_terminal_are_bold_unless_no_color(portal):
    import os
    import pty

    def shown(env: dict[str, str]) -> str:
        controller, terminal = pty.openpty()
        try:
            subprocess.run([sys.executable, "-m", "builder.cli", "search", "systemd", "--config", str(portal.path)],
                           stdout=terminal, stderr=subprocess.DEVNULL, cwd=PROJECT, env=env, check=True, timeout=60)
            os.close(terminal)
            terminal = -1
            out = b""
            while chunk := _read(controller):
                out += chunk
            return out.decode()
        finally:
            os.close(controller)
            if terminal != -1:
                os.close(terminal)

    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert "\x1b[1msystemd\x1b[22m" in shown(env)
    plain = shown({**env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain and "⟦systemd⟧" in plain


def _read(fd: int) -> bytes:
    import os

    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the writer's side is closed and drained
        return b""


def test_an_unknown_tag_is_refused_as_an_unknown_source_is(portal, capsys):
    client = TestClient(create_app(portal))
    for params in ({"q": "vlaky", "source": "nikde"}, {"q": "vlaky", "tag": "nikde"}):
        assert client.get("/api/search", params=params).status_code == 400
    assert client.get("/api/search", params={"q": "vlaky", "tag": "nikde"}).json() == {
        "error": "unknown tag 'nikde' (tags: hory)"}
    assert client.get("/api/search", params={"q": "powerbanka", "tag": "HORY"}).json()["hits"][0]["path"] == \
        "cestovani/snezka.md"
    assert main(["search", "vlaky", "--tag", "nikde", "--config", str(portal.path)]) == 2
    assert capsys.readouterr().err == "notes-portal: unknown tag 'nikde' (tags: hory)\n"


def test_a_folder_given_as_the_config_says_which_file_to_pass(portal, capsys):
    assert main(["status", "--config", str(portal.path.parent)]) == 2
    assert capsys.readouterr().err == (f"notes-portal: {portal.path.parent} is a folder, not a config file; "
                                       f"pass the file itself, e.g. --config {portal.path}\n")


def test_a_plain_get_of_the_mcp_endpoint_says_how_to_use_it_and_opens_no_stream(portal):
    import httpx2

    from tests.server_support import live_server

    with live_server(create_app(portal)) as (host, port):
        response = httpx2.get(f"http://{host}:{port}/mcp", timeout=10)  # curl's request: no Accept, no session
    assert response.status_code == 400 and response.headers["content-type"] == "application/json"
    assert response.json()["error"].startswith("this is the MCP endpoint (Streamable HTTP): an MCP client POSTs")


def test_a_tag_filter_follows_a_note_s_tags_as_they_change(tmp_path):
    """The tags' table (schema step 12) is kept by the index's triggers: an edit, a rename and a delete."""
    notes = tmp_path / "notes"
    write_note(notes, "a.md", "---\ntags: [Hory, čaj]\n---\n# A\n\nPowerbanka a čelovka.\n")
    config = load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                                "sources:\n  notes:\n    folder: notes\n"))

    def paths(tag: str) -> list[str] | int:
        assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0
        response = TestClient(create_app(config)).get("/api/search", params={"q": "powerbanka", "tag": tag})
        return [h["path"] for h in response.json()["hits"]] if response.status_code == 200 else response.status_code

    assert (paths("HORY"), paths("Čaj")) == (["a.md"], ["a.md"])
    write_note(notes, "a.md", "---\ntags: [more]\n---\n# A\n\nPowerbanka a čelovka.\n")
    assert (paths("hory"), paths("MORE")) == (400, ["a.md"])
    (notes / "a.md").rename(notes / "b.md")
    assert paths("more") == ["b.md"]
    (notes / "b.md").unlink()
    write_note(notes, "c.md", "# C\n\nNic.\n")  # the folder is not emptied (that needs --full)
    assert paths("more") == 400
