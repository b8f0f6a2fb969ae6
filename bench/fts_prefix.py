"""What FTS5 prefix indexes cost to write and buy at query time, on one index's own chunks.

For each ``--prefix`` option (``"2 3 4"``, ``"3"``, ``""``: none) the chunks of the given index are
copied into a fresh file with a ``chunks_fts`` made that way (the schema's own definition, its
prefix option replaced); the words are written as a build writes them (one statement per 2,000 chunks)
and timed. Then every variant answers the same BM25 queries (``server.query``'s expression, the
server's ranking), rounds alternating over the variants: the dev-set queries, 3-letter and 4-letter
prefixes of frequent words (each is searched as a prefix) and common words. Every variant must return
exactly the same hits as the first one (else the script fails). Prints insert seconds, file size and
per-set p50/p95 of each variant, and the same as JSON with ``--json``.

    python bench/fts_prefix.py --index /tmp/syn100k/data/index.sqlite --corpora ../shared/corpora
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_search import _words, query_sets  # noqa: E402

from builder.core.index import schema  # noqa: E402
from builder.core.index.connection import sqlite_module  # noqa: E402
from builder.core.index.queries import _BM25  # noqa: E402
from server import query  # noqa: E402

BATCH = 2000  # chunks per INSERT … SELECT, as a first build writes them (about half a second each)
SEARCH = f"SELECT rowid, -{_BM25} AS score FROM chunks_fts WHERE chunks_fts MATCH :match ORDER BY score DESC LIMIT 50"


def make_variant(rows: list[tuple[Any, ...]], prefix: str, folder: Path) -> tuple[Path, float]:
    """A file holding ``rows`` (id, breadcrumb, text, stems) and their words with prefix option
    ``prefix``; returns it and the seconds the words took to write."""
    path = folder / f"prefix-{prefix.replace(' ', '') or 'none'}.sqlite"
    conn = sqlite_module().connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE chunks (id INTEGER PRIMARY KEY, breadcrumb TEXT, text TEXT, stems TEXT)")
    conn.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?)", rows)
    conn.commit()
    made = schema._FTS_TABLE  # the index's own definition, with this prefix option instead of its own
    conn.execute(made.replace(schema._PREFIX_OPTION, f"prefix='{prefix}'") if prefix else
                 made.replace(f",\n      {schema._PREFIX_OPTION}", ""))
    ids = [row[0] for row in rows]
    started = time.perf_counter()
    for i in range(0, len(ids), BATCH):
        conn.execute("INSERT INTO chunks_fts (rowid, breadcrumb, text, stems) SELECT id, breadcrumb, text, stems "
                     "FROM chunks WHERE id BETWEEN ? AND ?", (ids[i], ids[min(i + BATCH, len(ids)) - 1]))
        conn.commit()
    seconds = time.perf_counter() - started
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path, seconds


def prefix4(corpora: Path, count: int = 20) -> list[str]:
    """4-letter prefixes of the corpora's most frequent words of 6+ letters."""
    counts: collections.Counter[str] = collections.Counter()
    for path in sorted(corpora.rglob("*.md")):
        counts.update(w for w in set(_words(path.read_text("utf-8", errors="replace"))) if len(w) >= 6)
    return list(dict.fromkeys(w[:4] for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))[:count]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True, help="an index whose chunks are copied")
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--prefix", action="append", help='a prefix option to compare (default: "2 3 4", "3", "")')
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    prefixes = args.prefix or ["2 3 4", "3", ""]
    source = sqlite_module().connect(f"file:{args.index}?mode=ro", uri=True)
    rows = source.execute("SELECT id, breadcrumb, text, stems FROM chunks ORDER BY id").fetchall()
    source.close()
    sets = query_sets(args.corpora)
    sets["prefix4"] = prefix4(args.corpora)
    matches = {name: [query.match_any(query.parse(q), True) for q in queries] for name, queries in sets.items()}
    results: dict[str, Any] = {"chunks": len(rows), "variants": {}}
    with tempfile.TemporaryDirectory() as folder:
        conns = {}
        for prefix in prefixes:
            path, seconds = make_variant(rows, prefix, Path(folder))
            conns[prefix] = sqlite_module().connect(path)
            results["variants"][prefix] = {"insert_s": round(seconds, 2), "size_mb": round(path.stat().st_size / 1e6, 1)}
        times: dict[str, dict[str, list[float]]] = {p: {name: [] for name in sets} for p in prefixes}
        for _ in range(args.rounds):
            for prefix, conn in conns.items():
                for name, expressions in matches.items():
                    for match in expressions:
                        started = time.perf_counter()
                        conn.execute(SEARCH, {"match": match}).fetchall()
                        times[prefix][name].append(time.perf_counter() - started)
        for name, expressions in matches.items():
            for q, match in zip(sets[name], expressions):
                answers = [conn.execute(SEARCH, {"match": match}).fetchall() for conn in conns.values()]
                if any(answer != answers[0] for answer in answers):
                    raise SystemExit(f"the variants answer {q!r} differently")
        for conn in conns.values():
            conn.close()
    for prefix in prefixes:
        for name, values in times[prefix].items():
            values.sort()
            results["variants"][prefix][name] = {"p50_ms": round(statistics.median(values) * 1000, 1),
                                                 "p95_ms": round(values[int(len(values) * 0.95) - 1] * 1000, 1)}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(f"{results['chunks']:,} chunks; every variant returned the same hits")
    print(f"| prefix | words written | file | {' | '.join(f'{n} p50 / p95' for n in sets)} |")
    print(f"|---|---|---|{'---|' * len(sets)}")
    for prefix, found in results["variants"].items():
        cells = " | ".join(f"{found[n]['p50_ms']} / {found[n]['p95_ms']} ms" for n in sets)
        print(f"| `{prefix or 'none'}` | {found['insert_s']} s | {found['size_mb']} MB | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
