"""Reading the config's YAML with errors that name the key, the bad value and its line.

:class:`KeyLines` finds the line of every key path in the composed YAML (and the keys defined
twice, which the YAML parser silently merges); :class:`Reader` hands out typed values and makes
the :class:`ConfigError` for a bad one. :mod:`builder.core.config` says what the keys mean.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from builder.core.errors import ConfigError


class KeyLines:
    """Maps key paths such as ('sources', 'docs', 'folder') to the line they are on."""

    def __init__(self, node: yaml.Node | None) -> None:
        self.lines: dict[tuple[str, ...], int] = {}
        self.duplicates: list[tuple[tuple[str, ...], int]] = []  # YAML silently keeps the last one
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: yaml.Node, prefix: tuple[str, ...]) -> None:
        self.lines.setdefault(prefix, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key_node, value_node in node.value:
                key = (*prefix, str(key_node.value))
                if key[-1] in seen:
                    self.duplicates.append((key, key_node.start_mark.line + 1))
                seen.add(key[-1])
                self.lines[key] = key_node.start_mark.line + 1
                self._walk(value_node, key)

    def line(self, key: tuple[str, ...]) -> int | None:
        """The line of ``key``, else of its nearest parent that has one; None when there is none."""
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return None


class Reader:
    """Typed access to the raw YAML mapping with errors that name key, value and line."""

    def __init__(self, file: Path, lines: KeyLines) -> None:
        self.file = file
        self.lines = lines

    def fail(self, key: tuple[str, ...], message: str) -> ConfigError:
        """The error to raise for ``key``: ``file:line: dotted.key: message``."""
        line = self.lines.line(key)
        where = f"{self.file}:{line}" if line else str(self.file)
        return ConfigError(f"{where}: {'.'.join(key)}: {message}")

    def mapping(self, raw: Any, key: tuple[str, ...], allowed: set[str]) -> dict[str, Any]:
        """``raw`` as a mapping whose keys are all ``allowed`` (None: an empty one)."""
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise self.fail(key, f"expected a mapping, got {describe(raw)}")
        for name in raw:
            if not isinstance(name, str) or name not in allowed:
                raise self.fail((*key, str(name)), f"unknown key (allowed: {', '.join(sorted(allowed))})")
        return raw

    def string(self, raw: dict[str, Any], key: tuple[str, ...], default: str | None = None) -> str | None:
        """The string at ``key`` (its last part looked up in ``raw``), or ``default``."""
        value = raw.get(key[-1], default)
        if value is None or isinstance(value, str):
            return value
        raise self.fail(key, f"expected a string, got {describe(value)}")

    def number(self, raw: dict[str, Any], key: tuple[str, ...], default: float, *, integer: bool = False,
               minimum: float | None = None) -> Any:
        """The number at ``key``, or ``default``; an integer when asked, never a bool, at least ``minimum``."""
        value = raw.get(key[-1], default)
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok:
            kind = "an integer" if integer else "a number"
            raise self.fail(key, f"expected {kind}, got {describe(value)}")
        if minimum is not None and value < minimum:
            raise self.fail(key, f"must be at least {minimum}, got {value!r}")
        return value

    def boolean(self, raw: dict[str, Any], key: tuple[str, ...], default: bool) -> bool:
        """``true`` or ``false`` at ``key``, or ``default``."""
        value = raw.get(key[-1], default)
        if not isinstance(value, bool):
            raise self.fail(key, f"expected true or false, got {describe(value)}")
        return value

    def patterns(self, raw: dict[str, Any], key: tuple[str, ...], default: tuple[str, ...]) -> tuple[str, ...]:
        """Glob patterns at ``key`` (one string or a list), trimmed of slashes; ``/`` means ``**``."""
        value = raw.get(key[-1])
        if value is None:
            return default
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self.fail(key, f"expected a list of glob patterns, got {describe(value)}")
        return tuple(v.strip().strip("/") if v.strip() != "/" else "**" for v in value)

    def path(self, value: str, base: Path) -> Path:
        """``value`` (``~`` expanded) resolved against ``base``."""
        # normpath, not resolve(): the index path is a symlink that must stay one
        return Path(os.path.normpath(base / Path(value).expanduser()))


def describe(value: Any) -> str:
    """``type repr`` of a bad value for an error message (long ones shortened)."""
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) < 60 else text[:57] + '...'}"
