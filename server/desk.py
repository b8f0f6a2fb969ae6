"""What the web app may ask of the build side: the :class:`SyncDesk` the composing command injects
(the job runner of ``builder/job_runner.py``), and the 202 answer that names a queued job."""

from __future__ import annotations

from typing import Any, Protocol

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

JOB_PATH = "/api/sync/jobs/{job_id}"
NO_RUNNER = "this server runs no sync jobs (start it with `notes-portal serve`)"


class SyncDesk(Protocol):
    """Where the web app asks for builds; the job runner (builder.job_runner.JobRunner) is one."""

    def enqueue(self, source: str | None, reason: str, delivery: str | None = None) -> dict[str, Any]:
        """Queue a build (or join the one queued for ``source``): ``{job, new, duplicate}``."""

    def job(self, job_id: str) -> dict[str, Any] | None:
        """One job as JSON, or None."""

    def status(self) -> dict[str, Any]:
        """``{counts, jobs}``: jobs per state and the latest jobs."""


def unavailable() -> Response:
    return JSONResponse({"error": NO_RUNNER}, status_code=503)


def job_url(request: Request, job_id: str) -> str:
    """The job's path on this server (under the app's root path when it is mounted below one)."""
    return request.scope.get("root_path", "") + JOB_PATH.format(job_id=job_id)


def queued_response(request: Request, result: dict[str, Any]) -> Response:
    """202 with the job (new, joined, or the one a replayed delivery made) and its URL in ``Location``."""
    job = result["job"]
    url = job_url(request, job["id"])
    body = {"queued": not result["duplicate"], "job": job, "url": url}
    if result["duplicate"]:
        body["reason"] = "this delivery was received before"
    return JSONResponse(body, status_code=202, headers={"Location": url})
