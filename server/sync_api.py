"""The sync API: ``POST /api/sync``, ``GET /api/sync/jobs/<id>``, ``GET /api/sync/status``, and the
webhook route of :mod:`server.hooks`.

The read path never builds: the command that composes the server injects a :class:`SyncDesk` (the
job runner of ``builder/job_runner.py``), and these endpoints only ask it to queue work or to tell how a
job stands. The sync API has its own key, ``server.sync_key`` (``X-API-Key`` or ``Authorization:
Bearer``), never the search key; without one configured it is off (403).
"""

from __future__ import annotations

from collections.abc import Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from builder.core.config import Config
from builder.core.errors import UserError
from server.auth import ApiKey
from server.desk import JOB_PATH, SyncDesk, queued_response, unavailable
from server.hooks import hook_endpoint

SYNC_KEY_MISSING = "missing or wrong sync key (server.sync_key, as X-API-Key or Authorization: Bearer)"
SYNC_OFF = "the sync API is off: set server.sync_key in the config"


class SyncApi:
    """The endpoints behind ``server.sync_key``."""

    def __init__(self, config: Config, desk: SyncDesk | None) -> None:
        self.config = config
        self.desk = desk
        self.key = ApiKey(config.sync_key)

    def _answer(self, request: Request, action: Callable[[SyncDesk], Response]) -> Response:
        """``action``'s answer for a request with the sync key; 403 while the API is off, 401 without
        the key, 503 without a runner or when the queue cannot be used."""
        if not self.key.required:
            return JSONResponse({"error": SYNC_OFF}, status_code=403)
        if not self.key.allows(request):
            return JSONResponse({"error": SYNC_KEY_MISSING}, status_code=401, headers={"WWW-Authenticate": "Bearer"})
        if self.desk is None:
            return unavailable()
        try:
            return action(self.desk)
        except UserError as exc:
            return JSONResponse({"error": str(exc)}, status_code=503)

    def sync(self, request: Request) -> Response:
        """``POST /api/sync[?source=ID]``: queue a build of one source or of every source."""
        source = request.query_params.get("source") or None

        def queue(desk: SyncDesk) -> Response:
            if source is not None and source not in {s.id for s in self.config.sources}:
                return JSONResponse({"error": f"unknown source {source[:40]!r}"}, status_code=400)
            return queued_response(request, desk.enqueue(source, "api"))

        return self._answer(request, queue)

    def job(self, request: Request) -> Response:
        """``GET /api/sync/jobs/{id}``: one job."""
        job_id = request.path_params["job_id"]

        def look(desk: SyncDesk) -> Response:
            job = desk.job(job_id)
            if job is None:
                return JSONResponse({"error": f"no job {job_id[:40]!r} (finished jobs are kept 30 days)"},
                                    status_code=404)
            return JSONResponse(job)

        return self._answer(request, look)

    def status(self, request: Request) -> Response:
        """``GET /api/sync/status``: jobs per state and the latest jobs."""
        return self._answer(request, lambda desk: JSONResponse(desk.status()))


def sync_routes(config: Config, desk: SyncDesk | None) -> list[Route]:
    """The routes of the sync API and the webhooks, to go before the site's catch-all route."""
    api = SyncApi(config, desk)
    return [
        Route("/api/hooks/{source_id}", hook_endpoint(config, desk), methods=["POST"]),
        Route("/api/sync", api.sync, methods=["POST"]),
        Route("/api/sync/status", api.status),
        Route(JOB_PATH, api.job),
    ]
