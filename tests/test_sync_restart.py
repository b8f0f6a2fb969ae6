"""A server SIGKILLed while its job runs: after a restart the job runs again and completes.

The real CLI (``notes-portal serve``) runs in a child process and each job's build in a child of
it; the test holds the build lock (as cron's long build would), so the kill lands while the job
runs (phase ``waiting``); its build process leaves with the server. What a kill in the middle of an
index write leaves is the crash harness's business (tests/test_crash.py).
"""

from __future__ import annotations

import fcntl
import signal

import pytest

from builder.core.index.jobqueue import JobQueue
from tests.conftest import DIMS, FakeOllama, free_port
from tests.server_support import call, serving
from tests.sync_support import (
    API_KEY,
    SECRET,
    SYNC_KEY,
    make_portal,
    push_payload,
    signed,
    wait_for,
)

pytestmark = pytest.mark.slow


def test_a_job_running_when_the_server_is_killed_completes_after_a_restart(tmp_path):
    with FakeOllama(DIMS) as ollama:
        embedding = (f"embedding:\n  provider: ollama\n  endpoint: {ollama.url}\n  model: test-embed:1\n"
                     f"  dims: {DIMS}\n  timeout: 60\n")
        portal = make_portal(tmp_path, embedding=embedding)
        held = open(portal.config.build_lock_path, "a")  # noqa: SIM115 (released half-way through the test)
        fcntl.flock(held, fcntl.LOCK_EX)
        portal.up.write("hory/gerlach.md", "# Gerlachovský štít\n\nNejvyšší vrchol Tater, 2655 m.\n")
        after = portal.up.commit("gerlach")
        portal.up.push()
        port = free_port()
        with serving(portal.config.path, port) as first:
            body = push_payload(after=after)
            status, answer = call(port, "POST", "/api/hooks/travel", body, signed("github", SECRET, body))
            assert status == 202
            job_url = answer["url"]
            job = wait_for(lambda: (j := call(port, "GET", job_url, headers={"X-API-Key": SYNC_KEY})[1])["state"]
                           == "running" and j, timeout=60, step=0.05)
            assert (job["phase"], job["attempts"]) == ("waiting", 1)
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        job_id = answer["job"]["id"]
        assert JobQueue(portal.config.jobs_path).job(job_id)["state"] == "running"  # nobody finished it
        assert not (portal.config.site.output / "travel" / "hory" / "gerlach.html").exists()

        held.close()  # the build lock released
        port = free_port()  # (the killed server's may be another test's by now)
        with serving(portal.config.path, port):
            done = wait_for(lambda: (j := call(port, "GET", job_url, headers={"X-API-Key": SYNC_KEY})[1])["state"]
                            in ("succeeded", "failed") and j, timeout=60, step=0.1)
            status, found = call(port, "GET", "/api/search?q=Gerlachovsk%C3%BD&mode=bm25",
                                 headers={"X-API-Key": API_KEY})
        assert (done["state"], done["attempts"], done["error"], done["phase"]) == ("succeeded", 2, None, "done")
        assert [h["path"] for h in found["hits"]] == ["hory/gerlach.md"]
        assert (portal.config.site.output / "travel" / "hory" / "gerlach.html").is_file()
