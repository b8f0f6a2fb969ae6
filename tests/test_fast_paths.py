"""Fast paths give the reference path's answers."""

from __future__ import annotations

import random

from builder.sources import Scope, _glob_regex, matches

PATTERNS = ["**", "*.md", "notes/**", "notes", "**/inbox/**", "*.markdown", "a/*/c.md", "drafts", "x?y.md",
            "projekty/**", "**/*.txt", "deep/**/q.md", "x**.md"]
PATHS = ["a.md", "notes/x.md", "notes/inbox/y.md", "drafts/z.md", "a/b/c.md", "a/b/d/c.md", "projekty/p.markdown",
         "xzy.md", "x/inbox/a.md", "deep/drafts/q.md", "deep/x/y/q.md", "n.txt", "notes/readme.txt",
         "a/x/b.md"]


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


def test_a_folders_revision_follows_the_index_as_a_fresh_read_would(tmp_path):
    """The revision is computed from the scan's states plus what was applied; it must equal the digest
    of what the index holds afterwards."""
    import hashlib

    from builder import indexfile
    from builder.core import index as db
    from builder.core.config import load_config
    from builder.sync import build
    from builder.synclog import SyncLog
    from tests.conftest import write_config, write_note

    for i in range(5):
        write_note(tmp_path / "notes", f"n{i}.md", f"# N{i}\n\ntext {i}\n")
    config = load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                                "sources:\n  notes:\n    folder: notes\n"))

    def index_rev() -> tuple[str | None, str]:
        conn = db.connect(indexfile.resolve(config.index), vec=False)
        stored = db.get_sources(conn)["notes"].indexed_rev
        digest = hashlib.sha256()
        for path, state in sorted(db.file_states(conn, "notes").items()):
            digest.update(f"{path}\0{state.sha256}\n".encode())
        conn.close()
        return stored, digest.hexdigest()[:12]

    log = SyncLog(config.log_path, echo_info=False)
    for change in ("first", "edit", "delete", "add"):
        if change == "edit":
            write_note(tmp_path / "notes", "n1.md", "# N1\n\nother text\n")
        elif change == "delete":
            (tmp_path / "notes" / "n2.md").unlink()
        elif change == "add":
            write_note(tmp_path / "notes", "n9.md", "# N9\n")
        assert build(config, log=log) == 0
        stored, fresh = index_rev()
        assert stored == fresh, change
