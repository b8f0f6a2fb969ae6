"""The unit of failure is one note, one page, one request (issue 34): each defect a year of cron can
meet, and what must hold after it: the other notes build, and nothing unpublished stays public."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.core.config import Config, load_config
from tests.conftest import write_config, write_note
from tests.failure_support import ALIAS_BOMB, found, run



def portal(tmp_path: Path) -> Config:
    write_note(tmp_path / "notes", "verejne.md", "# Veřejné\n\nKrystalový oscilátor.\n")
    write_note(tmp_path / "notes", "osobni/koncept.md", "# Tajné\n\nDatamax smlouva\n")
    return load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                              "sources:\n  notes:\n    folder: notes\n"))






@pytest.mark.parametrize("text, warning", [
    ("---\ntitle: [broken\npublished: false # private\n---\n# Tajné\n\nDatamax smlouva\n",
     "notes: osobni/koncept.md: broken front matter at line 3, indexed from the body"),
    ("---\ntitle: Tajné\npublished: false\n\n# Tajné\n\nDatamax smlouva\n",
     "notes: osobni/koncept.md: front matter without its closing ---, indexed from the body"),
    (ALIAS_BOMB, "notes: osobni/koncept.md: front matter uses YAML aliases (*name), which are not read; not indexed"),
], ids=["broken-yaml-commented-flag", "unclosed-front-matter", "alias-bomb"])
def test_a_public_note_turned_unpublished_or_unreadable_leaves_the_site_and_search(tmp_path, text, warning):
    config = portal(tmp_path)
    page = config.site.output / "notes" / "osobni" / "koncept.html"
    assert run(config) == (0, []) and page.is_file() and found(config, "datamax") == 1
    write_note(tmp_path / "notes", "osobni/koncept.md", text)
    assert run(config) == (0, [warning])
    assert not page.exists() and found(config, "datamax") == 0
    assert found(config, "krystalovy") == 1 and (config.site.output / "notes" / "verejne.html").is_file()


OSC52 = "\x1b]52;c;cm0gLXJmIH4=\x07"  # a terminal's clipboard write
CLEAR = "\x1b[2J\r\u202e"  # clear the screen, return, override the direction


def test_control_characters_of_a_note_never_reach_the_terminal_or_the_log(tmp_path, capsys):
    from builder.cli import main

    name = f"osobni/zlo{CLEAR}.md"
    write_note(tmp_path / "notes", name, f"---\ntitle: Zlo{OSC52}\ntags: [x\n---\n# Zlo{OSC52}\n\n"
                                         f"Datamax {CLEAR}smlouva [chybí](nikde{OSC52}.md)\n")
    config = portal(tmp_path)
    code, warnings = run(config)
    assert code == 0 and len(warnings) == 2 and capsys.readouterr()  # a broken front matter, a broken link
    outputs = [config.log_path.read_text(encoding="utf-8")]
    for command in (["search", "datamax"], ["toc"], ["grep", "Datamax"], ["read", "notes", name],
                    ["status"], ["read", "notes", f"osobni/{OSC52}.md"]):
        main([*command, "--config", str(config.path)])
        captured = capsys.readouterr()
        outputs += [captured.out, captured.err]
    for output in outputs:
        assert not any(c in output for c in "\x1b\x07\r\u202e"), output
    every = "".join(outputs)
    assert "zlo\\u001b[2J\\u000d\\u202e.md" in every and "Zlo\\u001b]52;c;cm0gLXJmIH4=\\u0007" in every


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A built portal with an attachment, served by uvicorn on 127.0.0.1: (host, port)."""
    from server.app import create_app
    from tests.server_support import live_server

    root = tmp_path_factory.mktemp("served")
    (root / "notes").mkdir()
    (root / "notes" / "plan.pdf").write_bytes(b"%PDF-1.4\n" + bytes(range(256)) * 4)
    config = portal(root)
    write_note(root / "notes", "priloha.md", "# Příloha\n\n[plán](plan.pdf)\n")
    assert run(config)[0] == 0
    with live_server(create_app(config)) as address:
        yield address


def get(address: tuple[str, int], path: str, headers: dict[str, str]) -> tuple[int, bytes]:
    """A GET whose header values go out as Latin-1 bytes, as HTTP/1.1 sends them."""
    import http.client

    conn = http.client.HTTPConnection(*address, timeout=10)
    try:
        conn.request("GET", path, headers=headers)  # http.client encodes values as Latin-1
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("path", ["/notes/verejne.html", "/notes/plan.pdf"])
@pytest.mark.parametrize("value", ["bytes=²-", "bytes=-³", "bytes=1-¹", "bytes=²³-¹"])
def test_a_range_of_digits_that_are_not_ascii_is_ignored(served, path, value):
    """Byte 0xB2 of a header is "²" to a server, a digit to str.isdigit() and none to int()."""
    assert get(served, path, {"Range": value}) == get(served, path, {})


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(st.sampled_from("bytes=-, 0123456789¹²³¼ \t;"), max_size=20)
       | st.text(st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"), max_size=20))
def test_any_range_header_is_answered_without_a_server_error(served, value):
    status, _ = get(served, "/notes/plan.pdf", {"Range": value.strip(" \t")})
    assert status in (200, 206, 416)


def test_a_well_signed_webhook_body_nested_thousands_deep_is_400(tmp_path):
    from starlette.testclient import TestClient

    from server.app import create_app
    from tests.sync_support import SECRET, make_portal, signed

    config = make_portal(tmp_path).config
    body = b"[" * 2000 + b"]" * 2000
    response = TestClient(create_app(config)).post("/api/hooks/travel", content=body,
                                                   headers=signed("gitea", SECRET, body))
    assert (response.status_code, response.json()) == (400, {"error": "the body is not a JSON push payload"})
