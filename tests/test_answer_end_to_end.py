"""The attack eval through the whole pipeline, as a probe runs it: the question searched in the example notes
built with the real model, the sections found sent to an OpenAI-compatible stand-in model that answers with
the case's answer (its citations renumbered to where the case's sections came in the prompt), the answer
checked and shown or not by ``/api/answer``. Cases whose sections the search did not send are counted
apart (the model could not have cited them), and so are the laundering and wrong-number cases whose two
sections the index keeps in one chunk (there, citing either is right). No wrong answer may be shown; the
faithful ones' rates are printed (``-s``) beside the direct check's (tests/test_answer_eval.py).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from urllib.parse import quote

import pytest

from server.app import create_app
from tests.answer_support import FakeChat, passages_of
from tests.conftest import PROJECT, write_config
from tests.server_support import live_server

pytestmark = pytest.mark.slow

DATA = PROJECT / "tests" / "data" / "answer-attacks.json"
CITE = re.compile(r"\[(\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")


def section_text(path: str, heading: str | None) -> str:
    lines = (PROJECT / path).read_text(encoding="utf-8").splitlines()
    if lines and lines[0] == "---":
        lines = lines[lines.index("---", 1) + 1:]
    start = 0 if heading is None else lines.index(heading) + 1
    body = []
    for line in lines[start:]:
        if re.match(r"#{1,6} ", line):
            break
        body.append(line)
    return "\n".join(body).strip()


def squeezed(text: str) -> str:
    return " ".join(text.split())


def sent_as(section: str, sent: dict[int, str]) -> int | None:
    """The number of the prompt's passage that holds ``section`` (its longest line, whitespace aside)."""
    line = squeezed(max(section.splitlines(), key=len))
    return next((n for n, text in sent.items() if line and line in squeezed(text)), None)


def test_the_attack_eval_through_ask(examples_portal, tmp_path):
    data = json.loads(DATA.read_text(encoding="utf-8"))
    cases = [c for c in data["cases"] if all(data["passages"][k][0].startswith("examples/") for k in c["passages"])]
    sections = {k: section_text(*data["passages"][k]) for c in cases for k in c["passages"]}
    current: dict = {}
    unsent: list[str] = []
    merged: list[str] = []  # two of the case's sections in one passage: citing the "wrong" one is right

    def model(system: str, messages: list[dict[str, str]]) -> str:
        sent = passages_of(messages)
        numbers = [sent_as(sections[k], sent) for k in current["case"]["passages"]]
        if None in numbers:
            unsent.append(current["case"]["answer"])
            return "NOT_IN_NOTES"
        if len(set(numbers)) < len(numbers):
            merged.append(current["case"]["answer"])
        return CITE.sub(lambda m: "".join(f"[{numbers[int(k) - 1]}]" if 0 < int(k) <= len(numbers) else f"[{k}]"
                                          for k in re.split(r"\s*[,;]\s*", m.group(1))), current["case"]["answer"])

    outcomes: Counter[tuple[str, str]] = Counter()
    shown_wrong = []
    with FakeChat("openai", model) as chat:
        config_text = (examples_portal.config.path.read_text(encoding="utf-8")
                       + chat.yaml(timeout_s=10, extra="  max_in_flight: 8\n"))
        config = write_config(examples_portal.config.path.parent, config_text, name="asking.yaml")
        from builder.core.config import load_config

        with live_server(create_app(load_config(config))) as address:
            import http.client

            for case in cases:
                current["case"] = case
                before = len(unsent)
                conn = http.client.HTTPConnection(*address, timeout=60)
                conn.request("GET", "/api/answer?q=" + quote(case.get("question") or case["answer"]))
                body = json.loads(conn.getresponse().read())
                conn.close()
                assert "status" in body, body
                status = "unsent" if len(unsent) > before or body["status"] == "not_in_notes" else body["status"]
                if case["answer"] in merged and case["type"] in ("laundering", "wrong_n"):
                    status = "merged"
                outcomes[(case["type"], status)] += 1
                if case["expect"] == "reject" and status == "answered":
                    shown_wrong.append(case["answer"])
    print()
    for kind in sorted({k for k, _ in outcomes}):
        row = {status: count for (k, status), count in outcomes.items() if k == kind}
        print(f"  {kind}: {row}")
    assert shown_wrong == []
    faithful = sum(n for (k, s), n in outcomes.items() if k.startswith(("faithful", "english")) and s == "answered")
    assert faithful > 0  # the pipeline shows answers at all
