"""The web app through Starlette's TestClient: parameters, errors, auth, headers, result shape."""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from server.app import SECURITY_HEADERS, create_app
from tests.conftest import HashEmbedder, copy_config, free_port, ollama_yaml, write_note
from tests.render_support import build_and_render, shown
from tests.server_support import ids_in


@pytest.fixture
def portal(served_template: Path, tmp_path: Path, notes_dir: Path) -> Config:
    """A copy of the sample notes built and rendered (its notes are ``notes_dir``)."""
    return copy_config(served_template, tmp_path)


@pytest.fixture
def client(portal):
    return TestClient(create_app(portal, embedder_factory=HashEmbedder))


def test_search_result_shape_and_url_lands_on_the_section(client):
    response = client.get("/api/search", params={"q": "Zapojení převodník"})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"query", "mode", "weak", "corrected", "translated", "marked", "notes", "said", "vectors",
                         "hits", "took_ms"}
    assert body["vectors"] is None  # every chunk has its vector
    assert (body["query"], body["mode"], body["weak"], body["corrected"], body["marked"], body["notes"]) == (
        "Zapojení převodník", "hybrid", False, None, ["zapojení", "převodník"], [])
    top = body["hits"][0]
    assert set(top) == {"source", "path", "title", "breadcrumb", "anchor", "line_start", "line_end", "snippet",
                        "score", "ranks", "url", "more", "copies", "words"}
    assert top["url"] == "notes/projekty/sauter-bus.html#zapojeni"
    assert top["ranks"]["bm25"] == 1 and isinstance(top["ranks"]["vector"], int)
    assert "<mark>Převodník</mark>" in top["snippet"] and top["words"] == ["převodník"]
    page = client.get("/" + top["url"].split("#")[0])
    assert page.status_code == 200 and "zapojeni" in ids_in(page.text)


@pytest.mark.parametrize("params, message", [
    ({}, "parameter q is required"),
    ({"q": "   "}, "parameter q is required"),
    ({"q": "x" * 501}, "parameter q is longer than 500 characters"),
    ({"q": "čaj", "limit": "0"}, "limit must be a whole number from 1 to 100, got '0'"),
    ({"q": "čaj", "limit": "101"}, "limit must be a whole number from 1 to 100, got '101'"),
    ({"q": "čaj", "limit": "ten"}, "limit must be a whole number from 1 to 100, got 'ten'"),
    ({"q": "čaj", "limit": "-1"}, "limit must be a whole number from 1 to 100, got '-1'"),
    ({"q": "čaj", "limit": "²"}, "limit must be a whole number from 1 to 100, got '²'"),
    ({"q": "čaj", "limit": "١٢"}, "limit must be a whole number from 1 to 100, got '١٢'"),
    ({"q": "čaj", "limit": "5.0"}, "limit must be a whole number from 1 to 100, got '5.0'"),
    ({"q": "čaj", "mode": "fuzzy"}, "mode must be one of hybrid, bm25, vector, got 'fuzzy'"),
    ({"q": "čaj", "source": "secret"}, "unknown source 'secret'"),
    ({"q": "čaj", "correct": "maybe"}, "parameter correct must be 1 or 0 (true or false), not 'maybe'"),
])
def test_bad_parameters_are_400_with_a_message(client, params, message):
    response = client.get("/api/search", params=params)
    assert (response.status_code, response.json()) == (400, {"error": message})


def test_limit_source_tag_and_modes(client):
    body = client.get("/api/search", params={"q": "čaj", "limit": "1", "mode": "bm25", "tag": "Čaj"}).json()
    assert [h["path"] for h in body["hits"]] == ["recepty/teh-tarik.md"]
    assert body["hits"][0]["ranks"]["vector"] is None
    body = client.get("/api/search", params={"q": "čaj", "mode": "vector", "source": "notes"}).json()
    assert body["hits"] and all(h["ranks"]["bm25"] is None for h in body["hits"])


def test_reindex_needed_is_409(portal, tmp_path):
    text = portal.path.read_text().replace("model: test-embed:1", "model: other:2")
    portal.path.write_text(text)  # same files, another embedding space in the config
    changed = load_config(portal.path)
    response = TestClient(create_app(changed, embedder_factory=HashEmbedder)).get("/api/search", params={"q": "čaj"})
    assert response.status_code == 409
    assert response.json()["error"].startswith("reindex needed: embedding_model is 'test-embed:1' in the index")


