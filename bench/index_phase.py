"""The index phase of one build alone (``build(render=False)``) in this process, from a chosen checkout.

Used to compare two checkouts' scan and index over the same collection without the render (whose stamp
a code change makes stale: a whole render would follow). Run it alternating, the old checkout and the new::

    python bench/index_phase.py --code /tmp/before --config <portal.yaml>              # a no-op
    python bench/index_phase.py --code . --config <portal.yaml> --edit <note.md> --round 3  # a body edit first

It prints the wall time of the build and of ``scan_folder``, ``index.file_states`` and ``sync._apply`` in it.
After a build of another checkout the first build of this one may read every row (its kept stats are stale):
leave that one out.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", type=Path, required=True, help="the checkout whose builder runs")
    parser.add_argument("--config", type=Path, required=True, help="the portal.yaml of the collection")
    parser.add_argument("--edit", type=Path, help="a note whose body is edited before the build")
    parser.add_argument("--round", type=int, default=1, help="the round number written into the edit")
    args = parser.parse_args()
    sys.path.insert(0, str(args.code.resolve()))
    sys.path.insert(0, str(BENCH))
    started = time.perf_counter()
    import bench_corpus
    import builder.sync
    from builder.core import index as db
    from builder.core.config import load_config
    from builder.core.synclog import SyncLog

    if not builder.sync.__file__.startswith(str(args.code.resolve())):
        sys.exit(f"builder imported from {builder.sync.__file__}, not from {args.code}")
    spent: dict[str, float] = {}
    for owner, name in ((builder.sync, "scan_folder"), (db, "file_states"), (builder.sync, "_apply")):
        setattr(owner, name, _timed(getattr(owner, name), name, spent))
    if args.edit is not None:
        bench_corpus.edit_body(args.edit, 7000 + args.round)
    config = load_config(args.config)
    imported = time.perf_counter()
    code = builder.sync.build(config, log=SyncLog(config.log_path, echo_info=False), render=False)
    done = time.perf_counter()
    parts = " ".join(f"{name} {seconds * 1000:.0f}" for name, seconds in spent.items())
    print(f"{args.code} exit {code} imports {(imported - started) * 1000:.0f} build {(done - imported) * 1000:.0f} ms"
          f" | {parts}", flush=True)


def _timed(fn: Any, name: str, spent: dict[str, float]) -> Any:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - started
    return timed


if __name__ == "__main__":
    main()
