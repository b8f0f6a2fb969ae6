"""A note's bytes → its text: UTF-8, or the Central European code page an older note was saved in.

Notes written on Windows years ago are often in windows-1250, and some from old Unix systems in
ISO 8859-2; read as UTF-8, every č, ř and ž of them would become U+FFFD, in the index and on the
page. A file that is not valid UTF-8 is read in whichever of the two gives more Czech and Slovak
letters (the two agree on á, č, é, ř …; they differ on š, ť, ž, ľ and their capitals; a reading
that mixes letters only Czech has with letters only Slovak has counts less), unless most
of its other characters are valid UTF-8: that is a UTF-8 note with a few damaged bytes, and those
stay U+FFFD. A file with no Czech or Slovak letter in either code page stays UTF-8 with U+FFFD too
(there is nothing to tell the code page by). The build says which way it read the file. The file
itself is never rewritten.

The indexer, the renderer and the note reader of the CLI all decode through :func:`decode_note`,
so the lines they number are the same lines.
"""

from __future__ import annotations

from dataclasses import dataclass

LEGACY_ENCODINGS = {"cp1250": "windows-1250", "iso8859_2": "ISO 8859-2"}  # codec → the name users know
_LETTERS = frozenset("áäčďéěíĺľňóôŕřšťúůýžÁÄČĎÉĚÍĹĽŇÓÔŔŘŠŤÚŮÝŽ")
_CZECH_ONLY = frozenset("ěřůĚŘŮ")
_SLOVAK_ONLY = frozenset("äĺľôŕÄĹĽÔŔ")


@dataclass(frozen=True)
class Decoded:
    """The text (without a byte order mark) and, when it was not plain UTF-8, how it was read."""

    text: str
    encoding: str  # "utf-8" or a key of LEGACY_ENCODINGS
    warning: str | None = None  # one line for the build's log, without the file's name


def decode_note(data: bytes) -> Decoded:
    """Decode a note's bytes (see the module). A UTF-8 byte order mark is never text, in a code page's
    note either (an editor that added one to a windows-1250 file): without it, the note's front matter
    opens the note, as its author saw it."""
    try:
        return Decoded(data.decode("utf-8").removeprefix("\ufeff"), "utf-8")
    except UnicodeDecodeError as exc:
        first_bad = exc.start
    data = data.removeprefix(b"\xef\xbb\xbf")
    replaced = data.decode("utf-8", errors="replace").removeprefix("\ufeff")
    damaged = replaced.count("\ufffd")
    if sum(1 for ch in replaced if ch > "\x7f") - damaged <= damaged:  # mostly not UTF-8: a code page?
        scored = []
        for codec in LEGACY_ENCODINGS:
            try:
                text = data.decode(codec)
            except UnicodeDecodeError:  # windows-1250 leaves five bytes undefined
                continue
            scored.append((_score(text), codec, text))
        if scored:
            letters, codec, text = max(scored, key=lambda s: s[0])  # a tie: the first, windows-1250
            if letters:
                return Decoded(text, codec, f"not UTF-8: read as {LEGACY_ENCODINGS[codec]}")
    return Decoded(replaced, "utf-8", f"invalid UTF-8 at byte {first_bad}, bad bytes replaced with U+FFFD")


def _score(text: str) -> int:
    """How Czech or Slovak a reading looks: its letters of the two languages, less twice the rarer of
    the letters only one of them has (ž read as windows-1250 is ľ: a Czech note full of ř and ů with
    ľ in it is a misreading)."""
    letters = czech = slovak = 0
    for ch in text:
        if ch in _LETTERS:
            letters += 1
            czech += ch in _CZECH_ONLY
            slovak += ch in _SLOVAK_ONLY
    return letters - 2 * min(czech, slovak)
