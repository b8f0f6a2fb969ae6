"""How a running build reports its phase and counts to whoever started it (the sync job runner
shows them as a job's status); :func:`builder.sync.build` fills one in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class BuildReport:
    """What a build is doing and what it indexed, for whoever started it (the sync job runner shows it).

    ``phase`` moves waiting (for the build lock) → scan → index → embed → render; ``on_change`` is called
    at each step with the report (from the building thread)."""

    phase: str = "waiting"
    notes: int = 0  # notes (re)indexed
    chunks: int = 0  # their chunks
    removed: int = 0  # notes that left the index
    on_change: Callable[[BuildReport], None] | None = field(default=None, repr=False, compare=False)

    def enter(self, phase: str) -> None:
        self.phase = phase
        if self.on_change is not None:
            self.on_change(self)

    def indexed(self, notes: int, chunks: int, removed: int) -> None:
        self.notes, self.chunks, self.removed = self.notes + notes, self.chunks + chunks, self.removed + removed
        if self.on_change is not None:
            self.on_change(self)
