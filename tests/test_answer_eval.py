"""The verifier eval (docs/QUALITY.md, "Asking your notes: the answer check"): hand-written answers over
real sections of ../shared/corpora (tests/data/answer-eval.json names each section by its file and
heading line; the text is read here, never copied into the project). The check must accept at least
98 % of the correct answers and reject at least 98 % of the wrong ones, and each kind of wrong answer
is covered. No model: this runs in CI.

``python -m pytest tests/test_answer_eval.py -n 0 -s`` prints the figures.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from server.verify import check
from tests.conftest import PROJECT, SHARED, require_shared

DATA = PROJECT / "tests" / "data" / "answer-eval.json"
CORPORA = SHARED / "corpora"
WRONG_KINDS = {"wrong_n", "quote", "number", "uncited", "link"}
# the problems that catch each kind of wrong answer (a wrong [n] is caught by what its passage lacks)
CAUGHT_BY = {"wrong_n": {"unknown_source", "quote", "number"}, "quote": {"quote"}, "number": {"number"},
             "uncited": {"uncited"}, "link": {"link"}}


def section(path: Path, heading: str) -> str:
    """The text under ``heading`` (a whole line of the file) up to the next heading."""
    lines = path.read_text(encoding="utf-8").splitlines()
    text = []
    for line in lines[lines.index(heading) + 1:]:
        if re.match(r"#{1,6} ", line):
            break
        text.append(line)
    return "\n".join(text).strip()


@dataclass(frozen=True)
class Outcome:
    answer: str
    expect: str  # accept | reject
    kind: str | None  # a wrong answer's kind
    problems: tuple[str, ...]  # the kinds of problem the check found

    @property
    def right(self) -> bool:
        return (not self.problems) == (self.expect == "accept")


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    require_shared(CORPORA)
    data = json.loads(DATA.read_text(encoding="utf-8"))
    texts = {key: section(CORPORA / path, heading) for key, (path, heading) in data["passages"].items()}
    found = []
    for case in data["cases"]:
        passages = [texts[key] for key in case["passages"]]
        urls = [f"notes/{key}.html#section" for key in case["passages"]]
        problems = check(case["answer"], passages, urls)
        found.append(Outcome(case["answer"], case["expect"], case.get("kind"), tuple(p.kind for p in problems)))
    return found


def test_the_eval_has_forty_of_each_and_every_kind_of_wrong_answer(outcomes):
    expected = Counter(o.expect for o in outcomes)
    assert expected["accept"] >= 40 and expected["reject"] >= 40
    assert {o.kind for o in outcomes if o.expect == "reject"} == WRONG_KINDS


def test_the_check_accepts_98_percent_of_correct_and_rejects_98_percent_of_wrong_answers(outcomes):
    correct = [o for o in outcomes if o.expect == "accept"]
    wrong = [o for o in outcomes if o.expect == "reject"]
    accepted = sum(o.right for o in correct) / len(correct)
    rejected = sum(o.right for o in wrong) / len(wrong)
    by_reason = sum(bool(set(o.problems) & CAUGHT_BY[o.kind or ""]) for o in wrong) / len(wrong)
    print(f"\nanswer check: {len(correct)} correct answers, {accepted:.1%} accepted; {len(wrong)} wrong, "
          f"{rejected:.1%} rejected ({by_reason:.1%} for the planted reason)")
    for kind in sorted(WRONG_KINDS):
        of_kind = [o for o in wrong if o.kind == kind]
        print(f"  {kind}: {sum(o.right for o in of_kind)}/{len(of_kind)} rejected")
    misses = [f"{o.expect}: {o.answer} -> {o.problems}" for o in outcomes if not o.right]
    assert accepted >= 0.98, misses
    assert rejected >= 0.98, misses
