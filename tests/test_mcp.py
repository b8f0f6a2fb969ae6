"""The MCP server as agents reach it: ``notes-portal mcp`` as a subprocess spoken to over stdio with the
SDK's own client, and ``/mcp`` of the real web app on 127.0.0.1 (uvicorn), with and without the key.

Every tool's answer is compared with the CLI's ``--json`` for the same question (they come from one
function, :mod:`server.read_commands`); errors are exact one-line messages; ``read_note`` shows the disk
as it is now, before a build has seen it. Queries are embedded by the stand-in Ollama server, so the
vector half runs in both processes.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from starlette.routing import Route

from builder.cli import main
from builder.core.config import Config, load_config
from builder.sync import build
from server.app import KEY_MISSING, create_app
from server.sync_api import sync_routes
from tests.conftest import (
    PROJECT,
    FakeOllama,
    copy_config,
    free_port,
    ollama_yaml,
    quiet,
    write_config,
    write_note,
    write_sample_notes,
)
from tests.server_support import live_server

KEY = "agent-key-123"
TOOLS = ["search", "toc", "grep", "read_note", "status"]
T = TypeVar("T")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The three sample notes plus a file that is not a note, an unpublished note and an excluded folder;
    built once for the module with the stand-in Ollama, which answers the queries of every test."""
    home = tmp_path_factory.mktemp("mcp")
    notes_dir = write_sample_notes(home / "notes")
    write_note(notes_dir, "projekty/capture.txt", "0x7e 0xA1 RS485 frame\n")
    write_note(notes_dir, "projekty/tajne.md", "---\npublished: false\n---\n# Tajné\n\nRS485 heslo hunter2\n")
    write_note(notes_dir, "private/denik.md", "# Deník\n\nRS485 soukromé\n")
    (home / "outside.md").write_text("# Mimo\n\nRS485 mimo zdroj\n", encoding="utf-8")
    with FakeOllama() as ollama:
        path = write_config(home, f"index: data/index.sqlite\n{ollama_yaml(ollama.url)}"
                                  "sources:\n  notes:\n    folder: notes\n    exclude: [\"private/**\"]\n")
        config = load_config(path)
        assert build(config, log=quiet(config)) == 0
        yield home


@pytest.fixture
def portal(template: Path, tmp_path: Path, notes_dir: Path) -> Config:
    """A copy of the template (its notes are ``notes_dir``)."""
    return copy_config(template, tmp_path)


def over_stdio(config: Config, talk: Callable[[Client], Awaitable[T]], errlog: Path) -> T:
    """``talk`` to ``notes-portal mcp`` started as a subprocess (the worktree's code, as a user runs it)."""
    params = StdioServerParameters(command=sys.executable, cwd=str(PROJECT),
                                   args=["-m", "builder.cli", "mcp", "--config", str(config.path)])

    async def run() -> T:
        with errlog.open("w") as err:
            async with Client(stdio_client(params, errlog=err), read_timeout_seconds=60) as client:
                return await talk(client)

    return anyio.run(run)


def cli_json(capsys: pytest.CaptureFixture[str], config: Config, *args: str) -> dict[str, Any]:
    """What ``notes-portal ARGS --json`` prints (the exit code is not the point here)."""
    main([*args, "--json", "--config", str(config.path)])
    return json.loads(capsys.readouterr().out)


QUESTIONS: list[tuple[str, dict[str, Any], list[str]]] = [  # tool, its arguments, the same as CLI arguments
    ("search", {"query": "převodník zapojení", "limit": 5}, ["search", "převodník zapojení", "--limit", "5"]),
    ("search", {"query": "čaj s mlékem", "mode": "vector", "source": "notes"},
     ["search", "čaj s mlékem", "--mode", "vector", "--source", "notes"]),
    ("toc", {"folder": "recepty"}, ["toc", "--folder", "recepty"]),
    ("toc", {}, ["toc"]),
    ("grep", {"pattern": "RS48[0-9]", "max_results": 100}, ["grep", "RS48[0-9]", "--max-results", "100"]),
    ("read_note", {"source": "notes", "path": "projekty/sauter-bus.md", "section": "zapojeni"},
     ["read", "notes", "projekty/sauter-bus.md", "--section", "zapojeni"]),
    ("status", {}, ["status"]),
    ("search", {"query": "kondenzvané mléko", "mode": "bm25", "as_typed": True},
     ["search", "kondenzvané mléko", "--mode", "bm25", "--as-typed"]),
]


