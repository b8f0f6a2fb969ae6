"""Push webhooks: ``POST /api/hooks/<source_id>`` from Gitea, Forgejo, GitHub and GitLab.

The request is checked before its body is parsed: the source must be a git source with a
``hook_secret``, the body at most ``server.hook_max_bytes`` (413), and its signature valid over the
exact bytes received (401), compared in constant time:

- Forgejo ``X-Forgejo-Signature`` and Gitea ``X-Gitea-Signature``: hex HMAC-SHA256 of the body;
- GitHub ``X-Hub-Signature-256``: ``sha256=`` and the same hex HMAC;
- GitLab ``X-Gitlab-Token``: the secret itself (GitLab does not sign the body).

Only a push to the source's branch queues work: its ``branch``, or else the default branch the
payload names (``repository.default_branch``, GitLab's ``project.default_branch``), which is the
branch the remote's HEAD points at. Anything else (another branch, a tag, a ping) is answered 202
with nothing queued. A delivery id seen before (``X-Forgejo-Delivery``, ``X-Gitea-Delivery``,
``X-GitHub-Delivery``, GitLab's ``Idempotency-Key`` or ``X-Gitlab-Event-UUID``) queues nothing
again. The answer is 202 at once with the job's URL: the build runs in the job runner, never in the
request.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from builder.core.config import Config, SourceConfig
from builder.core.errors import UserError
from server.desk import SyncDesk, queued_response, unavailable

# The signature headers, in the order they are looked for: Forgejo also sends Gitea's, and both also
# send GitHub's, so the first one found names the sender. Only that one is checked.
SIGNATURES = (("x-forgejo-signature", "forgejo"), ("x-gitea-signature", "gitea"),
              ("x-hub-signature-256", "github"), ("x-gitlab-token", "gitlab"))
EVENTS = {"forgejo": ("x-forgejo-event", "x-gitea-event"), "gitea": ("x-gitea-event",),
          "github": ("x-github-event",), "gitlab": ("x-gitlab-event",)}
DELIVERIES = {"forgejo": ("x-forgejo-delivery", "x-gitea-delivery"), "gitea": ("x-gitea-delivery",),
              "github": ("x-github-delivery",), "gitlab": ("idempotency-key", "x-gitlab-event-uuid")}
PUSH_EVENTS = ("push", "push hook")  # Gitea/Forgejo/GitHub, GitLab
MAX_DELIVERY_ID = 200


@dataclass(frozen=True)
class Delivery:
    """A request whose signature was valid: who sent it, which event, its delivery id (if any)."""

    provider: str
    event: str
    delivery_id: str | None


def _first(headers: Mapping[str, str], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = headers.get(name)
        if value:
            return value.strip()
    return None


def _same(offered: str, expected: str) -> bool:
    return hmac.compare_digest(offered.encode("utf-8", "replace"), expected.encode("utf-8"))


def verify(headers: Mapping[str, str], body: bytes, secret: str) -> Delivery | None:
    """The delivery when ``headers`` carry a valid signature of ``body`` made with ``secret`` (or
    GitLab's token equal to it); None when it is missing or wrong. ``headers`` has lowercase names."""
    for header, provider in SIGNATURES:
        offered = headers.get(header)
        if offered is None:
            continue
        if provider == "gitlab":
            valid = _same(offered, secret)
        else:
            digest = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
            valid = _same(offered.strip().lower(), f"sha256={digest}" if provider == "github" else digest)
        if not valid:
            return None
        event = _first(headers, EVENTS[provider]) or ""
        delivery = _first(headers, DELIVERIES[provider])
        return Delivery(provider, event, delivery[:MAX_DELIVERY_ID] if delivery else None)
    return None


def payload_of(body: bytes, content_type: str) -> dict[str, Any]:
    """The push payload: a JSON body, or the ``payload`` field of a form-encoded one (a forge's
    "application/x-www-form-urlencoded" setting). Raises ValueError when it is neither."""
    if content_type.split(";")[0].strip().lower() == "application/x-www-form-urlencoded":
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True)
        body = (fields.get("payload") or [""])[0].encode("utf-8")
    try:
        data = json.loads(body)
    except RecursionError:  # a well-signed body of thousands of nested brackets
        raise ValueError("nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


def ignored_because(delivery: Delivery, payload: dict[str, Any], branch: str | None) -> str | None:
    """Why this delivery queues nothing (not a push, or a push to another ref); None when it should."""
    if delivery.event.lower() not in PUSH_EVENTS:
        return f"{delivery.event or 'an unnamed'} event, not a push"
    ref = payload.get("ref")
    if not isinstance(ref, str):
        return "a push payload without a ref"
    branch = branch or _default_branch(payload)
    if branch is None:
        return None  # the forge did not say: the build itself asks the remote for its HEAD
    wanted = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
    return None if ref == wanted else f"a push to {ref}, not to {wanted}"


def _default_branch(payload: dict[str, Any]) -> str | None:
    """The branch the remote's HEAD points at, as the forge says it (GitLab: ``project``)."""
    for owner in ("repository", "project"):
        described = payload.get(owner)
        default = described.get("default_branch") if isinstance(described, dict) else None
        if isinstance(default, str) and default:
            return default
    return None


def _ignored(reason: str) -> Response:
    return JSONResponse({"queued": False, "reason": reason}, status_code=202)


async def _body(request: Request, limit: int) -> bytes | None:
    """The raw body, or None when it is over ``limit`` bytes (said in advance or found reading)."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def hook_endpoint(config: Config, desk: SyncDesk | None):
    """The endpoint of ``POST /api/hooks/{source_id}``."""
    hooked: dict[str, SourceConfig] = {s.id: s for s in config.sources if s.hook_secret}

    async def receive(request: Request) -> Response:
        source = hooked.get(request.path_params["source_id"])
        if source is None:
            return JSONResponse({"error": f"no webhook for source {request.path_params['source_id'][:64]!r} "
                                          "(a git source with hook_secret in the config)"}, status_code=404)
        body = await _body(request, config.hook_max_bytes)
        if body is None:
            return JSONResponse({"error": f"the body is over {config.hook_max_bytes} bytes "
                                          "(server.hook_max_bytes)"}, status_code=413)
        delivery = verify(request.headers, body, source.hook_secret or "")
        if delivery is None:
            return JSONResponse({"error": "missing or wrong webhook signature"}, status_code=401)
        try:
            payload = payload_of(body, request.headers.get("content-type", ""))
        except ValueError:  # UnicodeDecodeError and json's errors are ValueErrors
            return JSONResponse({"error": "the body is not a JSON push payload"}, status_code=400)
        reason = ignored_because(delivery, payload, source.branch)
        if reason is not None:
            return _ignored(reason)
        if desk is None:
            return unavailable()
        tag = f"{delivery.provider}:{delivery.delivery_id}" if delivery.delivery_id else None
        try:
            result = await run_in_threadpool(desk.enqueue, source.id, f"webhook {delivery.provider}", tag)
        except UserError as exc:
            return JSONResponse({"error": str(exc)}, status_code=503)
        return queued_response(request, result)

    return receive
