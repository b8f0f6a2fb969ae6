"""The notes side of the crash harness (``tests/crash_harness.py``): seeded changes to a notes
folder between attempts, and a small generated corpus for the fast test subset."""

from __future__ import annotations

import os
import random
import re
from pathlib import Path

OPS = ("add", "edit", "delete", "unpublish", "republish")


class Mutator:
    """Seeded changes to the notes folder; ``log`` records them as ``"attempt: op path"``.

    ``add`` writes a new note (front matter with title and tags, two headings, a link to another
    note); ``edit`` appends to a heading and to the body; ``delete`` removes a note; ``unpublish``
    sets ``published: false`` in its front matter; ``republish`` removes it again from a note
    unpublished by an earlier attempt (one unpublished in the same attempt would get its old bytes
    back with a new mtime: see ``touch``); ``delete-added`` removes the note this attempt added;
    ``touch`` rewrites a note with the same bytes (only its mtime moves).
    """

    def __init__(self, notes: Path, rng: random.Random) -> None:
        self.notes, self.rng = notes, rng
        self.unpublished: dict[str, int] = {}  # path → the attempt that unpublished it
        self.added: list[str] = []
        self.log: list[str] = []

    def paths(self) -> list[str]:
        return sorted(p.relative_to(self.notes).as_posix() for p in self.notes.rglob("*.md"))

    def apply(self, op: str, attempt: int) -> str:
        """Make one change before (or after) the build of ``attempt``; returns ``"op path"``."""
        published = [p for p in self.paths() if p not in self.unpublished]
        earlier = sorted(p for p, when in self.unpublished.items() if when < attempt)
        if op == "republish" and not earlier:
            op = "unpublish"
        if op == "delete-added" and (not self.added or not (self.notes / self.added[-1]).exists()):
            op = "delete"
        if op == "add" or len(published) < 3:
            op, path = "add", self._add(attempt, published)
        elif op == "delete-added":
            path = self.added[-1]
            (self.notes / path).unlink()
        else:
            path = self.rng.choice(earlier if op == "republish" else published)
            file = self.notes / path
            data = file.read_bytes()
            text = data.decode("utf-8", errors="replace")
            if op == "edit":
                text = _edit_heading(text, f" {attempt}") + f"\nDoplněno při pokusu {attempt}.\n"
            elif op == "unpublish":
                text = ("---\npublished: false\n" + text[4:]) if text.startswith("---\n") else \
                    f"---\npublished: false\n---\n{text}"
                self.unpublished[path] = attempt
            elif op == "republish":
                text = text.replace("published: false\n", "", 1).removeprefix("---\n---\n")
                del self.unpublished[path]
            if op == "delete":
                file.unlink()
                self.unpublished.pop(path, None)
            else:
                file.write_bytes(data if op == "touch" else text.encode("utf-8"))
        self.log.append(f"{attempt}: {op} {path}")
        return f"{op} {path}"

    def _add(self, attempt: int, published: list[str]) -> str:
        folder = self.rng.choice(sorted({str(Path(p).parent) for p in published}) or ["."])
        path = os.path.normpath(f"{folder}/crash-{attempt}-{len(self.added)}.md")
        link = os.path.relpath(self.rng.choice(published), folder) if published else "index.md"
        (self.notes / path).parent.mkdir(parents=True, exist_ok=True)
        (self.notes / path).write_text(
            f"---\ntitle: Pokus {attempt}\ntags: [crash, pokus{attempt % 3}]\n---\n# Pokus {attempt}\n\n"
            f"Přidáno při pokusu {attempt}, odkaz na [jinou poznámku]({link}).\n\n## Podrobnosti\n\n"
            f"Text číslo {self.rng.randrange(10**6)}.\n", encoding="utf-8")
        self.added.append(path)
        return path


def _edit_heading(text: str, suffix: str) -> str:
    """Append ``suffix`` to the first ATX heading outside code fences (or add a heading)."""
    lines, fenced = text.split("\n"), False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and re.match(r"#{1,6} \S", line):
            lines[i] = line.rstrip() + suffix
            return "\n".join(lines)
    return text + f"\n## Doplněk{suffix}\n"


def make_corpus(root: Path, count: int = 15, seed: int = 3) -> None:
    """``count`` Czech-ish notes in four folders: front matter, headings, links, tags, a code block;
    their mtimes lie on different days long ago (as a copied real corpus's do)."""
    rng = random.Random(seed)
    words = ["čaj", "vlak", "hory", "záloha", "server", "síť", "projekt", "sběrnice", "kniha", "recept", "trasa",
             "výlet", "git", "python"]
    for i in range(count):
        path = root / f"tema{i % 4}" / f"poznamka-{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        link = f"../tema{(i + 1) % 4}/poznamka-{(i + 1) % count}.md"
        body = "\n\n".join(f"## Sekce {s}\n\n" + " ".join(rng.choice(words) for _ in range(40))
                           for s in range(1 + i % 3))
        path.write_text(f"---\ntitle: Poznámka {i}\ntags: [{rng.choice(words)}]\n---\n# Poznámka {i}\n\n"
                        f"Viz [další]({link}).\n\n{body}\n\n```python\nprint({i})\n```\n", encoding="utf-8")
        os.utime(path, (1_700_000_000 + 86_400 * i,) * 2)