@pytest.mark.slow
def test_stdio_lists_the_tools_and_each_answers_as_the_cli_does(portal, capsys, tmp_path):
    async def talk(client: Client) -> tuple[Any, list[Any]]:
        listed = await client.list_tools()
        return listed, [await client.call_tool(name, args) for name, args, _ in QUESTIONS]

    listed, results = over_stdio(portal, talk, tmp_path / "mcp.err")
    assert [t.name for t in listed.tools] == TOOLS
    assert all(t.annotations.read_only_hint and not t.annotations.open_world_hint for t in listed.tools)
    search = listed.tools[0]
    assert search.input_schema == {
        "type": "object", "additionalProperties": False, "required": ["query"],
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 500,
                      "description": "What to look for, in any language; plain text, never query syntax."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10,
                      "description": "How many hits (sections) to return."},
            "source": {"type": "string", "enum": ["notes"], "description": "Only this source (default: every source)."},
            "tag": {"type": "string", "minLength": 1, "maxLength": 1000,
                    "description": "Only notes with this tag (any case, diacritics as in the notes)."},
            "mode": {"type": "string", "enum": ["hybrid", "bm25", "vector"], "default": "hybrid",
                     "description": "hybrid: words and meaning (the default, best in general); bm25: words only; "
                                    "vector: meaning only."},
            "as_typed": {"type": "boolean", "default": False,
                         "description": "Search the words as typed: a word no note holds is not replaced by the "
                                        "close word the notes hold (see 'corrected' in the answer)."}}}
    assert {t.name: t.input_schema["required"] for t in listed.tools} == {
        "search": ["query"], "toc": [], "grep": ["pattern"], "read_note": ["source", "path"], "status": []}
    assert "weak: true means nothing confident matched" in search.description
    assert "about a minute older than the files" in search.description

    for (name, _, cli_args), result in zip(QUESTIONS, results, strict=True):
        assert not result.is_error, (name, result.content)
        assert result.structured_content == cli_json(capsys, portal, *cli_args), name
        assert json.loads(result.content[0].text) == result.structured_content

    hits = results[0].structured_content["hits"]
    assert (hits[0]["path"], hits[0]["anchor"], hits[0]["url"]) == (
        "projekty/sauter-bus.md", "zapojeni", "notes/projekty/sauter-bus.html#zapojeni")
    assert hits[0]["provenance"].startswith("words #1, meaning #")  # both halves ran in the subprocess
    grep = results[4].structured_content
    assert [(m["path"], m["line"]) for m in grep["matches"]] == [("projekty/capture.txt", 1),
                                                                 ("projekty/sauter-bus.md", 3)]
    assert results[5].structured_content["text"] == "5: ## Zapojení\n6: \n7: Převodník MAX485 na pinech P0 a P1."