def test_missing_index_is_503(config_for):
    config = config_for()
    client = TestClient(create_app(config))
    response = client.get("/api/search", params={"q": "čaj"})
    assert response.status_code == 503
    assert response.json() == {"error": f"no index at {config.index}: run `notes-portal build` first"}
    assert client.get("/api/health").json()["index"] is False


def test_provider_down_answers_fts_only_and_says_so(portal):
    def broken(_config):
        raise ConnectionError("connection refused")

    client = TestClient(create_app(portal, embedder_factory=broken))
    body = client.get("/api/search", params={"q": "powerbanka"}).json()
    assert body["hits"][0]["path"] == "cestovani/snezka.md"
    assert body["notes"] == ["embeddings unavailable (ConnectionError: connection refused): FTS-only results"]
    health = client.get("/api/health").json()
    assert health["embedding"]["reachable"] is False and health["status"] == "degraded"


def test_health_reports_counts_and_sources(client):
    health = client.get("/api/health").json()
    assert health["index"] is True and health["status"] == "ok"
    assert health["counts"]["chunks"] == health["counts"]["chunks_fts"] == health["counts"]["vec_chunks"] > 0
    assert health["pending_vectors"] == 0
    assert (health["embedding"]["provider"], health["embedding"]["error"]) == ("ollama", None)
    assert health["vector_memory"] == {"loaded": False, "vectors": 0, "error": None, "failed_at": None}
    assert set(health["sources"]) == {"notes"} and health["sources"]["notes"]["last_sync_at"]


def test_health_is_degraded_while_a_source_fails_and_names_it(tmp_path: Path):
    """A monitor polling /api/health learns that a source stopped updating, not only the build's log."""
    write_note(tmp_path / "notes", "a.md", "# A\n\nalfa\n")
    (tmp_path / "not-a-repo").mkdir()
    path = tmp_path / "portal.yaml"
    path.write_text(f"index: data/index.sqlite\nembedding:\n  provider: none\nsources:\n  notes:\n    folder: notes\n"
                    f"  broken:\n    git: {tmp_path / 'not-a-repo'}\n", encoding="utf-8")
    config = load_config(path)
    assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 3
    health = TestClient(create_app(config)).get("/api/health").json()
    assert (health["status"], health["sources"]["notes"]["last_error"]) == ("degraded", None)
    assert health["sources"]["broken"]["last_error"].startswith("git ls-remote failed")


def test_health_notices_a_full_text_index_out_of_step(portal, client):
    chunks = client.get("/api/health").json()["counts"]["chunks"]
    conn = db.connect(indexfile.resolve(portal.index))
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('delete-all')")
    conn.close()
    health = client.get("/api/health").json()
    assert health["counts"]["chunks"] == chunks and health["counts"]["chunks_fts"] == 0
    assert health["status"] == "degraded"
    assert health["error"] == (f"the full-text index holds 0 of {chunks} chunks: "
                               "rebuild it with `notes-portal build --full`")


def test_new_index_is_served_without_restart(portal, client, notes_dir, quiet_log):
    assert client.get("/api/search", params={"q": "meteostanice", "mode": "bm25"}).json()["hits"] == []
    (notes_dir / "meteostanice.md").write_text("# Meteostanice\n\nESP32 a čidlo BME280.\n", encoding="utf-8")
    build(portal, embedder_factory=HashEmbedder, log=quiet_log(portal))  # in place (WAL)
    assert client.get("/api/search", params={"q": "meteostanice"}).json()["hits"][0]["path"] == "meteostanice.md"
    (notes_dir / "zahrada.md").write_text("# Zahrada\n\nRajčata a okurky.\n", encoding="utf-8")
    build(portal, full=True, embedder_factory=HashEmbedder, log=quiet_log(portal))  # a swapped generation
    assert client.get("/api/search", params={"q": "rajčata"}).json()["hits"][0]["path"] == "zahrada.md"


