"""Asking the notes end to end, without a model: the sample notes in a real index, the answer provider a
stand-in HTTP server on 127.0.0.1 speaking each documented protocol (tests/answer_support.py: no model
can run here, and a stand-in is what makes its failures — 429, 500, a body that is not JSON, a timeout,
a server that is down — repeatable).

What is checked: the three protocols' requests and answers; a weak search answers ``not_in_notes``
without asking the model; a failed check gets exactly one repair request, then ``refused``; a provider
that cannot answer gives ``unavailable`` with the search's hits, never a 500; the key is read from the
environment and never printed; the CLI, ``/api/answer`` and the MCP tool give the same JSON; without
``answer:`` nothing of this shows.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from mcp import Client

from builder.cli import main
from server import read_commands
from server.mcp import make_server
from server.mcp_tools import tools
from builder.core.config import Config, load_config
from builder.core.errors import ConfigError
from builder.sync import build
from server.app import create_app
from tests.answer_support import ANTHROPIC_KEY, FakeChat, inventing, passages_of, quoting
from tests.conftest import copy_portal, free_port, quiet, write_config, write_sample_notes
from tests.render_support import parse_page, shown
from tests.server_support import fetch, live_server

QUESTION = "Na kterých pinech je převodník MAX485?"
OUTSIDE = "Kolik vody potřebuje letenka do Tokia?"  # weak: one note holds "vody", none the rest
ANSWER = "Podle poznámek: „Převodník MAX485 na pinech P0 a P1“ [1]."
SECTION = "notes/projekty/sauter-bus.html#zapojeni"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three sample notes, indexed (words only) and rendered once for the module."""
    home = tmp_path_factory.mktemp("ask")
    write_sample_notes(home / "notes")
    config = load_config(write_config(home, portal_yaml(home)))
    assert build(config, log=quiet(config)) == 0
    return home


def portal_yaml(home: Path, answer: str = "") -> str:
    return (f"index: {home}/data/index.sqlite\nsite:\n  output: {home}/site\nembedding:\n  provider: none\n"
            f"sources:\n  notes:\n    folder: {home}/notes\n{answer}")


