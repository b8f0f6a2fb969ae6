"""The API key guards every query endpoint; a browser signs in once at /auth (a cookie, not the key)."""

from __future__ import annotations

import hashlib
import hmac
import html
import re
from http.cookies import SimpleCookie
from pathlib import Path

import pytest
from starlette.routing import Route
from starlette.testclient import TestClient

from builder.core.config import Config, load_config
from server.app import create_app
from server.sync_api import sync_routes
from tests.conftest import (
    HashEmbedder,
    copy_config,
    ollama_yaml,
    sample_config,
    write_sample_notes,
)
from tests.render_support import build_and_render
from tests.server_support import live_server

KEY = "s3cret-key"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample notes behind the key, built and rendered once for the module; each test gets a copy."""
    home = tmp_path_factory.mktemp("auth")
    write_sample_notes(home / "notes")
    base = sample_config(home, ollama_yaml("http://127.0.0.1:9"))
    base.path.write_text(base.path.read_text() + f"server:\n  api_key: {KEY}\n")
    build_and_render(load_config(base.path), full=True, embedder_factory=HashEmbedder)
    return home


@pytest.fixture
def portal(template: Path, tmp_path: Path, notes_dir: Path) -> Config:
    return copy_config(template, tmp_path)


@pytest.fixture
def app(portal):
    return create_app(portal, embedder_factory=HashEmbedder)


@pytest.fixture
def client(app):
    return TestClient(app)


def hidden_next(page: str) -> str:
    match = re.search(r'<input type="hidden" name="next" value="([^"]*)">', page)
    assert match, "the page has no sign-in form"
    return html.unescape(match.group(1))


def test_every_route_that_queries_needs_the_key(app, client, portal):
    routes = sorted(r.path for r in app.routes if isinstance(r, Route) and r.path not in ("/auth", "/{path:path}"))
    own_secrets = sorted(r.path for r in sync_routes(portal, None))  # a hook secret or the sync key
    queried = [path for path in routes if path not in own_secrets]
    assert (queried, sorted(set(routes) - set(queried))) == (["/api/health", "/api/search", "/mcp", "/search"],
                                                             own_secrets)
    assert [client.get(path, params={"q": "čaj"}).status_code for path in queried] == [401, 401, 401, 401]
    # the search key starts no build: here the sync API is off and no source has a webhook
    assert client.post("/api/sync", headers={"X-API-Key": KEY}).status_code == 403
    assert client.post("/api/hooks/notes", headers={"X-API-Key": KEY}, content=b"{}").status_code == 404
    assert client.get("/index.html").status_code == 200  # the pages stay readable
    assert client.get("/search.html").status_code == 200


def test_the_results_page_without_the_key_asks_for_it(client):
    response = client.get("/search", params={"q": "čaj"})
    assert response.status_code == 401
    assert '<form class="auth" method="post" action="auth">' in response.text
    assert hidden_next(response.text) == "/search?q=%C4%8Daj"
    assert "Searching this portal needs its key." in response.text
    assert 'class="hits"' not in response.text and "Teh Tarik" not in response.text


def test_signing_in_sets_a_cookie_of_the_key_that_opens_search(client):
    form = client.get("/auth", params={"next": "/search?q=%C4%8Daj"})
    assert form.status_code == 200 and hidden_next(form.text) == "/search?q=%C4%8Daj"

    wrong = client.post("/auth", data={"key": "s3cret", "next": "/search?q=%C4%8Daj"}, follow_redirects=False)
    assert wrong.status_code == 401 and "That is not the portal's key." in html.unescape(wrong.text)
    assert "set-cookie" not in wrong.headers and hidden_next(wrong.text) == "/search?q=%C4%8Daj"

    right = client.post("/auth", data={"key": KEY, "next": "/search?q=%C4%8Daj"}, follow_redirects=False)
    assert (right.status_code, right.headers["location"]) == (303, "/search?q=%C4%8Daj")
    cookie = SimpleCookie(right.headers["set-cookie"])["notes_portal_auth"]
    expected = hmac.new(KEY.encode(), b"notes-portal browser sign-in v1", hashlib.sha256).hexdigest()
    assert cookie.value == expected and KEY not in right.headers["set-cookie"]
    assert (cookie["httponly"], cookie["samesite"], cookie["path"], cookie["max-age"]) == (
        True, "strict", "/", "7776000")

    results = client.get("/search", params={"q": "čaj"})  # the client now sends the cookie
    assert results.status_code == 200 and 'href="notes/recepty/teh-tarik.html' in results.text
    assert client.get("/api/search", params={"q": "čaj"}).json()["hits"][0]["title"] == "Teh Tarik"

    client.cookies.clear()  # only the tampered cookie (a jar may keep the first under its own domain)
    client.cookies.set("notes_portal_auth", expected[:-1] + "0")
    assert client.get("/api/search", params={"q": "čaj"}).status_code == 401


@pytest.mark.parametrize("next_url, back", [
    ("/notes/recepty/teh-tarik.html?hl=%C4%8Daj#postup", "/notes/recepty/teh-tarik.html?hl=%C4%8Daj#postup"),
    ("//evil.example/x", "./"),
    ("https://evil.example/", "./"),
    ("/\\evil.example", "./"),
    ("javascript:alert(1)", "./"),
    ("/search?q=a b", "./"),
    ("", "./"),
])
def test_signing_in_leads_back_only_to_this_server(client, next_url, back):
    assert hidden_next(client.get("/auth", params={"next": next_url}).text) == back
    response = client.post("/auth", data={"key": KEY, "next": next_url}, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, back)


@pytest.mark.parametrize("body, status", [
    pytest.param(b"key=" + b"x" * 9000, 413, id="too-large"),
    pytest.param(b"", 401, id="empty"),
    pytest.param(b"key=%ff%fe&next=%00", 401, id="bad-escapes"),
    pytest.param(b"\xff\xfe\x00", 401, id="not-utf8"),
])
def test_a_bad_sign_in_form_is_a_4xx(client, body, status):
    response = client.post("/auth", content=body, headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert response.status_code == status and "<form class=\"auth\"" in response.text


def test_without_a_key_signing_in_just_goes_back(config_for):
    config = config_for(ollama_yaml("http://127.0.0.1:9"))
    build_and_render(config, full=True, embedder_factory=HashEmbedder)
    client = TestClient(create_app(config, embedder_factory=HashEmbedder))
    response = client.get("/auth", params={"next": "/search?q=x"}, follow_redirects=False)
    assert (response.status_code, response.headers["location"]) == (303, "/search?q=x")
    assert client.get("/search", params={"q": "čaj"}).status_code == 200


def _watch(page, errors: list[str]) -> None:
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)


@pytest.mark.slow
def test_the_search_box_asks_to_sign_in_and_works_after_it(app, browser):
    with live_server(app) as (host, port):
        base = f"http://{host}:{port}"
        page = browser.new_page()
        errors: list[str] = []
        _watch(page, errors)
        page.goto(f"{base}/notes/cestovani/snezka.html")
        box = page.locator("header form.search input[name=q]")
        box.type("powerbanka", delay=20)
        note = page.locator("header .search-results .search-note")
        note.wait_for(state="visible", timeout=10_000)
        assert note.inner_text() == "Search needs the portal's key: sign in"
        with page.expect_navigation():
            note.locator("a").click()
        assert page.url == f"{base}/auth?next=%2Fnotes%2Fcestovani%2Fsnezka.html"
        page.fill("form.auth input[name=key]", KEY)
        with page.expect_navigation():
            page.click("form.auth button[type=submit]")
        assert page.url == f"{base}/notes/cestovani/snezka.html"
        page.locator("header form.search input[name=q]").type("powerbanka", delay=20)
        everything = page.locator("header .search-results a.search-all", has_text="“powerbanka”")
        everything.wait_for(state="visible", timeout=10_000)  # the panel of the whole word, not of "pow"
        first = page.locator("header .search-results a.search-result").first
        assert first.locator(".hit-title").inner_text() == "Balicí seznam – Sněžka"
        # the 401s before signing in (one per search the box sent as the word was typed) are reported by
        # Chromium as failed resources, nothing else
        assert errors and [e for e in errors if "401" not in e] == []


@pytest.mark.slow
def test_the_results_page_signs_in_without_javascript(app, browser):
    with live_server(app) as (host, port):
        base = f"http://{host}:{port}"
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(f"{base}/index.html")
        page.fill("header form.search input[name=q]", "powerbanka")
        with page.expect_navigation():
            page.press("header form.search input[name=q]", "Enter")
        assert page.url == f"{base}/search?q=powerbanka"
        page.fill("form.auth input[name=key]", KEY)
        with page.expect_navigation():
            page.click("form.auth button[type=submit]")
        assert page.url == f"{base}/search?q=powerbanka"
        assert page.locator("ol.hits li.hit a.hit-title").first.get_attribute("href").startswith(
            "notes/cestovani/snezka.html")
        context.close()
