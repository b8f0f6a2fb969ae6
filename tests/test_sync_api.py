"""The sync API and the job runner: its own key, job status, the build lock shared with cron, retries,
jobs that outlive their runner, and a burst of webhook deliveries on a real socket."""

from __future__ import annotations

import http.client
import threading
import uuid
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from builder.core.config import load_config
from builder.core.index.jobqueue import JobQueue
from builder.job_runner import DIED, JobRunner
from builder.lock import BuildLock
from builder.sync import build
from server.app import create_app
from tests.conftest import HashEmbedder
from tests.server_support import live_server
from tests.sync_support import (
    API_KEY,
    SECRET,
    SYNC_KEY,
    Portal,
    copy_of,
    make_portal,
    push_payload,
    signed,
    wait_for,
)

KEY = {"X-API-Key": SYNC_KEY}


@pytest.fixture
def portal(sync_template: Path, tmp_path: Path) -> Portal:
    """A copy of the portal of :func:`make_portal`."""
    return copy_of(sync_template, tmp_path)


def client_of(portal: Portal, runner: JobRunner) -> TestClient:
    return TestClient(create_app(portal.config, embedder_factory=HashEmbedder, jobs=runner))


def test_post_sync_needs_the_sync_key_not_the_search_key(portal):
    runner = JobRunner(portal.config, embedder_factory=HashEmbedder)
    client = client_of(portal, runner)
    refused = [client.post("/api/sync", headers=headers) for headers in
               ({}, {"X-API-Key": API_KEY}, {"Authorization": f"Bearer {API_KEY}"}, {"X-API-Key": SYNC_KEY[:-1]})]
    assert [(r.status_code, r.json()["error"]) for r in refused] == [
        (401, "missing or wrong sync key (server.sync_key, as X-API-Key or Authorization: Bearer)")] * 4
    assert client.get("/api/sync/status", headers={"X-API-Key": API_KEY}).status_code == 401
    assert runner.status()["jobs"] == []
    by_header = client.post("/api/sync", headers=KEY)
    by_bearer = client.post("/api/sync?source=notes", headers={"Authorization": f"Bearer {SYNC_KEY}"})
    assert (by_header.status_code, by_bearer.status_code) == (202, 202)
    # the queued build of every source covers the one of notes
    assert by_header.json()["job"]["id"] == by_bearer.json()["job"]["id"]
    assert [(j["source"], j["reason"], j["state"], j["requests"]) for j in runner.status()["jobs"]] == [
        (None, "api", "queued", 2)]
    # the search key still searches, and the sync key does not
    assert client.get("/api/search?q=caj", headers={"X-API-Key": API_KEY}).status_code == 200
    assert client.get("/api/search?q=caj", headers=KEY).status_code == 401


def test_without_a_sync_key_the_sync_api_is_off(tmp_path):
    portal = make_portal(tmp_path, built=False)
    text = portal.config.path.read_text().replace(f"  sync_key: {SYNC_KEY}\n", "")
    portal.config.path.write_text(text)
    config = load_config(portal.config.path)
    client = TestClient(create_app(config, jobs=JobRunner(config)))
    for response in (client.post("/api/sync"), client.get("/api/sync/status"), client.get("/api/sync/jobs/x")):
        assert (response.status_code, response.json()) == (
            403, {"error": "the sync API is off: set server.sync_key in the config"})