@pytest.mark.parametrize("api_key_yaml", ["server:\n  api_key: s3cret-key\n"])
def test_api_key_guards_the_query_endpoints(config_for, api_key_yaml):
    base = config_for(ollama_yaml("http://127.0.0.1:9"))
    base.path.write_text(base.path.read_text() + api_key_yaml)
    config = load_config(base.path)
    build_and_render(config, full=True, embedder_factory=HashEmbedder)
    client = TestClient(create_app(config, embedder_factory=HashEmbedder))
    denied = client.get("/api/search", params={"q": "čaj"})
    assert denied.status_code == 401 and denied.json()["error"].startswith("missing or wrong API key")
    assert client.get("/api/search", params={"q": "čaj"}, headers={"X-API-Key": "wrong"}).status_code == 401
    assert client.get("/api/search", params={"q": "čaj"}, headers={"X-API-Key": "s3cret-key"}).status_code == 200
    assert client.get("/api/health", headers={"Authorization": "Bearer s3cret-key"}).status_code == 200
    assert client.get("/api/health", headers={"Authorization": "Bearer s3cret"}).status_code == 401
    assert client.get("/search", params={"q": "čaj"}).status_code == 401
    assert client.get("/search", params={"q": "čaj"}, headers={"X-API-Key": "s3cret-key"}).status_code == 200
    assert client.get("/index.html").status_code == 200  # the static site stays open


def test_auth_off_by_default(client):
    assert client.get("/api/health").status_code == 200


@pytest.mark.parametrize("path, status, title", [
    ("/", 200, "Home · Notes"), ("/index.html", 200, "Home · Notes"), ("/api/search?q=x", 200, None),
    ("/api/health", 200, None), ("/nope", 404, "Not found · Notes"), ("/search?q=x", 200, "Search: x · Notes"),
])
def test_security_headers_everywhere(client, path, status, title):
    response = client.get(path)
    assert response.status_code == status
    if title is not None:
        assert re.search(r"<title>([^<]*)</title>", response.text).group(1) == title
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value
    assert "'unsafe-inline'" not in response.headers["Content-Security-Policy"]


@pytest.mark.parametrize("path", ["/../portal.yaml", "/%2e%2e/portal.yaml", "/..%2fportal.yaml",
                                  "/notes/../../portal.yaml", "/static/%2e%2e/%2e%2e/portal.yaml",
                                  "//etc/passwd", "/%00", "/notes/%2e%2e%2f%2e%2e%2fportal.yaml"])
def test_no_path_traversal_out_of_the_site(client, path):
    response = client.get(path)
    assert response.status_code in (400, 404)
    assert "index: data/index.sqlite" not in response.text and "root:" not in response.text


@pytest.mark.parametrize("path", ["/.render-state", "/.render-stamp", "/notes/.hidden.html",
                                  "/notes/.git/config", "/notes/.git/", "/notes/.git", "/notes/%2Ehidden.html",
                                  "/notes/.%2e/.render-state"])
def test_dot_files_of_the_site_are_not_served(client, portal, path):
    assert (portal.site.output / ".render-state").exists()
    (portal.site.output / "notes" / ".git").mkdir()
    (portal.site.output / "notes" / ".git" / "config").write_text("[core]\n", encoding="utf-8")
    (portal.site.output / "notes" / ".hidden.html").write_text("<p>hidden</p>\n", encoding="utf-8")
    response = client.get(path, follow_redirects=False)
    assert response.status_code == 404 and "Not found" in response.text


def test_unknown_page_gets_the_portal_404(client):
    response = client.get("/notes/does-not-exist.html")
    assert response.status_code == 404 and "Not found" in response.text


def test_search_page_without_javascript(client):
    response = client.get("/search", params={"q": "powerbanka"})
    assert response.status_code == 200
    assert 'href="notes/cestovani/snezka.html"' in response.text
    assert "<mark>powerbanka</mark>" in response.text and 'value="powerbanka"' in response.text
    assert "<script>" not in response.text.replace('<script src=', '')
    empty = client.get("/search")
    assert empty.status_code == 200 and "<ol class=\"hits\">" not in empty.text
    bad = client.get("/search", params={"q": "x" * 600})
    assert bad.status_code == 400 and "parameter q is longer than 500 characters" in bad.text


