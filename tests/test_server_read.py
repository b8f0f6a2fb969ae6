"""The read path under trouble: a slow or broken query embedder, a failed vector load, a swapped
index generation, and what /api/health says about them (without running a model)."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config
from builder.core.embedding import EmbeddingError
from builder.sync import build
from server import engine
from server.app import create_app
from server.embedder import QueryEmbedder
from server.reader import IndexReader
from server.engine import Searcher
from server.vectors import VectorMemory
from tests.conftest import HashEmbedder, copy_config, ollama_yaml
from tests.render_support import build_and_render

ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


@pytest.fixture
def portal(served_template: Path, tmp_path: Path, notes_dir: Path) -> Config:
    """A copy of the sample notes built and rendered (its notes are ``notes_dir``)."""
    return copy_config(served_template, tmp_path)


class SlowEmbedder(HashEmbedder):
    """Answers after ``delay`` seconds (an Ollama busy with a build, a cold model)."""

    delay = 0.6

    def embed_query(self, text: str) -> bytes:
        time.sleep(self.delay)
        return super().embed_query(text)


@pytest.mark.slow
def test_a_slow_query_embedder_does_not_use_up_the_sql_time_limit(config_for, quiet_log, notes_dir):
    """The embedding took 0.6 s of a 0.3 s SQL limit, and the search's SQL after it was interrupted: 503."""
    for i in range(200):  # 10,000 chunks: the SQL after the embedding runs long enough to be interrupted
        sections = "".join(f"## Oddíl {j}\n\nČaj číslo {i} a slovo{j}.\n\n" for j in range(50))
        (notes_dir / f"n{i}.md").write_text(f"# Poznámka {i}\n\n{sections}", encoding="utf-8")
    config = config_for(ollama_yaml("http://127.0.0.1:9"))
    assert build(config, embedder_factory=HashEmbedder, log=quiet_log(config)) == 0
    client = TestClient(create_app(config, embedder_factory=SlowEmbedder, time_limit_s=0.3))
    response = client.get("/api/search", params={"q": "převodník", "source": "notes", "limit": "100"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["notes"] == []
    assert body["hits"][0]["path"] == "projekty/sauter-bus.md"
    assert any(h["ranks"]["vector"] for h in body["hits"])


def test_the_query_is_embedded_while_its_words_are_searched(portal, monkeypatch):
    """The vector is computed on the embedder's thread while BM25 runs, not before it: the embedder
    sees the words being searched while it works (before, it waited its second out alone)."""
    words_searched = threading.Event()
    seen: list[bool] = []
    real_fts_search = db.fts_search

    def fts_search(*args, **kwargs):
        words_searched.set()
        return real_fts_search(*args, **kwargs)

    class Watching(HashEmbedder):
        def embed_query(self, text: str) -> bytes:
            seen.append(words_searched.wait(timeout=1.0))
            return super().embed_query(text)

    monkeypatch.setattr(db, "fts_search", fts_search)
    client = TestClient(create_app(portal, embedder_factory=Watching))
    body = client.get("/api/search", params={"q": "powerbanka"}).json()
    assert seen == [True] and body["notes"] == []
    assert body["hits"][0]["ranks"]["vector"] is not None


class MultiCoreEmbedder(HashEmbedder):
    """Like the in-process model: it can be told how many threads to compute the next vector on."""

    def __init__(self, config: object = None) -> None:
        super().__init__(config)
        self.threads: list[int] = []
        self.words_read_before: list[bool] = []  # per query: had its words been read when it was embedded?
        self.hold: threading.Event | None = None  # set: the next query waits for it while being embedded

    def use_threads(self, count: int) -> None:
        self.threads.append(count)

    def embed_query(self, text: str) -> bytes:
        hold = self.hold
        self.words_read_before.append(WORDS_READ.is_set())
        if hold is not None:
            self.words_read_before.append(hold.wait(timeout=5.0))
        return super().embed_query(text)


WORDS_READ = threading.Event()


def running_now(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runnable: int, cores: int = 2) -> None:
    """The machine as :func:`server.engine.free_cores` sees it: ``cores`` cores, ``runnable`` tasks
    runnable now (the caller among them)."""
    loadavg = tmp_path / "loadavg"
    loadavg.write_text(f"0.52 0.61 0.70 {runnable}/312 4242\n", encoding="ascii")
    monkeypatch.setattr(engine, "LOADAVG", loadavg)
    monkeypatch.setattr(engine, "cores", lambda: cores)
    monkeypatch.setattr(engine, "ALONE_THREADS", min(cores, 4))


@pytest.mark.parametrize("text, cores, free", [
    ("0.52 0.61 0.70 1/312 4242\n", 2, 2),  # only the caller runs
    ("0.52 0.61 0.70 1/312 4242\n", 8, 8),
    ("2.90 1.52 1.26 3/83 30622\n", 2, 1),  # a build embedding on both cores
    ("2.90 1.52 1.26 3/83 30622\n", 8, 6),
    ("", 2, 1),  # unreadable: as if busy
    ("0.52 0.61 0.70\n", 2, 1),
])
def test_free_cores_are_the_cores_less_what_runs_now(tmp_path, monkeypatch, text, cores, free):
    (tmp_path / "loadavg").write_text(text, encoding="ascii")
    monkeypatch.setattr(engine, "LOADAVG", tmp_path / "loadavg")
    monkeypatch.setattr(engine, "cores", lambda: cores)
    assert engine.free_cores() == free


def test_the_cores_are_those_the_process_may_run_on(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    assert engine.cores() == 3
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert engine.cores() == 6


def test_free_cores_without_proc_is_one(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "LOADAVG", tmp_path / "missing")
    assert engine.free_cores() == 1


@pytest.fixture
def searching(portal, monkeypatch, tmp_path):
    """A server's searcher over ``portal`` and its :class:`MultiCoreEmbedder`, on an idle machine of two
    cores; ``WORDS_READ`` is set whenever BM25 runs."""
    running_now(tmp_path, monkeypatch, runnable=1)
    real_fts_search = db.fts_search
    made: list[MultiCoreEmbedder] = []

    def factory(config: object) -> MultiCoreEmbedder:
        made.append(MultiCoreEmbedder(config))
        return made[-1]

    def fts_search(*args, **kwargs):
        WORDS_READ.set()
        return real_fts_search(*args, **kwargs)

    monkeypatch.setattr(db, "fts_search", fts_search)
    reader = IndexReader(portal.index)
    searcher = Searcher(portal, reader, QueryEmbedder(portal.embedding, factory), VectorMemory(reader.open_fresh))
    searcher.search("warm-up")  # makes the provider: whether it can use the cores is known from then on
    WORDS_READ.clear()
    made[0].threads.clear(), made[0].words_read_before.clear()
    return searcher, made[0]


def test_a_search_alone_on_the_server_embeds_on_every_core_before_reading_its_words(searching):
    searcher, model = searching
    body = searcher.search("powerbanka")
    assert model.threads == [2]
    assert model.words_read_before == [False]  # the model had the cores to itself
    assert body.hits[0].path == "cestovani/snezka.md" and body.hits[0].ranks["vector"] is not None


def test_a_search_alone_on_a_busy_machine_embeds_on_one_core_while_its_words_are_read(searching, tmp_path,
                                                                                      monkeypatch):
    """A build embedding on both cores: OpenMP threads sharing them would stall for seconds."""
    searcher, model = searching
    running_now(tmp_path, monkeypatch, runnable=3)
    model.hold = WORDS_READ
    body = searcher.search("powerbanka")
    assert model.threads == [1]
    # held until the words were read: they were read while the query was being embedded (had the
    # search waited for its vector first, the hold would have run out: False)
    assert len(model.words_read_before) == 2 and model.words_read_before[1] is True
    assert body.hits[0].ranks["vector"] is not None


def test_searches_side_by_side_embed_on_one_core_while_their_words_are_read(searching):
    """The first search holds the model until the second has read its words: the second did not wait
    for its vector before searching, and it was embedded on one thread."""
    searcher, model = searching
    model.hold = WORDS_READ
    first = threading.Thread(target=searcher.search, args=("powerbanka",))
    first.start()
    deadline = time.monotonic() + 5
    while not model.words_read_before and time.monotonic() < deadline:  # the first is being embedded, alone
        time.sleep(0.01)
    model.hold = None
    second = searcher.search("sněžka")
    first.join()
    assert model.threads == [2, 1]
    assert model.words_read_before == [False, True, True]  # the second's words were read while the first was embedded
    assert second.hits[0].ranks["vector"] is not None


def test_an_embedder_slower_than_its_limit_gives_word_results_with_a_note(portal):
    class VerySlow(SlowEmbedder):
        delay = 1.5

    client = TestClient(create_app(portal, embedder_factory=VerySlow, embed_time_limit_s=0.2))
    started = time.monotonic()
    response = client.get("/api/search", params={"q": "powerbanka"})
    assert time.monotonic() - started < 1.0
    assert response.status_code == 200
    body = response.json()
    assert body["notes"] == ["embeddings unavailable (the query embedder took longer than 0.2 s): FTS-only results"]
    assert [h["path"] for h in body["hits"]] == ["cestovani/snezka.md"]
    assert body["hits"][0]["ranks"] == {"bm25": 1, "vector": None}
    page = client.get("/search", params={"q": "powerbanka"})
    assert page.status_code == 200
    assert ("embeddings unavailable (the query embedder took longer than 0.2 s): FTS-only results"
            in page.text)


@pytest.mark.parametrize("error, note", [
    (EmbeddingError("Ollama answered HTTP 500"), "Ollama answered HTTP 500"),
    (RuntimeError("the model crashed"), "RuntimeError: the model crashed"),
])
def test_an_embedder_that_fails_gives_word_results_with_a_note(portal, error, note):
    class Failing(HashEmbedder):
        def embed_query(self, text: str) -> bytes:
            raise error

    client = TestClient(create_app(portal, embedder_factory=Failing))
    response = client.get("/api/search", params={"q": "powerbanka"})
    assert response.status_code == 200
    assert response.json()["notes"] == [f"embeddings unavailable ({note}): FTS-only results"]
    assert [h["path"] for h in response.json()["hits"]] == ["cestovani/snezka.md"]
    embedding = client.get("/api/health").json()["embedding"]
    assert (embedding["created"], embedding["reachable"], embedding["error"], embedding["last_error"]) == (
        True, False, note, note)
    assert ISO_TIME.fullmatch(embedding["last_error_at"]) and embedding["last_success_at"] is None


def test_health_never_runs_the_embedder_and_reports_what_queries_found(portal):
    embedded: list[str] = []

    class Recording(HashEmbedder):
        def embed_query(self, text: str) -> bytes:
            embedded.append(text)
            return super().embed_query(text)

    client = TestClient(create_app(portal, embedder_factory=Recording))
    for _ in range(3):
        health = client.get("/api/health").json()
    assert embedded == []
    assert health["status"] == "ok"
    assert health["embedding"] == {"provider": "ollama", "created": False, "reachable": None, "error": None,
                                   "last_error": None, "last_error_at": None, "last_success_at": None}
    assert client.get("/api/search", params={"q": "čaj"}).status_code == 200
    embedding = client.get("/api/health").json()["embedding"]
    assert embedded == ["čaj"]
    assert (embedding["created"], embedding["reachable"], embedding["error"], embedding["last_error"]) == (
        True, True, None, None)
    assert ISO_TIME.fullmatch(embedding["last_success_at"])


class Counting(HashEmbedder):
    """Records every query it embeds; ``broken`` makes it fail as an unreachable server would."""

    def __init__(self, config: object = None) -> None:
        super().__init__(config)
        self.embedded: list[str] = []
        self.broken = False

    def embed_query(self, text: str) -> bytes:
        if self.broken:
            raise EmbeddingError("Ollama at http://127.0.0.1:9: connection refused or host unreachable")
        self.embedded.append(text)
        return super().embed_query(text)


@pytest.mark.parametrize("cache_size, embedded", [
    (2, ["čaj", "sýr", "káva", "sýr"]),  # when káva came, sýr was the one used longest ago: it was let go
    (3, ["čaj", "sýr", "káva"]),
    (0, ["čaj", "sýr", "čaj", "káva", "sýr"]),
])
def test_the_latest_queries_vectors_are_kept(portal, cache_size, embedded):
    model = Counting()
    embedder = QueryEmbedder(portal.embedding, lambda _: model, cache_size=cache_size)
    vectors = [embedder.embed(text) for text in ("čaj", "sýr", "čaj", "káva", "sýr")]
    assert model.embedded == embedded
    assert vectors[0] == vectors[2] == (HashEmbedder().embed_query("čaj"), None)
    assert vectors[1] == vectors[4] == (HashEmbedder().embed_query("sýr"), None)


def test_a_query_asked_again_is_not_embedded_again_and_keeps_its_vector_when_the_embedder_fails(config_for):
    config = config_for(ollama_yaml("http://127.0.0.1:9"), extra="search:\n  query_cache: 10\n")
    build_and_render(config, full=True, embedder_factory=HashEmbedder)
    made: list[Counting] = []
    client = TestClient(create_app(config, embedder_factory=lambda _: made.append(Counting()) or made[-1]))

    def answer(query: str) -> dict:
        body = client.get("/api/search", params={"q": query}).json()
        del body["took_ms"]
        return body

    first = answer("powerbanka")
    assert answer("powerbanka") == first
    assert made[0].embedded == ["powerbanka"]
    assert first["notes"] == [] and first["hits"][0]["ranks"]["vector"] is not None
    made[0].broken = True  # the Ollama server went away: a query seen before still has its vector
    assert answer("powerbanka") == first
    other = answer("sněžka")
    assert other["notes"] == ["embeddings unavailable (Ollama at http://127.0.0.1:9: connection refused or host "
                              "unreachable): FTS-only results"]
    made[0].broken = False  # a failure is not kept: the next time, the query is embedded
    assert answer("sněžka")["notes"] == []
    assert made[0].embedded == ["powerbanka", "sněžka"]


def _wait_for_vector_loader(timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while any(t.name == "vector-memory" for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the vector loader did not finish"
        time.sleep(0.01)


def test_a_failed_vector_load_is_remembered_reported_and_retried_later(portal, notes_dir, quiet_log, monkeypatch):
    loads: list[int] = []
    real_iter_vectors = db.iter_chunk_vectors

    def out_of_memory(conn):
        loads.append(1)
        raise MemoryError("cannot allocate 1.5 GiB")

    monkeypatch.setattr(db, "iter_chunk_vectors", out_of_memory)
    app = create_app(portal, embedder_factory=HashEmbedder, min_vectors=1)
    client = TestClient(app)
    for q in ["čaj", "powerbanka", "převodník", "sluchátka", "mléko"]:
        assert client.get("/api/search", params={"q": q, "mode": "vector"}).json()["hits"]  # vec0 answers
        _wait_for_vector_loader()
    assert len(loads) == 1  # not once per query
    health = client.get("/api/health").json()
    assert health["status"] == "degraded"
    assert health["vector_memory"]["error"] == "MemoryError: cannot allocate 1.5 GiB"
    assert (health["vector_memory"]["loaded"], health["vector_memory"]["vectors"]) == (False, 0)
    assert ISO_TIME.fullmatch(health["vector_memory"]["failed_at"])

    (notes_dir / "zahrada.md").write_text("# Zahrada\n\nRajčata a okurky.\n", encoding="utf-8")
    build(portal, embedder_factory=HashEmbedder, log=quiet_log(portal))  # the index changed: tried at once
    client.get("/api/search", params={"q": "rajčata"})
    _wait_for_vector_loader()
    assert len(loads) == 2

    monkeypatch.setattr(db, "iter_chunk_vectors", real_iter_vectors)
    monkeypatch.setattr(VectorMemory, "RETRY_AFTER_S", 0.0)  # the back-off is over
    client.get("/api/search", params={"q": "rajčata"})
    _wait_for_vector_loader()
    memory = client.get("/api/health").json()["vector_memory"]
    assert memory == {"loaded": True, "vectors": client.get("/api/health").json()["counts"]["vec_chunks"],
                      "error": None, "failed_at": None}


def open_files_of(path: Path) -> list[str]:
    """What this process's file descriptors point at that is ``path`` or one of its WAL companions."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile (the listing's own descriptor among them)
            continue
        if target.startswith(str(path)):
            found.append(target)
    return found


def test_no_connection_keeps_a_replaced_generation_open(portal, quiet_log):
    """After a --full build swapped the index and deleted the old file, one request closes every
    connection to it, including those last used by threads that now sit idle."""
    reader = IndexReader(portal.index)
    old = indexfile.resolve(portal.index)
    all_holding, all_returned, finish = threading.Barrier(5), threading.Barrier(5), threading.Event()

    def use_and_idle() -> None:
        with reader.connection() as lease:
            db.counts(lease.conn)
            all_holding.wait(timeout=10)  # four connections in use at once
        all_returned.wait(timeout=10)
        finish.wait(timeout=60)  # the thread stays alive, idle

    threads = [threading.Thread(target=use_and_idle) for _ in range(4)]
    for thread in threads:
        thread.start()
    try:
        all_holding.wait(timeout=10)
        all_returned.wait(timeout=10)
        assert len([t for t in open_files_of(old) if t == str(old)]) == 4
        assert build(portal, full=True, embedder_factory=HashEmbedder, log=quiet_log(portal)) == 0
        assert not old.exists() and all(t.endswith("(deleted)") for t in open_files_of(old))
        with reader.connection() as lease:  # one request after the swap
            assert db.counts(lease.conn)["chunks"] > 0
        assert open_files_of(old) == []
    finally:
        finish.set()
        for thread in threads:
            thread.join()


def test_an_unreadable_index_is_503_with_the_way_out(portal):
    generation = indexfile.resolve(portal.index)
    indexfile.discard(generation)
    generation.write_bytes(b"not a database, " * 512)
    client = TestClient(create_app(portal, embedder_factory=HashEmbedder))
    expected = ("the index cannot be read (file is not a database); "
                "rebuild it with `notes-portal build --full`")
    response = client.get("/api/search", params={"q": "čaj"})
    assert (response.status_code, response.json()) == (503, {"error": expected})
    page = client.get("/search", params={"q": "čaj"})
    assert page.status_code == 503 and f'<p class="search-note">{expected}</p>' in page.text
    health = client.get("/api/health").json()
    assert (health["index"], health["error"], health["status"]) == (False, expected, "degraded")
