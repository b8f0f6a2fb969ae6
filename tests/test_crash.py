"""Crash anywhere, the fast subset: a build SIGKILLed at chosen moments over a small generated corpus
must converge after one recovery build (``tests/crash_harness.py`` holds the harness and runs the
full set over a real corpus).

Each case changes the notes, dry-runs the build to number its project calls, kills the same build at
the middle of the targeted phase, runs ``notes-portal build`` once and checks the index (integrity,
FTS5, vectors), leftover files and the site against a clean build of the same notes.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests import crash_harness as crash
from tests.conftest import FakeOllama, ollama_yaml
from tests.crash_notes import make_corpus

pytestmark = pytest.mark.slow

NONE = "embedding:\n  provider: none\n"
COPY_STATIC = "fn:builder.render.output.copy_static"  # every page written; stale ones not yet removed
SITE_PAGES = "fn:builder.render.site._site_pages"  # note pages journaled and being written

# A case that fails on the write path is marked with the defect and how it shows in the failure
# (strict: a fix makes it pass, and then asks for the mark to go). None is marked now: the last two
# (backlinks of pages a killed --full render left, a touched note's date) were fixed on main.


class KnownDefect(AssertionError):
    """The case failed the way its xfail reason says; any other failure is a plain AssertionError."""


def case(name: str, kind: str, target: str, ops: tuple[str, ...], after: tuple[str, ...] = (),
         vectors: bool = False, defect: tuple[str, str] | None = None) -> object:
    marks = [pytest.mark.xfail(strict=True, raises=KnownDefect, reason=defect[0])] if defect else []
    return pytest.param(kind, target, ops, after, vectors, defect, id=name, marks=marks)


CASES = [  # kind, target (phase or fn:function), changes before the kill, changes after it
    case("control-no-kill", "incr", "none", ("add", "delete")),
    case("control-touch-no-kill", "incr", "none", ("touch", "edit")),
    case("first-build-scan", "first", "scan", ("add", "edit")),
    case("incr-mid-transaction", "incr", "index-tx", ("edit", "delete")),
    case("incr-between-index-and-render", "incr", "between", ("add", "unpublish")),
    case("incr-mid-render", "incr", "render", ("edit", "delete")),
    case("incr-render-then-note-deleted", "incr", COPY_STATIC, ("add", "edit"), ("delete-added",)),
    case("full-mid-index", "full", "index", ("republish", "edit")),
    case("full-swap", "full", "swap", ("delete", "add")),
    case("full-mid-render", "full", "render", ("edit", "republish")),
    case("full-render-after-note-pages", "full", SITE_PAGES, ("edit",)),
    case("vectors-mid-embed-transaction", "incr", "embed-tx", ("edit", "add"), vectors=True),
]


@pytest.mark.parametrize("kind, target, ops, after, vectors, defect", CASES)
def test_build_converges_after_a_kill(tmp_path: Path, kind: str, target: str, ops: tuple[str, ...],
                                      after: tuple[str, ...], vectors: bool, defect: tuple[str, str] | None) -> None:
    make_corpus(tmp_path / "notes", count=15)
    with FakeOllama() as ollama:
        harness = crash.Harness(tmp_path, random.Random(5), ollama_yaml(ollama.url) if vectors else NONE, vectors)
        harness.mutator.apply("unpublish", 0)  # a note to publish again
        if kind != "first":
            harness.build()
        moment = harness.moment(1, kind, target, ops, after)
    if target.startswith("fn:"):
        assert moment.function == target[3:]
    else:
        assert moment.phase == target or target == "none", f"killed in {moment.phase}, not {target}"
    failure = f"killed at {moment.n}/{moment.events} in {moment.function}: {'; '.join(moment.reasons)}"
    if moment.reasons and defect and defect[1] in failure:
        raise KnownDefect(failure)
    assert moment.passed, failure
