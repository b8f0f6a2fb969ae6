"""A full disk under the index or under the site, then space freed: how the builds end, over many trials.

The scenario of tests/test_disk_full.py, repeated. Per trial: a portal of 3 notes is built, 40 new
notes are added, the small tmpfs holding the data directory (index, log, cache) or the site folder
is filled until only LEAVE bytes are free, and the real CLI build runs (timed). Meanwhile a search
server that was already running (--serving) or one started then is asked for an old note. Then the
filler is deleted and one more build runs (timed): it converged when it exits 0, the index holds
every note with its vector and sound, and the site equals a clean build's (build time blanked).
One table row per (where, LEAVE, serving); the failing build's exit codes and first WARN lines are
counted over the trials.

    sudo python bench/disk_full.py --trials 5 --leave 0,16384,65536,262144

Needs root (mount -t tmpfs) and runs the stand-in Ollama server of tests/conftest.py on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import FakeOllama, HashEmbedder  # noqa: E402  (the project root is on the path now)
from tests.test_disk_full import (  # noqa: E402
    OLD_NOTES,
    MiB,
    SmallDisk,
    clean_site,
    indexed_paths,
    new_notes,
    portal,
    run_build,
    site_snapshot,
    warn_lines,
    write_notes,
)


def trial(work: Path, where: str, leave: int, serving: bool, url: str) -> dict[str, object]:
    from starlette.testclient import TestClient

    from server.app import create_app

    notes = work / "notes"
    write_notes(notes, OLD_NOTES)
    disk = SmallDisk(work / "smallfs", 4 * MiB)
    if disk.kind != "tmpfs":
        raise SystemExit("cannot mount a tmpfs here (run as root)")
    try:
        index = "smallfs/data/index.sqlite" if where == "index" else "data/index.sqlite"
        config = portal(work, notes, url, index=index, site="site" if where == "index" else "smallfs/site")
        assert run_build(config) == 0
        server = TestClient(create_app(config, embedder_factory=HashEmbedder), raise_server_exceptions=False)
        if serving:
            server.get("/api/search", params={"q": "starohora", "mode": "bm25"})  # opens its connection
        added = new_notes()
        write_notes(notes, added)
        log_before = config.log_path.read_text(encoding="utf-8")
        disk.fill(leave, fsize_limit=lambda: 0)
        started = time.perf_counter()
        proc = disk.run_cli("build", "--config", str(config.path))
        failing_s = time.perf_counter() - started
        warned = warn_lines(config.log_path.read_text(encoding="utf-8")[len(log_before):])
        answer = server.get("/api/search", params={"q": "starohora", "mode": "bm25"})
        answered = answer.status_code == 200 and [h["path"] for h in answer.json()["hits"]] == ["hory/snezka.md"]
        disk.make_room()
        started = time.perf_counter()
        code = run_build(config)
        recovery_s = time.perf_counter() - started
        sound, held = indexed_paths(config)
        converged = (code == 0 and sound == "ok" and held == set(OLD_NOTES) | set(added)
                     and site_snapshot(config.site.output) == clean_site(work, notes, url))
        first = warned[0] if warned else "no WARN; stderr: " + (proc.stderr.splitlines() or ["(nothing)"])[0]
        return {"exit": proc.returncode, "first": first.replace(str(work), "<tmp>"),
                "answered": answered, "converged": converged, "failing_s": failing_s, "recovery_s": recovery_s}
    finally:
        disk.close()


def shorten(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--leave", default="0,65536", help="bytes left free, comma-separated")
    parser.add_argument("--where", default="index,site", help="index, site or both")
    args = parser.parse_args()
    print("| on the full disk | bytes left | server already reading | exit codes | first WARN (trials) "
          "| old note found meanwhile | converged after | failing build s | next build s |")
    print("|---|---|---|---|---|---|---|---|---|")
    with FakeOllama() as ollama:
        for where in args.where.split(","):
            for leave in (int(x) for x in args.leave.split(",")):
                for serving in (True, False):
                    runs = []
                    for _ in range(args.trials):
                        with tempfile.TemporaryDirectory() as tmp:
                            runs.append(trial(Path(tmp), where, leave, serving, ollama.url))
                    codes = collections.Counter(str(r["exit"]) for r in runs)
                    firsts = collections.Counter(str(r["first"]) for r in runs)
                    print(f"| {where} | {leave} | {'yes' if serving else 'no'} "
                          f"| {', '.join(f'{c} ×{n}' for c, n in codes.items())} "
                          f"| {'; '.join(f'{shorten(w)} ×{n}' for w, n in firsts.items())} "
                          f"| {sum(bool(r['answered']) for r in runs)}/{len(runs)} "
                          f"| {sum(bool(r['converged']) for r in runs)}/{len(runs)} "
                          f"| {statistics.median(float(r['failing_s']) for r in runs):.2f} "  # type: ignore[arg-type]
                          f"| {statistics.median(float(r['recovery_s']) for r in runs):.2f} |",  # type: ignore[arg-type]
                          flush=True)


if __name__ == "__main__":
    main()
