"""Is the site stale? The renderer's code fingerprint and the stamp the every-minute build checks.

What shapes every page is the index's content, the renderer's code, the
templates and a few settings. The content is named by the index's
``content_token`` (its generation and a counter every write of a note moves),
so a render that was killed or failed leaves the old token in the stamp and the
next build renders again, whatever the previous build did.
The code is found, not listed: every module of this package and every project
module they import, directly or not (read from their source with :mod:`ast`),
plus every file under ``templates/``. A render records those files with their
size and mtime in ``<site>/.render-stamp``; the no-op build only ``stat``\\ s them
again, so it imports neither Jinja2 nor markdown-it.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypedDict, cast

from builder.core import templates
from builder.core.config import Config
from builder.core.atomic import write_atomic
from builder.render.output import STAMP, STATE

RENDER_VERSION = "1"
PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent.parent  # holds the top-level package "builder"
PROJECT_PACKAGE = "builder"


def _module_file(name: str) -> Path | None:
    base = PROJECT_DIR.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _imported_modules(path: Path) -> set[str]:
    """Project modules ``path`` imports anywhere in its code (lazy imports inside functions too),
    with the packages they live in (importing a module runs its packages' ``__init__``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    found: set[str] = set()
    for name in names:
        parts = name.split(".")
        if parts[0] == PROJECT_PACKAGE:
            found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return found


class _ImportCache:
    """Each module's project imports as last read, by its path, size and mtime: reading them is an
    ``ast.parse`` per module (about 1.5 ms each), a ``stat`` is enough when the module is unchanged."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.old: dict[str, Any] = {}
        if path is not None:
            with contextlib.suppress(OSError, ValueError):
                self.old = json.loads(path.read_text(encoding="utf-8"))
        self.new: dict[str, Any] = {}

    def imports(self, module: Path) -> set[str]:
        st = os.stat(module)
        known = self.old.get(str(module))
        if isinstance(known, list) and known[:2] == [st.st_size, st.st_mtime_ns]:
            names = set(known[2])
        else:
            names = _imported_modules(module)
        self.new[str(module)] = [st.st_size, st.st_mtime_ns, sorted(names)]
        return names

    def save(self) -> None:
        if self.path is not None and self.new != self.old:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(self.path, json.dumps(self.new))


def code_files(cache: Path | None = None) -> list[Path]:
    """The renderer's modules, the project modules they import (transitively) and the templates;
    ``cache``: a file that keeps each module's imports (see :class:`_ImportCache`)."""
    imports = _ImportCache(cache)
    seen: set[Path] = set()
    todo = sorted(PACKAGE_DIR.glob("*.py"))
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(f for f in map(_module_file, imports.imports(path)) if f is not None and f not in seen)
    imports.save()
    template_files = [Path(d) / f for d, _, names in sorted(os.walk(templates.TEMPLATE_DIR)) for f in sorted(names)]
    return sorted(seen) + template_files


def settings_digest(config: Config) -> str:
    """The settings every page depends on, and where the renderer and templates are installed (an
    install elsewhere may differ while the files the last render used are still there)."""
    data = json.dumps([RENDER_VERSION, str(PACKAGE_DIR), str(templates.TEMPLATE_DIR), config.site.title,
                       config.site.language, config.allow_html, [s.id for s in config.sources],
                       *templates.ask_settings(config.answer)])
    return hashlib.sha256(data.encode()).hexdigest()


def _stats(files: list[Path]) -> list[list[object]]:
    out: list[list[object]] = []
    for path in files:
        st = os.stat(path)
        out.append([str(path), st.st_size, st.st_mtime_ns])
    return out


class Watched(TypedDict):
    """What the stamp keeps of the files the notes link to (:func:`linked_state`)."""

    files: list[list[Any]]  # [path, size, mtime_ns] of each linked file that exists
    folders: list[list[Any]]  # [folder, mtime_ns or None when gone] of each folder a missing one would be in


def linked_state(paths: Iterable[str]) -> Watched:
    """What the stamp keeps of the files the notes link to: an existing one's size and time; for a
    missing one, the time of the folder it would be in (creating a file there moves it). Taken after
    the render: a file put there while the render ran, after its note was read, waits for the next
    change."""
    files: list[list[Any]] = []
    folders: dict[str, int | None] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            folder = os.path.dirname(path)
            if folder not in folders:
                try:
                    folders[folder] = os.stat(folder).st_mtime_ns
                except OSError:
                    folders[folder] = None
        else:
            files.append([path, st.st_size, st.st_mtime_ns])
    return {"files": files, "folders": [[folder, mtime] for folder, mtime in folders.items()]}


def _linked_unchanged(watched: Watched) -> bool:
    """Is every linked file as :func:`linked_state` kept it, and every folder of a missing one untouched?"""
    for path, size, mtime in watched["files"]:
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_size != size or st.st_mtime_ns != mtime:
            return False
    for folder, mtime in watched["folders"]:
        try:
            now: int | None = os.stat(folder).st_mtime_ns
        except OSError:
            now = None
        if now != mtime:
            return False
    return True


def kept_watch(config: Config, content: str) -> Watched | None:
    """The linked files' state the last complete render recorded (:func:`linked_state`), when that
    render was of ``content`` and no linked file has changed since: a render whose notes link the same
    files keeps it instead of resolving and timing each link again. None otherwise."""
    try:
        stamp = json.loads((config.site.output / STAMP).read_text(encoding="utf-8"))
        watched = stamp["watched"]
        if stamp["content"] == content and _linked_unchanged(watched):
            return cast(Watched, watched)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    return None


def stamp_text(config: Config, files: list[Path], content: str, watched: Watched) -> str:
    """What ``.render-stamp`` holds after a complete render of ``content`` that used ``files``; ``watched``:
    the state of the files the notes link to, there or missing, which no note's change shows
    (:func:`linked_state`)."""
    return json.dumps({"settings": settings_digest(config), "content": content, "files": _stats(files),
                       "watched": watched}, ensure_ascii=False)


def write_stamp(config: Config, files: list[Path], content: str, watched: Watched) -> None:
    """Record a complete render of ``content`` (see :func:`stamp_text`), unless it is recorded."""
    stamp, path = stamp_text(config, files, content, watched), config.site.output / STAMP
    if not path.is_file() or path.read_text(encoding="utf-8") != stamp:
        write_atomic(path, stamp)


def site_is_stale(config: Config, content: str) -> bool:
    """True unless the last complete render was of this index ``content`` (see
    :func:`builder.core.index.content_token`) with today's renderer, templates and site settings, and
    every file the notes link to is as it was (an image put where a note expected it, one edited or
    gone). A JSON read and one ``stat`` per code file and linked file: cheap enough for the
    every-minute build."""
    site = config.site.output
    try:
        stamp = json.loads((site / STAMP).read_text(encoding="utf-8"))
        files = [Path(entry[0]) for entry in stamp["files"]]
        return (not (site / STATE).is_file() or stamp["settings"] != settings_digest(config)
                or stamp["content"] != content or _stats(files) != stamp["files"]
                or not _linked_unchanged(stamp["watched"]))
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return True