def test_a_corrected_query_can_be_searched_as_typed(client):
    """A word no note holds is searched as the close word the notes hold; the answer links back to the
    words as typed (a correct word the notes lack is no typo)."""
    query = "kondenzvané mléko"
    corrected = client.get("/api/search", params={"q": query, "mode": "bm25"}).json()
    typed = client.get("/api/search", params={"q": query, "mode": "bm25", "correct": "0"}).json()
    assert (corrected["corrected"], typed["corrected"], typed["notes"]) == ("kondenzovane mléko", None, [])
    page = client.get("/search", params={"q": query, "mode": "bm25", "source": "notes"})
    link = re.search(r'<a class="search-as-typed" href="([^"]+)">Search for “kondenzvané mléko” as typed</a>',
                     page.text)
    assert link is not None and "showing results for" in page.text
    target = html.unescape(link[1])
    assert "mode=bm25" in target and "source=notes" in target  # the page's other choices kept
    again = client.get("/" + target)
    assert again.status_code == 200 and 'value="kondenzvané mléko"' in again.text
    assert "showing results for" not in shown(again.text) and "search-as-typed" not in again.text
    assert client.get("/api/search", params={"q": query, "correct": ""}).json()["corrected"] is not None


def test_search_page_escapes_the_query(client):
    response = client.get("/search", params={"q": '"><script>alert(1)</script>'})
    assert response.status_code == 200
    assert "<script>alert(1)</script>" not in response.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(limit=st.text(max_size=8), mode=st.text(max_size=8), source=st.text(max_size=8), tag=st.text(max_size=20))
def test_any_parameter_values_never_500(client, limit, mode, source, tag):
    response = client.get("/api/search", params={"q": "čaj", "limit": limit, "mode": mode, "source": source,
                                                 "tag": tag})
    assert response.status_code in (200, 400), response.text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.one_of(
    st.text(max_size=600),
    st.sampled_from(['"', "NEAR(a b)", "a OR b", "-x", "x*", "col:x", "((", "'; DROP TABLE chunks; --",
                     "\x00\x07\x1b", "x" * 10_000, "%ff%fe", "%C3%28", "%", "%%", "%E2%82"]),
), mode=st.sampled_from(["hybrid", "bm25", "vector"]), raw=st.booleans())
def test_hostile_queries_never_500(client, q, mode, raw):
    if raw:  # invalid UTF-8 percent-escapes straight into the query string
        response = client.get(f"/api/search?mode={mode}&q={quote(q[:200], safe='%')}")
    else:
        response = client.get("/api/search", params={"q": q, "mode": mode})
    assert response.status_code in (200, 400), response.text
    page = client.get("/search", params={"q": q[:600]})
    assert page.status_code in (200, 400)


def _wait_loaded(app, version_after=None, timeout=10.0):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        key = app.state.vector_memory.loaded()
        if key is not None and (version_after is None or key[1] != version_after):
            return key
        time.sleep(0.02)
    raise AssertionError("the vectors were not loaded into memory")


def test_in_memory_vectors_rank_exactly_like_sqlite_vec_and_follow_builds(portal, notes_dir, quiet_log):
    memory_app = create_app(portal, embedder_factory=HashEmbedder, min_vectors=1)
    vec0_app = create_app(portal, embedder_factory=HashEmbedder, min_vectors=10**9)
    memory, vec0 = TestClient(memory_app), TestClient(vec0_app)
    queries = ["čaj s mlékem", "RS485 sběrnice", "powerbanka sluchátka", "zapojení převodníku"]

    def ranked(client, q, **extra):
        hits = client.get("/api/search", params={"q": q, "mode": "vector", **extra}).json()["hits"]
        return [(h["path"], h["anchor"]) for h in hits]

    ranked(memory, queries[0])  # the first query starts the load and is answered by vec0
    first_key = _wait_loaded(memory_app)
    for q in queries:
        assert ranked(memory, q) == ranked(vec0, q) != []
        assert ranked(memory, q, tag="čaj") == ranked(vec0, q, tag="čaj")
    assert vec0_app.state.vector_memory.loaded() is None  # a small index stays with vec0

    (notes_dir / "zahrada.md").write_text("# Zahrada\n\nRajčata, okurky a cukety.\n", encoding="utf-8")
    build(portal, embedder_factory=HashEmbedder, log=quiet_log(portal))
    ranked(memory, "rajčata okurky")  # notices the new vectors_version and reloads in the background
    second_key = _wait_loaded(memory_app, version_after=first_key[1])
    assert second_key[0] == first_key[0]
    assert ranked(memory, "rajčata okurky")[0] == ("zahrada.md", "zahrada")
    assert ranked(memory, "rajčata okurky") == ranked(vec0, "rajčata okurky")

    build(portal, full=True, embedder_factory=HashEmbedder, log=quiet_log(portal))  # a new generation
    assert ranked(memory, "rajčata okurky")[0] == ("zahrada.md", "zahrada")  # vec0 answers meanwhile
    import time

    deadline = time.monotonic() + 10
    while memory_app.state.vector_memory.loaded()[0] == first_key[0] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert memory_app.state.vector_memory.loaded()[0] != first_key[0]  # the new file's vectors
    assert ranked(memory, "rajčata okurky") == ranked(vec0, "rajčata okurky")


