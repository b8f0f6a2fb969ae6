"""The answer check's eval (docs/ANSWERS.md): hand-written answers over real sections of the example notes and
of ../shared/corpora, right ones and wrong ones of every kind, in Czech, Slovak and English.

Two files: tests/data/answer-eval.json (the first verifier eval: correct answers and five kinds of wrong
ones) and tests/data/answer-attacks.json (719 answers by writers who did not see the check's code: faithful
quotes, paraphrases and English answers about Czech and Slovak notes, and eight kinds of attack; and the
probe set, answers written against the code's leaks and their faithful counterparts). Each names
its sections by file and heading line; the text is read here, never copied into the project. The check must
accept **no** wrong answer of any kind, and keep accepting the faithful ones it accepts today (the floors
below are the measured rates less a little, of the writers' answers: a probe's faithful answers were written
to pass and are left out of them; the issue's targets, 90 % and 80 %, are not met yet: see
docs/ANSWERS.md). No model: this runs in CI, with FreeDict's English–Czech dictionary.

``python -m pytest tests/test_answer_eval.py -n 0 -s`` prints the figures by type.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from server.passage_text import PassageText as Passage
from server.verify import check
from tests.conftest import PROJECT, SHARED, require_dictionary, require_shared

DATA = PROJECT / "tests" / "data"
CORPORA = SHARED / "corpora"
WRONG = {"wrong_n", "quote", "number", "uncited", "link", "negation_flip", "invented_fact", "other_entity",
         "number_word", "laundering", "ellipsis", "splice", "general_knowledge"}
# What the check accepts of the faithful answers, less a margin for an honest change of rule (measured:
# docs/ANSWERS.md). A change that loses more of them must say why there: a translation keeping the verbal
# prefix of the passage's word (vychladnout is not zchladnout) lost 4 of 14 English answers about Czech notes.
FLOORS = {"faithful": 0.51, "faithful_quote": 0.78, "faithful_paraphrase": 0.55, "english_about_czech": 0.10}


def note_file(path: str) -> Path:
    return PROJECT / path if path.startswith("examples/") else CORPORA / path


def section(path: str, heading: str | None) -> Passage:
    """The text under ``heading`` (a whole line of the file; None: before the first heading) up to the next
    heading, with the note's title and the heading it is sent under, as the answer pipeline sends a passage."""
    text = note_file(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    if lines and lines[0] == "---":
        lines = lines[lines.index("---", 1) + 1:]
    start = 0 if heading is None else lines.index(heading) + 1
    body = []
    for line in lines[start:]:
        if re.match(r"#{1,6} ", line):
            break
        body.append(line)
    title = re.search(r"^title:\s*(.+)$", text, re.M) or re.search(r"^# (.+)$", text, re.M)
    return Passage("\n".join(body).strip(), title.group(1).strip().strip("\"'") if title else "",
                   (heading or "").lstrip("# ").strip())


@dataclass(frozen=True)
class Outcome:
    answer: str
    expect: str  # accept | reject
    kind: str  # a faithful answer's type, or a wrong answer's kind
    problems: tuple[str, ...]  # the kinds of problem the check found
    set: str = ""  # tune-a, tune-b, blind-c, probe-d; "" in the first eval

    @property
    def right(self) -> bool:
        return (not self.problems) == (self.expect == "accept")


@pytest.fixture(scope="module")
def outcomes() -> list[Outcome]:
    require_shared(CORPORA)
    require_dictionary()
    from builder.core.config import DEFAULT_DICTIONARY
    from server import translate

    dictionary = translate.load(DEFAULT_DICTIONARY)
    found = []
    for name in ("answer-eval.json", "answer-attacks.json"):
        data = json.loads((DATA / name).read_text(encoding="utf-8"))
        texts = {key: section(path, heading) for key, (path, heading) in data["passages"].items()}
        for case in data["cases"]:
            passages = [texts[key] for key in case["passages"]]
            urls = [f"notes/{i}.html#section" for i in range(len(passages))]
            problems = check(case["answer"], passages, urls, dictionary)
            kind = case.get("type") or case.get("kind") or "faithful"
            found.append(Outcome(case["answer"], case["expect"], kind, tuple(p.kind for p in problems),
                                 case.get("set", "")))
    return found


def test_the_eval_has_500_cases_and_every_kind(outcomes):
    kinds = Counter(o.kind for o in outcomes)
    assert len(outcomes) >= 500
    assert {o.kind for o in outcomes if o.expect == "reject"} == WRONG
    assert all(kinds[kind] >= 10 for kind in WRONG) and kinds["english_about_czech"] >= 50


def test_no_wrong_answer_of_any_kind_is_accepted(outcomes):
    print()
    for kind in sorted({o.kind for o in outcomes}):
        of_kind = [o for o in outcomes if o.kind == kind]
        verb = "rejected" if of_kind[0].expect == "reject" else "accepted"
        sets = ", ".join(f"{name or 'first eval'} {sum(o.right for o in of_kind if o.set == name)}/"
                         f"{sum(o.set == name for o in of_kind)}" for name in sorted({o.set for o in of_kind}))
        print(f"  {kind}: {sum(o.right for o in of_kind)}/{len(of_kind)} {verb} ({sets})")
    accepted = [o.answer for o in outcomes if o.expect == "reject" and not o.problems]
    assert accepted == []


@pytest.mark.parametrize("kind", sorted(FLOORS))
def test_faithful_answers_are_accepted_at_least_as_often_as_measured(outcomes, kind):
    of_kind = [o for o in outcomes if o.expect == "accept" and (kind == "faithful" or o.kind == kind)
               and not o.set.startswith("probe")]
    rate = sum(o.right for o in of_kind) / len(of_kind)
    print(f"\n  {kind}: {rate:.1%} of {len(of_kind)} accepted")
    assert rate >= FLOORS[kind]
