"""A deterministic, realistic corpus of personal notes for ``bench/run.py``.

The text is real: paragraphs, lists, code fences, tables and headings are cut out of the shared
corpora (``../shared/corpora``: Slovak kemt-wiki with some English, Czech naucse) at run time and
recombined into notes; nothing of them is copied into the repository. A note has YAML front
matter (title, tags, sometimes dates), an H1, two to five H2 sections (some with H3), links to
other notes, and in some notes a code fence or a table. Notes live in two folder sources
(``work`` 60 %, ``home`` 40 %), two or three folder levels deep; about half the notes are Slovak,
40 % Czech and 10 % English. The same seed and the same shared corpora give byte-identical notes.

:func:`word_notes` is the older, plainer corpus (random Czech words, three sections a note) of the
git-source and watch-mode figures, kept so that they compare with what was measured on it.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPORA = SHARED / "corpora"

_EN = frozenset(("the", "and", "of", "to", "is", "in", "that", "for", "with", "this", "you", "are", "be", "on",
                 "it", "as"))
_CS = frozenset(("je", "se", "na", "že", "to", "v", "ve", "pro", "jako", "které", "není", "jsou", "být", "když"))
_SK = frozenset(("je", "sa", "na", "že", "to", "v", "vo", "pre", "ako", "ktoré", "nie", "sú", "byť", "keď", "ktorý"))
_TOP = ("projekty", "škola", "homelab", "recepty", "cestovanie", "knihy", "práca", "notes")
_SUB = ("docker", "kubernetes", "python", "zálohy", "sieť", "linux", "git", "cvičenia", "prednášky",
        "nápady", "archiv", "meeting-notes")
_TAGS = ("docker", "k8s", "python", "git", "linux", "sieť", "škola", "cvičenie", "recepty", "zálohy",
         "homelab", "knihy", "osobní", "projekty", "todo", "howto", "english", "čaj", "hory", "vlaky")
_LANG_SHARE = (("sk", 0.5), ("cs", 0.4), ("en", 0.1))
_WORDS = ("čaj voda mléko vlak hory záloha server docker síť projekt sběrnice poznámka kniha recept "
          "trasa výlet git větev commit python funkce seznam tabulka").split()


@dataclass
class Pools:
    """Blocks of real markdown, by kind (and prose by language)."""

    prose: dict[str, list[str]] = field(default_factory=lambda: {"sk": [], "cs": [], "en": []})
    lists: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, int]:
        """How many blocks of each kind there are (for the report)."""
        return {**{f"prose_{k}": len(v) for k, v in self.prose.items()}, "lists": len(self.lists),
                "code": len(self.code), "tables": len(self.tables), "headings": len(self.headings)}


def _language(words: list[str], corpus: str) -> str:
    en = sum(w in _EN for w in words)
    native = sum(w in (_SK if corpus == "sk" else _CS) for w in words)
    return "en" if en > native else corpus


def _blocks(text: str) -> list[str]:
    """Blank-line separated blocks, a code fence kept whole even when it holds blank lines."""
    blocks: list[str] = []
    current: list[str] = []
    fence = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        if not line.strip() and not fence:
            if current:
                blocks.append("\n".join(current))
            current = []
        else:
            current.append(line.rstrip())
    if current:
        blocks.append("\n".join(current))
    return blocks


def load_pools(corpora: Path = CORPORA) -> Pools:
    """Every usable block of every markdown file under ``corpora``, sorted by path (deterministic)."""
    pools = Pools()
    for path in sorted(corpora.rglob("*.md")):
        corpus = "sk" if "kemt-wiki" in path.parts else "cs"
        text = path.read_text("utf-8", errors="replace")
        if text.startswith("---"):
            end = text.find("\n---", 3)
            text = text[end + 4:] if end > 0 else text
        for block in _blocks(text):
            first = block.lstrip()
            if first.startswith("```") and block.rstrip().endswith("```") and 2 < block.count("\n") < 40:
                pools.code.append(block)
            elif first.startswith("|") and block.count("\n") >= 2 and len(block) < 3000:
                pools.tables.append(block)
            elif re.match(r"#{1,4} \S", first) and "\n" not in block:
                heading = first.lstrip("#").strip()
                if 3 <= len(heading) <= 60 and "{" not in heading:
                    pools.headings.append(heading)
            elif re.match(r"([-*]|\d+\.) \S", first) and len(block) < 1500:
                pools.lists.append(block)
            elif not first.startswith(("<", "{", "!", "[", "---", "#", ">")) and 80 <= len(block) <= 1500:
                words = re.findall(r"\w+", block.lower())
                if len(words) >= 12:
                    pools.prose[_language(words, corpus)].append(block)
    if not pools.headings or not all(pools.prose.values()):
        raise SystemExit(f"no usable text under {corpora}: the benchmark needs the shared corpora")
    return pools


def note_path(i: int, per_folder: bool = False) -> tuple[str, str]:
    """(source, path inside it) of note ``i``: two or three folder levels; ``per_folder``: each note in
    a folder of its own, as Grav keeps its pages (``…/note-00042/item.md``)."""
    source = "work" if i % 5 < 3 else "home"
    top, sub = _TOP[i % len(_TOP)], _SUB[(i // len(_TOP)) % len(_SUB)]
    deeper = f"/{2020 + i % 6}" if i % 3 == 0 else ""
    name = f"note-{i:05d}/item.md" if per_folder else f"note-{i:05d}.md"
    return source, f"{top}/{sub}{deeper}/{name}"


def _note(i: int, notes: int, pools: Pools, rng: random.Random, per_folder: bool = False) -> str:
    lang = rng.choices([lang for lang, _ in _LANG_SHARE], [share for _, share in _LANG_SHARE])[0]
    prose = pools.prose[lang]
    title = f"{rng.choice(pools.headings)} {i}"
    tags = ", ".join(rng.sample(_TAGS, rng.randint(1, 3)))
    meta = [f"title: '{title.replace(chr(39), chr(39) * 2)}'", f"tags: [{tags}]"]
    if rng.random() < 0.5:
        meta.append(f"date: 20{rng.randint(19, 25)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}")
    parts = ([f"---\n{chr(10).join(meta)}\n---"] if rng.random() < 0.9 else []) + [f"# {title}"]
    parts.append(rng.choice(prose))
    source, rel = note_path(i, per_folder)
    for _ in range(3):  # links to a few other notes of the same source: relative and wikilinks
        other = rng.randrange(notes)
        if note_path(other)[0] == source and other != i:
            target = os.path.relpath(note_path(other, per_folder)[1], os.path.dirname(rel))
            parts.append(f"Viz [[note-{other:05d}]] a [súvisiace]({target}).")
            break
    for s in range(rng.randint(2, 5)):
        parts.append(f"## {rng.choice(pools.headings)}")
        parts += [rng.choice(prose) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.35:
            parts.append(rng.choice(pools.lists))
        if rng.random() < 0.3:
            parts += [f"### {rng.choice(pools.headings)}", rng.choice(prose)]
        if s == 1 and rng.random() < 0.35:
            parts.append(rng.choice(pools.code))
        if s == 1 and rng.random() < 0.12:
            parts.append(rng.choice(pools.tables))
    return "\n\n".join(parts) + "\n"


def make_notes(root: Path, notes: int, pools: Pools, seed: int = 20260101,
               per_folder: bool = False) -> dict[str, Path]:
    """Write ``notes`` notes under ``root/<source>/`` (``per_folder``: each in a folder of its own);
    returns {source id: its folder}."""
    rng = random.Random(seed)
    for i in range(notes):
        source, rel = note_path(i, per_folder)
        path = root / source / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_note(i, notes, pools, rng, per_folder), encoding="utf-8")
    return {source: root / source for source in ("work", "home")}


def _outside_fences(lines: list[str]) -> list[int]:
    """Indexes of the lines that are not inside a code fence."""
    kept, fence = [], False
    for n, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fence = not fence
        elif not fence:
            kept.append(n)
    return kept


ADDED_NOTE = "added-note.md"  # the note "a note added" writes beside the edited one


def add_beside(note: Path, seed: int) -> Path:
    """Write a note beside ``note`` that links to it (what "a note added" times); its path."""
    added = note.with_name(ADDED_NOTE)
    added.write_text(f"# Nová poznámka {seed}\n\nOdkaz na [[{note.stem}]].\n", encoding="utf-8")
    return added


def edit_body(path: Path, run: int) -> None:
    """Change the text of the first paragraph under the H1 (no heading changes): the note's body only. (Not a
    code fence's first line: its text is the fence's language, which the page does not show.)"""
    lines = path.read_text("utf-8").splitlines()
    outside = _outside_fences(lines)
    h1 = next(n for n in outside if lines[n].startswith("# "))
    at = next(n for n in outside if n > h1 and lines[n].strip() and not lines[n].startswith(("#", "|")))
    lines[at] = re.sub(r" \(úprava \d+\)$", "", lines[at]) + f" (úprava {run})"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def edit_heading(path: Path, run: int) -> None:
    """Rename the note's last H2 heading (its anchor and the source's table of contents change)."""
    lines = path.read_text("utf-8").splitlines()
    found = [n for n in _outside_fences(lines) if lines[n].startswith("## ")]
    if not found:
        raise SystemExit(f"{path} has no '## ' heading to rename: choose another note for a heading edit")
    at = found[-1]
    lines[at] = re.sub(r" v\d+$", "", lines[at]) + f" v{run}"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def word_notes(root: Path, notes: int, seed: int = 7) -> None:
    """``notes`` notes of random Czech words under ``root/topicN/subM/``: front matter, an H1 and three
    sections of 60 words each (needs no shared corpora)."""
    rng = random.Random(seed)
    for i in range(notes):
        path = root / f"topic{i % 20}" / f"sub{i % 7}" / f"note{i}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        sections = "\n\n".join(f"## Sekce {s}\n\n" + " ".join(rng.choice(_WORDS) for _ in range(60))
                               for s in range(3))
        path.write_text(f"---\ntitle: Poznámka {i}\ntags: [t{i % 9}]\n---\n# Poznámka {i}\n\n{sections}\n",
                        encoding="utf-8")