def _error(message: str, command: str) -> dict[str, Any]:
    return {"schema": "notes-portal/1", "command": command, "error": message, "exit_code": 2}


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("search", {"query": ""}, "query must not be empty"),
    ("search", {}, "query is required"),
    ("search", {"query": "čaj", "limit": 101}, "limit must be a whole number from 1 to 100, got 101"),
    ("search", {"query": "čaj", "limit": "10"}, "limit must be a whole number from 1 to 100, got '10'"),
    ("search", {"query": "čaj", "limit": True}, "limit must be a whole number from 1 to 100, got True"),
    ("search", {"query": "čaj", "mode": "fuzzy"}, "mode must be one of hybrid, bm25, vector, got 'fuzzy'"),
    ("search", {"query": "čaj", "source": "secret"}, "unknown source 'secret' (configured: notes)"),
    ("search", {"query": "x" * 501}, "query is longer than 500 characters"),
    ("search", {"query": "čaj", "paths": "x"},
     "search has no argument 'paths' (its arguments: query, limit, source, tag, mode, as_typed)"),
    ("status", {"verbose": True}, "status has no argument 'verbose' (it takes none)"),
    ("grep", {"pattern": "(unclosed"},
     "invalid regular expression '(unclosed': missing ), unterminated subpattern at position 0"),
    ("grep", {"pattern": "x", "max_results": 0}, "max_results must be a whole number from 1 to 500, got 0"),
    ("toc", {"folder": "../.."}, "folder '../..' must not have empty, '.' or '..' parts"),
    ("read_note", {"source": "notes"}, "path is required"),
    ("read_note", {"source": "notes", "path": "../portal.yaml"},
     "path '../portal.yaml' must not have empty, '.' or '..' parts"),
    ("read_note", {"source": "notes", "path": "recepty/../../outside.md"},
     "path 'recepty/../../outside.md' must not have empty, '.' or '..' parts"),
    ("read_note", {"source": "notes", "path": "/etc/passwd"},
     "path '/etc/passwd' must be relative to the source, not absolute"),
    ("read_note", {"source": "notes", "path": ".git/config"},
     "path '.git/config' has a hidden part (dot-files are never notes)"),
    ("read_note", {"source": "notes", "path": "projekty/odkaz.md"},
     "notes:projekty/odkaz.md leads outside the source (a symbolic link)"),
    ("read_note", {"source": "notes", "path": "projekty/nakouknuti.md"},
     "notes:projekty/nakouknuti.md is a link to private/denik.md, which is outside the source's scope"),
    ("read_note", {"source": "notes", "path": "private/denik.md"},
     "notes:private/denik.md is outside the source's scope (its paths, include and exclude in the config)"),
    ("read_note", {"source": "notes", "path": "projekty/capture.txt"},
     "notes:projekty/capture.txt is outside the source's scope (its paths, include and exclude in the config)"),
    ("read_note", {"source": "notes", "path": "projekty/tajne.md"},
     "notes:projekty/tajne.md is not published (published: false in its front matter)"),
    ("read_note", {"source": "notes", "path": "recepty/zverejneny.md"},
     "notes:recepty/zverejneny.md is not published (the index holds it as published: false)"),
    ("read_note", {"source": "notes", "path": "recepty/nic.md"}, "notes:recepty/nic.md: no such note"),
    ("read_note", {"source": "notes", "path": "recepty/teh-tarik.md", "section": "Omáčka"},
     "notes:recepty/teh-tarik.md has no section 'Omáčka' (its anchors: teh-tarik, suroviny, postup)"),
    ("read_note", {"source": "notes", "path": "recepty/teh-tarik.md", "start_line": 99},
     "start_line 99 is past the end of the note (its last line is 17)"),
]


def test_bad_arguments_paths_out_of_scope_and_unpublished_notes_are_errors(portal, notes_dir, capsys, tmp_path,
                                                                           quiet_log):
    (notes_dir / "projekty/odkaz.md").symlink_to(tmp_path / "outside.md")
    (notes_dir / "projekty/nakouknuti.md").symlink_to(notes_dir / "private/denik.md")
    # indexed as unpublished; on disk published since, but the index has not seen it yet
    write_note(notes_dir, "recepty/zverejneny.md", "---\npublished: false\n---\n# Brzy\n")
    assert build(portal, log=quiet_log(portal)) == 0
    write_note(notes_dir, "recepty/zverejneny.md", "# Brzy\n\nUž zveřejněno.\n")

    async def talk(client: Client) -> list[Any]:
        results = [await client.call_tool(name, args) for name, args, _ in BAD_CALLS]
        return [*results, await client.call_tool("delete_note", {"path": "x"})]

    *results, unknown_tool = over_stdio(portal, talk, tmp_path / "mcp.err")
    for (name, _, message), result in zip(BAD_CALLS, results, strict=True):
        command = "read" if name == "read_note" else name
        assert (result.is_error, [c.text for c in result.content], result.structured_content) == (
            True, [message], _error(message, command)), name
    assert (unknown_tool.is_error, unknown_tool.content[0].text) == (
        True, "unknown tool 'delete_note' (tools: search, toc, grep, read_note, status)")
    # the CLI says the same, as JSON too
    assert cli_json(capsys, portal, "read", "notes", "../portal.yaml") == _error(
        "path '../portal.yaml' must not have empty, '.' or '..' parts", "read")
    assert (tmp_path / "mcp.err").read_text() == ""  # nothing went wrong inside the server


def test_grep_never_shows_an_unpublished_note_or_a_file_out_of_scope(portal, notes_dir, tmp_path, quiet_log):
    write_note(notes_dir, "recepty/zverejneny.md", "---\npublished: false\n---\n# Brzy\n")
    assert build(portal, log=quiet_log(portal)) == 0
    # published on disk since, but until a build has seen it, it stays hidden
    write_note(notes_dir, "recepty/zverejneny.md", "# Brzy\n\nRS485 už brzy\n")
    # published when indexed, unpublished on disk since (the index has not seen it)
    write_note(notes_dir, "projekty/sauter-bus.md", "---\npublished: false\n---\n# Sauter Bus\n\nRS485 proxy\n")

    async def talk(client: Client) -> Any:
        return await client.call_tool("grep", {"pattern": "RS485|hunter2|mimo zdroj"})

    result = over_stdio(portal, talk, tmp_path / "mcp.err")
    assert [(m["path"], m["text"]) for m in result.structured_content["matches"]] == [
        ("projekty/capture.txt", "0x7e 0xA1 RS485 frame")]


