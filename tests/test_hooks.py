"""Push webhooks against the real app and real git repositories (file:// URLs): requests signed as
Gitea, Forgejo, GitHub and GitLab sign them, a job that builds, and every way a delivery is refused
or ignored without queueing anything."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from builder.core.config import load_config
from builder.core.errors import ConfigError
from builder.job_runner import JobRunner
from server.app import create_app
from server.hooks import verify
from tests.conftest import HashEmbedder, write_config
from tests.sync_support import (
    API_KEY,
    OTHER_SECRET,
    PROVIDERS,
    SECRET,
    SYNC_KEY,
    Portal,
    copy_of,
    make_portal,
    push_payload,
    signed,
)

NOTHING = {"queued": 0, "running": 0, "succeeded": 0, "failed": 0}


@pytest.fixture
def portal(sync_template: Path, tmp_path: Path) -> Portal:
    """A copy of the portal of :func:`make_portal`."""
    return copy_of(sync_template, tmp_path)


def app_of(portal: Portal) -> tuple[TestClient, JobRunner]:
    runner = JobRunner(portal.config, embedder_factory=HashEmbedder)
    return TestClient(create_app(portal.config, embedder_factory=HashEmbedder, jobs=runner)), runner


def search(client: TestClient, query: str) -> list[dict[str, Any]]:
    response = client.get("/api/search", params={"q": query, "mode": "bm25"}, headers={"X-API-Key": API_KEY})
    assert response.status_code == 200, response.text
    return response.json()["hits"]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_signed_push_queues_a_job_whose_build_makes_the_note_searchable_and_its_page(portal, provider):
    client, runner = app_of(portal)
    portal.up.write("hory/rysy.md", "# Rysy\n\nVýstup z Popradského plesa, kosodřevina.\n")
    after = portal.up.commit("rysy")
    portal.up.push()
    body = push_payload(after=after, provider=provider)
    assert search(client, "kosodřevina") == []

    response = client.post("/api/hooks/travel", content=body, headers=signed(provider, SECRET, body))

    assert response.status_code == 202
    answer = response.json()
    job_id = answer["job"]["id"]
    assert (answer["queued"], answer["url"], response.headers["location"]) == (
        True, f"/api/sync/jobs/{job_id}", f"/api/sync/jobs/{job_id}")
    assert (answer["job"]["state"], answer["job"]["source"], answer["job"]["reason"]) == (
        "queued", "travel", f"webhook {provider}")
    assert search(client, "kosodřevina") == []  # the request itself indexed nothing
    assert runner.run_due() == 1
    job = client.get(answer["url"], headers={"X-API-Key": SYNC_KEY}).json()
    assert (job["state"], job["phase"], job["attempts"], job["counts"], job["error"]) == (
        "succeeded", "done", 1, {"notes": 1, "chunks": 1, "removed": 0}, None)
    assert job["duration_s"] >= 0
    hits = search(client, "kosodřevina")
    assert [(h["source"], h["path"], h["url"]) for h in hits] == [("travel", "hory/rysy.md",
                                                                    "travel/hory/rysy.html#rysy")]
    assert (portal.config.site.output / "travel" / "hory" / "rysy.html").is_file()
    assert "kosodřevina" in client.get("/travel/hory/rysy.html").text


def test_a_form_encoded_push_is_read_from_its_payload_field(portal):
    client, runner = app_of(portal)
    from urllib.parse import urlencode

    body = urlencode({"payload": push_payload().decode()}).encode()
    headers = {**signed("gitea", SECRET, body), "Content-Type": "application/x-www-form-urlencoded"}
    response = client.post("/api/hooks/travel", content=body, headers=headers)
    assert (response.status_code, response.json()["queued"]) == (202, True)


def _refused_headers(provider: str, body: bytes) -> list[tuple[str, dict[str, str]]]:
    good = signed(provider, SECRET, body)
    signature = {"github": "X-Hub-Signature-256", "gitea": "X-Gitea-Signature", "forgejo": "X-Forgejo-Signature",
                 "gitlab": "X-Gitlab-Token"}[provider]
    flipped = dict(good)
    flipped[signature] = good[signature][:-1] + ("0" if good[signature][-1] != "0" else "1")
    missing = {name: value for name, value in good.items()
               if name not in ("X-Hub-Signature-256", "X-Gitea-Signature", "X-Forgejo-Signature", "X-Gitlab-Token")}
    return [("bad", flipped), ("missing", missing), ("another source's", signed(provider, OTHER_SECRET, body)),
            ("of other bytes", signed(provider, SECRET, body + b" "))]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_bad_missing_or_foreign_signature_is_401_and_queues_nothing(portal, provider):
    client, runner = app_of(portal)
    body = push_payload(provider=provider)
    for what, headers in _refused_headers(provider, body):
        if provider == "gitlab" and what == "of other bytes":
            continue  # GitLab's token does not depend on the body
        response = client.post("/api/hooks/travel", content=body, headers=headers)
        assert (what, response.status_code, response.json()) == (
            what, 401, {"error": "missing or wrong webhook signature"})
    assert runner.status() == {"counts": NOTHING, "jobs": []}


def test_the_signature_is_checked_over_the_exact_bytes_received():
    body = b'{"ref": "refs/heads/main"}'
    same_json = b'{"ref":"refs/heads/main"}'
    for provider in PROVIDERS:
        headers = {k.lower(): v for k, v in signed(provider, SECRET, body, delivery="d-1").items()}
        assert verify(headers, body, SECRET) is not None
        assert verify(headers, body, OTHER_SECRET) is None
        if provider != "gitlab":
            assert verify(headers, same_json, SECRET) is None
    assert verify({"x-hub-signature-256": "sha256=zz"}, body, SECRET) is None
    assert verify({"x-hub-signature-256": "ščř"}, body, SECRET) is None  # not ASCII: refused, never a 500


def test_a_body_over_the_limit_is_413_whether_declared_or_streamed(portal):
    client, runner = app_of(portal)
    body = push_payload()[:-1] + b', "padding": "' + b"x" * 4096 + b'"}'
    assert len(body) > portal.config.hook_max_bytes
    declared = client.post("/api/hooks/travel", content=body, headers=signed("github", SECRET, body))
    streamed = client.post("/api/hooks/travel", content=iter([body[:2000], body[2000:]]),
                           headers=signed("github", SECRET, body))
    for response in (declared, streamed):
        assert (response.status_code, response.json()) == (
            413, {"error": "the body is over 4096 bytes (server.hook_max_bytes)"})
    fits = push_payload()
    assert client.post("/api/hooks/travel", content=fits, headers=signed("github", SECRET, fits)).status_code == 202


@pytest.mark.parametrize("provider", PROVIDERS)
def test_another_branch_a_tag_or_another_event_is_202_with_nothing_queued(portal, provider):
    client, runner = app_of(portal)
    cases = [(push_payload("refs/heads/dev", provider=provider), None,
              "a push to refs/heads/dev, not to refs/heads/main"),
             (push_payload("refs/tags/v1", provider=provider), None, "a push to refs/tags/v1, not to refs/heads/main"),
             (push_payload(provider=provider), "Issue Hook" if provider == "gitlab" else "issues",
              f"{'Issue Hook' if provider == 'gitlab' else 'issues'} event, not a push"),
             (b'{"zen": "Design for failure.", "hook_id": 1}', "ping", "ping event, not a push")]
    for body, event, reason in cases:
        response = client.post("/api/hooks/travel", content=body, headers=signed(provider, SECRET, body, event=event))
        assert (response.status_code, response.json()) == (202, {"queued": False, "reason": reason})
    assert runner.status() == {"counts": NOTHING, "jobs": []}


def test_the_configured_branch_wins_over_the_default_branch(tmp_path):
    portal = make_portal(tmp_path, travel="branch: dev\n", built=False)
    client, runner = app_of(portal)
    to_main = push_payload("refs/heads/main", default_branch="main")
    to_dev = push_payload("refs/heads/dev", default_branch="main")
    first = client.post("/api/hooks/travel", content=to_main, headers=signed("github", SECRET, to_main))
    second = client.post("/api/hooks/travel", content=to_dev, headers=signed("github", SECRET, to_dev))
    assert (first.status_code, first.json()) == (202, {"queued": False,
                                                       "reason": "a push to refs/heads/main, not to refs/heads/dev"})
    assert (second.status_code, second.json()["queued"]) == (202, True)
    # without a branch in the config or a default branch in the payload, the build asks the remote
    bare = json.dumps({"ref": "refs/heads/anything"}).encode()
    third = client.post("/api/hooks/journal", content=bare, headers=signed("github", OTHER_SECRET, bare))
    assert (third.status_code, third.json()["queued"]) == (202, True)
    assert runner.status()["counts"]["queued"] == 2


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_replayed_delivery_is_not_queued_twice(portal, provider):
    client, runner = app_of(portal)
    body = push_payload(provider=provider)
    headers = signed(provider, SECRET, body, delivery="4f1c-delivery")
    first = client.post("/api/hooks/travel", content=body, headers=headers)
    assert runner.run_due() == 1
    again = client.post("/api/hooks/travel", content=body, headers=headers)
    assert (first.status_code, again.status_code) == (202, 202)
    assert (again.json()["queued"], again.json()["reason"], again.json()["job"]["id"], again.json()["job"]["state"]) \
        == (False, "this delivery was received before", first.json()["job"]["id"], "succeeded")
    assert runner.run_due() == 0
    status = runner.status()
    assert (status["counts"], [j["requests"] for j in status["jobs"]]) == (
        {**NOTHING, "succeeded": 1}, [1])
    fresh = client.post("/api/hooks/travel", content=body, headers=signed(provider, SECRET, body, delivery="other"))
    assert (fresh.json()["queued"], runner.run_due()) == (True, 1)


def test_requests_for_one_source_coalesce_into_the_queued_job(portal):
    client, runner = app_of(portal)
    ids = set()
    for _ in range(5):
        body = push_payload()
        response = client.post("/api/hooks/travel", content=body, headers=signed("gitea", SECRET, body))
        ids.add(response.json()["job"]["id"])
    other = push_payload()
    journal = client.post("/api/hooks/journal", content=other, headers=signed("github", OTHER_SECRET, other))
    assert len(ids) == 1 and journal.json()["job"]["id"] not in ids
    assert sorted((j["source"], j["requests"]) for j in runner.status()["jobs"]) == [("journal", 1), ("travel", 5)]
    assert runner.run_due() == 2


def test_a_folder_source_or_an_unknown_one_has_no_webhook(portal):
    client, runner = app_of(portal)
    body = push_payload()
    for source in ("notes", "nope"):
        response = client.post(f"/api/hooks/{source}", content=body, headers=signed("github", SECRET, body))
        assert (response.status_code, response.json()) == (404, {
            "error": f"no webhook for source {source!r} (a git source with hook_secret in the config)"})
    assert runner.status() == {"counts": NOTHING, "jobs": []}


def test_a_valid_signature_over_a_body_that_is_not_json_is_400(portal):
    client, runner = app_of(portal)
    body = b"\xff not json"
    response = client.post("/api/hooks/travel", content=body, headers=signed("github", SECRET, body))
    assert (response.status_code, response.json()) == (400, {"error": "the body is not a JSON push payload"})


def test_without_a_job_runner_a_valid_push_is_503(portal):
    client = TestClient(create_app(portal.config, embedder_factory=HashEmbedder))
    body = push_payload()
    response = client.post("/api/hooks/travel", content=body, headers=signed("github", SECRET, body))
    assert (response.status_code, response.json()) == (
        503, {"error": "this server runs no sync jobs (start it with `notes-portal serve`)"})


BASE = "index: data/index.sqlite\nembedding:\n  provider: none\n"


@pytest.mark.parametrize(("body", "message"), [
    ("sources:\n  t:\n    git: file:///x.git\n    hook_secret: short\n",
     "portal.yaml:7: sources.t.hook_secret: must be at least 32 characters long, got 5 "
     "(make one with `openssl rand -hex 32`)"),
    (f"server:\n  api_key: {SECRET}\nsources:\n  t:\n    git: file:///x.git\n    hook_secret: {SECRET}\n",
     "portal.yaml:9: sources.t.hook_secret: must differ from server.api_key: each key is used for one thing only"),
    (f"server:\n  sync_key: {SECRET}\nsources:\n  t:\n    git: file:///x.git\n    hook_secret: {SECRET}\n",
     "portal.yaml:9: sources.t.hook_secret: must differ from server.sync_key: each key is used for one thing only"),
    (f"sources:\n  a:\n    git: file:///a.git\n    hook_secret: {SECRET}\n"
     f"  b:\n    git: file:///b.git\n    hook_secret: {SECRET}\n",
     "portal.yaml:10: sources.b.hook_secret: must differ from sources.a.hook_secret: each key is used for one "
     "thing only"),
    (f"server:\n  api_key: {SYNC_KEY}\n  sync_key: {SYNC_KEY}\nsources:\n  t:\n    git: file:///x.git\n",
     "portal.yaml:6: server.sync_key: must differ from server.api_key: each key is used for one thing only"),
    ("server:\n  sync_key: 12345\nsources:\n  t:\n    git: file:///x.git\n",
     "portal.yaml:5: server.sync_key: expected a string, got int 12345"),
    (f"sources:\n  n:\n    folder: .\n    hook_secret: {SECRET}\n",
     "portal.yaml:7: sources.n.hook_secret: only git sources have webhooks (a folder is watched: "
     "`notes-portal watch`)"),
    ("server:\n  hook_max_bytes: 10\nsources:\n  t:\n    git: file:///x.git\n",
     "portal.yaml:5: server.hook_max_bytes: must be at least 1024, got 10"),
    ("watch:\n  debounce: 0\nsources:\n  t:\n    git: file:///x.git\n",
     "portal.yaml:5: watch.debounce: must be at least 0.01, got 0"),
])
def test_a_weak_or_shared_secret_is_a_config_error_naming_the_key(tmp_path, body, message):
    with pytest.raises(ConfigError) as error:
        load_config(write_config(tmp_path, BASE + body))
    assert str(error.value) == f"{tmp_path}/{message}"


def test_secrets_stay_out_of_the_config_repr(portal):
    assert SECRET not in repr(portal.config) and SYNC_KEY not in repr(portal.config)
