"""Live grep over every file of the sources (not only markdown): ripgrep when installed.

Scope still applies, except ``include``: a ``paths`` whitelist and ``exclude``
keep private directories out of grep as they keep them out of the index, and a
caller may leave out more files (``skip``: notes marked ``published: false``).
:func:`find` returns the matches as data (for the CLI, ``--json`` and the MCP server),
:func:`grep` prints them.

A note the build read in a code page (:func:`builder.core.textdecode.decode_note`: an older note
in windows-1250 or ISO 8859-2; the index records which, see ``code_pages``) is searched in that
code page (ripgrep's ``--encoding``) and its lines are shown in UTF-8; every other file is searched
as UTF-8. A note saved in a code page since the last build is searched as UTF-8 until the next one.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.core.config import Config, SourceConfig
from builder.core.errors import UserError
from builder.core.textdecode import LEGACY_ENCODINGS
from builder.core.interpreter import child_environment, python_command
from builder.notes.sources import Scope, walk

MAX_LINE_CHARS = 500  # a longer matching line is cut here and ends with TRIMMED
TRIMMED = " […]"
TIME_LIMIT_S = 20.0  # a grep still running then is stopped (a pattern that backtracks, a huge tree)
_RIPGREP_ENCODING = {"cp1250": "windows-1250", "iso8859_2": "iso-8859-2"}  # LEGACY_ENCODINGS' codecs, as rg names them
assert set(_RIPGREP_ENCODING) == set(LEGACY_ENCODINGS)

Skip = Callable[[str, str], bool]  # (source id, path) → leave the file out


@dataclass(frozen=True)
class Match:
    """One matching line: ``source:path:line:text``."""

    source: str
    path: str
    line: int
    text: str


@dataclass(frozen=True)
class Found:
    """What :func:`find` found: the matches in path order, whether it stopped at ``max_results``,
    and the sources it could not search (one line each)."""

    matches: tuple[Match, ...]
    truncated: bool
    warnings: tuple[str, ...]


def compile_pattern(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """The pattern as a Python regular expression, or a one-line :class:`UserError`."""
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise UserError(f"invalid regular expression {pattern!r}: {exc}") from None


def find(config: Config, sources: list[SourceConfig], pattern: str, *, ignore_case: bool = False,
         max_results: int | None = None, skip: Skip | None = None,
         code_pages: Mapping[tuple[str, str], str] | None = None) -> Found:
    """Every line of the sources' files that ``pattern`` matches, at most ``max_results`` of them;
    a search still running after ``TIME_LIMIT_S`` ends with a one-line :class:`UserError`.
    ``code_pages``: (source, path) → the code page the build read that note in (the index's)."""
    compile_pattern(pattern, ignore_case)  # a bad pattern is the caller's one-line error, not the engine's
    rg = shutil.which("rg")
    deadline = time.monotonic() + TIME_LIMIT_S
    matches: list[Match] = []
    warnings: list[str] = []
    for source in sources:
        root = config.source_root(source)
        if not root.is_dir():
            warnings.append(f"{source.id}: {root} does not exist" + (" (is it mounted?)" if source.kind == "folder"
                                                                      else " yet (run `notes-portal build`)"))
            continue
        read_in = _still_in_code_pages(root, {path: codec for (sid, path), codec in (code_pages or {}).items()
                                              if sid == source.id})
        if rg:
            legacy = _legacy_matches(rg, root, source, pattern, ignore_case, deadline, read_in)
            command = _ripgrep_command(rg, source, pattern, ignore_case)
        else:
            legacy, command = {}, _python_command(root, source, pattern, ignore_case, read_in)
        with closing(_matches(command, root, source.id, deadline, ripgrep=rg is not None)) as lines:
            for match in _merged(lines, legacy):
                if skip is not None and skip(match.source, match.path):
                    continue
                if max_results is not None and len(matches) >= max_results:
                    return Found(tuple(matches), True, tuple(warnings))
                matches.append(match)
    return Found(tuple(matches), False, tuple(warnings))


def grep(config: Config, sources: list[SourceConfig], pattern: str, *, ignore_case: bool = False,
         max_results: int | None = None, skip: Skip | None = None) -> bool:
    """Print ``source:path:line:text`` for every match (warnings to stderr); True when anything matched."""
    found = find(config, sources, pattern, ignore_case=ignore_case, max_results=max_results, skip=skip)
    for warning in found.warnings:
        print(f"notes-portal: {warning}", file=sys.stderr)
    for m in found.matches:
        print(f"{m.source}:{m.path}:{m.line}:{m.text}")
    return bool(found.matches)


def _trim(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + TRIMMED


def _still_in_code_pages(root: Path, read_in: dict[str, str]) -> dict[str, str]:
    """``read_in`` (path → code page) less the notes that are valid UTF-8 now (converted since the
    build) or gone."""
    kept = {}
    for path, codec in read_in.items():
        try:
            with open(root / path, "rb") as handle:  # piece by piece: the note may have grown to any size
                decoder = codecs.getincrementaldecoder("utf-8")()
                while piece := handle.read(1 << 20):
                    decoder.decode(piece)
                decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            kept[path] = codec
        except OSError:
            continue
    return kept


def _legacy_matches(rg: str, root: Path, source: SourceConfig, pattern: str, ignore_case: bool, deadline: float,
                    read_in: dict[str, str]) -> dict[str, list[Match]]:
    """Path → the matches of each note in ``read_in`` (path → code page), searched in its code page."""
    found: dict[str, list[Match]] = {path: [] for path in read_in}
    for codec, label in _RIPGREP_ENCODING.items():
        paths = sorted(path for path, used in read_in.items() if used == codec)
        if paths:
            command = _ripgrep_command(rg, source, pattern, ignore_case, encoding=label, paths=paths)
            with closing(_matches(command, root, source.id, deadline, ripgrep=True)) as lines:
                for match in lines:
                    found.setdefault(match.path, []).append(match)
    return found


def _merged(matches: Iterator[Match], legacy: dict[str, list[Match]]) -> Iterator[Match]:
    """``matches`` (path order) with each file in ``legacy`` answered by its own list instead, in
    ripgrep's path order (a folder's entries by name)."""
    if not legacy:
        yield from matches
        return
    pending = sorted(legacy.items(), key=lambda item: _path_order(item[0]), reverse=True)
    for match in matches:
        while pending and _path_order(pending[-1][0]) < _path_order(match.path):
            yield from pending.pop()[1]
        if match.path not in legacy:
            yield match
    while pending:
        yield from pending.pop()[1]


def _path_order(path: str) -> list[bytes]:
    return [os.fsencode(part) for part in path.split("/")]


def _ripgrep_command(rg: str, source: SourceConfig, pattern: str, ignore_case: bool,
                     encoding: str | None = None, paths: list[str] | None = None) -> list[str]:
    globs: list[str] = []
    if "**" not in source.paths:
        for p in source.paths:
            globs += ["-g", p, "-g", f"{p}/**"]
    for p in source.exclude:
        globs += ["-g", f"!{p}", "-g", f"!{p}/**"]
    return [rg, "--line-number", "--no-heading", "--with-filename", "--null", "--color=never", "--no-ignore",
            "--sort", "path", "-g", "!node_modules", "-g", "!__pycache__", *(["-i"] if ignore_case else []),
            *(["--encoding", encoding] if encoding else []), *globs, "-e", pattern, *(["--", *paths] if paths else [])]


def _python_command(root: Path, source: SourceConfig, pattern: str, ignore_case: bool,
                    read_in: dict[str, str]) -> list[str]:
    """This module as a child process that prints what ripgrep would: Python's regular expressions
    cannot be interrupted, so a pattern that backtracks for ever must run where it can be killed."""
    spec = {"root": str(root), "paths": list(source.paths), "exclude": list(source.exclude),
            "pattern": pattern, "ignore_case": ignore_case, "code_pages": read_in}
    return python_command("-c", _CHILD, json.dumps(spec))


def _matches(command: list[str], root: Path, source_id: str, deadline: float, *,
             ripgrep: bool) -> Generator[Match, None, None]:
    """The engine's matches in path order; stops reading (and ends the engine) when the caller stops
    asking, and kills it at ``deadline``."""
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: the engine never blocks on what it says there
        # stdin closed: ripgrep given no path searches its stdin when that is a pipe (a script's)
        proc = subprocess.Popen(command, cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=errors,
                                env=None if ripgrep else child_environment())
        assert proc.stdout is not None
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()

        timer = threading.Timer(max(deadline - time.monotonic(), 0.0), expire)
        timer.start()
        read_all = False
        try:
            for raw in proc.stdout:  # bytes, split at \n only (a \r inside a line stays in it)
                path, _, rest = raw.removesuffix(b"\n").partition(b"\0")
                number, _, text = rest.partition(b":")
                yield Match(source_id, path.decode("utf-8", "replace").removeprefix("./"), int(number),
                            _trim(text.decode("utf-8", "replace")))
            read_all = True
        finally:
            timer.cancel()
            if not read_all:  # the caller stopped early: end the engine instead of reading the rest
                proc.kill()
            proc.stdout.close()
            code = proc.wait()
        errors.seek(0)
        error = errors.read().decode("utf-8", "replace").strip()
    if expired.is_set():
        hint = "" if ripgrep else " (install ripgrep: it matches any pattern in linear time)"
        raise UserError(f"grep stopped after {TIME_LIMIT_S:g} s: the pattern is too slow to match{hint}")
    if read_all and code > 1:
        raise UserError(f"{'rg' if ripgrep else 'grep'}: {error.splitlines()[-1] if error else 'failed'}")


def _scan(spec: dict[str, Any]) -> None:
    """The Python engine (see :func:`_python_command`): ``path\\0line:text`` per match on stdout."""
    regex = compile_pattern(spec["pattern"], spec["ignore_case"])
    root = Path(spec["root"])
    scope = Scope(paths=tuple(spec["paths"]), include=("**",), exclude=tuple(spec["exclude"]))
    out = sys.stdout.buffer
    for rel in sorted(walk(root, scope).files, key=_path_order):  # ripgrep's order
        try:
            with open(root / rel, "rb") as handle:  # line by line: a file of any size in bounded memory
                if b"\x00" in handle.read(8192):
                    continue
                handle.seek(0)
                codec = spec["code_pages"].get(rel, "utf-8")
                for number, raw in enumerate(handle, start=1):  # lines as ripgrep counts them (split at \n)
                    if number == 1:
                        raw = raw.removeprefix(b"\xef\xbb\xbf")  # ripgrep drops a UTF-8 byte order mark too
                    line = raw.removesuffix(b"\n").decode(codec, errors="replace")
                    if regex.search(line):
                        out.write(b"%s\0%d:%s\n" % (os.fsencode(rel), number, line.encode("utf-8", "replace")))
        except OSError:
            continue
    out.flush()


def scan_main(argument: str) -> None:
    """The child's entry point: ``_scan`` with a one-line error and exit status 2 (as ripgrep)."""
    try:
        _scan(json.loads(argument))
    except (OSError, ValueError, UserError) as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(2)


# the portal's code, never a module of the notes folder the child runs in (builder.core.interpreter)
_CHILD = "import sys; from builder.notes.grep import scan_main; scan_main(sys.argv[1])"