def test_read_note_shows_the_disk_before_the_index_has_seen_it(portal, notes_dir, capsys, tmp_path):
    write_note(notes_dir, "projekty/sauter-bus.md", """
        # Sauter Bus

        RS485 proxy, která odposlouchává a upravuje provoz sběrnice. Běží na micro:bitu.

        ## Zapojení

        Převodník MAX3485 na pinech P8 a P9 (přepojeno dnes).
        """)
    write_note(notes_dir, "projekty/novy.md", "# Nový\n\nJeště nezaindexováno.\n")

    async def talk(client: Client) -> list[Any]:
        return [await client.call_tool("read_note", {"source": "notes", "path": "projekty/sauter-bus.md",
                                                     "section": "Zapojení"}),
                await client.call_tool("search", {"query": "MAX485", "mode": "bm25"}),
                await client.call_tool("read_note", {"source": "notes", "path": "projekty/novy.md"})]

    read, search, new = (r.structured_content for r in over_stdio(portal, talk, tmp_path / "mcp.err"))
    assert read == {
        "schema": "notes-portal/1", "command": "read", "source": "notes", "path": "projekty/sauter-bus.md",
        "url": "notes/projekty/sauter-bus.html#zapojeni",
        "section": {"level": 2, "text": "Zapojení", "anchor": "zapojeni"},
        "line_start": 5, "line_end": 7, "total_lines": 7, "truncated": False, "next_line": None,
        "index": "changed since the last build",
        "text": "5: ## Zapojení\n6: \n7: Převodník MAX3485 na pinech P8 a P9 (přepojeno dnes)."}
    assert "<mark>MAX485</mark>" in search["hits"][0]["snippet"]  # the index still has the old text
    assert (new["index"], new["text"]) == ("not indexed yet", "1: # Nový\n2: \n3: Ještě nezaindexováno.")
    assert cli_json(capsys, portal, "read", "notes", "projekty/sauter-bus.md", "--section", "Zapojení") == read


# ---------------------------------------------------------------- Streamable HTTP in the web app


@contextmanager
def serving(config: Config, **options: Any) -> Iterator[str]:
    """The real web app with /mcp (``options`` for ``create_app``), served by uvicorn on 127.0.0.1 in
    a thread (lifespan on: the MCP session manager runs in it); yields the base URL."""
    app = create_app(config, host="127.0.0.1", **options)
    with live_server(app, lifespan="on") as (host, port):
        yield f"http://{host}:{port}"


def over_http(url: str, talk: Callable[[Client], Awaitable[T]], headers: dict[str, str] | None = None) -> T:
    async def run() -> T:
        async with (httpx2.AsyncClient(headers=headers, timeout=30) as http,
                    Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client):
            return await talk(client)

    return anyio.run(run)


def post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """One raw JSON-RPC POST to /mcp (as any client sends it)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("POST", "/mcp", body=json.dumps(body), headers={
        "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
    response = conn.getresponse()
    answer = (response.status, {k.lower(): v for k, v in response.getheaders()}, response.read())
    conn.close()
    return answer


LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}


def test_http_without_a_key_answers_as_the_cli_does(portal, capsys):
    with serving(portal) as url:
        async def talk(client: Client) -> tuple[list[str], list[Any]]:
            names = [t.name for t in (await client.list_tools()).tools]
            return names, [await client.call_tool(name, args) for name, args, _ in QUESTIONS]

        names, results = over_http(url, talk)
        rebinding = post(url, LIST_TOOLS, {"Host": "evil.example"})
    assert names == TOOLS
    for (name, _, cli_args), result in zip(QUESTIONS, results, strict=True):
        assert not result.is_error, (name, result.content)
        assert result.structured_content == cli_json(capsys, portal, *cli_args), name
    assert rebinding[0] == 421  # served on loopback: a page cannot reach the tools through DNS rebinding


def test_http_search_shares_the_apps_searcher_and_its_vectors_in_memory(portal):
    """An MCP search in the web app goes through the app's searcher: the same hits as /api/search,
    and the vectors in memory are loaded by MCP searches alone (once loaded, they answer the KNN)."""
    query = "převodník na sběrnici"
    with serving(portal, min_vectors=1) as url:
        async def talk(client: Client) -> Any:
            return (await client.call_tool("search", {"query": query})).structured_content

        first = over_http(url, talk)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not httpx2.get(f"{url}/api/health").json()["vector_memory"]["loaded"]:
            time.sleep(0.05)
        assert httpx2.get(f"{url}/api/health").json()["vector_memory"]["loaded"] is True
        second = over_http(url, talk)
        api = httpx2.get(f"{url}/api/search", params={"q": query}).json()
    assert first["hits"] and [(h["path"], h["anchor"]) for h in second["hits"]] == [
        (h["path"], h["anchor"]) for h in api["hits"]] == [(h["path"], h["anchor"]) for h in first["hits"]]


FIRST_REQUEST = """
import json, sys
from starlette.testclient import TestClient
from builder.core.config import load_config
from server.app import create_app