def test_the_scan_of_vectors_in_memory_runs_beside_the_words_search_once_per_query(portal, monkeypatch):
    """With the vectors in memory, a hybrid query's candidate scan runs on a scan thread (while the
    request's thread searches the words) and the re-scoring uses it: one scan per query, and the
    answer is the one vec0 gives."""
    import threading

    from server import vectors

    app = create_app(portal, embedder_factory=HashEmbedder, min_vectors=1)
    vec0 = TestClient(create_app(portal, embedder_factory=HashEmbedder, min_vectors=10**9))
    client = TestClient(app)
    client.get("/api/search", params={"q": "čaj"})  # starts the load
    _wait_loaded(app)
    scans: list[str] = []
    candidates = vectors._Snapshot.candidates
    monkeypatch.setattr(vectors._Snapshot, "candidates",
                        lambda self, *a: scans.append(threading.current_thread().name) or candidates(self, *a))
    for query, extra in [("čaj s mlékem", {}), ("RS485 sběrnice", {"mode": "vector"}), ("zapojení", {"tag": "čaj"})]:
        scans.clear()
        params = {"q": query, **extra}
        hits = client.get("/api/search", params=params).json()["hits"]
        assert len(scans) == 1 and scans[0].startswith("vector-scan"), (query, scans)
        assert hits == vec0.get("/api/search", params=params).json()["hits"]
    scans.clear()
    client.get("/api/search", params={"q": "čaj s mlékem", "mode": "bm25"})
    assert scans == []


def test_an_index_from_before_chunk_vectors_is_served_by_vec0_until_a_build_adds_them(
        config_for, notes_dir, quiet_log):
    config = config_for(ollama_yaml("http://127.0.0.1:9"))
    build_and_render(config, full=True, embedder_factory=HashEmbedder)
    conn = db.connect(indexfile.resolve(config.index))
    with db.transaction(conn):  # the file as the code before schema step 5 left it
        conn.execute("DROP TABLE chunk_vectors")
        db.set_meta(conn, {"schema_version": "4"})
    conn.close()
    app = create_app(config, embedder_factory=HashEmbedder, min_vectors=1)
    memory, vec0 = TestClient(app), TestClient(create_app(config, embedder_factory=HashEmbedder, min_vectors=10**9))

    def ranked(client, q):
        hits = client.get("/api/search", params={"q": q, "mode": "vector"}).json()["hits"]
        return [(h["path"], h["anchor"]) for h in hits]

    assert ranked(memory, "čaj s mlékem") == ranked(vec0, "čaj s mlékem") != []
    _wait_for_loader(app)
    assert app.state.vector_memory.loaded() is None  # no chunk_vectors yet: vec0 answers
    (notes_dir / "zahrada.md").write_text("# Zahrada\n\nRajčata, okurky a cukety.\n", encoding="utf-8")
    assert build(config, embedder_factory=HashEmbedder, log=quiet_log(config)) == 0  # step 5 fills them
    conn = db.connect(indexfile.resolve(config.index), readonly=True)
    assert len(db.vectors_of(conn, range(1000))) == db.counts(conn)["vec_chunks"] > 0
    conn.close()
    ranked(memory, "rajčata okurky")
    _wait_loaded(app)
    for q in ("rajčata okurky", "čaj s mlékem", "RS485 sběrnice"):
        assert ranked(memory, q) == ranked(vec0, q) != []


