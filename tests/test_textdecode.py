"""Notes saved in an older Central European code page are read as their authors wrote them."""

from __future__ import annotations

import pytest

from builder.core.config import load_config
from builder.core.index import open_index
from builder.core.textdecode import decode_note
from builder.sync import build
from builder.core.synclog import SyncLog
from server.search import search
from tests.conftest import write_config

CZECH = "# Čaj\n\nPříliš žluťoučký kůň úpěl ďábelské ódy. Šťovík, Ťuhýk, Žížala.\n"
SLOVAK = "# Ďateľ\n\nĽudovít sa zľakol ťažkého ďatľa; Ľubica, Ťahúň a Šťuka šťastne ďalej.\n"


@pytest.mark.parametrize("text", [CZECH, SLOVAK])
@pytest.mark.parametrize("codec, name", [("cp1250", "windows-1250"), ("iso8859_2", "ISO 8859-2")])
def test_a_note_in_a_legacy_code_page_is_read_as_written(text, codec, name):
    decoded = decode_note(text.encode(codec))
    assert (decoded.text, decoded.encoding, decoded.warning) == (text, codec, f"not UTF-8: read as {name}")


@pytest.mark.parametrize("text, codec", [
    ("žena a kůň, růže, řeka", "iso8859_2"),  # ž is the only letter the two read differently: ľ would be wrong
    ("ľudia a ôsmy deň", "cp1250"),  # a tie, no Czech-only letter: the more common code page
])
def test_a_reading_that_mixes_czech_and_slovak_letters_loses(text, codec):
    decoded = decode_note(text.encode(codec))
    assert (decoded.text, decoded.encoding) == (text, codec)


@pytest.mark.parametrize("data", [CZECH.encode(), b"\xef\xbb\xbf" + CZECH.encode(), b"plain ascii\n", b""])
def test_utf8_is_read_as_utf8_without_a_word(data):
    assert decode_note(data) == decode_note(data).__class__(data.decode("utf-8-sig"), "utf-8", None)


def test_a_utf8_note_with_a_damaged_byte_keeps_its_letters():
    """Most of its characters are UTF-8: the damaged byte is U+FFFD, the rest is not read as windows-1250."""
    decoded = decode_note(CZECH.encode() + b"konec \xe8\n")
    assert decoded.text == CZECH + "konec \ufffd\n"
    warning = f"invalid UTF-8 at byte {len(CZECH.encode()) + 6}, bad bytes replaced with U+FFFD"
    assert (decoded.encoding, decoded.warning) == ("utf-8", warning)


def test_without_a_czech_or_slovak_letter_the_code_page_is_not_guessed():
    decoded = decode_note(b"price 100 \xa4, \xb0C\n")  # currency sign and degree: the same in both code pages
    assert decoded.text == "price 100 \ufffd, \ufffdC\n"
    assert decoded.warning == "invalid UTF-8 at byte 10, bad bytes replaced with U+FFFD"


def test_a_windows_1250_note_is_found_by_its_words_and_rendered_with_its_letters(tmp_path):
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "stary.md").write_bytes(CZECH.encode("cp1250"))
    config = load_config(write_config(tmp_path, "embedding:\n  provider: none\nsources:\n  notes:\n"
                                                "    folder: notes\n"))
    log = SyncLog(config.log_path, echo_info=False)
    assert build(config, log=log) == 0
    assert any(line.endswith("WARN notes: stary.md: not UTF-8: read as windows-1250") for line in log.lines)
    conn = open_index(config.index)
    hits = search(conn, config, "žluťoučký kůň").hits
    assert [(h.path, h.title) for h in hits] == [("stary.md", "Čaj")]
    conn.close()
    page = (config.site.output / "notes" / "stary.html").read_text(encoding="utf-8")
    assert "Příliš žluťoučký kůň úpěl ďábelské ódy. Šťovík, Ťuhýk, Žížala." in page
    assert "\ufffd" not in page
    assert (notes / "stary.md").read_bytes() == CZECH.encode("cp1250")  # the note itself is never rewritten
