"""Timestamps as the index, the log and the pages write them: UTC ISO 8601 to the second."""

from __future__ import annotations

from datetime import datetime, UTC


def now_iso() -> str:
    """The current time, e.g. ``2026-12-01T05:25:25+00:00``."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def iso_from_ns(ns: int) -> str:
    """A time in nanoseconds since the epoch (a file's mtime, a commit's author time) as ISO 8601."""
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).isoformat(timespec="seconds")
