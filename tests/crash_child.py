"""Run the real ``notes-portal`` CLI and SIGKILL it at the N-th call of a project function.

The crash harness (``tests/crash_harness.py``) starts this script as a child process::

    python tests/crash_child.py ROOT MODE REPORT <cli args…>

``ROOT`` is the project checkout whose ``builder`` package runs. ``MODE`` is ``plain`` (just the
CLI), ``count`` (a dry run: count every event and write the event map to ``REPORT`` as JSON) or an
event number N (at the N-th event write ``N<TAB>function`` to ``REPORT``, then ``SIGKILL`` this
process; 0: never, the control). An event is a ``call`` event (``sys.settrace``; generator resumes
included) of a function whose code lives under ``ROOT/builder/``, in the main thread only (forked
render workers stop counting), so the numbering is deterministic for a given state (the harness sets
``PYTHONHASHSEED``, and the folder listings' rotation is held at one minute).

Each event carries the build phase it happens in, followed from a few landmark functions:
``startup`` → ``scan`` (``sync._incremental``) → ``index`` (``sync._apply``) → ``between`` (index
done, site not yet rendered; ``checkpoint``) → ``swap`` (``indexfile.swap_in``, ``--full``) →
``render`` (``render.site.render_site``) → ``end`` (after the render: the lock's release) →
``embed`` (``embed_run._backfill``: the vectors the cache did not have, after the build lock). An event
inside an open ``BEGIN IMMEDIATE … COMMIT`` (``core.index.connection.transaction``) gets ``-tx``
appended: killed there, the process dies mid-transaction.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

# function → (phase from its call on, phase after it returns; None: unchanged)
LANDMARKS: dict[str, tuple[str, str | None]] = {
    "builder.sync._incremental": ("scan", "between"),
    "builder.sync._load_vec": ("index", None),
    "builder.sync._apply": ("index", None),
    "builder.core.index.connection.checkpoint": ("between", None),
    "builder.indexfile.swap_in": ("swap", "between"),
    "builder.render.site.render_site": ("render", "end"),
    "builder.embed_run._backfill": ("embed", "end"),
}
TRANSACTION = "builder.core.index.connection.transaction"


def namer(root: str) -> Callable[[CodeType], str | None]:
    """``code`` → ``"module.qualname"`` for code under ``root/builder/``, else None (memoised)."""
    prefix, names = os.path.join(root, "builder") + os.sep, {}

    def name(code: CodeType) -> str | None:
        if code not in names:
            path = code.co_filename
            module = os.path.relpath(path[:-3], root).replace(os.sep, ".").removesuffix(".__init__")
            names[code] = f"{module}.{code.co_qualname}" if path.startswith(prefix) else None
        return names[code]

    return name


def killer(root: str, kill_at: int, report: str) -> Callable[..., None]:
    """A trace function (call events only) that SIGKILLs the process at the ``kill_at``-th event,
    after writing the event number and function to ``report``."""
    name, count = namer(root), 0

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal count
        function = name(frame.f_code)
        if function is not None:
            count += 1
            if count == kill_at:
                fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.write(fd, f"{count}\t{function}\n".encode())
                os.close(fd)
                os.kill(os.getpid(), signal.SIGKILL)

    return hook


class Recorder:
    """The dry run's trace function: numbers the events and labels each with its phase."""

    def __init__(self, root: str) -> None:
        self.name = namer(root)
        self.phase = "startup"
        self.open: set[FrameType] = set()  # transaction() frames between BEGIN and their resume
        self.trace: list[tuple[str, str]] = []  # (phase, function) of every event

    def hook(self, frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        function = self.name(frame.f_code)
        if function is None:
            return None
        landmark = LANDMARKS.get(function)
        if landmark:
            self.phase = landmark[0]
        self.trace.append((f"{self.phase}-tx" if self.open else self.phase, function))
        if function == TRANSACTION:  # the first call runs BEGIN; the resume, COMMIT or ROLLBACK
            if frame in self.open:
                self.open.discard(frame)
            else:
                self.open.add(frame)
        if landmark and landmark[1]:
            after = landmark[1]

            def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
                if event == "return":
                    self.phase = after
                return local

            return local
        return None

    def dump(self, report: str) -> None:
        """The event map: phases and functions interned, one ``[phase, function]`` per event."""
        phases = sorted({p for p, _ in self.trace})
        functions = sorted({f for _, f in self.trace})
        pi, fi = {p: i for i, p in enumerate(phases)}, {f: i for i, f in enumerate(functions)}
        with open(report, "w", encoding="utf-8") as handle:
            json.dump({"events": len(self.trace), "phases": phases, "functions": functions,
                       "trace": [[pi[p], fi[f]] for p, f in self.trace]}, handle, separators=(",", ":"))


def _steady_rotation() -> None:
    """The folder listings' rotation (``builder.notes.listings``: an eleventh of the folders listed again,
    another each minute) at one minute, so that the dry run and the run killed at its N-th event take
    the same path when the clock's minute turns between them."""
    from builder.notes import listings

    made = listings.Listings.__init__

    def at_minute_zero(self: Any, path: Any, root: str, *, trust: bool = True, minute: int | None = None) -> None:
        made(self, path, root, trust=trust, minute=0 if minute is None else minute)

    listings.Listings.__init__ = at_minute_zero  # type: ignore[method-assign]


def main() -> int:
    root, mode, report, *argv = sys.argv[1:]
    sys.path.insert(0, root)
    from builder.cli import main as cli

    if mode == "plain":
        return cli(argv)
    _steady_rotation()
    recorder = Recorder(root) if mode == "count" else None
    os.register_at_fork(after_in_child=lambda: sys.settrace(None))  # render workers do not count
    sys.settrace(recorder.hook if recorder else killer(root, int(mode), report))
    try:
        code = cli(argv)
    finally:
        sys.settrace(None)
    if recorder:
        recorder.dump(report)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
