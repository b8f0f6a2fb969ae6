"""A design study for issue 11: BM25 exactly as FTS5 ranks it, from postings held in memory.

    python bench/lexical_memory.py --config <100,000-chunk portal.yaml> --queries ../shared/eval/dev.jsonl

The p95 targets are missed because FTS5 scores every chunk that holds any of a query's words
(~0.45 µs each: ``bench/floors.py``). This script asks what a lexical index of our own would give
before anyone builds one into the server:

1. **load**: every (term, chunk, column) posting of ``chunks_fts`` read out of FTS5 itself
   (``fts5vocab`` ``instance``), so that the words are exactly the ones FTS5 tokenized, into
   numpy arrays; how long that takes and how much memory the arrays hold. ``--load text`` makes
   the same arrays from the chunks' own text instead, tokenized in Python by a table of what
   FTS5's tokenizer makes of each code point (asked of FTS5 once); ``--load both`` (the default)
   makes both and checks that they are the same, term for term;
2. **exactness**: each BM25 statement the search makes (its every-word, any-word and common-terms
   statements, run through :func:`server.search.search` in mode ``bm25``) answered both by FTS5
   and from memory: the same chunks in the same order with the same scores, FTS5's ``bm25()``
   reproduced in its own order of floating-point operations (``fts5_aux.c``: per phrase an idf
   from the rows it matches, a weighted term frequency over the columns, the row's length over
   all columns against the average);
3. **time**: each statement alone (the best of 3), and the whole ``search(mode="bm25")`` of each
   query with FTS5 and with the memory path, alternating, on the same connection.

The memory path here is the plainest exact one (dense per-phrase sums, no pruning): what a first
version would cost, not the floor. A phrase of several words (a translation such as
``rovnající se``) needs word positions, which the arrays do not keep: such statements go to FTS5,
and the script counts them.
"""

from __future__ import annotations

import bisect
import math
import re
import statistics
import sys
import time
import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench_env import query_bench_parser, read_queries, summary

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

COLUMNS = ("breadcrumb", "text", "stems")
WEIGHTS = (2.0, 1.0, 1.0)  # bm25(chunks_fts, 2.0, 1.0, 1.0): builder/core/index/queries.py
K1, B = 1.2, 0.75  # FTS5's bm25 constants (fts5_aux.c)


@dataclass(frozen=True)
class Postings:
    """Every posting of the index: for term ``terms[t]`` in column ``c``, the chunks
    ``docs[start[t, c]:start[t, c + 1]]`` (ascending) and how often it occurs in each (``counts``)."""

    terms: list[str]  # sorted, as FTS5 holds them (folded by its tokenizer)
    start: np.ndarray  # int64, (len(terms) * 3 + 1,): slice bounds, term-major then column
    docs: np.ndarray  # int32 chunk ids
    counts: np.ndarray  # uint16 occurrences
    lengths: np.ndarray  # float64, by chunk id: the row's tokens over all columns (FTS5's docsize)
    rows: int
    average: float  # tokens per row over all columns (xColumnTotalSize(-1) / xRowCount)

    def nbytes(self) -> int:
        return self.start.nbytes + self.docs.nbytes + self.counts.nbytes + self.lengths.nbytes


def load(conn: Any) -> Postings:
    """The postings, read from FTS5's own index (one pass over ``fts5vocab`` instance rows, which
    come by term, then chunk, then column)."""
    factory, conn.row_factory = conn.row_factory, None  # plain tuples: millions of rows
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.np_instances USING fts5vocab(main, 'chunks_fts', 'instance')")
    column_of = {name: i for i, name in enumerate(COLUMNS)}
    terms: list[str] = []
    slots: list[int] = []  # term * 3 + column of each posting
    docs: list[int] = []
    counts: list[int] = []
    last: tuple[str, int, int] | None = None
    cursor = conn.execute("SELECT term, doc, col FROM temp.np_instances")
    while batch := cursor.fetchmany(65536):
        for term, doc, col in batch:
            key = (term, doc, column_of[col])
            if key == last:
                counts[-1] += 1
                continue
            if last is None or term != last[0]:
                terms.append(term)
            slots.append((len(terms) - 1) * 3 + key[2])
            docs.append(doc)
            counts.append(1)
            last = key
    lengths, rows = _lengths(conn)
    conn.row_factory = factory
    slot = np.array(slots, dtype=np.int64)
    order = np.argsort(slot, kind="stable")  # by term and column; each list keeps its chunks ascending
    start = np.searchsorted(slot[order], np.arange(len(terms) * 3 + 1))
    return Postings(terms, start.astype(np.int64), np.array(docs, dtype=np.int32)[order],
                    np.array(counts, dtype=np.uint16)[order], lengths, rows, float(lengths.sum()) / rows)


