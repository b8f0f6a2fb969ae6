"""Random trees of notes with random bad entries, built again and again (issue 34): after every build,
every readable published note has its page and its chunks, nothing unpublished or unreadable has
either, and the build's cost stays within a linear bound of its input."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from builder import indexfile
from builder.core import index as db
from builder.core import urls
from builder.core.config import load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.failure_support import ALIAS_BOMB

pytestmark = pytest.mark.slow

GOOD = "good"  # published, readable
HIDDEN = ("unpublished", "broken-yaml-hidden", "unclosed-hidden")  # published: false, however spelled
UNREADABLE = ("alias-bomb", "binary", "too-big", "loop", "dangling", "name-too-long")
KINDS = (GOOD, *HIDDEN, *UNREADABLE)
MAX_BYTES = 4096


def _write(notes: Path, name: str, kind: str, n: int) -> None:
    """Entry ``name`` of ``kind`` (its body holds the word ``slovo{n}``, which search may find only for good notes)."""
    path = notes / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    body = f"# Poznámka {n}\n\nslovo{n} a ještě něco.\n"
    if kind in (GOOD, "name-too-long"):  # the second: a good note whose page could not be named
        path.write_text(f"---\ntags: [t{n % 3}, sdilena]\n---\n{body}", encoding="utf-8")
    elif kind == "unpublished":
        path.write_text(f"---\npublished: false\n---\n{body}", encoding="utf-8")
    elif kind == "broken-yaml-hidden":
        path.write_text(f"---\ntitle: [rozbité\npublished: false # soukromé\n---\n{body}", encoding="utf-8")
    elif kind == "unclosed-hidden":
        path.write_text(f"---\ntitle: Neuzavřené\npublished: false\n\n{body}", encoding="utf-8")
    elif kind == "alias-bomb":
        path.write_text(ALIAS_BOMB.replace("Datamax smlouva", f"slovo{n}"), encoding="utf-8")
    elif kind == "binary":
        path.write_bytes(b"\x00\x01" + f"slovo{n}".encode() * 10)
    elif kind == "too-big":
        path.write_text(body + "x" * MAX_BYTES, encoding="utf-8")
    elif kind == "loop":
        path.symlink_to(path.name)  # a link to itself
    elif kind == "dangling":
        path.symlink_to("nikde.md")


def _name(n: int, kind: str) -> str:
    if kind == "name-too-long":  # 254 bytes: its page's name would be 256, over the 255 a name may have
        return f"dlouhe/{n:02d}{'n' * 249}.md"
    return f"slozka{n % 3}/poznamka-{n}.md"


tree = st.lists(st.sampled_from(KINDS), min_size=1, max_size=12)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=tree, second=tree)
@example(first=[GOOD, GOOD], second=["loop"])  # found in CI: the walk met only an unreadable note
def test_every_build_publishes_exactly_the_readable_published_notes(first: list[str], second: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "portal.yaml").write_text(f"index: data/index.sqlite\nsite:\n  output: site\nembedding:\n"
                                          f"  provider: none\nlimits:\n  max_note_bytes: {MAX_BYTES}\n"
                                          "sources:\n  notes:\n    folder: notes\n", encoding="utf-8")
        (root / "notes").mkdir()
        config = load_config(root / "portal.yaml")
        for kinds in (first, second):  # the second build: every entry changed in place, some flipped
            names = {}
            for n, kind in enumerate(kinds):
                name = _name(n, kind)
                for other in {_name(n, k) for k in KINDS} - {name}:  # the entry moved from a long name or back
                    stale = root / "notes" / other
                    if stale.is_symlink() or stale.exists():
                        stale.unlink()
                _write(root / "notes", name, kind, n)
                names[n] = (name, kind)
            for extra in range(len(kinds), 12):
                for k in KINDS:
                    stale = root / "notes" / _name(extra, k)
                    if stale.is_symlink() or stale.exists():
                        stale.unlink()
            log = SyncLog(config.log_path, echo_info=False)
            assert build(config, log=log) in (0, 3)
            _check(config, names, root)
        shutil.rmtree(root, ignore_errors=True)


def _check(config, names: dict[int, tuple[str, str]], root: Path) -> None:
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        for n, (name, kind) in names.items():
            found = conn.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH :w",
                                 {"w": f"slovo{n}"}).fetchone()[0]
            folder = config.site.output / "notes" / name.rpartition("/")[0]
            stem = Path(name).stem  # its page, whichever of the three page names it would have
            pages = [p for p in folder.glob("*.html") if p.name in (f"{stem}.html", f"{stem}.md.html", f"{stem}~.html")]
            if kind == GOOD:
                page = config.site.output / urls.site_file(urls.note_url("notes", name))
                assert found >= 1 and pages == [page], (name, kind, pages)
                assert f"slovo{n}" in page.read_text(encoding="utf-8")
            else:
                assert found == 0 and pages == [], (name, kind, pages)
    finally:
        conn.close()
    # linear cost: the site is bounded by a constant plus a multiple of the notes' bytes
    notes_bytes = sum(p.lstat().st_size for p in (root / "notes").rglob("*"))
    site_bytes = sum(p.stat().st_size for p in config.site.output.rglob("*") if p.is_file()
                     and "vendor" not in p.parts and not any(part.startswith(".") for part in p.parts))
    assert site_bytes <= 400_000 + 200 * notes_bytes, (site_bytes, notes_bytes)
    assert not any(name.startswith(".") and name.endswith(".tmp") for _, _, files in os.walk(config.site.output)
                   for name in files)
