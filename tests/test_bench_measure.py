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


def test_the_stat_floor_stats_every_note_file_and_every_site_folder_but_the_render_cache(tmp_path):
    import bench_floors

    notes = [tmp_path / "notes" / "a", tmp_path / "notes" / "b"]
    for number, folder in enumerate(notes):
        for index in range(3 + number):
            (folder / f"d{index}").mkdir(parents=True)
            (folder / f"d{index}" / "n.md").write_text("x", encoding="utf-8")
        (folder / "top.md").write_text("x", encoding="utf-8")
    site = tmp_path / "site"
    for rel in ("a/x", "a/y/z", "static", ".render-cache/bodies"):
        (site / rel).mkdir(parents=True)
    floor = bench_floors.stat_floor(notes, site, 3)
    # every file and folder under the note folders (a: 3 folders, 3 notes in them, top.md; b: 4, 4, 1), and the
    # site's folders a, a/x, a/y, a/y/z, static, as the children counted what they stat-ed
    assert (floor["note_paths"], floor["site_folders"]) == (7 + 9, 5)
    assert len(floor["notes_runs"]) == len(floor["with_site_runs"]) == 3
    assert floor["notes_s"] == sorted(floor["notes_runs"])[1]
    assert floor["with_site_s"] == sorted(floor["with_site_runs"])[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "site"]  # its lists removed


def _scale_row(notes: int, seconds: float, *, edit_s: float = 1.0, rss_mb: float = 300.0,
               added_rss_mb: float = 100.0) -> dict:
    build = {"seconds": {"median": seconds}, "peak_rss_mb": rss_mb}
    edit = {"seconds": {"median": edit_s}, "peak_rss_mb": 100.0}
    weights = {"note_page": {"kb": 100.0}, "grav_note_page": {"kb": 120.0}, "largest_file_kb": 900.0}
    return {"first": build, "full": {**build, "seconds": seconds}, "noop": edit, "body": edit, "heading": edit,
            "added": {**edit, "peak_rss_mb": added_rss_mb}, "removed": edit, "weights": weights}


def test_every_per_build_cost_s_slope_is_judged_from_its_own_figures():
    import bench_report

    def row(n: int, bent: str) -> dict:
        def grows(key: str) -> float:  # linear in n, or 1.5× steeper over the last step for the bent one
            return 1 + n / 1000 * (1.5 if key == bent and n == 100000 else 1)
        measured = {key: {"seconds": {"median": grows(key)}, "peak_rss_mb": grows(f"{key} rss")}
                    for key in ("first", "noop", "body", "heading", "added", "removed")}
        weights = {"note_page": {"kb": 1.0}, "grav_note_page": {"kb": 1.0}, "largest_file_kb": 1.0}
        return {**measured, "full": {"seconds": grows("full"), "peak_rss_mb": grows("full rss")}, "weights": weights}

    slopes = {"first build": "first", "--full": "full", "a note added": "added", "a note removed": "removed",
              "peak RSS of a first build": "first rss", "peak RSS of --full": "full rss"}
    for label, bent in slopes.items():
        verdicts = {c["target"].partition(":")[0]: c["met"] for c in bench_report.scale_targets(
            {str(n): row(n, bent) for n in (1000, 10000, 100000)}) if "linear" in c["target"]}
        assert verdicts == {other: other != label for other in slopes}, label


def test_the_scale_verdicts_judge_the_slope_between_sizes_and_the_100000_note_targets():
    import bench_report

    linear = {str(n): _scale_row(n, 1 + n / 1000) for n in (1000, 10000, 100000)}
    verdicts = {c["target"]: (c["met"], c["measured"]) for c in bench_report.scale_targets(linear)}
    assert verdicts["first build: linear in notes within 20 % (slope, last ÷ first step)"] == (True, 1.0)
    assert verdicts["100,000 notes: first build ≤ 5 min"] == (True, 101.0)
    assert verdicts["100,000 notes: one note edited (body, median) ≤ 1.5 s"] == (True, 1.0)
    assert verdicts["what a note page makes the browser download, at every size ≤ 150 KB"] == (True, 120.0)
    bent = {**linear, "100000": _scale_row(100000, 1 + 1.3 * 100000 / 1000, edit_s=1.6, rss_mb=1200.0)}
    verdicts = {c["target"]: (c["met"], c["measured"]) for c in bench_report.scale_targets(bent)}
    assert verdicts["first build: linear in notes within 20 % (slope, last ÷ first step)"] == (False, 1.3333)
    assert verdicts["100,000 notes: first build ≤ 5 min"] == (True, 131.0)
    assert verdicts["100,000 notes: one note edited (heading, median) ≤ 1.5 s"] == (False, 1.6)
    assert verdicts["100,000 notes: peak RSS of any build ≤ 1 GB"] == (False, 1200.0)
    assert verdicts["no-op: grows no faster than the notes within 20 % (last size ÷ the one before, over their "
                    "notes' ratio)"] == (True, 0.16)
    slower = {**linear, "100000": _scale_row(100000, 101, edit_s=15.0, added_rss_mb=1100.0)}
    verdicts = {c["target"]: (c["met"], c["measured"]) for c in bench_report.scale_targets(slower)}
    assert verdicts["100,000 notes: peak RSS of any build ≤ 1 GB"] == (False, 1100.0)  # a note added's
    assert verdicts["body edit: grows no faster than the notes within 20 % (last size ÷ the one before, over their "
                    "notes' ratio)"] == (False, 1.5)
    smaller = {n: row for n, row in linear.items() if n != "100000"}
    verdicts = {c["target"]: c["met"] for c in bench_report.scale_targets(smaller)}
    assert verdicts["100,000 notes: no-op build (median) ≤ 2.5 s"] is None
    assert not any("linear" in target for target in verdicts)


def test_the_million_section_verdicts_read_the_query_and_server_steps_at_that_size_only():
    import bench_report

    def results(chunks: int, bm25: float, over: float, rss: float) -> dict:
        rows = {"bm25 all": {"p95": bm25}}
        return {"queries": {str(chunks): {"rows": rows, "server_hybrid_embed_minus_embed_p95_ms": over}},
                "serve": {"chunks": chunks, "peak_rss_mb": rss}}

    def verdicts(found: dict) -> list:
        return [(c["met"], c["measured"]) for c in bench_report.million_targets(found)]

    assert verdicts(results(1_000_000, 251.0, 235.2, 639.0)) == [(False, 251.0), (False, 235.2), (True, 639.0)]
    assert verdicts(results(1_000_000, 150.0, 90.0, 1300.0)) == [(True, 150.0), (True, 90.0), (False, 1300.0)]
    assert verdicts(results(100_000, 20.0, 20.0, 200.0)) == [(None, None)] * 3
