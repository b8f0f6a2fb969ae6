"""Attachments reach the site in bounded memory, whatever their size (issue 44): copied by the kernel, or
hard-linked from :data:`builder.render.output.LINK_FROM_BYTES` on when the site is on their file system, never
read whole. Before, an 800 MB video linked from a note made the build's peak memory 839 MB."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from builder.core.config import load_config
from builder.render.output import LINK_FROM_BYTES
from builder.sync import build
from tests.conftest import PROJECT, quiet, unavailable, write_config, write_note

GIB = 1 << 30
# the build as a child of a child that prints, after it, the peak resident memory of its children (KiB)
MEASURE = ("import resource, subprocess, sys; code = subprocess.run(sys.argv[1:]).returncode; "
           "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def portal(root: Path, site: Path, size: int) -> Path:
    """A note linking a video of ``size`` bytes (sparse: no disk and no time to make), its site in ``site``."""
    write_note(root / "notes", "film.md", "# Film\n\n[Video](video.mp4) z výletu.\n")
    with open(root / "notes/video.mp4", "wb") as video:
        video.truncate(size)
    return write_config(root, f"index: data/index.sqlite\nsite:\n  output: {site}\nembedding:\n  provider: none\n"
                              "sources:\n  notes:\n    folder: notes\n")


def peak_build_kib(config: Path, said: str = "") -> int:
    """The peak resident memory of ``notes-portal build`` on ``config`` (its forked workers included), which
    exits 0 and says ``said`` on stderr."""
    done = subprocess.run([sys.executable, "-c", MEASURE, sys.executable, "-m", "builder.cli", "build", "--config",
                           str(config)], cwd=PROJECT, capture_output=True, text=True, timeout=300)
    code, peak = map(int, done.stdout.split())
    assert (code, done.stderr) == (0, said)
    return peak


@pytest.fixture
def other_file_system() -> Path:
    """A folder on another file system than the tests' own (tmpfs): there an attachment cannot be linked."""
    if not Path("/dev/shm").is_dir() or os.stat("/dev/shm").st_dev == os.stat(tempfile.gettempdir()).st_dev:
        unavailable("/dev/shm is not a file system of its own here")
    folder = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="notes-portal-test-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("where", ["linked", "copied"])
def test_a_1_gib_attachment_adds_under_50_mib_to_the_build_s_peak_memory(tmp_path, where, request):
    """Linked: the site on the notes' file system. Copied: the site on tmpfs, where the kernel copies the
    gigabyte (sendfile) while the build holds none of it."""
    sites = (request.getfixturevalue("other_file_system") if where == "copied" else tmp_path)
    small = peak_build_kib(portal(tmp_path / "small", sites / "small-site", 1024))
    large = peak_build_kib(portal(tmp_path / "large", sites / "large-site", GIB))
    print(f"peak RSS: {small} KiB with a 1 KiB attachment, {large} KiB with a 1 GiB one ({where})")
    assert large - small < 50 * 1024
    video = sites / "large-site/notes/video.mp4"
    assert video.stat().st_size == GIB
    assert os.path.samefile(video, tmp_path / "large/notes/video.mp4") == (where == "linked")


def test_a_large_attachment_is_linked_and_a_small_one_copied_and_each_follows_its_source(tmp_path):
    """Linked or copied, the site's file is replaced when its source changes and removed when no note links
    it, and removing it never touches the source; a build that finds nothing new writes neither again."""
    write_note(tmp_path / "notes", "film.md", "# Film\n\n[Video](video.mp4), [foto](foto.jpg).\n")
    video, photo = tmp_path / "notes/video.mp4", tmp_path / "notes/foto.jpg"
    with open(video, "wb") as handle:
        handle.truncate(LINK_FROM_BYTES)
    photo.write_bytes(b"\xff\xd8 a photo")
    config_path = write_config(tmp_path, "index: data/index.sqlite\nsite:\n  output: site\n"
                                         "embedding:\n  provider: none\nsources:\n  notes:\n    folder: notes\n")
    config = load_config(config_path)
    assert build(config, log=quiet(config)) == 0
    site_video, site_photo = tmp_path / "site/notes/video.mp4", tmp_path / "site/notes/foto.jpg"
    assert os.path.samefile(site_video, video) and not os.path.samefile(site_photo, photo)
    assert site_photo.read_bytes() == b"\xff\xd8 a photo"
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (site_video, site_photo)}
    assert build(config, log=quiet(config)) == 0
    assert {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (site_video, site_photo)} == before

    video.unlink()  # replaced, as an editor or git replaces a file
    video.write_bytes(b"new" + b"\0" * (LINK_FROM_BYTES - 3))
    photo.write_bytes(b"\xff\xd8 another photo")
    assert build(config, log=quiet(config)) == 0
    assert os.path.samefile(site_video, video) and site_photo.read_bytes() == b"\xff\xd8 another photo"

    write_note(tmp_path / "notes", "film.md", "# Film\n\nBez příloh.\n")
    assert build(config, log=quiet(config)) == 0
    assert not site_video.exists() and not site_photo.exists()
    assert video.stat().st_size == LINK_FROM_BYTES and photo.read_bytes() == b"\xff\xd8 another photo"


@pytest.mark.parametrize(("tail", "published"), [
    (b"<circle r='1'/>", True),
    (b"<script>alert(1)</script>", False),
    (b"<a href='&#106;avascript:alert(1)'>x</a>", False),
])
def test_an_svg_is_checked_whole_in_pieces(tmp_path, tail, published):
    """The check for scripts reads an SVG in pieces (any size in bounded memory) and still sees what its
    last piece holds."""
    write_note(tmp_path / "notes", "kresba.md", "# Kresba\n\n![schéma](kresba.svg)\n")
    body = b"<rect width='1' height='1'/>\n" * 150_000  # 4.4 MB: five pieces
    (tmp_path / "notes/kresba.svg").write_bytes(b"<svg xmlns='http://www.w3.org/2000/svg'>" + body + tail + b"</svg>")
    config = load_config(write_config(tmp_path, "index: data/index.sqlite\nsite:\n  output: site\nembedding:\n"
                                                "  provider: none\nsources:\n  notes:\n    folder: notes\n"))
    assert build(config, log=quiet(config)) == 0
    assert (tmp_path / "site/notes/kresba.svg").is_file() == published


@pytest.mark.slow
def test_a_1_gib_note_is_left_out_in_bounded_memory(tmp_path):
    """A note over limits.max_note_bytes is read no further than the limit (its sha256 piece by piece): the
    build skips it with its real size."""
    small = peak_build_kib(portal(tmp_path / "small", tmp_path / "small-site", 1024))
    config = portal(tmp_path / "large", tmp_path / "large-site", 1024)
    with open(tmp_path / "large/notes/obri.md", "wb") as note:
        note.write(b"# Obr\n\nGIANTWORD\n")
        note.truncate(GIB)
    large = peak_build_kib(config, "WARN notes: obri.md: 1073.7 MB is over limits.max_note_bytes (2,000,000 bytes); "
                                   "not indexed\n")
    print(f"peak RSS: {small} KiB, {large} KiB with a 1 GiB note beside")
    assert large - small < 50 * 1024
    assert not (tmp_path / "large-site/notes/obri.html").exists()
