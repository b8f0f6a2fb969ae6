"""Folder listings kept between builds (builder/notes/listings.py): a no-op build lists only what changed,
and nothing a folder holds stays unseen for long, even where its mtime does not move."""

from __future__ import annotations

import marshal
import os
import time
import zlib
from pathlib import Path

import pytest

from builder.notes import listings as listings_module
from builder.core.config import SourceConfig, load_config
from builder.notes.listings import ROTATION, Listings
from builder.notes.sources import Scope, walk
from tests.failure_support import found, run

OLD = time.time() - 3600  # a folder last changed an hour ago: its listing can be trusted


def notes(root: Path, count: int = 12) -> None:
    """``count`` notes, a folder each (Grav's shape), every folder's mtime an hour old."""
    for i in range(count):
        folder = root / "kurz" / f"note-{i:02d}"
        folder.mkdir(parents=True)
        (folder / "item.md").write_text(f"# Note {i}\n", encoding="utf-8")
    age(root)


def age(root: Path) -> None:
    for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
        os.utime(folder, (OLD, OLD))


@pytest.fixture
def counted(monkeypatch) -> list[str]:
    """The folders ``os.scandir`` lists (as builder.notes.listings calls it)."""
    listed: list[str] = []
    real = os.scandir

    def scandir(path):
        listed.append(str(path))
        return real(path)

    monkeypatch.setattr(listings_module.os, "scandir", scandir)
    return listed


def read_kept(kept: Path) -> dict:
    return marshal.loads(kept.read_bytes()[4:])  # after the checksum


def write_kept(kept: Path, data: dict) -> None:
    payload = marshal.dumps(data)
    kept.write_bytes(zlib.crc32(payload).to_bytes(4, "little") + payload)


def walked(root: Path, kept: Path, **kwargs) -> set[str]:
    listings = Listings(kept, str(root), **kwargs)
    files = set(walk(root, Scope.of(SourceConfig(id="notes", kind="folder", root=root)), listings).files)
    listings.save()
    return files


def test_a_second_walk_lists_only_the_rotations_tenth_and_finds_the_same_files(tmp_path, counted):
    root, kept = tmp_path / "notes", tmp_path / "data" / "listings" / "notes"
    notes(root)
    counted.clear()
    first = walked(root, kept, minute=0)
    assert len(first) == 12 and len(counted) == 14  # the root, kurz/ and 12 folders
    written = kept.stat().st_mtime_ns
    counted.clear()
    assert walked(root, kept, minute=0) == first
    assert 0 < len(counted) < 14 // 2  # about a tenth, listed again by the rotation
    assert kept.stat().st_mtime_ns == written  # nothing changed: nothing written


def test_every_folder_is_listed_again_within_eleven_minutes(tmp_path, counted):
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root)
    walked(root, kept, minute=0)
    counted.clear()
    for minute in range(ROTATION):
        walked(root, kept, minute=minute)
    assert {Path(p) for p in counted} == {root, root / "kurz", *(root / "kurz").iterdir()}


def test_a_note_added_where_the_mtime_does_not_show_it_is_found_within_eleven_minutes(tmp_path):
    """A lax file system (a network share that does not move a folder's mtime): the kept listing of a
    folder says it holds nothing new; the rotation lists it again within eleven minutes."""
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root)
    walked(root, kept, minute=0)
    data = read_kept(kept)
    dev, ino, mtime, ctime, listed, dirs, files = data["folders"]["kurz/note-03"]
    data["folders"]["kurz/note-03"] = (dev, ino, mtime, ctime, listed, dirs, [])  # "item.md" unseen
    write_kept(kept, data)
    found_at = [minute for minute in range(ROTATION) if "kurz/note-03/item.md" in walked(root, kept, minute=minute)]
    slot = -zlib.crc32(b"kurz/note-03") % ROTATION  # the minute the rotation lists the folder again
    assert found_at == list(range(slot, ROTATION))  # unseen until then; once seen, the new listing keeps it


def test_a_new_note_in_a_kept_folder_and_an_edited_one_are_seen_at_once(tmp_path):
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root)
    before = walk(root, Scope.of(SourceConfig(id="notes", kind="folder", root=root))).files
    walked(root, kept, minute=0)
    (root / "kurz" / "note-05" / "extra.md").write_text("# Extra\n", encoding="utf-8")  # moves the mtime
    (root / "kurz" / "note-06" / "item.md").write_text("# Note 6, longer now\n", encoding="utf-8")  # does not
    listings = Listings(kept, str(root), minute=0)
    after = walk(root, Scope.of(SourceConfig(id="notes", kind="folder", root=root)), listings).files
    assert set(after) == {*before, "kurz/note-05/extra.md"}
    assert after["kurz/note-06/item.md"].size != before["kurz/note-06/item.md"].size


def test_a_listing_taken_as_its_folder_changed_is_not_trusted(tmp_path, counted):
    """The folder changed within two seconds of its listing (one clock tick of a coarse file system):
    the next walk lists it again, and only once it is older is the listing trusted."""
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root, 1)
    folder = root / "kurz" / "note-00"
    minute = (1 - zlib.crc32(b"kurz/note-00")) % ROTATION  # not the minute the rotation lists it again
    walked(root, kept, minute=minute)
    (folder / "new.md").write_text("# New\n", encoding="utf-8")  # now: racy when listed
    walked(root, kept, minute=minute)
    counted.clear()
    walked(root, kept, minute=minute)
    assert str(folder) in counted  # still racy: listed again
    age(root)
    walked(root, kept, minute=minute)
    counted.clear()
    walked(root, kept, minute=minute)
    assert str(folder) not in counted


