"""An answer provider's faults are bounded (server/chat.py, server/answer.py): ``timeout_s`` is a deadline for
the whole call, however slowly the provider sends; a response is read up to 256 KB and no further; the
repair request sends back a bounded excerpt of the failed answer; a server answers at most
``max_in_flight`` questions at once, the next one ``busy`` at once, while search goes on. The provider is a
stand-in on 127.0.0.1 speaking the real protocols (tests/answer_support.py: no model runs here).

Each bound's measure is far from the unbounded behaviour it replaces (a drip of an answer takes ~50 s;
the bound is 1 s), so the time asserted is generous: these check the bound, not a speed.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from builder.cli import main
from builder.core.config import Config, load_config
from builder.sync import build
from server.answer import MAX_ECHO, MAX_PROBLEMS
from server.app import create_app
from tests.answer_support import FakeChat, quoting
from tests.conftest import quiet, write_config, write_sample_notes
from tests.server_support import live_server

QUESTION = "Na jakých pinech je převodník MAX485?"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("faults")
    write_sample_notes(home / "notes")
    config = load_config(write_config(home, portal_yaml(home)))
    assert build(config, log=quiet(config)) == 0
    return home


def portal_yaml(home: Path, answer: str = "") -> str:
    return (f"index: {home}/data/index.sqlite\nsite:\n  output: {home}/site\nembedding:\n  provider: none\n"
            f"sources:\n  notes:\n    folder: {home}/notes\n{answer}")


def configured(home: Path, tmp_path: Path, answer: str) -> Config:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return load_config(write_config(tmp_path, portal_yaml(home, answer)))


def ask(capsys: pytest.CaptureFixture[str], config: Config) -> tuple[dict, float]:
    started = time.monotonic()
    main(["ask", QUESTION, "--json", "--config", str(config.path)])
    return json.loads(capsys.readouterr().out), time.monotonic() - started


@pytest.mark.parametrize("fail", ["drip", "drip_headers"])
@pytest.mark.parametrize("protocol", ["openai", "ollama"])
def test_a_provider_that_drips_its_answer_is_unavailable_at_the_deadline(fail, protocol, home, tmp_path, capsys):
    with FakeChat(protocol) as chat:
        chat.fail = fail
        data, took = ask(capsys, configured(home, tmp_path, chat.yaml(timeout_s=1)))
    assert data["status"] == "unavailable"
    assert data["problems"] == [{"kind": "provider", "sentence": 0,
                                 "message": f"{protocol} at {chat.url} did not answer within 1 s"}]
    assert took < 4  # the drip would take ~30 s (one byte every 0.1 s): the deadline, not each read, ended it
    assert chat.sent < 40  # and the client stopped reading then


def test_a_response_larger_than_the_bound_is_unavailable_and_not_read_on(home, tmp_path, capsys):
    with FakeChat("openai") as chat:
        chat.fail = "huge"
        data, _ = ask(capsys, configured(home, tmp_path, chat.yaml(timeout_s=10)))
    assert data["status"] == "unavailable"
    assert data["problems"][0]["message"] == (f"openai at {chat.url} answered with more than 256 KB; nothing past "
                                              "it was read")


def test_the_repair_request_sends_back_a_bounded_excerpt(home, tmp_path, capsys):
    """A model that writes 100 KB of invented sentences gets one repair request: its answer echoed at most
    MAX_ECHO characters, at most MAX_PROBLEMS problems listed."""
    long = " ".join(f"Věta {i} je „vymyšlená citace číslo {i}“ [1]." for i in range(2500))

    def rambling(system, messages):
        return long

    with FakeChat("openai", rambling) as chat:
        data, _ = ask(capsys, configured(home, tmp_path, chat.yaml()))
        second = chat.requests[1]["body"]["messages"]
    assert data["status"] == "refused" and len(chat.requests) == 2
    assert len(long) > 100_000
    echoed, repair = second[2], second[3]
    assert echoed["role"] == "assistant" and len(echoed["content"]) == MAX_ECHO + len(" […]")
    listed = [line for line in repair["content"].splitlines() if line.startswith("- ")]
    assert len(listed) == MAX_PROBLEMS + 1 and listed[-1] == f"- and {2500 - MAX_PROBLEMS} more"
    assert len(json.dumps(chat.requests[1]["body"])) < 12_000


# ---------------------------------------------------------------- answers in flight


@pytest.fixture
def hanging(home: Path, tmp_path: Path) -> Iterator[tuple[FakeChat, tuple[str, int]]]:
    with FakeChat("ollama") as chat:
        chat.fail = "hang"
        config = configured(home, tmp_path, chat.yaml(timeout_s=30, extra="  max_in_flight: 2\n"))
        with live_server(create_app(config)) as address:
            yield chat, address


def get(address: tuple[str, int], path: str) -> tuple[int, dict, dict]:
    import http.client

    conn = http.client.HTTPConnection(*address, timeout=40)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(response.read())
    finally:
        conn.close()


def test_answers_past_the_cap_are_busy_at_once_and_search_goes_on(hanging):
    chat, address = hanging
    held: list[tuple[int, dict, dict]] = []
    waiting = [threading.Thread(target=lambda: held.append(get(address, "/api/answer?q=" + quote(QUESTION))))
               for _ in range(2)]
    for thread in waiting:
        thread.start()
    deadline = time.monotonic() + 10
    while len(chat.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(chat.requests) == 2  # both slots wait on the provider
    status, headers, body = get(address, "/api/answer?q=" + quote(QUESTION))
    assert (status, headers.get("retry-after"), body["status"]) == (503, "5", "busy")
    assert len(chat.requests) == 2  # the busy one asked nothing
    status, _, found = get(address, "/api/search?q=" + quote("MAX485"))
    assert status == 200 and found["hits"]
    chat.release()
    for thread in waiting:
        thread.join(40)
    assert sorted(s for s, _, _ in held) == [200, 200]
    chat.fail = None
    chat.reply = quoting
    status, _, body = get(address, "/api/answer?q=" + quote(QUESTION))
    assert (status, body["status"]) == (200, "answered")  # the slots came back


def test_max_in_flight_is_validated(home, tmp_path):
    from builder.core.config import ConfigError

    with pytest.raises(ConfigError, match=r"answer\.max_in_flight: must be at least 1, got 0"):
        configured(home, tmp_path, "answer:\n  provider: ollama\n  model: m\n  max_in_flight: 0\n")
