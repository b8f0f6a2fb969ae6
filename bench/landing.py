"""Where a search hit leads: of the dev queries' hits that hold the relevant section, how many link to it.

A chunk holds short sibling sections merged and H4–H6 inside its section; the eval's section level counts
a hit whose chunk holds the relevant heading anywhere (docs/QUALITY.md). A reader lands where the hit's
URL points: the chunk's first section before ``chunks.places``, the section holding most of the query's
words since. For each answerable query with a heading, its first words-only hit (``mode=bm25``, so no
model is needed) from the relevant note whose chunk holds the relevant section is taken, and its landing
is judged: the relevant heading's anchor, or a heading inside that section. Both landings come from the
same hit (``anchor`` is the chunk's, ``url`` the landing's), so one run compares them.

    python bench/landing.py --corpora ../shared/corpora --queries ../shared/eval --work /tmp/landing
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from builder import indexfile  # noqa: E402
from builder.cli.evaluate import _plain_heading, load_queries  # noqa: E402
from builder.core import index as db  # noqa: E402
from builder.core.config import load_config  # noqa: E402
from builder.sync import build  # noqa: E402
from server.search import search  # noqa: E402


def _section_anchors(headings: list[dict], wanted: str) -> set[str]:
    """The anchors of the heading ``wanted`` and of every heading inside its section."""
    found: set[str] = set()
    for i, h in enumerate(headings):
        if _plain_heading(h["text"]) != wanted:
            continue
        found.add(h["anchor"])
        for later in headings[i + 1:]:
            if later["level"] <= h["level"]:
                break
            found.add(later["anchor"])
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", type=Path, required=True)
    parser.add_argument("--queries", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    queries = [q for q in load_queries(args.queries) if q.relevant and all(r.heading for r in q.relevant)]
    args.work.mkdir(parents=True, exist_ok=True)
    names = sorted({q.corpus for q in queries})
    body = {"site": {"title": "landing", "output": "site"}, "index": "index.sqlite",
            "embedding": {"provider": "none"}, "search": {"dictionary": False},
            "sources": {name: {"folder": str((args.corpora / name).resolve())} for name in names}}
    path = args.work / "portal.yaml"
    path.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
    config = load_config(path)
    build(config, log=None)
    conn = db.connect(indexfile.resolve(config.index) or config.index, readonly=True)
    judged = first = landed = lost = 0
    for q in queries:
        for hit in search(conn, config, q.text, mode="bm25", source=q.corpus, limit=10).hits:
            relevant = next((r for r in q.relevant if r.path == hit.path), None)
            if relevant is None:
                continue
            row = conn.execute("SELECT headings FROM files WHERE source_id = :s AND path = :p",
                               {"s": hit.source, "p": hit.path}).fetchone()
            headings = json.loads(row[0])
            wanted = _section_anchors(headings, _plain_heading(relevant.heading or ""))
            inside = {h["anchor"] for h in headings if hit.line_start <= h["line"] <= hit.line_end}
            if not wanted & (inside | {hit.anchor}):
                continue  # the chunk does not hold the section: not a question of where it leads
            judged += 1
            first += hit.anchor in wanted
            landed += hit.url.rsplit("#", 1)[-1] in wanted
            lost += hit.anchor in wanted and hit.url.rsplit("#", 1)[-1] not in wanted
            break
    print(json.dumps({"queries": len(queries), "judged": judged, "chunk_first_section": first,
                      "landing": landed, "lost": lost}))
    conn.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
