"""Fast paths give the reference path's answers."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from builder.notes.sources import Scope, _glob_regex, matches

PATTERNS = ["**", "*.md", "notes/**", "notes", "**/inbox/**", "*.markdown", "a/*/c.md", "drafts", "x?y.md",
            "projekty/**", "**/*.txt", "deep/**/q.md", "x**.md"]
PATHS = ["a.md", "notes/x.md", "notes/inbox/y.md", "drafts/z.md", "a/b/c.md", "a/b/d/c.md", "projekty/p.markdown",
         "xzy.md", "x/inbox/a.md", "deep/drafts/q.md", "deep/x/y/q.md", "n.txt", "notes/readme.txt",
         "a/x/b.md"]


def reference_wants(scope: Scope, path: str) -> bool:
    """The scope rule one pattern at a time, as the README states it."""
    return (any(_glob_regex(p).match(path) for p in scope.paths)
            and any(matches(p, path) for p in scope.include)
            and not any(matches(p, path) for p in scope.exclude))


def test_the_compiled_scope_decides_like_the_pattern_by_pattern_rule():
    rng = random.Random(3)
    decided = 0
    for _ in range(2000):
        scope = Scope(tuple(rng.sample(PATTERNS, rng.randint(1, 3))), tuple(rng.sample(PATTERNS, rng.randint(1, 3))),
                      tuple(rng.sample(PATTERNS, rng.randint(0, 3))))
        for path in PATHS:
            assert scope.wants(path) == reference_wants(scope, path), (scope, path)
            decided += scope.wants(path)
    assert 2000 < decided < 2000 * len(PATHS)  # both answers occur


def test_a_folders_revision_follows_the_index_as_a_fresh_read_would(tmp_path):
    """The revision is computed from the scan's states plus what was applied; it must equal the digest
    of what the index holds afterwards."""
    import hashlib

    from builder import indexfile
    from builder.core import index as db
    from builder.core.config import load_config
    from builder.sync import build
    from builder.core.synclog import SyncLog
    from tests.conftest import write_config, write_note

    for i in range(5):
        write_note(tmp_path / "notes", f"n{i}.md", f"# N{i}\n\ntext {i}\n")
    config = load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                                "sources:\n  notes:\n    folder: notes\n"))

    def index_rev() -> tuple[str | None, str]:
        conn = db.connect(indexfile.resolve(config.index), vec=False)
        stored = db.get_sources(conn)["notes"].indexed_rev
        digest = hashlib.sha256()
        for path, state in sorted(db.file_states(conn, "notes").items()):
            digest.update(f"{path}\0{state.sha256}\n".encode())
        conn.close()
        return stored, digest.hexdigest()[:12]

    log = SyncLog(config.log_path, echo_info=False)
    for change in ("first", "edit", "delete", "add"):
        if change == "edit":
            write_note(tmp_path / "notes", "n1.md", "# N1\n\nother text\n")
        elif change == "delete":
            (tmp_path / "notes" / "n2.md").unlink()
        elif change == "add":
            write_note(tmp_path / "notes", "n9.md", "# N9\n")
        assert build(config, log=log) == 0
        stored, fresh = index_rev()
        assert stored == fresh, change


def test_notes_parsed_on_every_core_are_indexed_as_one_process_indexes_them(tmp_path, monkeypatch):
    """The first build parses on forked workers (here forced for a few notes); the index it makes
    equals the one-process build's, row for row and in the same order of ids."""
    import os

    from builder import indexfile
    from builder.core import forkpool
    from builder.core import index as db
    from builder.core.config import load_config
    from builder import sync
    from builder.sync import build
    from builder.core.synclog import SyncLog
    from tests.conftest import write_config, write_note

    notes = {f"d{i % 3}/n{i}.md": f"---\ntags: [t{i % 4}]\n---\n# Pozn {i}\n\nText {i} o čaji.\n\n## Oddíl\n\n"
             f"[další](n{i + 1}.md) a kód:\n\n```python\nx = {i}\n```\n" for i in range(12)}
    notes["zlomena.md"] = "# Zlomená\n\n" + "[" * 5000  # parsed, whatever it holds
    notes["skryta.md"] = "---\npublished: false\n---\n# Skrytá\n"

    def index_of(name: str, forced: bool) -> tuple[list[tuple], list[tuple]]:
        root = tmp_path / name
        for rel, text in notes.items():
            write_note(root / "notes", rel, text)
        config = load_config(write_config(root, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                                "sources:\n  notes:\n    folder: notes\n"))
        started: list[int] = []
        with monkeypatch.context() as patch:
            if forced:
                patch.setattr(forkpool, "PARALLEL_MIN", 1)
                patch.setattr(os, "cpu_count", lambda: 2)
                patch.setattr(sync, "INGEST_BATCH", 5)  # batches parsed while the one before is stored
                executor = forkpool.Pool._executor
                patch.setattr(forkpool.Pool, "_executor", lambda pool: started.append(1) or executor(pool))
            assert build(config, log=SyncLog(config.log_path, echo_info=False), render=False) == 0
        assert bool(started) == forced
        conn = db.connect(indexfile.resolve(config.index), vec=False)
        files = [tuple(r) for r in conn.execute(
            "SELECT path, title, tags, headings, front_matter, status, sha256 FROM files ORDER BY path")]
        chunks = [tuple(r) for r in conn.execute(
            "SELECT id, path, chunk_idx, breadcrumb, anchor, line_start, line_end, text, embed_sha, stems "
            "FROM chunks ORDER BY id")]
        conn.close()
        return files, chunks

    serial, forked = index_of("serial", forced=False), index_of("forked", forced=True)
    assert len(serial[0]) == len(notes) and len(serial[1]) > len(notes)
    assert forked == serial


