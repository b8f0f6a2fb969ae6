"""The unit of failure is one note (issue 34), for what the sources are made of: a note that cannot be
read is skipped with one WARN, once, and leaves the site; a folder that cannot be listed keeps its
notes while the rest of its source updates; a folder source that is gone keeps its last good notes
while the others build, `status` and `/api/health` say so and `serve` starts; and `build --full`
accepts one source's state whatever the others do."""

from __future__ import annotations

import ctypes
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from builder import indexfile
from builder.cli import main
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.core.errors import ConfigError
from tests.failure_support import found, run
from tests.conftest import write_config, write_note

CONFIG = "index: data/index.sqlite\nsite:\n  output: site\nembedding:\n  provider: none\nsources:\n"


def portal(tmp_path: Path, *, other: bool = False) -> Config:
    """Source ``notes`` (a public note, a private one, twelve diary notes) and, with ``other``, source
    ``druhe`` beside it."""
    notes = tmp_path / "notes"
    write_note(notes, "verejne.md", "# Veřejné\n\nKrystalový oscilátor.\n")
    write_note(notes, "osobni/koncept.md", "# Koncept\n\nDatamax smlouva\n")
    for i in range(12):
        write_note(notes, f"deniky/d{i}.md", f"# Deník {i}\n\nZápis číslo {i}.\n")
    body = CONFIG + "  notes:\n    folder: notes\n"
    if other:
        write_note(tmp_path / "druhe", "recept.md", "# Recept\n\nKynuté knedlíky\n")
        body += "  druhe:\n    folder: druhe\n"
    return load_config(write_config(tmp_path, body))




def cli(capsys: pytest.CaptureFixture[str], config: Config, *command: str) -> tuple[int, list[str], str]:
    """``notes-portal COMMAND --config …``: its exit code, its stderr lines and its stdout."""
    capsys.readouterr()
    code = main([*command, "--config", str(config.path)])
    out, err = capsys.readouterr()
    return code, err.splitlines(), out




def files(config: Config, source: str = "notes") -> dict[str, tuple[str, str | None]]:
    """path → (status, status_note) of every files row of the source."""
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        return {r[0]: (r[1], r[2]) for r in conn.execute(
            "SELECT path, status, status_note FROM files WHERE source_id = :source", {"source": source})}
    finally:
        conn.close()


def db_row(config: Config, source: str) -> db.SourceRow:
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        return db.get_sources(conn)[source]
    finally:
        conn.close()


def page(config: Config, path: str) -> Path:
    return config.site.output / path


@contextmanager
def permissions_apply() -> Iterator[None]:
    """File permissions bind as they bind any user. Root (CI runs as root) reads every file through
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: they leave this thread's effective set meanwhile (the
    build reads in this thread; the processes it forks inherit it)."""
    if os.geteuid() != 0:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, the calling thread
    data = (ctypes.c_uint32 * 6)()  # (effective, permitted, inheritable) × (bits 0–31, bits 32–63)
    if libc.capget(header, data) != 0:
        pytest.skip("cannot read this thread's capabilities")
    saved = list(data)
    data[0] &= ~((1 << 1) | (1 << 2))  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
    if libc.capset(header, data) != 0:
        pytest.skip("cannot drop this thread's capabilities")
    try:
        yield
    finally:
        for i, value in enumerate(saved):
            data[i] = value
        libc.capset(header, data)


# ---------------------------------------------------------------- 1. an entry that cannot be read


SKIPPED = "cannot be read ({}); skipped until it changes or can be read"


def test_a_symlink_loop_is_two_skipped_notes_and_the_rest_of_the_source_updates(tmp_path):
    config = portal(tmp_path)
    notes = tmp_path / "notes"
    assert run(config) == (0, [])
    os.symlink("b.md", notes / "a.md")
    os.symlink("a.md", notes / "b.md")
    write_note(notes, "novy.md", "# Nový\n\nPřevodník napětí\n")
    (notes / "verejne.md").unlink()
    assert run(config) == (0, [f"notes: a.md: {SKIPPED.format('a loop of symbolic links')}",
                               f"notes: b.md: {SKIPPED.format('a loop of symbolic links')}"])
    assert found(config, "prevodnik") == 1 and page(config, "notes/novy.html").is_file()
    assert found(config, "krystalovy") == 0 and not page(config, "notes/verejne.html").exists()
    assert files(config)["a.md"] == ("skipped", SKIPPED.format("a loop of symbolic links"))
    assert not page(config, "notes/a.html").exists()
    assert run(config) == (0, [])  # the next minute's build: silent, the loop is still there
    write_note(notes, "dalsi.md", "# Další\n\nOsciloskop\n")
    assert run(config) == (0, []) and found(config, "osciloskop") == 1


