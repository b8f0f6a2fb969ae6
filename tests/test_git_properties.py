"""Random pushes to a git source, history rewritten now and then: after every build the index holds
exactly the notes of the pushed revision, and the site is the one a fresh build of it makes."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.git_support import Upstream, assert_index_is_exactly, git, make_config, open_index, run
from tests.render_support import site_snapshot

pytestmark = pytest.mark.slow

NAMES = ("a.md", "b.md", "sub/c.md", "sub/d.md", "x/y/e.md")
TITLES = ("Alfa", "Beta", "Gama")

text = st.builds(lambda title, word, link: f"# {title}\n\nslovo{word} a [[{link}]].\n\n## Oddíl\n\ntext {word}\n",
                 st.sampled_from(TITLES), st.integers(0, 3), st.sampled_from(("a", "c", "Beta")))
op = st.one_of(st.tuples(st.just("write"), st.sampled_from(NAMES), text),
               st.tuples(st.just("move"), st.sampled_from(NAMES), st.sampled_from(NAMES)),
               st.tuples(st.just("remove"), st.sampled_from(NAMES), st.none()))
push = st.tuples(st.lists(op, min_size=1, max_size=4), st.integers(0, 4))  # 0: rewind one commit first, force-push


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(pushes=st.lists(push, min_size=1, max_size=4))
def test_every_build_holds_exactly_the_pushed_notes(pushes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        up = Upstream(root, "repo")
        up.write("index.md", "# Úvod\n\n[[a]]\n")
        up.commit("start")
        up.push()
        (root / "portal").mkdir()
        config = make_config(root / "portal", f"repo:\n  git: {up.url}\n")
        assert run(config) == 0
        for number, (ops, rewind) in enumerate(pushes, start=1):
            force = rewind == 0 and int(git("rev-list", "--count", "HEAD", cwd=up.work)) > 1
            if force:
                git("reset", "--quiet", "--hard", "HEAD~1", cwd=up.work)
            for kind, name, arg in ops:
                _apply(up, kind, name, arg)
            git("add", "--all", cwd=up.work)
            if git("status", "--porcelain", cwd=up.work).strip() or force:
                git("commit", "--quiet", "--allow-empty", "-m", f"push {number}", cwd=up.work)
            up.push(force=force)
            assert run(config) == 0, pushes[:number]
            conn = open_index(config)
            try:
                assert_index_is_exactly(conn, "repo", up.notes())
            finally:
                conn.close()
            fresh = root / f"fresh{number}"
            fresh.mkdir()
            clean = make_config(fresh, f"repo:\n  git: {up.url}\n")
            assert run(clean) == 0
            assert site_snapshot(config.site.output) == site_snapshot(clean.site.output), pushes[:number]


def _apply(up: Upstream, kind: str, name: str, arg: object) -> None:
    """One edit in the working copy (committed with ``git add --all``); a move or removal of a note that
    is not there is skipped, and the start page stays."""
    path = up.work / name
    if kind == "write":
        up.write(name, str(arg))
    elif kind == "remove" and path.exists() and name != "index.md":
        path.unlink()
    elif kind == "move" and path.exists() and name != arg and not (up.work / str(arg)).exists():
        (up.work / str(arg)).parent.mkdir(parents=True, exist_ok=True)
        path.rename(up.work / str(arg))
