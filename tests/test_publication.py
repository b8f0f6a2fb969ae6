"""One decision whether a note is published (builder/notes/publication.py), and every reader keeps to it (issue 44).

The build (and so the site, search and the answer pipeline's passages, which read the index it writes),
``grep`` and ``read`` (the CLI and the MCP tools) decide from the same bytes: a byte order mark, a note in
windows-1250, CRLF or CR line ends, fences with trailing spaces, front matter YAML refuses or never closes.
Before, ``grep`` found the front matter by the file's first three bytes, so a note whose ``published: false``
followed a byte order mark showed in ``grep`` (and a windows-1250 note with a byte order mark was
published by the build itself).

What "agree" means (README, ``grep`` and ``read``): after a build, with nothing changed since, the four
readers show the same notes. Between builds, ``grep`` and ``read`` read the disk now: they show a note
when a build would publish it as it is now and the last build did not hold it as ``published: false``
(a note published since waits for the next build); the site and search show what the last build saw.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.cli import main
from server.read_commands import for_command, grep_data, read_data, search_data
from server.mcp import answer
from server.mcp_tools import tools
from builder.core import urls
from builder.core.config import Config, load_config
from builder.core.errors import UserError
from builder.notes.publication import judge
from builder.sync import build
from tests.conftest import quiet, require_ripgrep, write_config

BOM = b"\xef\xbb\xbf"
BODY = "# Poznámka {marker}\n\nŽluťoučký kůň úpěl ďábelské ódy, {marker}.\n"


def make_portal(root: Path) -> Config:
    (root / "notes").mkdir(parents=True)
    return load_config(write_config(root, "index: data/index.sqlite\nsite:\n  output: site\n"
                                          "embedding:\n  provider: none\nsources:\n  notes:\n    folder: notes\n"))


@dataclass(frozen=True)
class Seen:
    """Which readers show a note."""

    grep: bool
    mcp_grep: bool
    read: bool
    mcp_read: bool
    search: bool
    site: bool


def seen(config: Config, paths: list[str]) -> dict[str, Seen]:
    """What each reader shows of the notes ``paths`` (each holding its own ``vismark…`` word)."""
    rp = for_command(config)
    grepped = {m["path"] for m in grep_data(rp, "vismark[a-z]+")["matches"]}
    mcp = answer(tools(config)["grep"], rp, {"pattern": "vismark[a-z]+"}).structured_content
    assert mcp is not None
    mcp_grepped = {m["path"] for m in mcp["matches"]}
    try:
        found = {hit["path"] for hit in search_data(rp, "vismark", mode="bm25", limit=50, as_typed=True)["hits"]}
    except UserError:  # no index yet
        found = set()
    shown = {}
    for path in paths:
        try:
            read_data(rp, "notes", path)
            read = True
        except UserError as exc:
            assert " is not published" in str(exc), exc
            read = False
        mcp_read = answer(tools(config)["read_note"], rp, {"source": "notes", "path": path})
        assert mcp_read.is_error != read or " is not published" in mcp_read.content[0].text  # type: ignore[union-attr]
        page = config.site.output / urls.site_file(urls.note_url("notes", path))
        shown[path] = Seen(path in grepped, path in mcp_grepped, read, not mcp_read.is_error, path in found,
                           page.is_file())
    return shown


def everywhere(visible: bool) -> Seen:
    return Seen(*[visible] * 6)


# ---------------------------------------------------------------- the probes' notes, as regressions

@pytest.mark.parametrize("engine", ["ripgrep", "python"])
def test_grep_leaves_out_a_note_whose_front_matter_follows_a_byte_order_mark(tmp_path, capsys, monkeypatch, engine):
    if engine == "ripgrep":
        require_ripgrep()
    else:
        monkeypatch.setattr("builder.notes.grep.shutil.which", lambda name: None)
    config = make_portal(tmp_path)
    notes = tmp_path / "notes"
    (notes / "old.md").write_bytes(b"# Old\n\nOLDWORD here\n")
    assert build(config, log=quiet(config)) == 0
    # a new note, never built: the probe's printf
    (notes / "new.md").write_bytes(BOM + b"---\npublished: false\n---\n# New\n\nBOMNEWWORD\n")
    # a published note edited to published: false with a byte order mark, before the next build
    (notes / "old.md").write_bytes(BOM + b"---\r\npublished: false\r\n---\r\n# Old\r\n\r\nOLDWORD here\r\n")
    for word in ("BOMNEWWORD", "OLDWORD"):
        assert main(["grep", word, "--config", str(config.path)]) == 1
        assert capsys.readouterr().out == ""
        result = answer(tools(config)["grep"], for_command(config), {"pattern": word})
        assert (result.is_error, result.structured_content["matches"]) == (False, [])  # type: ignore[index]
    assert main(["read", "notes", "new.md", "--config", str(config.path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["error"] == (
        "notes:new.md is not published (published: false in its front matter)")
    assert build(config, log=quiet(config)) == 0
    assert seen(config, ["new.md", "old.md"]) == {"new.md": everywhere(False), "old.md": everywhere(False)}


def test_grep_takes_the_index_at_its_word_for_the_bytes_it_judged_and_judges_every_other(tmp_path, monkeypatch):
    """Bytes whose digest the index holds published are not parsed again (grep over a large collection matches
    thousands of notes); a note edited since the build, whatever it now says, is judged from its bytes."""
    config = make_portal(tmp_path)
    notes = tmp_path / "notes"
    for name in ("same", "hidden", "edited"):
        (notes / f"{name}.md").write_bytes(f"# {name}\n\nvismark{name}\n".encode())
    assert build(config, log=quiet(config)) == 0
    (notes / "hidden.md").write_bytes(BOM + b"---\npublished: false\n---\n# hidden\n\nvismarkhidden\n")
    (notes / "edited.md").write_bytes(b"# edited\n\nvismarkedited, once more\n")
    judged: list[str] = []

    def counted(path: str, data: bytes, **limits: int):
        judged.append(path)
        return judge(path, data, **limits)

    monkeypatch.setattr("builder.notes.notefile.judge", counted)
    found = grep_data(for_command(config), "vismark[a-z]+")["matches"]
    assert [(m["path"], m["text"]) for m in found] == [("edited.md", "vismarkedited, once more"),
                                                        ("same.md", "vismarksame")]
    assert sorted(judged) == ["edited.md", "hidden.md"]


def note_bytes(text: str, *, bom: bool = False, encoding: str = "utf-8", ending: str = "\n") -> bytes:
    return (BOM if bom else b"") + text.replace("\n", ending).encode(encoding)


CASES = [  # (name, bytes, published)
    ("plain", note_bytes(BODY), True),
    ("bom-unpublished", note_bytes("---\npublished: false\n---\n" + BODY, bom=True), False),
    ("bom-crlf-unpublished", note_bytes("---\npublished: false\n---\n" + BODY, bom=True, ending="\r\n"), False),
    ("cr-unpublished", note_bytes("---\npublished: no\n---\n" + BODY, ending="\r"), False),
    ("trailing-spaces", note_bytes("---  \npublished: false\n--- \t\n" + BODY), False),
    ("dots", note_bytes("---\npublished: false\n...\n" + BODY), False),
    ("comment", note_bytes("---\npublished: false # private\n---\n" + BODY, bom=True), False),
    ("broken-yaml", note_bytes("---\ntitle: [nope\npublished: false\n---\n" + BODY, bom=True), False),
    ("broken-yaml-published", note_bytes("---\npublished: [false\n---\n" + BODY), True),  # as the build reads it
    ("unclosed", note_bytes("---\npublished: false\n" + BODY, bom=True, ending="\r\n"), False),
    ("cp1250-unpublished", note_bytes("---\npublished: false\n---\n" + BODY, encoding="cp1250"), False),
    ("cp1250-bom-unpublished", note_bytes("---\npublished: false\n---\n" + BODY, bom=True, encoding="cp1250"), False),
    ("cp1250-bom-published", note_bytes("---\ntitle: Kůň\n---\n" + BODY, bom=True, encoding="cp1250"), True),
    ("blank-line-first", note_bytes("\n---\npublished: false\n---\n" + BODY), True),  # no front matter there
    ("aliases", note_bytes("---\na: &x 1\nb: *x\n---\n" + BODY, bom=True), False),
    ("binary", note_bytes(BODY) + b"\0", False),
]


def test_every_reader_agrees_with_the_build_on_each_spelling(tmp_path):
    """Each spelling once (a deterministic table beside the property test below): the build decides, and
    the site, search, grep and read (CLI and MCP) all show the note or none does."""
    config = make_portal(tmp_path)
    for i, (name, data, _) in enumerate(CASES):
        (tmp_path / "notes" / f"{name}.md").write_bytes(data.replace(b"{marker}", f"vismark{chr(97 + i)}".encode()))
    assert build(config, log=quiet(config)) == 0
    paths = [f"{name}.md" for name, _, _ in CASES]
    assert seen(config, paths) == {f"{name}.md": everywhere(published) for name, _, published in CASES}


# ---------------------------------------------------------------- random notes, build after build

FENCES = ("---", "--- ", "---  ", "---\t")
VALUES = {"false": False, "no": False, "off": False, "'false'": False, "False": False, "true": True, None: True}


@st.composite
def note_spec(draw) -> tuple[bytes, bool | None]:
    """A note's bytes and whether its author clearly meant it published (None: the build's reading decides:
    front matter that is no front matter, YAML that says otherwise)."""
    value = draw(st.sampled_from(sorted(VALUES, key=str)))
    shape = draw(st.sampled_from(["none", "fenced", "dots", "unclosed", "broken", "loose", "blank-first"]))
    fence, closing = draw(st.sampled_from(FENCES)), draw(st.sampled_from(FENCES))
    lines = [f"published: {value}" + (" # private" if draw(st.booleans()) else "")] if value is not None else []
    if shape in ("broken", "loose"):
        title = "title: [nope" if shape == "broken" else "title: Týden 4: Obrazy"
        lines.insert(draw(st.integers(0, len(lines))), title)
    elif draw(st.booleans()):
        lines.append("tags: [kůň, čaj]")
    front = "\n".join(lines) + "\n" if lines else ""
    text = {"none": "", "fenced": f"{fence}\n{front}{closing}\n", "dots": f"{fence}\n{front}...\n",
            "unclosed": f"{fence}\n{front}", "broken": f"{fence}\n{front}{closing}\n",
            "loose": f"{fence}\n{front}{closing}\n", "blank-first": f"\n{fence}\n{front}{closing}\n"}[shape] + BODY
    if shape == "unclosed" and not lines:
        text = BODY  # a lone fence opening a note is a thematic break
    meant = True if shape == "none" else None if shape == "blank-first" else VALUES[value]
    if shape == "unclosed" and value is None:
        meant = None
    data = note_bytes(text, bom=draw(st.booleans()), encoding=draw(st.sampled_from(["utf-8", "cp1250"])),
                      ending=draw(st.sampled_from(["\n", "\r\n", "\r"])))
    return data, meant


def marked(data: bytes, i: int) -> bytes:
    return data.replace(b"{marker}", f"vismark{chr(97 + i)}".encode())


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=st.lists(note_spec(), min_size=1, max_size=5), edits=st.lists(st.one_of(st.none(), note_spec()),
                                                                            min_size=5, max_size=5))
def test_grep_read_search_and_the_site_agree_after_every_build_and_between_builds(tmp_path, first, edits):
    require_ripgrep()
    with tempfile.TemporaryDirectory(dir=tmp_path) as home:
        config = make_portal(Path(home))
        notes = Path(home) / "notes"
        paths = [f"n{i}.md" for i in range(len(first))]
        for i, (data, _) in enumerate(first):
            (notes / paths[i]).write_bytes(marked(data, i))
        assert build(config, log=quiet(config)) == 0
        last = check_after_build(config, paths, [meant for _, meant in first])

        meant_now = [meant for _, meant in first]
        for i, edit in enumerate(edits[:len(paths)]):  # some notes edited after the build
            if edit is not None:
                (notes / paths[i]).write_bytes(marked(edit[0], i))
                meant_now[i] = edit[1]
        shown = seen(config, paths)
        for i, path in enumerate(paths):
            verdict = judge(path, (notes / path).read_bytes(), max_bytes=config.max_note_bytes)
            disk = verdict.published and last[path] != "unpublished"
            assert (shown[path].grep, shown[path].mcp_grep, shown[path].read, shown[path].mcp_read) == (disk,) * 4, path
            assert shown[path].search == shown[path].site == (last[path] == "ok"), path  # the last build's
            if meant_now[i] is False:
                assert not disk, path

        assert build(config, log=quiet(config)) == 0
        check_after_build(config, paths, meant_now)


def check_after_build(config: Config, paths: list[str], meant: list[bool | None]) -> dict[str, str]:
    """Every reader shows each note or none does, as its author clearly meant it; returns the build's status
    of each note (``ok``, ``unpublished``, ``skipped``)."""
    shown = seen(config, paths)
    status = {}
    for path, wanted in zip(paths, meant, strict=True):
        visible = shown[path].site
        assert shown[path] == everywhere(visible), path
        if wanted is not None:
            assert visible == wanted, path
        data = (config.source_root(config.sources[0]) / path).read_bytes()
        status[path] = judge(path, data, max_bytes=config.max_note_bytes).status
        assert (status[path] == "ok") == visible, path
    return status


def test_a_note_unpublished_between_its_indexing_and_its_render_gets_no_page_of_its_new_text(tmp_path):
    """The render reads a note's file again for its page: one that changed since the build indexed it is
    drawn only if a build would publish it as it is now; otherwise it keeps the page it had (the next
    build takes it down), never one of its new text."""
    from builder import indexfile
    from builder.core import index as db
    from builder.render.site import render_site
    from builder.core.synclog import SyncLog

    config = make_portal(tmp_path)
    notes = tmp_path / "notes"
    (notes / "old.md").write_bytes(b"# Old\n\nvismarka\n")
    assert build(config, log=quiet(config)) == 0
    (notes / "old.md").write_bytes(b"# Old\n\nvismarka changed\n")
    (notes / "new.md").write_bytes(b"# New\n\nvismarkb\n")
    assert build(config, log=quiet(config), render=False) == 0
    (notes / "old.md").write_bytes(BOM + b"---\npublished: false\n---\n# Old\n\nSECRETWORD\n")
    (notes / "new.md").write_bytes(b"---\r\npublished: false\r\n---\r\n# New\r\n\r\nSECRETWORD\r\n")
    log = SyncLog(config.log_path, echo_info=False)
    conn = db.connect(indexfile.resolve(config.index))
    try:
        render_site(config, conn, full=False, log=log)
    finally:
        conn.close()
    old_page = tmp_path / "site/notes/old.html"
    assert "vismarka" in old_page.read_text() and "SECRETWORD" not in old_page.read_text()
    assert not (tmp_path / "site/notes/new.html").exists()
    assert [line.split(" ", 2)[2] for line in log.lines if " WARN " in line] == [
        f"notes: {name}: changed since this build indexed it, and not published as it is now (published: false); "
        "the next build takes its page down" for name in ("new.md", "old.md")]
    assert build(config, log=quiet(config)) == 0
    assert seen(config, ["old.md", "new.md"]) == {"old.md": everywhere(False), "new.md": everywhere(False)}