def test_job_status_tells_state_phase_counts_duration_and_error(portal):
    runner = JobRunner(portal.config, embedder_factory=HashEmbedder)
    client = client_of(portal, runner)
    assert client.post("/api/sync?source=nope", headers=KEY).json() == {"error": "unknown source 'nope'"}
    assert client.get("/api/sync/jobs/abc", headers=KEY).json() == {
        "error": "no job 'abc' (finished jobs are kept 30 days)"}
    (portal.notes / "recepty" / "kava.md").write_text("# Káva\n\nTurecká káva v džezvě.\n", encoding="utf-8")
    queued = client.post("/api/sync?source=notes", headers=KEY).json()
    assert (queued["job"]["state"], queued["job"]["phase"], queued["job"]["attempts"],
            queued["job"]["duration_s"], queued["job"]["started_at"]) == ("queued", "queued", 0, None, None)
    assert runner.run_due() == 1
    job = client.get(queued["url"], headers=KEY).json()
    assert set(job) == {"id", "source", "reason", "state", "phase", "attempts", "requests", "counts", "created_at",
                        "started_at", "finished_at", "duration_s", "error", "retry_at"}
    assert (job["state"], job["phase"], job["counts"], job["error"], job["retry_at"]) == (
        "succeeded", "done", {"notes": 1, "chunks": 1, "removed": 0}, None, None)
    assert 0 <= job["duration_s"] < 30
    status = client.get("/api/sync/status", headers=KEY).json()
    assert status == {"counts": {"queued": 0, "running": 0, "succeeded": 1, "failed": 0}, "jobs": [job]}


def test_a_job_waits_for_the_build_lock_that_cron_holds(portal):
    runner = JobRunner(portal.config, embedder_factory=HashEmbedder, poll_s=0.05)
    client = client_of(portal, runner)
    runner.start()
    try:
        with BuildLock(portal.config.build_lock_path) as cron:
            assert cron.acquired
            job_id = client.post("/api/sync", headers=KEY).json()["job"]["id"]
            waiting = wait_for(lambda: (j := runner.job(job_id))["state"] == "running" and j)
            assert waiting["phase"] == "waiting"
            threading.Event().wait(0.3)
            assert (runner.job(job_id)["state"], runner.job(job_id)["phase"]) == ("running", "waiting")
        done = wait_for(lambda: (j := runner.job(job_id))["state"] == "succeeded" and j)
        assert (done["attempts"], runner.builds) == (1, 1)
    finally:
        runner.stop()


def test_a_failing_job_is_tried_four_times_then_stays_failed_with_its_error(portal):
    runner = JobRunner(portal.config, embedder_factory=HashEmbedder, backoff=(0.0, 0.0, 0.0))
    gone = portal.up.bare.rename(portal.up.bare.with_name("moved.git"))
    job_id = runner.enqueue("travel", "api")["job"]["id"]
    assert runner.run_due() == 4  # each retry is due at once with no backoff
    assert runner.run_due() == 0 and gone.exists()
    job = runner.job(job_id)
    assert (job["state"], job["attempts"], runner.builds, job["retry_at"]) == ("failed", 4, 4, None)
    assert job["error"].startswith("travel: git ls-remote failed (")
    log = portal.config.log_path.read_text(encoding="utf-8")
    then = [line.rsplit("; ", 1)[1] for line in log.splitlines() if f"WARN sync job {job_id} " in line]
    assert then == ["tried again in 0 s"] * 3 + ["it stays failed"]
    assert f"(source travel), attempt 4: {job['error']}; it stays failed" in log


def test_a_retry_waits_for_its_backoff(portal):
    runner = JobRunner(portal.config, embedder_factory=HashEmbedder, backoff=(60.0,))
    portal.up.bare.rename(portal.up.bare.with_name("moved.git"))
    job_id = runner.enqueue("travel", "api")["job"]["id"]
    assert runner.run_due() == 1
    job = runner.job(job_id)
    assert (job["state"], job["phase"], runner.run_due()) == ("queued", "retry", 0)
    assert job["retry_at"] is not None
    # a new request for the source is due now: it joins the job and brings its retry forward
    assert runner.enqueue("travel", "api")["job"]["id"] == job_id
    assert runner.run_due() == 1