def test_a_public_note_turned_into_a_dangling_symlink_is_taken_down_once_and_back_when_it_resolves(tmp_path):
    config = portal(tmp_path)
    notes = tmp_path / "notes"
    assert run(config) == (0, []) and page(config, "notes/osobni/koncept.html").is_file()
    (notes / "osobni/koncept.md").unlink()
    os.symlink("jinde.md", notes / "osobni/koncept.md")
    why = "a symbolic link to osobni/jinde.md, which does not exist"
    assert run(config) == (0, [f"notes: osobni/koncept.md: {SKIPPED.format(why)}"])
    assert not page(config, "notes/osobni/koncept.html").exists() and found(config, "datamax") == 0
    assert files(config)["osobni/koncept.md"] == ("skipped", SKIPPED.format(why))
    assert run(config) == (0, [])
    write_note(notes, "osobni/jinde.md", "# Jinde\n\nDatamax dodatek\n")
    assert run(config) == (0, [])
    assert files(config)["osobni/koncept.md"][0] == "ok" and page(config, "notes/osobni/koncept.html").is_file()
    assert found(config, "dodatek") == 2  # the link and its target, each a note


def test_an_unreadable_note_is_skipped_once_taken_down_and_read_again_once_it_can_be(tmp_path):
    config = portal(tmp_path)
    notes = tmp_path / "notes"
    assert run(config) == (0, []) and found(config, "datamax") == 1
    secret = write_note(notes, "osobni/koncept.md", "# Koncept\n\nDatamax smlouva, nová cena\n")
    write_note(notes, "novy.md", "# Nový\n\nPřevodník napětí\n")
    secret.chmod(0)
    try:
        with permissions_apply():
            assert run(config) == (0, [f"notes: osobni/koncept.md: {SKIPPED.format('Permission denied')}"])
            assert run(config) == (0, [])  # a minute later: nothing to say
    finally:
        secret.chmod(0o644)
    assert found(config, "datamax") == 0 and not page(config, "notes/osobni/koncept.html").exists()
    assert found(config, "prevodnik") == 1
    assert run(config) == (0, [])  # chmod moved neither its size nor its mtime: read again all the same
    assert found(config, "cena") == 1 and page(config, "notes/osobni/koncept.html").is_file()


def test_an_unreadable_folder_keeps_its_notes_and_the_rest_of_the_source_updates(tmp_path, capsys):
    config = portal(tmp_path)
    notes = tmp_path / "notes"
    assert run(config) == (0, [])
    write_note(notes, "novy.md", "# Nový\n\nPřevodník napětí\n")
    (notes / "verejne.md").unlink()
    kept = "notes: cannot read osobni/: Permission denied; its notes stay as they were indexed"
    (notes / "osobni").chmod(0)
    try:
        with permissions_apply():
            assert run(config) == (3, [kept])
            assert run(config) == (3, [kept])
    finally:
        (notes / "osobni").chmod(0o755)
    assert found(config, "prevodnik") == 1 and page(config, "notes/novy.html").is_file()
    assert found(config, "krystalovy") == 0 and not page(config, "notes/verejne.html").exists()
    assert found(config, "datamax") == 1 and page(config, "notes/osobni/koncept.html").is_file()
    code, _, out = cli(capsys, config, "status")
    assert code == 0 and f"  last error ({db_row(config, 'notes').last_error_at}): {kept[7:]}" in out.splitlines()
    assert run(config) == (0, [])  # readable again: the error is gone
    assert db_row(config, "notes").last_error is None