config = load_config(sys.argv[1])
app = create_app(config, host="testserver")
with TestClient(app) as client:
    searched = client.get("/api/search", params={"q": "powerbanka", "mode": "bm25"}).status_code
    before = "mcp" in sys.modules
    listed = client.post("/mcp", json=json.loads(sys.argv[2]),
                         headers={"Accept": "application/json, text/event-stream"}).json()
print(json.dumps([searched, before, "mcp" in sys.modules, [t["name"] for t in listed["result"]["tools"]]]))
"""


def test_the_sdk_is_loaded_by_the_first_mcp_request_not_before(portal):
    """A server whose users only browse and search never imports the MCP SDK (about 50 MB resident);
    the first MCP request loads it and is answered."""
    proc = subprocess.run([sys.executable, "-c", FIRST_REQUEST, str(portal.path), json.dumps(LIST_TOOLS)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [200, False, True, TOOLS]


def test_http_with_a_key_needs_it(portal, tmp_path):
    portal.path.write_text(portal.path.read_text() + f"server:\n  api_key: {KEY}\n")
    config = load_config(portal.path)
    app = create_app(config)
    own_secrets = {r.path for r in sync_routes(config, None)}  # a hook secret or the sync key
    queried = sorted(r.path for r in app.routes if isinstance(r, Route)
                     and r.path not in ("/auth", "/{path:path}", *own_secrets))
    assert queried == ["/api/health", "/api/search", "/mcp", "/search"]
    with serving(config) as url:
        without = post(url, LIST_TOOLS, {})
        wrong = post(url, LIST_TOOLS, {"X-API-Key": "wrong"})
        header = post(url, LIST_TOOLS, {"X-API-Key": KEY})

        async def talk(client: Client) -> Any:
            return await client.call_tool("search", {"query": "powerbanka", "mode": "bm25"})

        bearer = over_http(url, talk, {"Authorization": f"Bearer {KEY}"})
    for status, headers, body in (without, wrong):
        assert (status, headers["www-authenticate"], json.loads(body)) == (401, "Bearer", {"error": KEY_MISSING})
    assert header[0] == 200 and [t["name"] for t in json.loads(header[2])["result"]["tools"]] == TOOLS
    assert [h["path"] for h in bearer.structured_content["hits"]] == ["cestovani/snezka.md"]


def test_the_app_serves_mcp_unless_told_not_to(portal):
    """``create_app`` mounts /mcp itself (nothing is injected); ``mcp=False`` (``serve --no-mcp``) leaves it out."""
    def paths(**options: Any) -> set[str]:
        return {r.path for r in create_app(portal, **options).routes if isinstance(r, Route)}

    assert "/mcp" in paths() and "/mcp" not in paths(mcp=False) and "/api/search" in paths(mcp=False)


@pytest.mark.slow
def test_serve_mounts_mcp_unless_told_not_to(portal, tmp_path):
    """``notes-portal serve`` as a user starts it: /mcp answers a POST; with --no-mcp it does not."""
    for flags, expected in (([], 200), (["--no-mcp"], 405)):  # 405: only the site (GET) is there
        port = free_port()
        with subprocess.Popen([sys.executable, "-m", "builder.cli", "serve", "--port", str(port), *flags,
                               "--config", str(portal.path)], cwd=PROJECT, env={**os.environ},
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as proc:
            try:
                status = _first_answer(f"http://127.0.0.1:{port}")
            finally:
                proc.terminate()
                proc.wait(timeout=10)
            assert status == expected, proc.stderr.read().decode() if proc.stderr else ""


def _first_answer(url: str) -> int:
    deadline = time.monotonic() + 30
    while True:
        try:
            return post(url, LIST_TOOLS, {})[0]
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
