"""The benchmarks' measure of a command (bench/bench_env.py): its peak RSS is the command's own, whatever the
bench process holds (a scale run after the query steps held a million-vector index: every build reported 718 MB)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from bench_env import run_measured  # (bench/ is a folder of scripts, not a package)


def test_a_command_s_peak_rss_is_its_own_not_the_bench_process_s():
    held = bytearray(400 * 1024 * 1024)  # what the bench process holds, touched page by page
    for at in range(0, len(held), 4096):
        held[at] = 1
    small = run_measured([sys.executable, "-c", "x = bytearray(30 * 1024 * 1024)"])
    touched = "x = bytearray(250 * 1024 * 1024)\nfor i in range(0, len(x), 4096): x[i] = 1"
    big = run_measured([sys.executable, "-c", touched])
    assert small.returncode == 0 and 30 < small.peak_rss_mb < 120
    assert 250 < big.peak_rss_mb < 350
    assert 0 < small.seconds < big.seconds + 5


def test_a_command_that_fails_gives_its_exit_code_and_what_it_said():
    run = run_measured([sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(5)"], check=False)
    assert (run.returncode, run.stderr) == (5, "boom")