@pytest.mark.parametrize("what", ["deleted", "unreadable"])
def test_a_note_that_goes_between_the_scan_and_its_read(tmp_path, monkeypatch, what):
    """The scan lists it, then it is deleted or made unreadable before the build reads it."""
    from builder import scan, sync

    config = portal(tmp_path)
    notes = tmp_path / "notes"
    assert run(config) == (0, [])
    target = write_note(notes, "osobni/koncept.md", "# Koncept\n\nDatamax smlouva, nová cena\n")

    def scan_then_lose(*args, **kwargs):
        changes = scan.scan_folder(*args, **kwargs)
        if what == "deleted":
            target.unlink()
        else:
            target.chmod(0)
        return changes

    monkeypatch.setattr(sync, "scan_folder", scan_then_lose)
    with permissions_apply():
        code, warnings = run(config)
        if what == "unreadable":
            assert (code, warnings) == (0, [f"notes: osobni/koncept.md: {SKIPPED.format('Permission denied')}"])
            monkeypatch.undo()
            assert run(config) == (0, [])  # recorded as seen: not read, nor said, again
            target.chmod(0o644)
        else:
            assert (code, warnings) == (0, [])
    assert "osobni/koncept.md" not in files(config) or files(config)["osobni/koncept.md"][0] == "skipped"
    assert found(config, "datamax") == 0 and not page(config, "notes/osobni/koncept.html").exists()
    assert found(config, "krystalovy") == 1


# ---------------------------------------------------------------- 2. a folder source that is gone


def test_a_folder_source_that_is_gone_keeps_its_notes_while_the_others_build_and_serve_starts(
        tmp_path, capsys, monkeypatch):
    config = portal(tmp_path, other=True)
    assert cli(capsys, config, "build")[:2] == (0, [])
    (tmp_path / "notes").rename(tmp_path / "odpojeno")  # an unmounted disk, a renamed folder
    write_note(tmp_path / "druhe", "polevka.md", "# Polévka\n\nČesneková polévka\n")
    gone = (f"WARN notes: folder {tmp_path / 'notes'} does not exist (not mounted, moved or renamed?); "
            "its notes stay as they were indexed")
    assert cli(capsys, config, "build")[:2] == (3, [gone])
    assert found(config, "cesnekova") == 1 and page(config, "druhe/polevka.html").is_file()
    assert found(config, "datamax") == 1 and page(config, "notes/osobni/koncept.html").is_file()
    assert cli(capsys, config, "build")[:2] == (3, [gone])  # one WARN a build, no more

    code, _, out = cli(capsys, config, "status")
    reason = gone.removeprefix("WARN notes: ")
    assert code == 0 and f"  last error ({db_row(config, 'notes').last_error_at}): {reason}" in out.splitlines()

    from starlette.testclient import TestClient

    answers = []

    def serve(app, **_):
        with TestClient(app) as client:
            answers.append(client.get("/api/health").json())
            answers.append(client.get("/notes/osobni/koncept.html").status_code)

    monkeypatch.setattr("uvicorn.run", serve)
    assert cli(capsys, config, "serve", "--no-mcp")[0] == 0
    health, status = answers
    assert health["sources"]["notes"]["last_error"] == reason and health["sources"]["druhe"]["last_error"] is None
    assert status == 200

    (tmp_path / "odpojeno").rename(tmp_path / "notes")
    assert cli(capsys, config, "build")[:2] == (0, [])
    assert db_row(config, "notes").last_error is None


def test_a_folder_that_never_existed_is_one_warn_on_the_first_build(tmp_path, capsys):
    config = portal(tmp_path, other=True)
    shutil.rmtree(tmp_path / "notes")
    assert cli(capsys, config, "build")[:2] == (3, [
        f"WARN notes: folder {tmp_path / 'notes'} does not exist (not mounted, moved or renamed?); "
        "nothing is indexed from it"])
    assert found(config, "knedliky") == 1 and page(config, "druhe/recept.html").is_file()
    assert files(config) == {}


