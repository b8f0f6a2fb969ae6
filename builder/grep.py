"""Live grep over every file of the sources (not only markdown): ripgrep when installed.

Scope still applies, except ``include``: a ``paths`` whitelist and ``exclude``
keep private directories out of grep as they keep them out of the index, and a
caller may leave out more files (``skip``: notes marked ``published: false``).
:func:`find` returns the matches as data (for the CLI, ``--json`` and the MCP server),
:func:`grep` prints them.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Generator
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from builder.core.config import Config, SourceConfig
from builder.core.errors import UserError
from builder.sources import Scope, walk

MAX_LINE_CHARS = 500  # a longer matching line is cut here and ends with TRIMMED
TRIMMED = " […]"

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


def _grep_scope(source: SourceConfig) -> Scope:
    return Scope(paths=source.paths, include=("**",), exclude=source.exclude)


def compile_pattern(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    """The pattern as a Python regular expression, or a one-line :class:`UserError`."""
    try:
        return re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise UserError(f"invalid regular expression {pattern!r}: {exc}") from None


def find(config: Config, sources: list[SourceConfig], pattern: str, *, ignore_case: bool = False,
         max_results: int | None = None, skip: Skip | None = None) -> Found:
    """Every line of the sources' files that ``pattern`` matches, at most ``max_results`` of them."""
    regex = compile_pattern(pattern, ignore_case)
    rg = shutil.which("rg")
    matches: list[Match] = []
    warnings: list[str] = []
    for source in sources:
        root = config.source_root(source)
        if not root.is_dir():
            warnings.append(f"{source.id}: {root} does not exist yet (run `notes-portal build`)")
            continue
        lines = _ripgrep(rg, root, source, pattern, ignore_case) if rg else _python_grep(root, source, regex)
        with closing(lines):
            for match in lines:
                if skip is not None and skip(match.source, match.path):
                    continue
                if max_results is not None and len(matches) >= max_results:
                    return Found(tuple(matches), True, tuple(warnings))
                matches.append(match)
    return Found(tuple(matches), False, tuple(warnings))


def grep(config: Config, sources: list[SourceConfig], pattern: str, *, ignore_case: bool = False,
         max_results: int | None = None, skip: Skip | None = None) -> bool:
    """Print ``source:path:line:text`` for every match (warnings to stderr); True when anything matched."""
    import sys

    found = find(config, sources, pattern, ignore_case=ignore_case, max_results=max_results, skip=skip)
    for warning in found.warnings:
        print(f"notes-portal: {warning}", file=sys.stderr)
    for m in found.matches:
        print(f"{m.source}:{m.path}:{m.line}:{m.text}")
    return bool(found.matches)


def _trim(text: str) -> str:
    return text if len(text) <= MAX_LINE_CHARS else text[:MAX_LINE_CHARS] + TRIMMED


def _ripgrep(rg: str, root: Path, source: SourceConfig, pattern: str, ignore_case: bool) -> Generator[Match, None, None]:
    """ripgrep's matches in path order; stops reading (and ends rg) when the caller stops asking."""
    globs: list[str] = []
    if "**" not in source.paths:
        for p in source.paths:
            globs += ["-g", p, "-g", f"{p}/**"]
    for p in source.exclude:
        globs += ["-g", f"!{p}", "-g", f"!{p}/**"]
    command = [rg, "--line-number", "--no-heading", "--with-filename", "--null", "--color=never", "--no-ignore",
               "--sort", "path", "-g", "!node_modules", "-g", "!__pycache__", *(["-i"] if ignore_case else []),
               *globs, "-e", pattern]
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: rg never blocks on what it says there
        proc = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=errors)
        assert proc.stdout is not None
        read_all = False
        try:
            for raw in proc.stdout:  # bytes, split at \n only (a \r inside a line stays in it)
                path, _, rest = raw.removesuffix(b"\n").partition(b"\0")
                number, _, text = rest.partition(b":")
                yield Match(source.id, path.decode("utf-8", "replace").removeprefix("./"), int(number),
                            _trim(text.decode("utf-8", "replace")))
            read_all = True
        finally:
            if not read_all:  # the caller stopped early: end rg instead of reading the rest
                proc.kill()
            proc.stdout.close()
            code = proc.wait()
        errors.seek(0)
        error = errors.read().decode("utf-8", "replace").strip()
    if read_all and code > 1:
        raise UserError(f"rg: {error.splitlines()[-1] if error else 'failed'}")


def _python_grep(root: Path, source: SourceConfig, regex: re.Pattern[str]) -> Generator[Match, None, None]:
    for rel in sorted(walk(root, _grep_scope(source)).files):
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if regex.search(line):
                yield Match(source.id, rel, number, _trim(line))