def configured(home: Path, tmp_path: Path, answer: str) -> Config:
    """A config over the module's index with this ``answer:`` section."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    return load_config(write_config(tmp_path, portal_yaml(home, answer)))


@pytest.fixture
def anthropic_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_ANSWER_KEY", ANTHROPIC_KEY)


def ask_json(capsys: pytest.CaptureFixture[str], config: Config, question: str, *args: str) -> dict[str, Any]:
    """``notes-portal ask --json``; its exit code is 3 when the provider failed, else 0."""
    code = main(["ask", question, "--json", *args, "--config", str(config.path)])
    data: dict[str, Any] = json.loads(capsys.readouterr().out)
    assert code == (3 if data["status"] == "unavailable" else 0), data["status"]
    return data


# ---------------------------------------------------------------- the three protocols

@pytest.mark.parametrize("protocol", ["openai", "ollama", "anthropic"])
def test_each_protocol_answers_with_a_checked_citation(protocol, home, tmp_path, capsys, anthropic_key):
    with FakeChat(protocol) as chat:
        data = ask_json(capsys, configured(home, tmp_path, chat.yaml()), QUESTION)
    assert data["status"] == "answered"
    assert data["answer"] == ANSWER
    assert data["citations"] == [{"n": 1, "sentence": 1, "url": SECTION, "span": [0, 35], "marks": [0],
                                  "link": f"{SECTION}:~:text=P%C5%99evodn%C3%ADk%20MAX485%20na%20pinech",
                                  "quote": "Převodník MAX485 na pinech P0 a P1", "verified": True}]
    assert data["sources"][0]["text"][0:35] == "Převodník MAX485 na pinech P0 a P1."  # the span the check matched
    assert data["sources"][0] == {"n": 1, "url": SECTION, "title": "Sauter Bus", "heading": "Sauter Bus > Zapojení",
                                  "text": "Převodník MAX485 na pinech P0 a P1."}
    assert data["problems"] == []
    [request] = chat.requests
    body = request["body"]
    assert request["path"] == {"openai": "/v1/chat/completions", "ollama": "/api/chat",
                               "anthropic": "/v1/messages"}[protocol]
    assert body["model"] == "test-chat:1"
    messages = body["messages"] if protocol == "anthropic" else body["messages"][1:]
    assert [m["role"] for m in messages] == ["user"]
    assert passages_of(messages)[1] == "Převodník MAX485 na pinech P0 a P1."  # the passage as sent
    assert messages[0]["content"].endswith(f"Question: {QUESTION}")
    if protocol == "ollama":
        assert body["stream"] is False
    if protocol == "anthropic":
        assert request["headers"]["x-api-key"] == ANTHROPIC_KEY
        assert request["headers"]["anthropic-version"] == "2023-06-01"
        assert "Write in the language of the question, with the passage's own words" in body["system"]
    else:
        assert body["messages"][0]["role"] == "system"
        assert "authorization" not in request["headers"]  # no api_key_env: no key sent


def test_the_openai_key_is_read_from_the_environment_and_sent_as_bearer(home, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MY_CHAT_KEY", "sk-local-777")
    with FakeChat("openai") as chat:
        data = ask_json(capsys, configured(home, tmp_path, chat.yaml(extra="  api_key_env: MY_CHAT_KEY\n")),
                        QUESTION)
    assert data["status"] == "answered"
    assert chat.requests[0]["headers"]["authorization"] == "Bearer sk-local-777"


# ---------------------------------------------------------------- what the pipeline decides

def test_a_question_outside_the_notes_is_not_in_notes_without_asking_the_model(home, tmp_path, capsys):
    with FakeChat("ollama") as chat:
        data = ask_json(capsys, configured(home, tmp_path, chat.yaml()), OUTSIDE)
    assert data == {"schema": "notes-portal/1", "command": "ask", "status": "not_in_notes", "answer": "",
                    "citations": [], "sources": [], "problems": []}
    assert chat.requests == []


def test_an_invented_quote_gets_one_repair_request_then_is_refused(home, tmp_path, capsys):
    with FakeChat("ollama", inventing) as chat:
        config = configured(home, tmp_path, chat.yaml())
        data = ask_json(capsys, config, QUESTION)
        assert main(["ask", QUESTION, "--config", str(config.path)]) == 0
    assert data["status"] == "refused"
    assert data["answer"] == "" and data["citations"] == []
    assert data["problems"] == [{"kind": "quote", "sentence": 1, "message": "sentence 1 quotes 'toto v žádné "
                                 "poznámce není napsáno', which is not word for word in [1]"}]
    assert len(chat.requests) == 4  # two asks, each the answer and one repair, never a third request
    repair = chat.requests[1]["body"]["messages"]
    assert [m["role"] for m in repair] == ["system", "user", "assistant", "user"]
    assert repair[3]["content"].startswith("Your answer cannot be shown, because the check of it against the "
                                           "passages found:\n- sentence 1 quotes 'toto v žádné poznámce není")
    assert capsys.readouterr().out == (
        "No answer: the model’s answer did not pass the check against your notes, so it is not shown.\n"
        "  - sentence 1 quotes 'toto v žádné poznámce není napsáno', which is not word for word in [1]\n")


def test_a_repaired_answer_is_shown(home, tmp_path, capsys):
    def uncited_first(system: str, messages: list[dict[str, str]]) -> str:
        if len(messages) == 1:
            return "Převodník MAX485 je na pinech P0 a P1."  # no [n]
        return quoting(system, messages)

    with FakeChat("openai", uncited_first) as chat:
        config = configured(home, tmp_path, chat.yaml())
        data = ask_json(capsys, config, QUESTION)
        assert main(["ask", QUESTION, "--config", str(config.path)]) == 0
    assert data["status"] == "answered" and data["answer"] == ANSWER
    assert "- sentence 1 cites no passage: Převodník MAX485 je na pinech P0 a P1." in \
        chat.requests[1]["body"]["messages"][-1]["content"]
    assert capsys.readouterr().out == (f"{ANSWER}\n  sentence 1 [1]: «Převodník MAX485 na pinech P0 a P1.»\n"
                                       f"[1] Sauter Bus > Zapojení  {SECTION}\n")


def test_the_model_saying_the_passages_do_not_answer_is_not_in_notes(home, tmp_path, capsys):
    with FakeChat("ollama", lambda system, messages: "NOT_IN_NOTES") as chat:
        data = ask_json(capsys, configured(home, tmp_path, chat.yaml()), QUESTION)
    assert data["status"] == "not_in_notes" and data["answer"] == "" and len(chat.requests) == 1
    assert [s["url"] for s in data["sources"]] == [SECTION]  # what was sent, for the record


# ---------------------------------------------------------------- a provider that cannot answer

UNAVAILABLE = {
    "429": "{who} is busy (429 Too Many Requests); try again later",
    "500": "{who} answered HTTP 500: {error}",
    "nonjson": "{who} answered with a body that is not JSON",
    "slow": "{who} did not answer within 0.3 s",
    "cut": "{protocol}: the answer was cut off at 1024 tokens",
}


@pytest.mark.parametrize("fail", sorted(UNAVAILABLE))
@pytest.mark.parametrize("protocol", ["openai", "ollama", "anthropic"])
def test_a_failing_provider_is_unavailable_with_the_search_hits(protocol, fail, home, tmp_path, capsys,
                                                                anthropic_key):
    with FakeChat(protocol) as chat:
        chat.fail = fail
        data = ask_json(capsys, configured(home, tmp_path, chat.yaml(timeout_s=0.3)), QUESTION)
    message = UNAVAILABLE[fail].format(who=f"{protocol} at {chat.url}", protocol=protocol,
                                       error="Internal server error")
    assert data["status"] == "unavailable" and data["answer"] == "" and data["citations"] == []
    assert data["problems"] == [{"kind": "provider", "sentence": 0, "message": message}]
    assert data["search"]["hits"][0]["url"] == SECTION
    assert len(chat.requests) == 1  # no repair asked of a provider that failed


def test_a_provider_that_is_down_is_unavailable(home, tmp_path, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    config = configured(home, tmp_path, f"answer:\n  provider: openai\n  url: {url}\n  model: m\n  timeout_s: 2\n")
    data = ask_json(capsys, config, QUESTION)
    assert data["status"] == "unavailable"
    assert data["problems"][0]["message"] == f"openai at {url} cannot be reached (connection refused)"
    assert main(["ask", QUESTION, "--config", str(config.path)]) == 3  # as a build with a source down
    assert capsys.readouterr().out == (
        f"No answer: the answer provider is unavailable. The search results still work.\n"
        f"  - openai at {url} cannot be reached (connection "
        f"refused)\nSearch results:\n  Sauter Bus > Zapojení  {SECTION}\n")


def test_the_anthropic_key_comes_from_the_environment_and_is_never_shown(home, tmp_path, capsys, monkeypatch):
    with FakeChat("anthropic") as chat:
        config = configured(home, tmp_path, chat.yaml())
        monkeypatch.delenv("TEST_ANSWER_KEY", raising=False)
        missing = ask_json(capsys, config, QUESTION)
        monkeypatch.setenv("TEST_ANSWER_KEY", "sk-wrong-key-4242")
        wrong = ask_json(capsys, config, QUESTION)
    assert missing["problems"][0]["message"] == "anthropic: environment variable TEST_ANSWER_KEY is not set"
    assert wrong["status"] == "unavailable"
    assert wrong["problems"][0]["message"] == f"anthropic at {chat.url} answered HTTP 401: invalid x-api-key: [key]"
    assert "sk-wrong-key-4242" not in json.dumps(wrong)
    assert len(chat.requests) == 1  # the missing key sent nothing


# ---------------------------------------------------------------- HTTP and MCP

@pytest.fixture
def served(home: Path, tmp_path: Path) -> Iterator[tuple[FakeChat, tuple[str, int]]]:
    with FakeChat("ollama") as chat:
        config = configured(home, tmp_path, chat.yaml() + "server:\n  api_key: ask-key-1\n")
        with live_server(create_app(config)) as address:
            yield chat, address


def get_json(address: tuple[str, int], path: str, key: str | None = "ask-key-1") -> tuple[int, dict[str, Any]]:
    import http.client

    conn = http.client.HTTPConnection(*address, timeout=20)
    try:
        conn.request("GET", path, headers={"X-API-Key": key} if key else {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def test_api_answer_gives_the_cli_json_behind_the_same_key(served, home, tmp_path, capsys):
    chat, address = served
    status, body = get_json(address, "/api/answer?q=" + quote(QUESTION))
    assert status == 200
    cli = ask_json(capsys, configured(home, tmp_path / "cli", chat.yaml()), QUESTION)
    assert body == {k: v for k, v in cli.items() if k not in ("schema", "command")}
    assert get_json(address, "/api/answer?q=" + quote(QUESTION), key=None) == (
        401, {"error": "missing or wrong API key (X-API-Key, Authorization: Bearer, or sign in at /auth)"})
    assert get_json(address, "/api/answer") == (400, {"error": "parameter q is required"})
    assert get_json(address, "/api/answer?q=x&source=nope") == (400, {"error": "unknown source 'nope'"})


def test_api_answer_with_the_provider_failing_is_a_200_with_the_hits(served):
    chat, address = served
    chat.fail = "500"
    status, body = get_json(address, "/api/answer?q=" + quote(QUESTION))
    assert status == 200 and body["status"] == "unavailable"
    assert [hit["url"] for hit in body["search"]["hits"]] == [SECTION]
    assert body["search"]["query"] == QUESTION


def test_the_search_page_asks_without_javascript(served):
    chat, address = served
    page = fetch_text(address, "/search?ask=1&q=" + quote(QUESTION))
    link = f"{SECTION}:~:text=P%C5%99evodn%C3%ADk%20MAX485%20na%20pinech"
    assert ('<p class="answer-text">Podle poznámek: „Převodník MAX485 na pinech P0 a P1“ <a class="cite" '
            f'href="{link}" title="Sauter Bus › Zapojení" aria-describedby="evidence-1-1" '
            'data-evidence="evidence-1-1">[1]</a>.</p>') in page
    assert (f'<li value="1"><a class="answer-source" href="{SECTION}">Sauter Bus › Zapojení</a>\n'
            '<blockquote class="answer-evidence" id="evidence-1-1"><span class="answer-evidence-label">sentence 1:'
            '</span> Převodník MAX485 na pinech P0 a P1.</blockquote></li>') in page
    chat.reply = inventing
    refused = fetch_text(address, "/search?ask=1&q=" + quote(QUESTION))
    assert ('<p class="answer-status">No answer: the model’s answer did not pass the check against your notes, '
            'so it is not shown.</p>') in refused
    assert "<li>sentence 1 quotes &#39;toto v žádné poznámce není napsáno&#39;, which is not word for word in " \
           "[1]</li>" in refused
    assert "toto v žádné poznámce" not in refused.split('class="answer-problems"')[0]  # nothing else of it
    chat.fail = "429"
    busy = fetch_text(address, "/search?ask=1&q=" + quote(QUESTION))
    assert "No answer: the answer provider is unavailable. The search results still work." in busy
    assert 'class="hit-title" href="notes/projekty/sauter-bus.html?hl=' in busy  # the hits are still there
    plain = fetch_text(address, "/search?q=" + quote(QUESTION))
    assert 'class="answer' not in plain and 'class="ask-button"' in plain


def fetch_text(address: tuple[str, int], path: str) -> str:
    import http.client

    conn = http.client.HTTPConnection(*address, timeout=20)
    try:
        conn.request("GET", path, headers={"X-API-Key": "ask-key-1"})
        response = conn.getresponse()
        assert response.status == 200
        return response.read().decode()
    finally:
        conn.close()


def quote(text: str) -> str:
    from urllib.parse import quote as escaped

    return escaped(text)


def test_the_mcp_tool_ask_returns_the_cli_json(home, tmp_path, capsys):
    with FakeChat("openai") as chat:
        config = configured(home, tmp_path, chat.yaml())
        cli = ask_json(capsys, config, QUESTION)

        server = make_server(config, read_commands.for_command(config))
        assert server.instructions.endswith('"not_in_notes" means the notes do not say.')

        async def talk() -> Any:
            async with Client(server) as client:
                names = [t.name for t in (await client.list_tools()).tools]
                return names, await client.call_tool("ask", {"question": QUESTION})

        names, result = anyio.run(talk)
    assert names == ["search", "toc", "grep", "read_note", "status", "ask"]
    assert result.structured_content == cli


# ---------------------------------------------------------------- without answer: nothing shows

def test_without_answer_there_is_no_ask_anywhere(home, tmp_path, capsys):
    config = configured(home, tmp_path, "")
    none = configured(home, tmp_path / "none", "answer:\n  provider: none\n  model: ignored\n")
    assert config.answer == none.answer and not config.answer.enabled
    assert list(tools(config)) == ["search", "toc", "grep", "read_note", "status"]
    assert main(["ask", QUESTION, "--config", str(config.path)]) == 2
    assert capsys.readouterr().err == ("notes-portal: no answer provider is configured: add an answer: section to "
                                       "the config (see README, Asking your notes); search needs none\n")
    with live_server(create_app(config)) as address:
        assert fetch(address, "/api/answer?q=x").status == 404
        plain = fetch(address, "/api/search?q=" + quote(QUESTION)).body
        page = fetch(address, "/search?q=" + quote(QUESTION)).body
    with FakeChat("ollama") as chat, live_server(create_app(configured(home, tmp_path / "on", chat.yaml()))) as a:
        asking = fetch(a, "/api/search?q=" + quote(QUESTION)).body
    assert without_took_ms(asking) == without_took_ms(plain)
    assert b"api/answer" not in page and b"Ask" not in page


def without_took_ms(body: bytes) -> dict[str, Any]:
    data = json.loads(body)
    del data["took_ms"]
    return data


def test_the_pages_differ_only_by_the_ask_attributes_of_their_search_forms(home, tmp_path):
    """Rendered with ``answer:``, every page's search form offers Ask; without it, the pages are what they
    would be had Ask never existed: the same pages less those two attributes (and the search page's Ask
    button and notice)."""
    copy = copy_portal(home, tmp_path / "copy")
    with FakeChat("ollama") as chat:
        (copy / "portal.yaml").write_text(portal_yaml(copy, chat.yaml()), encoding="utf-8")
        config = load_config(copy / "portal.yaml")
        assert build(config, log=quiet(config)) == 0
        notice = f"Ask sends your question and the passages it shows to ollama at {urlsplit(chat.url).netloc}."
        attributes = f' data-ask="{{root}}api/answer" data-ask-notice="{notice}"'
        search_page = ('<button type="submit" name="ask" value="1" class="ask-button">Ask</button>',
                       f'<p class="ask-notice">{notice}</p>')
    pages = sorted(p.relative_to(home / "site") for p in (home / "site").rglob("*.html"))
    assert pages == sorted(p.relative_to(copy / "site") for p in (copy / "site").rglob("*.html"))
    for page in pages:
        before = (home / "site" / page).read_text(encoding="utf-8")
        after = (copy / "site" / page).read_text(encoding="utf-8")
        root = "/" if page.name == "404.html" else "../" * (len(page.parts) - 1)
        forms = before.count('data-api="')
        assert forms >= 1 and after.count(attributes.format(root=root)) == forms, page
        after = after.replace(attributes.format(root=root), "")
        if page.name == "search.html":  # the search page has an Ask button and the notice under its form
            assert all(after.count(added) == 1 for added in search_page)
            after = after.replace(search_page[0], "").replace(search_page[1], "")
        assert shown(built_at(after)) == shown(built_at(before)), page  # the Ask panel's words: data
        parse_page(copy / "site" / page)  # still valid HTML5


def built_at(page: str) -> str:
    """The page without the time of its render."""
    return re.sub(r"<span>Built [^<]*</span>", "", page)


def test_an_empty_or_overlong_question_is_one_line(home, tmp_path, capsys):
    with FakeChat("ollama") as chat:
        config = configured(home, tmp_path, chat.yaml())
        assert main(["ask", "  ", "--config", str(config.path)]) == 2
        assert main(["ask", "x" * 501, "--config", str(config.path)]) == 2
    assert capsys.readouterr().err == ("notes-portal: the question is empty\n"
                                       "notes-portal: the question is longer than 500 characters\n")
    assert chat.requests == []


# ---------------------------------------------------------------- the config

@pytest.mark.parametrize(("section", "message"), [
    ("answer:\n  provider: gpt\n", "answer.provider: unknown provider 'gpt' (expected one of: openai, ollama, "
                                   "anthropic, none)"),
    ("answer:\n  provider: ollama\n", "answer.model: provider 'ollama' needs the model's exact name (e.g. "
                                      "qwen2.5:7b-instruct)"),
    ("answer:\n  provider: openai\n  model: m\n  url: localhost:8080\n",
     "answer.url: expected an http(s):// URL, got 'localhost:8080'"),
    ("answer:\n  provider: openai\n  model: m\n  api_key: sk-123\n",
     "answer.api_key: the key is never read from the config file: put it in an environment variable and name "
     "that variable in answer.api_key_env"),
    ("answer:\n  provider: openai\n  model: m\n  api_key_env: my key\n",
     "answer.api_key_env: expected the name of an environment variable (e.g. ANSWER_API_KEY), got 'my key'"),
    ("answer:\n  provider: anthropic\n  model: claude\n",
     "answer.api_key_env: provider 'anthropic' needs a key: name the environment variable that holds it "
     "(e.g. ANTHROPIC_API_KEY)"),
    ("answer:\n  provider: ollama\n  model: m\n  timeout_s: 0\n", "answer.timeout_s: must be at least 0.1, got 0"),
    ("answer:\n  provider: ollama\n  model: m\n  temperature: 0\n",
     "answer.temperature: unknown key (allowed: api_key_env, max_in_flight, model, provider, timeout_s, url)"),
])
def test_a_bad_answer_section_is_one_line_naming_the_key(section, message, home, tmp_path):
    path = write_config(tmp_path, portal_yaml(home, section))
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    line = str(raised.value)
    assert line.endswith(message) and line.startswith(f"{path}:") and "\n" not in line
    assert "sk-123" not in line


def test_the_answer_section_defaults(home, tmp_path):
    config = configured(home, tmp_path, "answer:\n  provider: ollama\n  model: qwen2.5:7b-instruct\n")
    assert (config.answer.url, config.answer.timeout_s, config.answer.api_key_env) == (
        "http://127.0.0.1:11434", 60.0, None)
    assert not os.environ.get("ANSWER_API_KEY")  # nothing of it leaks into the process
