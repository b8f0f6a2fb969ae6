"""A source that goes away and comes back, ordinary and ``--full`` builds in any order: the index and the
site always hold every present source's notes as they are, and a missing source's notes as the last
build that could read it found them."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder import indexfile
from builder.core import index as db
from builder.core import urls
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.render_support import make_config

pytestmark = pytest.mark.slow

NAMES = ("a.md", "b.md", "sub/c.md")
edit = st.tuples(st.sampled_from(("home", "work")), st.sampled_from(NAMES), st.none() | st.integers(0, 9))
step = st.tuples(st.lists(edit, max_size=3), st.booleans(), st.booleans())  # edits, work present, --full


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=5))
def test_a_missing_source_keeps_its_last_notes_and_a_present_one_shows_its_own(steps) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folders = {"home": root / "home", "work": root / "work"}
        away = root / "work-away"
        for folder in folders.values():
            _note(folder, "index.md", 100)  # never removed: an empty folder is an unmounted one
            _note(folder, "a.md", 1)
        (root / "portal").mkdir()
        config = make_config(root / "portal", folders)
        log = SyncLog(config.log_path, echo_info=False)
        assert build(config, log=log) == 0
        last = {source: _notes(folder) for source, folder in folders.items()}  # what each source last showed
        for edits, work_present, full in steps:
            for source, name, value in edits:
                folder = folders[source] if source == "home" or folders["work"].exists() else away
                if value is None:
                    (folder / name).unlink(missing_ok=True)
                else:
                    _note(folder, name, value)
            if work_present and away.exists():
                away.rename(folders["work"])
            elif not work_present and folders["work"].exists():
                folders["work"].rename(away)
            assert build(config, log=log, full=full) == (0 if work_present else 3)
            last["home"] = _notes(folders["home"])
            if work_present:
                last["work"] = _notes(folders["work"])
            assert _indexed(config) == last, steps
            for source, notes in last.items():
                for path in ("index.md", *NAMES):  # a page for each note shown, none for another
                    page = config.site.output / urls.site_file(urls.note_url(source, path))
                    assert page.is_file() == (path in notes), (source, path, steps)


def _note(folder: Path, name: str, value: int) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Poznámka {value}\n\nslovo{value}\n", encoding="utf-8")


def _notes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*.md"))}


def _indexed(config) -> dict[str, dict[str, str]]:
    conn = db.connect(indexfile.resolve(config.index), vec=False)
    try:
        found: dict[str, dict[str, str]] = {"home": {}, "work": {}}
        for source_id, path, sha in conn.execute("SELECT source_id, path, sha256 FROM files"):
            found[source_id][path] = sha
        return found
    finally:
        conn.close()
