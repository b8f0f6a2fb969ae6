"""Live grep over every file of the sources (not only markdown): ripgrep when installed.

Scope still applies, except ``include``: a ``paths`` whitelist and ``exclude``
keep private directories out of grep as they keep them out of the index.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from builder.core.config import Config, SourceConfig
from builder.core.errors import UserError
from builder.sources import Scope, walk


def _grep_scope(source: SourceConfig) -> Scope:
    return Scope(paths=source.paths, include=("**",), exclude=source.exclude)


def grep(config: Config, sources: list[SourceConfig], pattern: str, *, ignore_case: bool = False) -> bool:
    """Print ``source:path:line:text`` for every match; True when anything matched."""
    try:
        regex = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except re.error as exc:
        raise UserError(f"invalid regular expression {pattern!r}: {exc}") from None
    rg = shutil.which("rg")
    found = False
    for source in sources:
        root = config.source_root(source)
        if not root.is_dir():
            print(f"notes-portal: {source.id}: {root} does not exist yet (run `notes-portal build`)", file=sys.stderr)
            continue
        if rg:
            found |= _ripgrep(rg, root, source, pattern, ignore_case)
        else:
            found |= _python_grep(root, source, regex)
    return found


def _ripgrep(rg: str, root: Path, source: SourceConfig, pattern: str, ignore_case: bool) -> bool:
    globs: list[str] = []
    if "**" not in source.paths:
        for p in source.paths:
            globs += ["-g", p, "-g", f"{p}/**"]
    for p in source.exclude:
        globs += ["-g", f"!{p}", "-g", f"!{p}/**"]
    command = [rg, "--line-number", "--no-heading", "--with-filename", "--color=never", "--no-ignore",
               "-g", "!node_modules", "-g", "!__pycache__", *(["-i"] if ignore_case else []), *globs,
               "-e", pattern]
    proc = subprocess.run(command, cwd=root, capture_output=True, text=True, errors="replace")
    if proc.returncode > 1:
        raise UserError(f"rg: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else 'failed'}")
    for line in proc.stdout.splitlines():
        print(f"{source.id}:{line.removeprefix('./')}")
    return proc.returncode == 0


def _python_grep(root: Path, source: SourceConfig, regex: re.Pattern[str]) -> bool:
    found = False
    for rel in sorted(walk(root, _grep_scope(source)).files):
        try:
            data = (root / rel).read_bytes()
        except OSError:
            continue
        if b"\x00" in data[:8192]:
            continue
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if regex.search(line):
                print(f"{source.id}:{rel}:{number}:{line}")
                found = True
    return found
