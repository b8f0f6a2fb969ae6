"""Fast paths give the reference path's answers."""

from __future__ import annotations

import random

from builder.sources import Scope, _glob_regex, matches

PATTERNS = ["**", "*.md", "notes/**", "notes", "**/inbox/**", "*.markdown", "a/*/c.md", "drafts", "x?y.md",
            "projekty/**", "**/*.txt", "deep/**/q.md"]
PATHS = ["a.md", "notes/x.md", "notes/inbox/y.md", "drafts/z.md", "a/b/c.md", "a/b/d/c.md", "projekty/p.markdown",
         "xzy.md", "x/inbox/a.md", "deep/drafts/q.md", "deep/x/y/q.md", "n.txt", "notes/readme.txt"]


def reference_wants(scope: Scope, path: str) -> bool:
    """The scope rule one pattern at a time, as the README states it."""
    return (any(_glob_regex(p).match(path) for p in scope.paths)
            and any(matches(p, path) for p in scope.include)
            and not any(matches(p, path) for p in scope.exclude))


def test_the_compiled_scope_decides_like_the_pattern_by_pattern_rule():
    rng = random.Random(3)
    decided = 0
    for _ in range(2000):
        scope = Scope(tuple(rng.sample(PATTERNS, rng.randint(1, 3))), tuple(rng.sample(PATTERNS, rng.randint(1, 3))),
                      tuple(rng.sample(PATTERNS, rng.randint(0, 3))))
        for path in PATHS:
            assert scope.wants(path) == reference_wants(scope, path), (scope, path)
            decided += scope.wants(path)
    assert 2000 < decided < 2000 * len(PATHS)  # both answers occur