def test_jobs_outlive_their_runner_and_one_left_running_is_tried_again(portal):
    first = JobRunner(portal.config, embedder_factory=HashEmbedder)
    (portal.notes / "kava.md").write_text("# Káva\n\nDžezva.\n", encoding="utf-8")
    left_running = first.enqueue("notes", "watch")["job"]["id"]
    assert first.queue.claim().id == left_running  # a runner took it … and its process died
    never_started = first.enqueue(None, "api")["job"]["id"]
    second = JobRunner(load_config(portal.config.path), embedder_factory=HashEmbedder, poll_s=0.05)
    second.start()
    try:
        wait_for(lambda: [second.job(j)["state"] for j in (left_running, never_started)] == ["succeeded"] * 2)
    finally:
        second.stop()
    recovered = second.job(left_running)
    assert (recovered["attempts"], recovered["error"], second.job(never_started)["attempts"]) == (2, None, 1)
    assert second.builds == 2


def test_a_job_left_running_on_its_last_attempt_stays_failed(portal):
    queue = JobQueue(portal.config.jobs_path)
    job_id = queue.enqueue("notes", "api").job["id"]
    for _ in range(4):
        assert queue.claim().id == job_id
        if _ < 3:
            queue.finish(job_id, "boom", retry_in=0)
    assert queue.recover(DIED) == 1
    job = queue.job(job_id)
    assert (job["state"], job["attempts"], job["error"]) == ("failed", 4, DIED)


def test_a_job_for_a_source_no_longer_configured_fails_without_a_build(portal):
    runner = JobRunner(portal.config, embedder_factory=HashEmbedder)
    queue = JobQueue(portal.config.jobs_path)
    job_id = queue.enqueue("removed", "api").job["id"]
    assert runner.run_due() == 1
    job = runner.job(job_id)
    assert (job["state"], job["error"], job["attempts"], runner.builds) == (
        "failed", "source 'removed' is no longer in the config", 1, 0)


def _deliver(address: tuple[str, int], body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        conn.request("POST", "/api/hooks/travel", body=body, headers=headers)
        response = conn.getresponse()
        import json

        return response.status, json.loads(response.read())["job"]["id"]
    finally:
        conn.close()


def test_a_burst_of_twenty_deliveries_runs_at_most_two_builds(portal):
    """20 pushes arrive at once while cron's build holds the lock: one job may already be running,
    every other delivery joins the one queued job."""
    builds = []

    def counting_build(*args, **kwargs) -> int:
        builds.append(kwargs["source_id"])
        return build(*args, **kwargs)

    runner = JobRunner(portal.config, embedder_factory=HashEmbedder, build_function=counting_build, poll_s=0.05)
    app = create_app(portal.config, embedder_factory=HashEmbedder, jobs=runner)
    portal.up.write("hory/krivan.md", "# Kriváň\n\nSymbol Slovenska, 2494 m.\n")
    portal.up.commit("krivan")
    portal.up.push()
    runner.start()
    try:
        with live_server(app) as address, BuildLock(portal.config.build_lock_path):
            answers: list[tuple[int, str]] = []
            deliveries = [(body := push_payload(), signed("gitea", SECRET, body, delivery=str(uuid.uuid4())))
                          for _ in range(20)]
            threads = [threading.Thread(target=lambda d=d: answers.append(_deliver(address, *d))) for d in deliveries]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        jobs = {job_id for _, job_id in answers}
        wait_for(lambda: all(runner.job(j)["state"] == "succeeded" for j in jobs))
    finally:
        runner.stop()
    assert [status for status, _ in answers] == [202] * 20
    assert 1 <= len(jobs) <= 2
    assert builds == ["travel"] * len(jobs) and runner.builds == len(jobs)
    assert sum(runner.job(j)["requests"] for j in jobs) == 20
    client = TestClient(app)
    hits = client.get("/api/search", params={"q": "Kriváň", "mode": "bm25"}, headers={"X-API-Key": API_KEY}).json()
    assert [h["path"] for h in hits["hits"]] == ["hory/krivan.md"]
