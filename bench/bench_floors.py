"""The machine's floors beside the scale run's builds (``bench/bench_scale.py``), measured in the same run.

The machines are shared: the same code has taken 1.5–1.9× as long from one hour to the next (BENCHMARKS.md), more
than most targets' margins. Two figures let a reader tell the hour from the code:

- :func:`stat_floor`, at each size: a fresh Python that stats every note file and every folder of the note
  folders, named in a list written before (as a build's kept listings name them), a process a source as the build
  walks them: the least a build does to learn that nothing changed (a file's size and time, a folder's time for a
  file added or removed), the no-op's floor; and that plus a ``stat`` of every folder of the site, what a one-note
  render adds to prove that every page is still on disk;
- :func:`yardstick`: fixed work in a fresh Python (markdown-it-py renders one generated text), at the step's start
  and end: a run whose yardstick took 1.5× as long ran on a machine 1.5× as slow for this kind of work.

Run as a script, it is their child process, importing nothing of the bench: ``python bench_floors.py stat
SITE_FOLDERS SOURCE_LIST...`` (each a file naming a path a line; ``-``: no site) or ``python bench_floors.py
yardstick``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any

YARDSTICK_RENDERS = 5  # ~1 s on the 2-core machine of session 35


def stat_floor(folders: list[Path], site: Path, runs: int) -> dict[str, Any]:
    """``runs`` pairs of fresh processes, the two kinds in turns (ABBA): one stats every file and folder under
    ``folders`` (``notes_s``, the median), the other that and every folder of ``site`` but its render cache
    (``with_site_s``); how many paths each stat-ed, and every run."""
    lists = []
    for number, folder in enumerate(folders):
        lists.append(site.parent / f"floor-source-{number}.txt")
        lists[-1].write_text("".join(f"{os.path.join(d, name)}\n" for d, dirs, files in os.walk(folder)
                                     for name in (*dirs, *files)), encoding="utf-8")
    site_folders = []
    for parent, names, _ in os.walk(site):
        if parent == str(site) and ".render-cache" in names:
            names.remove(".render-cache")  # the render never times it (builder.render.output.folder_times)
        site_folders += [os.path.join(parent, name) for name in names]
    listed = site.parent / "floor-site.txt"
    listed.write_text("".join(f"{folder}\n" for folder in site_folders), encoding="utf-8")
    found: dict[str, list[tuple[float, str]]] = {"-": [], str(listed): []}
    try:
        for run in range(runs):
            for kind in ("-", str(listed)) if run % 2 == 0 else (str(listed), "-"):
                found[kind].append(_child("stat", kind, *map(str, lists)))
    finally:
        for path in (*lists, listed):
            path.unlink()
    alone, both = found["-"], found[str(listed)]
    note_paths = {int(said.split()[0]) for _, said in (*alone, *both)}
    site_paths = {int(said.split()[1]) for _, said in both}
    if len(note_paths) != 1 or site_paths != {len(site_folders)} or any(int(said.split()[1]) for _, said in alone):
        raise SystemExit(f"the stat floor's children stat-ed other counts: {note_paths}, {site_paths}")
    return {"notes_s": _median([s for s, _ in alone]), "with_site_s": _median([s for s, _ in both]),
            "note_paths": note_paths.pop(), "site_folders": len(site_folders), "notes_runs": [s for s, _ in alone],
            "with_site_runs": [s for s, _ in both]}


def yardstick(runs: int) -> dict[str, Any]:
    """``runs`` fresh processes doing :func:`_yardstick_work`: their seconds."""
    from bench_env import summary

    seconds = [_child("yardstick")[0] for _ in range(runs)]
    return {"seconds": summary(seconds), "runs": seconds}


def _median(values: list[float]) -> float:
    from bench_env import summary

    return summary(values)["median"]


def _child(*args: str) -> tuple[float, str]:
    """This file run as a script with ``args``: its wall time and the last line it wrote to stderr."""
    from bench_env import run_measured  # here, not at the top: the child must not pay for the bench's imports

    run = run_measured([sys.executable, __file__, *args])
    return run.seconds, run.stderr.strip().splitlines()[-1]


def _stat_listed(listed: str) -> int:
    """Stat every path ``listed`` names (a file, a line a path): how many."""
    count = 0
    with open(listed, encoding="utf-8") as names:
        for line in names:
            os.stat(line.rstrip("\n"), follow_symlinks=False)
            count += 1
    return count


def _stat_floor(site_list: str, source_lists: list[str]) -> str:
    with multiprocessing.get_context("fork").Pool(len(source_lists)) as pool:
        notes = sum(pool.map(_stat_listed, source_lists))
    return f"{notes} {_stat_listed(site_list) if site_list != '-' else 0}"


def _yardstick_work() -> str:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    part = ("## Kapitola {i}\n\nVoda se vaří při *100 °C*, čaj se louhuje [tři minuty](caj-{i}.md). "
            "Slovenčina: `kód {i}` a **tučné** slová.\n\n- položka {i}\n- ďalšia\n\n"
            "| a | b |\n|---|---|\n| {i} | x |\n\n"
            "```python\nprint({i})\n```\n\n")
    text = "# Yardstick\n\n" + "".join(part.format(i=i) for i in range(400))
    return str(sum(len(md.render(text)) for _ in range(YARDSTICK_RENDERS)))


if __name__ == "__main__":
    if sys.argv[1] == "stat":
        print(_stat_floor(sys.argv[2], sys.argv[3:]), file=sys.stderr)
    else:
        print(_yardstick_work(), file=sys.stderr)