def test_the_site_folder_is_still_checked_against_a_source_folder_that_is_not_there(tmp_path):
    path = write_config(tmp_path, CONFIG.replace("output: site", "output: web") + "  notes:\n    folder: web/notes\n")
    with pytest.raises(ConfigError, match=r"site.output: .*/web contains the raw notes of source 'notes'"):
        load_config(path)


# ---------------------------------------------------------------- 3. build --full while another source fails


def emptied(tmp_path: Path, config: Config) -> str:
    """Source notes emptied for good and source druhe gone; the WARN of druhe's folder."""
    shutil.rmtree(tmp_path / "notes")
    (tmp_path / "notes").mkdir()
    shutil.rmtree(tmp_path / "druhe")
    return (f"druhe: folder {tmp_path / 'druhe'} does not exist (not mounted, moved or renamed?); "
            "its notes stay as they were indexed")


def test_build_full_source_accepts_an_emptied_folder_whatever_the_other_sources_do(tmp_path, capsys):
    config = portal(tmp_path, other=True)
    assert run(config) == (0, [])
    gone = emptied(tmp_path, config)
    refused = (f"notes: the scan would remove 14 of the 14 notes the index holds (is {tmp_path / 'notes'} mounted "
               "and complete?); nothing was removed. If they are really gone, run "
               "`notes-portal build --full --source notes`")
    assert run(config) == (3, [refused, gone])
    assert cli(capsys, config, "build", "--full", "--source", "notes")[:2] == (0, [])
    assert files(config) == {} and found(config, "datamax") == 0
    assert not page(config, "notes/osobni/koncept.html").exists()
    assert found(config, "knedliky") == 1 and page(config, "druhe/recept.html").is_file()
    assert run(config) == (3, [gone])  # druhe is still gone; notes is settled


def test_build_full_carries_the_last_good_notes_of_a_failing_source(tmp_path):
    config = portal(tmp_path, other=True)
    assert run(config) == (0, [])
    before = indexfile.resolve(config.index)
    gone = emptied(tmp_path, config)
    assert run(config, full=True) == (3, [gone])
    assert indexfile.resolve(config.index) != before  # a new generation, swapped in
    assert files(config) == {} and not page(config, "notes/osobni/koncept.html").exists()
    assert files(config, "druhe") == {"recept.md": ("ok", None)}
    assert found(config, "knedliky") == 1 and page(config, "druhe/recept.html").is_file()
    assert "druhe: kept 1 notes as the previous index held them" in config.log_path.read_text("utf-8")
    assert db_row(config, "druhe").last_error == gone[len("druhe: "):]
    write_note(tmp_path / "druhe", "recept.md", "# Recept\n\nKynuté knedlíky\n")
    write_note(tmp_path / "druhe", "polevka.md", "# Polévka\n\nČesneková polévka\n")
    assert run(config) == (0, []) and found(config, "cesnekova") == 1


def test_a_new_chunker_while_a_source_is_gone_builds_once_and_reads_its_notes_when_it_returns(
        tmp_path, monkeypatch):
    """An upgrade that cuts notes otherwise makes the ordinary build (provider none) build a new index:
    a failing source must not make every minute's build a whole build thrown away."""
    from builder.core.index import schema

    config = portal(tmp_path, other=True)
    assert run(config) == (0, [])
    (tmp_path / "druhe").rename(tmp_path / "odpojeno")
    monkeypatch.setattr(schema, "CHUNKER_VERSION", "next")
    gone = (f"druhe: folder {tmp_path / 'druhe'} does not exist (not mounted, moved or renamed?); "
            "its notes stay as they were indexed")
    assert run(config) == (3, [gone])
    generation = indexfile.resolve(config.index)
    assert run(config) == (3, [gone]) and indexfile.resolve(config.index) == generation  # no second full build
    assert found(config, "knedliky") == 1 and page(config, "druhe/recept.html").is_file()
    (tmp_path / "odpojeno").rename(tmp_path / "druhe")
    assert run(config) == (0, [])
    conn = db.connect(generation, readonly=True, vec=False)
    try:
        assert conn.execute("SELECT size FROM files WHERE source_id = 'druhe'").fetchall()[0][0] > 0  # read again
    finally:
        conn.close()
    assert found(config, "knedliky") == 1