def test_the_servers_compact_vectors_rescored_give_exactly_the_nearest_chunks(tmp_path):
    """The server scans one byte per dimension and re-scores its best candidates from chunk_vectors:
    the answer is vec0's exact scan's, ids and similarities, over 3,000 vectors (copies among them:
    equal similarities come smaller id first on both paths, so the fusion's ties do not depend on
    which one answered)."""
    import time

    import numpy as np

    from builder.core import index as db
    from server.vectors import VectorMemory

    dims, notes, per_note = 64, 30, 100
    path = tmp_path / "index.sqlite"
    conn = db.connect(path)
    db.migrate(conn)
    db.ensure_vec_table(conn, dims)
    with db.transaction(conn):
        db.upsert_source(conn, "notes", "folder", None, None)
    for n in range(notes):
        record = db.FileRecord(path=f"n{n}.md", title=f"N{n}", tags=(), headings=(), front_matter={},
                               status="ok", status_note=None, sha256="0", size=1, mtime_ns=1, changed_at=None)
        chunks = [{"chunk_idx": i, "breadcrumb": f"N{n}", "anchor": "", "line_start": 1, "line_end": 1,
                   "text": f"part {i}", "embed_sha": f"{n}-{i}"} for i in range(per_note)]
        db.replace_file(conn, "notes", record, chunks, "2026-12-01T00:00:00")
    ids = [row["id"] for row in db.pending_chunks(conn, notes * per_note)]
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((len(ids), dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors[[700, 5, 2900]] = vectors[1500]  # copies: equal similarities, ordered by id on both paths
    db.store_vectors(conn, zip(ids, (v.tobytes() for v in vectors), strict=True), "2026-12-01T00:00:00")
    identity = (1, 1)
    memory = VectorMemory(lambda: (identity, db.connect(path, readonly=True)), min_vectors=1)
    queries = [rng.standard_normal(dims).astype(np.float32) for _ in range(30)]
    queries += [vectors[i] + 0.05 * rng.standard_normal(dims).astype(np.float32) for i in range(0, 3000, 300)]
    queries.append(vectors[1500].copy())
    assert memory.nearest(conn, identity, queries[0].tobytes(), 30) is None  # vec0 answers while it loads
    deadline = time.monotonic() + 10
    while memory.loaded() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert memory.state()["vectors"] == notes * per_note
    for query in queries:
        query /= np.linalg.norm(query)
        fast = memory.nearest(conn, identity, query.tobytes(), 30)
        exact = db.knn_search(conn, query.tobytes(), 30, None, None)
        assert fast is not None and [i for i, _ in fast] == [i for i, _ in exact]
        assert np.allclose([s for _, s in fast], [s for _, s in exact], atol=1e-5)
    # a backfill's next batch while chunks still wait: the copy in memory stays for RELOAD_AFTER_S
    loaded = memory.loaded()
    conn.execute("UPDATE chunks SET embedded_at = NULL WHERE id = :id", {"id": ids[-1]})  # one still waits
    db.store_vectors(conn, [(ids[0], vectors[1].tobytes())], "2026-12-01T00:00:01")
    assert memory.nearest(conn, identity, queries[0].tobytes(), 30) is not None and memory.loaded() == loaded
    time.sleep(0.1)
    assert memory.loaded() == loaded  # no load was started
    memory.RELOAD_AFTER_S = 0
    memory.nearest(conn, identity, queries[0].tobytes(), 30)
    deadline = time.monotonic() + 10
    while memory.loaded() == loaded and time.monotonic() < deadline:
        time.sleep(0.01)
    assert memory.loaded() == (identity, db.vectors_version(conn)) != loaded
    copies = sorted(ids[i] for i in (5, 700, 1500, 2900))
    assert [i for i, _ in db.knn_search(conn, vectors[1500].tobytes(), 4, None, None)] == copies
    # a scan on several threads (parts of whole blocks) makes one scan's candidates, in its order
    from concurrent.futures import ThreadPoolExecutor

    from server import vectors as memory_module

    snapshot = memory._snapshot
    with ThreadPoolExecutor(2) as helpers:
        for rows_per_block in (1024, 256, 7):
            memory_module.SCAN_ROWS = rows_per_block
            try:
                for query in queries[:12]:
                    parted = snapshot.scores(query, helpers, 3)
                    assert np.array_equal(parted, snapshot.scores(query)), rows_per_block
                    alone = snapshot.candidates(query, 120)
                    assert np.array_equal(snapshot.candidates(query, 120, helpers, 3), alone)
                    assert len(set(alone.tolist())) == 120
            finally:
                memory_module.SCAN_ROWS = 1024
    conn.close()


def test_fold_of_ascii_text_is_the_full_folds_answer():
    """``fold`` skips Unicode decomposition for ASCII text: the same answer as the full path, over
    every word of the example notes and their lines."""
    import re
    import unicodedata
    from pathlib import Path

    from builder.core.slug import _SPECIAL, fold

    def reference(text: str) -> str:
        decomposed = unicodedata.normalize("NFKD", text.lower().translate(_SPECIAL))
        return "".join(ch for ch in decomposed if not unicodedata.combining(ch))

    notes = Path(__file__).resolve().parents[1] / "examples" / "notes"
    lines = [line for path in sorted(notes.rglob("*.md")) for line in path.read_text(encoding="utf-8").splitlines()]
    words = {w for line in lines for w in re.findall(r"\S+", line)}
    assert sum(w.isascii() for w in words) > 500 and sum(not w.isascii() for w in words) > 500
    for text in [*words, *lines, "MAX485 RS-485 ß Straße", "ĽADOVÝ čaj", ""]:
        assert fold(text) == reference(text), text


def test_notes_written_in_a_batch_are_found_like_notes_written_one_by_one(tmp_path):
    """A WriteBatch puts new chunks' words into FTS5 once per commit, not per note: with notes
    replaced twice and deleted inside the same batch (their words must be in FTS5 before the delete
    trigger takes them out), the full-text index passes FTS5's integrity check and answers every
    word as the index written one note per transaction does."""
    from builder.core import index as db

    words = ["konvice", "čaj", "převodník", "sběrnice", "hora", "sníh", "kontajner", "sieť"]

    def text(n: int, version: int) -> str:
        return " ".join(words[(n * 3 + version + i) % len(words)] for i in range(3)) + f" poznámka{n}v{version}"

    def write(path, batch_s: float | None) -> object:
        conn = db.connect(path, vec=False)
        db.migrate(conn)
        with db.transaction(conn):
            db.upsert_source(conn, "notes", "folder", None, None)

        def replace(n: int, version: int) -> None:
            record = db.FileRecord(path=f"n{n}.md", title=f"N{n}", tags=(), headings=(), front_matter={},
                                   status="ok", status_note=None, sha256=str(version), size=1, mtime_ns=1,
                                   changed_at=None)
            chunks = [{"chunk_idx": i, "breadcrumb": f"N{n}", "anchor": f"a{i}", "line_start": i + 1,
                       "line_end": i + 1, "text": f"{text(n, version)} díl{i}", "embed_sha": f"{n}-{version}-{i}"}
                      for i in range(3)]
            db.replace_file(conn, "notes", record, chunks, "2026-12-01T00:00:00")

        def steps() -> None:
            for n in range(40):
                replace(n, 0)
            for n in range(0, 40, 5):
                replace(n, 1)  # replaced again in the same batch
            for n in range(1, 40, 7):
                db.delete_file(conn, "notes", f"n{n}.md")  # deleted in the same batch
            replace(41, 0)

        if batch_s is None:
            steps()
        else:
            with db.WriteBatch(conn, batch_s):
                steps()
        return conn

    one_by_one = write(tmp_path / "a.sqlite", None)
    for batch_s in (3600, 0):
        batched = write(tmp_path / f"b{batch_s}.sqlite", batch_s)
        assert db.fts_integrity_error(batched) is None
        gone = {"poznamka5v0", "poznamka8v0"}  # replaced, deleted
        for word in [*words, "poznamka5v1", "poznamka9v0", "poznamka41v0", "dil2", *gone]:
            match = f'{{breadcrumb text}} : "{word}"*'
            got = [(r["path"], r["text"]) for r in batched.execute(
                "SELECT c.path, c.text FROM chunks_fts JOIN chunks AS c ON c.id = chunks_fts.rowid "
                "WHERE chunks_fts MATCH :m ORDER BY c.path, c.chunk_idx", {"m": match})]
            want = [(r["path"], r["text"]) for r in one_by_one.execute(
                "SELECT c.path, c.text FROM chunks_fts JOIN chunks AS c ON c.id = chunks_fts.rowid "
                "WHERE chunks_fts MATCH :m ORDER BY c.path, c.chunk_idx", {"m": match})]
            assert got == want and bool(got) is (word not in gone), word
        batched.close()
    assert db.fts_integrity_error(one_by_one) is None
    one_by_one.close()


# Czech words with the share of sections that hold each: three common, the rest rare.
WORDS = {"hodnota": 0.7, "funkce": 0.6, "soubor": 0.5, "generátor": 0.06, "zásobník": 0.05, "iterátor": 0.05,
         "výjimka": 0.04, "slovník": 0.04, "rekurze": 0.03, "dekorátor": 0.03}


def test_the_any_word_query_with_common_words_is_the_reference_query_over_chunks_with_a_rare_word(
        tmp_path, monkeypatch):
    """Over chunks that hold a rare word, the two-statement any-word query returns exactly the
    reference statement's best chunks and scores; a chunk with common words alone (which the
    reference may rank high) is never a candidate."""
    from builder.core import index as db
    from builder.core.config import load_config
    from builder.sync import build
    from builder.core.synclog import SyncLog
    from server import search as search_module
    from server.query import match_any, parse
    from tests.conftest import write_config, write_note

    rng = random.Random(11)
    for n in range(120):
        sections = []
        for s in range(2):
            words = [w for w, share in WORDS.items() for _ in range(rng.randint(1, 4)) if rng.random() < share]
            rng.shuffle(words)
            sections.append(f"## Část {s}\n\n{' '.join(words) or 'prázdno'} text\n")
        text = f"# Poznámka {n}\n\n" + "\n".join(sections)
        write_note(tmp_path / "notes", f"n{n:03d}.md", text)
        if n % 4 == 0:  # copies score alike: ties, which both paths give to the smaller id
            write_note(tmp_path / "notes", f"kopie/n{n:03d}.md", text)
    config = load_config(write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                                "sources:\n  notes:\n    folder: notes\n"))
    assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0
    monkeypatch.setattr(search_module, "COMMON_CHUNKS", 60)  # the three common words, at this size
    monkeypatch.setattr(search_module, "COMMON_SAVED", 100)
    conn = db.connect(config.index, vec=False)
    split = dropped = 0
    for _ in range(40):
        terms = parse(" ".join(rng.sample(sorted(WORDS), rng.randint(2, 5))))
        rare, common = search_module._common_split(conn, terms, True)
        reference = db.fts_search(conn, match_any(terms, True), 10_000, None, None, True)
        if not rare or not common:
            assert search_module._any_word(conn, terms, True, None, None) == reference[:search_module.CANDIDATES]
            continue
        split += 1
        with_rare = {i for i, _ in db.fts_search(conn, match_any(rare, True), 10_000, None, None, True)}
        expected = [hit for hit in reference if hit[0] in with_rare][:search_module.CANDIDATES]
        found = search_module._any_word(conn, terms, True, None, None)
        assert [i for i, _ in found] == [i for i, _ in expected], [t.text for t in terms]
        assert [s for _, s in found] == pytest.approx([s for _, s in expected], rel=1e-9)
        dropped += any(i not in with_rare for i, _ in reference[:search_module.CANDIDATES])
    # beside the common words, only a word no chunk holds: the common words still find chunks
    terms = parse("hodnota funkce kvákání")
    assert search_module._common_split(conn, terms, True)[1] == []
    found = search_module._any_word(conn, terms, True, None, None)
    assert found and found == db.fts_search(conn, match_any(terms, True), search_module.CANDIDATES, None, None, True)
    # an English word no chunk holds is as common as its translations (here two common words)
    english = replace(parse("value")[0], translations=("hodnota", "funkce"))
    rare, common = search_module._common_split(conn, [english, *parse("rekurze")], True)
    assert ([t.text for t in rare], [t.text for t in common]) == (["rekurze"], ["value"])
    conn.close()
    assert split >= 15 and dropped >= 5  # the split happened, and changed what the reference would show
