"""Pages and words first, vectors after (issue 35): a build makes its changes browsable and searchable by
words before the model sees them; the backfill runs beside later builds, resumes after a kill, and
never stores a vector for text a build has replaced meanwhile.

The embedding provider is the tests' stand-in Ollama on 127.0.0.1 (``FakeOllama``: no Ollama can run
here), which can hold every request until the test lets it go.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.embed_cache import EmbeddingCache
from builder.core.embedding import fingerprint
from server.app import create_app
from tests.conftest import PROJECT, DIMS, FakeOllama, hashed_vector, ollama_yaml, write_config, write_note

pytestmark = pytest.mark.slow


def portal(tmp_path: Path, url: str, notes: int = 6) -> Config:
    for i in range(notes):
        write_note(tmp_path / "notes", f"n{i}.md", f"# Poznámka {i}\n\nKrystalový oscilátor číslo {i}.\n")
    embedding = ollama_yaml(url).replace("timeout: 2", "timeout: 60").replace("batch: 8", "batch: 2")
    return load_config(write_config(tmp_path, f"index: data/index.sqlite\n{embedding}"
                                              "sources:\n  notes:\n    folder: notes\n"))


def cli(config: Config, *args: str) -> tuple[int, str, float]:
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "builder.cli", *args, "--config", str(config.path)], cwd=PROJECT,
                          capture_output=True, text=True, check=False, timeout=60)
    return proc.returncode, proc.stderr, time.monotonic() - started


def progress(config: Config) -> tuple[int, int]:
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        return db.count_chunks(conn) - db.count_pending(conn), db.count_chunks(conn)
    finally:
        conn.close()


def wait_until(check, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "gave up waiting"
        time.sleep(0.05)


def test_a_build_serves_pages_and_words_while_the_model_works_and_the_vectors_follow(tmp_path):
    with FakeOllama(held=True) as ollama:  # the model "works" until the test lets it answer
        config = portal(tmp_path, ollama.url)
        code, err, _ = cli(config, "build")
        assert (code, err) == (0, "")
        assert ollama.arrived.wait(30), "no backfill asked for vectors"
        assert (config.site.output / "index.html").is_file() and (config.site.output / "notes/n3.html").is_file()
        client = TestClient(create_app(config))
        body = client.get("/api/search", params={"q": "oscilátor 3"}).json()
        assert body["hits"][0]["path"] == "n3.md" and body["vectors"] == {"ready": 0, "total": 6}
        assert "search by meaning is still being prepared: 0 of 6 sections have their vectors" in body["notes"][-1]
        assert client.get("/api/health").json()["vectors"] == {"ready": 0, "total": 6}
        ollama.open.set()
        wait_until(lambda: progress(config) == (6, 6))
        body = client.get("/api/search", params={"q": "oscilátor 3"}).json()
        assert body["vectors"] is None and body["hits"][0]["ranks"]["vector"] is not None


def test_an_edit_saved_during_a_backfill_is_built_at_once(tmp_path):
    with FakeOllama(held=True) as ollama:
        config = portal(tmp_path, ollama.url, notes=40)
        assert cli(config, "build")[0] == 0
        assert ollama.arrived.wait(30)  # the backfill holds its lock, waiting for the model
        write_note(tmp_path / "notes", "n7.md", "# Poznámka 7\n\nKrystalový oscilátor a kvantoflek.\n")
        code, err, seconds = cli(config, "build")
        assert (code, err) == (0, "") and seconds < 10  # it never waited for the backfill (held 60 s)
        assert "kvantoflek" in (config.site.output / "notes/n7.html").read_text(encoding="utf-8")
        hits = TestClient(create_app(config)).get("/api/search", params={"q": "kvantoflek", "mode": "bm25"}).json()
        assert [h["path"] for h in hits["hits"]] == ["n7.md"]
        ollama.open.set()
        wait_until(lambda: progress(config) == (40, 40))


def test_a_killed_backfill_resumes_with_what_it_had_computed(tmp_path):
    with FakeOllama() as ollama:
        config = portal(tmp_path, ollama.url, notes=12)
        assert cli(config, "build", "--vectors", "later")[0] == 0
        answered = {"n": 0}
        handler = ollama.server.RequestHandlerClass
        answer = handler.do_POST

        def two_then_hold(self: object) -> None:
            answered["n"] += 1
            if answered["n"] > 2:
                ollama.arrived.set()
                time.sleep(60)  # a model that stops answering: the process is killed meanwhile
            answer(self)

        handler.do_POST = two_then_hold
        embed = subprocess.Popen([sys.executable, "-m", "builder.cli", "embed", "--config", str(config.path)],
                                 cwd=PROJECT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert ollama.arrived.wait(30)
        os.kill(embed.pid, signal.SIGKILL)
        embed.wait(10)
        assert progress(config) == (4, 12)  # two batches of two stored before the kill
        handler.do_POST = answer
        asked = len(ollama.requests)
        assert cli(config, "embed")[0] == 0
        assert progress(config) == (12, 12)
        texts = [t for request in ollama.requests[asked:] for t in request["input"]]
        assert len(texts) == 8  # the rest only: the cache held the first four


def test_a_vector_of_text_replaced_meanwhile_is_never_stored(tmp_path):
    config = portal(tmp_path, "http://127.0.0.1:9", notes=2)
    from builder.sync import build
    from builder.core.synclog import SyncLog

    assert build(config, log=SyncLog(config.log_path, echo_info=False), vectors="later") == 0
    conn = db.connect(indexfile.resolve(config.index))
    old = conn.execute("SELECT id, embed_sha FROM chunks ORDER BY id").fetchall()
    vector = hashed_vector("x", DIMS).tobytes()
    write_note(tmp_path / "notes", "n0.md", "# Poznámka 0\n\nJiný text.\n")  # a build re-cuts n0 meanwhile
    assert build(config, log=SyncLog(config.log_path, echo_info=False), vectors="later") == 0
    stored = db.store_current_vectors(conn, [(row["id"], row["embed_sha"], vector) for row in old], "now")
    assert stored == 1  # n1's chunk; n0's old chunk is gone, its new one waits for its own text's vector
    assert conn.execute("SELECT count(*) FROM vec_chunks").fetchone()[0] == 1
    assert conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] == 1
    assert db.count_pending(conn) == 1
    conn.close()
    with EmbeddingCache(config.cache_path) as cache:
        assert cache.get(fingerprint(config.embedding), [old[0]["embed_sha"]]) == {}
