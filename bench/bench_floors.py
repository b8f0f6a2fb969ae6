"""The machine's floors beside the scale run's builds (``bench/bench_scale.py``), measured in the same run.

The machines are shared: the same code has taken 1.5–1.9× as long from one hour to the next (BENCHMARKS.md), more
than most targets' margins. Two figures let a reader tell the hour from the code:

- :func:`stat_floor`, at each size: a fresh Python that ``stat``\\ s every file of the note folders, a process a
  source as the build walks them (what any build does to learn that nothing changed, the no-op's floor), and then
  every folder of the site (what a one-note render adds to prove that every page is still on disk);
- :func:`yardstick`: fixed work in a fresh Python (markdown-it-py renders one generated text), at the step's start
  and end: a run whose yardstick took 1.5× as long ran on a machine 1.5× as slow for this kind of work.

Run as a script, it is their child process: ``python bench_floors.py stat SITE_FOLDERS FOLDER...`` (``SITE_FOLDERS``
a file naming a folder a line, or ``-``) or ``python bench_floors.py yardstick``.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path
from typing import Any

from bench_env import run_measured, summary

YARDSTICK_RENDERS = 5  # ~1 s on the 2-core machine of session 35


def stat_floor(folders: list[Path], site: Path, runs: int) -> dict[str, Any]:
    """Medians of ``runs`` fresh processes that stat every file under ``folders`` (``notes_s``), and that and
    every folder of ``site`` but its render cache (``with_site_s``); how many of each were stat-ed."""
    folders_of_site = []
    for folder, names, _ in os.walk(site):
        if folder == str(site) and ".render-cache" in names:
            names.remove(".render-cache")  # the render never times it (builder.render.output.folder_times)
        folders_of_site += [os.path.join(folder, name) for name in names]
    listed = site.parent / "site-folders.txt"
    listed.write_text("".join(f"{folder}\n" for folder in folders_of_site), encoding="utf-8")
    try:
        alone = [_child("stat", "-", *map(str, folders)) for _ in range(runs)]
        both = [_child("stat", str(listed), *map(str, folders)) for _ in range(runs)]
    finally:
        listed.unlink()
    files, site_folders = (int(n) for n in both[-1][1].split())
    return {"notes_s": summary([s for s, _ in alone])["median"], "with_site_s": summary([s for s, _ in both])["median"],
            "files": files, "site_folders": site_folders}


def yardstick(runs: int) -> dict[str, Any]:
    """``runs`` fresh processes doing :func:`_yardstick_work`: their seconds."""
    seconds = [_child("yardstick")[0] for _ in range(runs)]
    return {"seconds": summary(seconds), "runs": seconds}


def _child(*args: str) -> tuple[float, str]:
    """This file run as a script with ``args``: its wall time and the last line it wrote to stderr."""
    run = run_measured([sys.executable, __file__, *args])
    return run.seconds, run.stderr.strip().splitlines()[-1]


def _stat_tree(folder: str) -> int:
    """Stat every file under ``folder`` (the walk's own ``stat``\\ s of its folders aside): how many."""
    count = 0
    stack = [folder]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    entry.stat(follow_symlinks=False)
                    count += 1
    return count


def _stat_floor(listed: str, folders: list[str]) -> str:
    with multiprocessing.get_context("fork").Pool(len(folders)) as pool:
        files = sum(pool.map(_stat_tree, folders))
    site_folders = 0
    if listed != "-":
        with open(listed, encoding="utf-8") as names:
            for line in names:
                os.stat(line.rstrip("\n"), follow_symlinks=False)
                site_folders += 1
    return f"{files} {site_folders}"


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
