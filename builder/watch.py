"""Watch mode: a save in a folder source becomes an incremental build within about a second.

File-system events of every folder source (the ``watchfiles`` package: inotify on Linux) are
grouped until the folder has been quiet for ``watch.debounce`` seconds, then one job per touched
source is queued (requests for the same source coalesce in the queue, so a burst of saves costs at
most the build that is running and one more). Git sources have no events to watch: every
``watch.git_poll`` seconds an ordinary build runs, the same as cron's, whose cheap ``git ls-remote``
tells whether anything moved. ``notes-portal watch`` runs this with its own job runner;
``notes-portal serve --watch`` runs it beside the server, feeding the server's runner.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from builder.core.config import Config, SourceConfig
from builder.core.errors import UserError
from builder.core.terminal import printable
from builder.notes.sources import Scope, is_hidden
from builder.sync import build

Enqueue = Callable[[str | None, str], Any]  # JobRunner.enqueue(source, reason)
MAX_GROUP_MS = 1600  # a folder that never goes quiet still builds this often


def relevant(source: SourceConfig, path: str) -> bool:
    """Could a change at ``path`` (absolute, inside the source's folder) change the index? A note in
    scope, or something without a file extension (a folder moved or deleted, its notes with it)."""
    assert source.root is not None
    try:
        rel = Path(path).relative_to(source.root).as_posix()
    except ValueError:
        return False
    parts = rel.split("/")
    if rel == "." or any(is_hidden(part) for part in parts) or parts[-1].endswith("~"):
        return False
    return Scope.of(source).wants(rel) or "." not in parts[-1]


def sources_touched(folders: Iterable[SourceConfig], paths: Iterable[str]) -> list[str]:
    """The ids of the folder sources whose index a change at any of ``paths`` may change."""
    folders = list(folders)
    return sorted({s.id for path in paths for s in folders if relevant(s, path)})


class Watch:
    """The folder watcher and the git poller, each in a daemon thread, feeding ``enqueue``."""

    def __init__(self, config: Config, enqueue: Enqueue, *, build_function: Callable[..., int] = build) -> None:
        self.config = config
        self.enqueue = enqueue
        self.build_function = build_function
        self.folders = [s for s in config.sources if s.kind == "folder" and s.root is not None]
        self.git = [s for s in config.sources if s.kind == "git"]
        self.ready = threading.Event()  # set once the folders are being watched
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def describe(self) -> str:
        """``watching 2 folders; asking 1 git source every 60 s`` for the start-up line."""
        parts = [f"watching {len(self.folders)} folder{'s' * (len(self.folders) != 1)}"]
        if self.git:
            parts.append(f"asking {len(self.git)} git source{'s' * (len(self.git) != 1)} "
                         f"every {self.config.watch.git_poll:g} s")
        return "; ".join(parts)

    def start(self) -> None:
        """Queue one build of every source (what changed while nobody watched), then start watching."""
        self.enqueue(None, "watch")
        targets = [(self._watch_folders, "folders")] if self.folders else []
        if self.git:
            targets.append((self._poll_git, "git"))
        if not self.folders:
            self.ready.set()
        for target, name in targets:
            thread = threading.Thread(target=target, name=f"notes-portal watch {name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)

    def wait(self) -> None:
        """Block until :meth:`stop` (from another thread or a signal handler)."""
        while not self._stop.wait(1.0):
            pass

    def _watch_folders(self) -> None:
        import watchfiles

        step = max(1, round(self.config.watch.debounce * 1000))
        roots = [s.root for s in self.folders if s.root is not None and s.root.is_dir()]
        missing = [s.id for s in self.folders if s.root not in roots]
        if missing:  # a folder that is not there (not mounted) is the builds' WARN; the others are watched
            print(f"notes-portal: not watching {', '.join(missing)}: its folder does not exist", file=sys.stderr)
        try:
            if not roots:
                return
            changes_seen = watchfiles.watch(*roots, watch_filter=None, step=step, debounce=max(MAX_GROUP_MS, step),
                                            stop_event=self._stop, rust_timeout=1000, yield_on_timeout=True,
                                            raise_interrupt=False)
            for changes in changes_seen:
                self.ready.set()  # the first timeout: the watches are in place
                for source_id in sources_touched(self.folders, (path for _, path in changes)):
                    self._ask(source_id)
        except Exception as exc:  # a folder gone, too many watches (fs.inotify.max_user_watches), …
            print(f"notes-portal: watching the folders stopped ({type(exc).__name__}: {printable(str(exc))}); "
                  "cron's build still runs", file=sys.stderr)
        finally:
            self.ready.set()

    def _ask(self, source_id: str | None) -> None:
        try:
            self.enqueue(source_id, "watch")
        except UserError as exc:
            print(f"notes-portal: {printable(str(exc))}", file=sys.stderr)

    def _poll_git(self) -> None:
        while not self._stop.wait(self.config.watch.git_poll):
            try:
                self.build_function(self.config, wait=True)
            except UserError as exc:
                print(f"notes-portal: {printable(str(exc))}", file=sys.stderr)
            except Exception as exc:  # a bug must not end the poller
                print(f"notes-portal: the git poll's build failed ({type(exc).__name__}: {printable(str(exc))})",
                      file=sys.stderr)