def test_a_folder_with_a_link_is_listed_every_time(tmp_path, counted):
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root, 2)
    (root / "kurz" / "note-00" / "link.md").symlink_to("item.md")
    age(root)
    walked(root, kept, minute=1)
    assert set(read_kept(kept)["folders"]) == {"", "kurz", "kurz/note-01"}  # not note-00
    counted.clear()
    for _ in range(3):
        walked(root, kept, minute=1)
    assert counted.count(str(root / "kurz" / "note-00")) == 3


def test_full_lists_everything_and_a_damaged_file_is_ignored(tmp_path, counted):
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root, 3)
    walked(root, kept, minute=1)
    counted.clear()
    walked(root, kept, minute=1, trust=False)
    assert len(counted) == 5
    good = kept.read_bytes()
    damaged = [b"\x00not marshal", good[:len(good) // 2]]  # garbage, a torn write
    damaged += [good[:i] + bytes([good[i] ^ 1]) + good[i + 1:] for i in range(len(good))]
    for data in damaged:  # a bit flipped in every byte: none passes the checksum
        kept.write_bytes(data)
        counted.clear()
        assert walked(root, kept, minute=1) == {f"kurz/note-0{i}/item.md" for i in range(3)} and len(counted) == 5
        assert kept.read_bytes() == good or set(read_kept(kept)["folders"]) == {
            "", "kurz", "kurz/note-00", "kurz/note-01", "kurz/note-02"}


def test_the_build_keeps_listings_and_a_noop_writes_none(tmp_path):
    root = tmp_path / "notes"
    notes(root, 3)
    path = tmp_path / "portal.yaml"
    path.write_text(f"index: data/index.sqlite\nsite:\n  output: site\nembedding:\n  provider: none\n"
                    f"sources:\n  notes:\n    folder: {root}\n", encoding="utf-8")
    config = load_config(path)
    assert run(config) == (0, [])
    kept = tmp_path / "data" / "listings" / "notes"
    written = kept.stat().st_mtime_ns
    assert run(config) == (0, []) and kept.stat().st_mtime_ns == written  # a no-op writes nothing
    (root / "kurz" / "note-01" / "second.md").write_text("# Druhá\n\nZlatokopka.\n", encoding="utf-8")
    assert run(config) == (0, []) and found(config, "zlatokopka") == 1
    assert "second.md" in read_kept(kept)["folders"]["kurz/note-01"][6]
    assert sorted(p.name for p in kept.parent.iterdir()) == ["notes", "notes.stats"]
    other = tmp_path / "other"
    notes(other, 1)
    path.write_text(f"index: data/index.sqlite\nsite:\n  output: site\nembedding:\n  provider: none\n"
                    f"sources:\n  other:\n    folder: {other}\n", encoding="utf-8")
    assert run(load_config(path)) == (0, [])
    assert sorted(p.name for p in kept.parent.iterdir()) == ["other", "other.stats"]  # the removed source's are gone


def test_a_folder_whose_name_is_not_utf8_is_kept_and_walked_again(tmp_path, counted):
    """Linux allows any bytes in a name (a disk from another system): the listing keeps it as os.scandir
    gives it, and the rotation's hash takes its bytes."""
    root, kept = tmp_path / "notes", tmp_path / "listings"
    odd = os.fsdecode(b"\xff\xfe-stare")
    (root / odd).mkdir(parents=True)
    (root / odd / "a.md").write_text("# A\n", encoding="utf-8")
    age(root)
    counted.clear()
    for minute in range(ROTATION):
        assert walked(root, kept, minute=minute) == {f"{odd}/a.md"}
    assert 2 * ROTATION > len(counted) > 2  # the two folders listed on their rotation's minute, and the first time


@pytest.mark.parametrize("every", [1, 2, 5, 10, 15, 30, 60, 1440])
def test_builds_every_n_minutes_list_every_folder_again_within_eleven_builds(tmp_path, counted, every):
    """A cron step of 5, 10 or 60 minutes must not meet the same few folders every time."""
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root)
    walked(root, kept, minute=0)
    counted.clear()
    for build in range(1, ROTATION + 1):
        walked(root, kept, minute=build * every)
    assert {Path(p) for p in counted} == {root, root / "kurz", *(root / "kurz").iterdir()}


def test_a_folder_dated_in_the_future_is_listed_every_time_and_written_once(tmp_path, counted):
    """An archive unpacked from a clock ahead of this one: its folder can never be trusted, and no-op
    builds do not rewrite the file for it."""
    root, kept = tmp_path / "notes", tmp_path / "listings"
    notes(root, 2)
    ahead = time.time() + 7200
    os.utime(root / "kurz" / "note-01", (ahead, ahead))
    walked(root, kept, minute=1)
    written = kept.stat().st_mtime_ns, kept.stat().st_ino
    counted.clear()
    for _ in range(3):
        walked(root, kept, minute=1)
    assert counted.count(str(root / "kurz" / "note-01")) == 3
    assert (kept.stat().st_mtime_ns, kept.stat().st_ino) == written
