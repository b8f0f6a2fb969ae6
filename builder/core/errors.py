"""Exceptions that end in one clear line for the user, never a traceback."""

from __future__ import annotations

from pathlib import Path

# A build's and a backfill's exit codes besides a UserError's (cron and the job queue read them).
EXIT_OK = 0  # everything asked was done
EXIT_PARTIAL = 3  # done, but something was left for the next run (a source, a note, vectors): the log says what


class UserError(Exception):
    """An error the user can fix; the CLI prints ``str(error)`` and exits with ``exit_code``."""

    exit_code = 2


class ConfigError(UserError):
    """The configuration file is missing, malformed or names something that does not exist."""


class ReindexNeeded(UserError):
    """The index's vectors live in another embedding space than the config asks for."""

    exit_code = 1


class IndexMissing(UserError):
    """No index has been built yet at the configured path."""

    exit_code = 1

    def __init__(self, index: Path) -> None:
        super().__init__(f"no index at {index}: run `notes-portal build` first")


class IndexUnreadable(UserError):
    """The index file exists but SQLite cannot read it (damaged, not a database, wrong permissions)."""

    exit_code = 1

    def __init__(self, reason: object) -> None:
        super().__init__(f"the index cannot be read ({reason}); rebuild it with `notes-portal build --full`")


class JobsUnavailable(UserError):
    """The sync job queue (``jobs.sqlite``) cannot be opened or written (a full disk, permissions)."""

    exit_code = 3

    def __init__(self, path: Path, reason: object) -> None:
        super().__init__(f"the sync job queue {path} cannot be used ({reason}); cron's build still runs")