def _wait_for_loader(app, timeout=10.0):
    import time

    deadline = time.monotonic() + timeout
    while app.state.vector_memory._loading and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_fresh_server_answers_concurrent_first_queries_with_vectors(portal, fake_ollama, tmp_path):
    """A new server process answers concurrent first queries with vectors (a numpy first-import race
    once degraded them with the local provider; this does not reproduce that race reliably)."""
    import subprocess
    import sys
    import threading
    import time
    import urllib.parse
    import urllib.request

    text = portal.path.read_text().replace("http://127.0.0.1:9", fake_ollama.url)
    portal.path.write_text(text)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "builder.cli", "serve", "--config", str(portal.path),
                             "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/index.html", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        answers: list[dict] = []

        def ask(q: str) -> None:
            url = f"{base}/api/search?" + urllib.parse.urlencode({"q": q})
            import json
            answers.append(json.loads(urllib.request.urlopen(url, timeout=10).read()))

        threads = [threading.Thread(target=ask, args=(q,)) for q in ["čaj", "RS485", "powerbanka", "mléko"] * 4]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert len(answers) == 16
    assert [a["notes"] for a in answers] == [[]] * 16
    assert all(any(h["ranks"]["vector"] for h in a["hits"]) for a in answers)


def test_the_results_pages_links_mark_the_forms_their_sections_hold(client):
    """``prevodniku`` begins none of the section's words: its page is told the form the section
    holds, which the search matched by its word key."""
    page = client.get("/search", params={"q": "prevodniku"})
    assert page.status_code == 200
    assert ('<a class="hit-title" href="notes/projekty/sauter-bus.html?hl=prevodniku+p%C5%99evodn%C3%ADk#zapojeni">'
            in page.text)


def test_the_results_page_names_each_section_without_its_notes_title(client):
    """The note's title heads its group; each section link says where in the note it leads, as the
    drop-down does (the title once, not again in every breadcrumb)."""
    page = client.get("/search", params={"q": "prevodniku", "mode": "bm25"}).text
    assert re.search(r'<a class="note-link" href="notes/projekty/sauter-bus.html">Sauter Bus</a>', page)
    assert re.search(r'<a class="hit-title" href="notes/projekty/sauter-bus.html[^"]*#zapojeni">Zapojení</a>', page)
    assert "Sauter Bus &gt; Zapojení" not in page and "Sauter Bus > Zapojení" not in page


def test_the_results_page_names_the_top_of_a_note(portal, notes_dir):
    write_note(notes_dir, "hrnek.md", "# Hrnek\n\nSmaltovaný hrnek na kávu.\n\n"
                                      "## Mytí\n\nJen ručně, smaltovaný povrch.\n")
    build_and_render(portal, embedder_factory=HashEmbedder)
    page = TestClient(create_app(portal, embedder_factory=HashEmbedder)).get(
        "/search", params={"q": "smaltovaný", "mode": "bm25"}).text
    sections = re.findall(r'<a class="hit-title" href="notes/hrnek.html[^"]*">([^<]*)</a>', page)
    assert sorted(sections) == ["Mytí", "top of the note"]


def test_notes_of_one_title_on_the_results_page_say_where_they_are(portal, notes_dir):
    for year in ("2023", "2024"):
        write_note(notes_dir, f"cviceni/{year}.md", f"# Cvičení\n\nMeteostanice s ESP32, ročník {year}.\n")
    write_note(notes_dir, "meteostanice.md", "# Meteostanice\n\nESP32 a čidlo BME280.\n")
    build_and_render(portal, full=True, embedder_factory=HashEmbedder)
    page = TestClient(create_app(portal, embedder_factory=HashEmbedder)).get(
        "/search", params={"q": "meteostanice", "mode": "bm25"}).text
    titles = re.findall(r'class="note-link"[^>]*>([^<]*)</a>(?: <span class="hit-where">([^<]*)</span>)?', page)
    assert sorted(titles) == [("Cvičení", "notes: cviceni/2023.md"), ("Cvičení", "notes: cviceni/2024.md"),
                              ("Meteostanice", "")]  # a title no other hit has stands alone


def test_the_results_page_and_the_api_say_when_nothing_matches(client):
    body = client.get("/api/search", params={"q": "xylofonový koncert"}).json()
    assert body["weak"] is True and body["hits"]  # the closest by meaning, marked as such
    page = client.get("/search", params={"q": "xylofonový koncert"})
    assert '<p class="search-weak">nothing in your notes matches these words; closest by meaning:</p>' in page.text
    page = client.get("/search", params={"q": "Zapojení převodník"})
    assert "search-weak" not in page.text