def load_from_text(conn: Any) -> Postings:
    """The same postings made from the chunks' own text, tokenized here as FTS5 tokenizes it: every
    code point is looked up in what FTS5's tokenizer makes of it (:func:`fold_table`), so no
    ``fts5vocab`` instance rows are read."""
    from array import array
    from collections import Counter

    table = fold_table()
    astral = re.compile("[\U00010000-\U0010ffff]")
    ids: dict[str, int] = {}
    slots, docs, counts = array("q"), array("i"), array("H")
    lengths: dict[int, int] = {}
    factory, conn.row_factory = conn.row_factory, None
    for row in conn.execute("SELECT id, breadcrumb, text, stems FROM chunks ORDER BY id"):
        length = 0
        for column, text in enumerate(row[1:]):
            if astral.search(text):
                _probe(table, {ord(c) for c in astral.findall(text)} - table.keys())
            words = text.translate(table).split()
            length += len(words)
            for word, count in Counter(words).items():
                slots.append(ids.setdefault(word, len(ids)) * 3 + column)
                docs.append(row[0])
                counts.append(count)
        lengths[row[0]] = length
    conn.row_factory = factory
    terms = sorted(ids)  # code point order: FTS5's (the bytes of UTF-8 sort the same)
    rank = np.empty(len(terms), dtype=np.int64)
    rank[[ids[t] for t in terms]] = np.arange(len(terms))
    slot = np.frombuffer(slots, dtype=np.int64)
    slot = rank[slot // 3] * 3 + slot % 3
    order = np.argsort(slot, kind="stable")  # rows were read in id order: each list keeps its chunks ascending
    start = np.searchsorted(slot[order], np.arange(len(terms) * 3 + 1))
    by_id = np.zeros(max(lengths, default=0) + 1, dtype=np.float64)
    by_id[list(lengths)] = list(lengths.values())
    return Postings(terms, start.astype(np.int64), np.frombuffer(docs, dtype=np.int32)[order],
                    np.frombuffer(counts, dtype=np.uint16)[order], by_id, len(lengths),
                    float(by_id.sum()) / len(lengths))


def fold_table() -> dict[int, str]:
    """What FTS5's unicode61 tokenizer (remove_diacritics 2) makes of each code point of the Basic
    Multilingual Plane, asked of FTS5 itself: ``" "`` for a separator, the folded form of a token
    character where it differs (``""`` for a combining mark, which it drops), for ``str.translate``."""
    table: dict[int, str] = {0: " "}
    _probe(table, [c for c in range(1, 0x10000) if not 0xD800 <= c < 0xE000])
    return table


def _probe(table: dict[int, str], code_points: Any) -> None:
    """Add ``code_points`` to ``table``: each put between two letters (``qXq``) and tokenized by FTS5,
    which gives one token (a token character, folded) or two (a separator)."""
    conn = _tokenizer()
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS probe USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS probe_v USING fts5vocab(probe, 'instance')")
    conn.execute("DELETE FROM probe")
    conn.executemany("INSERT INTO probe (rowid, x) VALUES (?, ?)", [(c, f"q{chr(c)}q") for c in code_points])
    found: dict[int, list[str]] = {}
    for term, doc in conn.execute("SELECT term, doc FROM probe_v"):
        found.setdefault(doc, []).append(term)
    for c in code_points:
        terms = found.get(c, [])
        if len(terms) == 1:
            if terms[0][1:-1] != chr(c):
                table[c] = terms[0][1:-1]
        else:
            table[c] = " "


def _lengths(conn: Any) -> tuple[np.ndarray, int]:
    """Each row's tokens over all columns, from ``chunks_fts_docsize`` (a varint per column)."""
    top = int(conn.execute("SELECT max(id) FROM chunks_fts_docsize").fetchone()[0])
    lengths = np.zeros(top + 1, dtype=np.float64)
    rows = 0
    for row_id, blob in conn.execute("SELECT id, sz FROM chunks_fts_docsize"):
        total, value = 0, 0
        for byte in blob:  # SQLite's varints: seven bits a byte, the high ones first
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                total, value = total + value, 0
        lengths[row_id] = total
        rows += 1
    return lengths, rows


# ---------------------------------------------------------------- the statements the search makes

_TOKEN = re.compile(r'\s*(\(|\)|\bAND\b|\bOR\b|\{breadcrumb text\}|\bstems\b|:|"(?:[^"]|"")*"\*?)')


@dataclass(frozen=True)
class Phrase:
    words: tuple[str, ...]  # as FTS5's tokenizer makes them
    prefix: bool
    columns: tuple[int, ...]


def parse(match: str) -> Any:
    """The expression tree of one of our MATCH strings (server/query.py): ("and"|"or", [children])
    or a Phrase; phrases are numbered left to right, as FTS5 numbers them."""
    tokens = [m.group(1) for m in _TOKEN.finditer(match)]
    pos = 0

    def expr(columns: tuple[int, ...]) -> Any:
        nonlocal pos
        items, op = [term(columns)], None
        while pos < len(tokens) and tokens[pos] in ("AND", "OR"):
            op = op or tokens[pos]
            if tokens[pos] != op:
                raise ValueError(f"mixed AND/OR without parentheses: {match}")
            pos += 1
            items.append(term(columns))
        return items[0] if op is None else (op.lower(), items)

    def term(columns: tuple[int, ...]) -> Any:
        nonlocal pos
        token = tokens[pos]
        if token in ("{breadcrumb text}", "stems"):
            pos += 2  # the column filter and ":"
            return term((0, 1) if token.startswith("{") else (2,))
        if token == "(":
            pos += 1
            inner = expr(columns)
            pos += 1  # ")"
            return inner
        pos += 1
        prefix = token.endswith("*")
        text = token.rstrip("*")[1:-1].replace('""', '"')
        return Phrase(tuple(_tokenize(text)), prefix, columns)

    return expr((0, 1, 2))


_FOLDED: dict[str, list[str]] = {}


def _tokenize(text: str) -> list[str]:
    """``text`` as FTS5's unicode61 (remove_diacritics 2) splits and folds it: asked of FTS5 itself."""
    if text not in _FOLDED:
        conn = _tokenizer()
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t (x) VALUES (?)", (text,))
        _FOLDED[text] = [row[0] for row in conn.execute("SELECT term FROM v ORDER BY offset")]
    return _FOLDED[text]


_TOKENIZER: list[Any] = []


def _tokenizer() -> Any:
    if not _TOKENIZER:
        from builder.core.index.connection import sqlite_module

        conn = sqlite_module().connect(":memory:")
        conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _TOKENIZER.append(conn)
    return _TOKENIZER[0]


class Unsupported(Exception):
    """A phrase of several words: positions are needed."""


def search(postings: Postings, match: str, limit: int) -> list[tuple[int, float]]:
    """``SELECT rowid, -bm25(chunks_fts, 2, 1, 1) … ORDER BY score DESC, rowid LIMIT :limit``, from memory."""
    tree = parse(match)
    phrases: list[Phrase] = []
    _collect(tree, phrases)
    size = len(postings.lengths)
    freqs = [_frequencies(postings, p, size) for p in phrases]
    hits = {id(p): f > 0 for p, f in zip(phrases, freqs)}
    rows = np.flatnonzero(_rows(tree, hits))
    if not len(rows):
        return []
    d = postings.lengths[rows]
    score = np.zeros(len(rows))
    for f in freqs:  # fts5Bm25Function: score += idf * ((f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl)))
        n_hit = int(np.count_nonzero(f))
        idf = math.log((postings.rows - n_hit + 0.5) / (n_hit + 0.5))
        idf = idf if idf > 0.0 else 1e-6
        fr = f[rows]
        score += idf * ((fr * (K1 + 1.0)) / (fr + K1 * (1 - B + B * d / postings.average)))
    order = np.lexsort((rows, -score))[:limit]
    return [(int(rows[i]), float(score[i])) for i in order]


def _collect(tree: Any, out: list[Phrase]) -> None:
    if isinstance(tree, Phrase):
        if len(tree.words) != 1:
            raise Unsupported(tree.words)
        out.append(tree)
        return
    for child in tree[1]:
        _collect(child, out)


def _frequencies(postings: Postings, phrase: Phrase, size: int) -> np.ndarray:
    """The phrase's weighted frequency in every row (FTS5's aFreq: each instance adds its column's
    weight; the sums are of small whole numbers, exact in any order)."""
    word = phrase.words[0]
    first = bisect.bisect_left(postings.terms, word)
    if phrase.prefix:
        last = bisect.bisect_left(postings.terms, word + "\U0010ffff")
    else:
        last = first + 1 if first < len(postings.terms) and postings.terms[first] == word else first
    columns = np.array(phrase.columns)
    slots = (np.arange(first, last)[:, None] * 3 + columns[None, :]).ravel()
    begins, ends = postings.start[slots], postings.start[slots + 1]
    sizes = ends - begins
    total = int(sizes.sum())
    if not total:
        return np.zeros(size)
    # the positions of every posting of these lists, without a Python loop over the terms
    index = np.repeat(begins - np.cumsum(sizes) + sizes, sizes) + np.arange(total)
    weights = np.repeat(np.array(WEIGHTS)[np.tile(columns, last - first)], sizes) * postings.counts[index]
    return np.bincount(postings.docs[index], weights=weights, minlength=size)


def _rows(tree: Any, hits: dict[int, np.ndarray]) -> np.ndarray:
    if isinstance(tree, Phrase):
        return hits[id(tree)]
    parts = [_rows(child, hits) for child in tree[1]]
    return np.logical_and.reduce(parts) if tree[0] == "and" else np.logical_or.reduce(parts)


# ---------------------------------------------------------------- the run


def _ms(call: Any) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = query_bench_parser(__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--load", choices=("fts5", "text", "both"), default="both",
                        help="postings out of FTS5's index, made from the chunks' text, or both (compared)")
    args = parser.parse_args()
    from builder.core import index as db
    from builder.core.config import load_config
    from server import search as search_module

    config = load_config(args.config)
    conn = db.open_index(config.index, vec=False)
    queries = read_queries(args.queries)

    loaded = {}
    for name, loader in (("fts5", load), ("text", load_from_text)):
        if args.load not in (name, "both"):
            continue
        tracemalloc.start()
        started = time.perf_counter()
        postings = loaded[name] = loader(conn)
        load_s = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        print(f"load from {name}: {load_s:.1f} s; {len(postings.terms):,} terms, {len(postings.docs):,} postings, "
              f"{postings.rows:,} rows; arrays {postings.nbytes() / 1e6:.1f} MB; peak while loading "
              f"{peak / 1e6:.0f} MB")
    if len(loaded) == 2:
        a, b = loaded["fts5"], loaded["text"]
        same = (a.terms == b.terms and a.rows == b.rows and a.average == b.average
                and all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("start", "docs", "counts", "lengths")))
        print(f"the postings made from the text are those of FTS5's index, term for term: {same}")

    reference = db.fts_search
    statements: list[tuple[str, int, list[tuple[int, float]], list[tuple[int, float]] | None]] = []

    def both(conn_: Any, match: str, limit: int, source_id: Any, tag: Any, stems: bool = True) -> Any:
        found = reference(conn_, match, limit, source_id, tag, stems)
        try:
            mine = search(postings, match, limit)
        except Unsupported:
            mine = None
        statements.append((match, limit, list(found), mine))  # the search extends the list it gets
        return found

    search_module.db.fts_search = both  # every statement of a bm25 search, answered both ways
    for query in queries:
        search_module.search(conn, config, query, mode="bm25", limit=10)
    search_module.db.fts_search = reference
    checked = [s for s in statements if s[3] is not None]
    same_ids = sum([i for i, _ in s[2]] == [i for i, _ in s[3]] for s in checked)
    worst = max((abs(a[1] - b[1]) for s in checked if [i for i, _ in s[2]] == [i for i, _ in s[3]]
                 for a, b in zip(s[2], s[3])), default=0.0)
    exact = sum(s[2] == s[3] for s in checked)
    print(f"statements: {len(statements)}; {len(statements) - len(checked)} with a phrase of several words (FTS5); "
          f"of the {len(checked)} others, the same chunks in the same order: {same_ids}, "
          f"and the same scores bit for bit: {exact} (largest difference {worst:.3g})")
    for match, limit, found, mine in checked:
        if mine is not None and [i for i, _ in found] != [i for i, _ in mine]:
            print(f"  differs: {match[:100]}\n    fts5 {found[:4]}\n    mem  {mine[:4]}")

    memory_statements = {match: limit for match, limit, _, mine in statements if mine is not None}

    def from_memory(conn_: Any, match: str, limit: int, source_id: Any, tag: Any, stems: bool = True) -> Any:
        if match in memory_statements:
            return search(postings, match, limit)
        return reference(conn_, match, limit, source_id, tag, stems)

    alone: dict[str, list[float]] = {"fts5": [], "memory": []}  # each statement by itself, the best of 3
    for match, limit in memory_statements.items():
        for name, run in (("fts5", lambda: reference(conn, match, limit, None, None)),
                          ("memory", lambda: search(postings, match, limit))):
            alone[name].append(min(_ms(run) for _ in range(3)))
    for name, values in alone.items():
        s = summary(values)
        print(f"one statement alone with {name}: median {s['median']:.2f} ms, p95 {s['p95']:.2f} ms, "
              f"max {s['max']:.2f} ms (n={len(values)})")

    times: dict[str, list[float]] = {"fts5": [], "memory": []}
    for _ in range(args.rounds):
        for query in queries:
            for name, fn in (("fts5", reference), ("memory", from_memory)):
                search_module.db.fts_search = fn
                t = time.perf_counter()
                search_module.search(conn, config, query, mode="bm25", limit=10)
                times[name].append((time.perf_counter() - t) * 1000)
    search_module.db.fts_search = reference
    for name, values in times.items():
        s = summary(values)
        print(f"search(mode='bm25') with {name}: median {s['median']:.1f} ms, p95 {s['p95']:.1f} ms "
              f"(n={len(values)})")
    ratio = [a / b for a, b in zip(times["fts5"], times["memory"])]
    print(f"fts5 ÷ memory per query: median {statistics.median(ratio):.2f}×")


if __name__ == "__main__":
    main()
