"""Helpers of the sync tests (webhooks, sync API, job runner, watch mode): a portal over a real git
repository (file:// URL) and a folder, webhook requests signed as each forge signs them, waiting."""

from __future__ import annotations

import hashlib
import hmac
import json
import textwrap
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from builder.core.config import Config, load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.conftest import HashEmbedder, copy_config, ollama_yaml, write_config, write_note
from tests.git_support import Upstream

SECRET = "travel-hook-secret-0123456789abcdef"  # 35 characters
OTHER_SECRET = "journal-hook-secret-0123456789abcdef"
SYNC_KEY = "sync-key-0123456789abcdef0123456789"
API_KEY = "search-key-0123456789"
PROVIDERS = ("gitea", "forgejo", "github", "gitlab")
T = TypeVar("T")


@dataclass
class Portal:
    """A config with git sources ``travel`` (hook secret, upstream ``up``) and ``journal`` (another
    secret), and a folder source ``notes``; built once."""

    config: Config
    up: Upstream
    journal: Upstream
    notes: Path


def make_portal(tmp_path: Path, *, extra: str = "", travel: str = "", embedding: str | None = None,
                built: bool = True) -> Portal:
    up, journal = Upstream(tmp_path, "travel"), Upstream(tmp_path, "journal")
    up.write("hory/snezka.md", "# Sněžka\n\nBalicí seznam: powerbanka, čelovka.\n")
    up.commit("first")
    up.push()
    journal.write("den.md", "# Den\n\nNic zvláštního.\n")
    journal.commit("first")
    journal.push()
    notes = tmp_path / "notes"
    write_note(notes, "recepty/caj.md", "# Čaj\n\nTeh tarik se přelévá.\n")
    body = (f"index: data/index.sqlite\nsite:\n  output: site\n"
            f"{embedding if embedding is not None else ollama_yaml('http://127.0.0.1:9')}"
            f"server:\n  api_key: {API_KEY}\n  sync_key: {SYNC_KEY}\n  hook_max_bytes: 4096\n{extra}"
            f"sources:\n"
            f"  travel:\n    git: {up.url}\n    hook_secret: {SECRET}\n{textwrap.indent(travel, '    ')}"
            f"  journal:\n    git: {journal.url}\n    hook_secret: {OTHER_SECRET}\n"
            f"  notes:\n    folder: notes\n")
    config = load_config(write_config(tmp_path, body))
    if built:
        assert build(config, embedder_factory=HashEmbedder, log=SyncLog(config.log_path, echo_info=False)) == 0
    return Portal(config, up, journal, notes)


def copy_of(template: Path, tmp_path: Path) -> Portal:
    """A copy in ``tmp_path`` of the portal :func:`make_portal` made in ``template`` (conftest.copy_portal):
    its own repositories, clones, index and site."""
    return Portal(copy_config(template, tmp_path), Upstream.existing(tmp_path, "travel"),
                  Upstream.existing(tmp_path, "journal"), tmp_path / "notes")


def push_payload(ref: str = "refs/heads/main", after: str = "0" * 40, default_branch: str = "main",
                 provider: str = "gitea") -> bytes:
    """A push event's body as the forge sends it (the fields the portal reads, and some it does not)."""
    if provider == "gitlab":
        data: dict[str, Any] = {"object_kind": "push", "event_name": "push", "ref": ref, "after": after,
                                "project": {"name": "travel", "default_branch": default_branch},
                                "commits": [{"id": after, "message": "a note"}], "total_commits_count": 1}
    else:
        data = {"ref": ref, "before": "1" * 40, "after": after, "commits": [{"id": after, "message": "a note"}],
                "repository": {"name": "travel", "full_name": "me/travel", "default_branch": default_branch},
                "pusher": {"login": "me"}}
    return json.dumps(data).encode()


def signed(provider: str, secret: str, body: bytes, *, event: str | None = None,
           delivery: str | None = None) -> dict[str, str]:
    """The headers ``provider`` sends with ``body``: its signature made with ``secret``, its event and
    delivery id (as Gitea and Forgejo really do, with their GitHub-compatible copies)."""
    digest = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    delivery = delivery or str(uuid.uuid4())
    headers = {"Content-Type": "application/json"}
    if provider == "github":
        headers.update({"X-GitHub-Event": event or "push", "X-GitHub-Delivery": delivery,
                        "X-Hub-Signature-256": f"sha256={digest}"})
    elif provider in ("gitea", "forgejo"):
        headers.update({"X-Gitea-Event": event or "push", "X-Gitea-Delivery": delivery, "X-Gitea-Signature": digest,
                        "X-GitHub-Event": event or "push", "X-GitHub-Delivery": delivery,
                        "X-Hub-Signature-256": f"sha256={digest}"})
        if provider == "forgejo":
            headers.update({"X-Forgejo-Event": event or "push", "X-Forgejo-Delivery": delivery,
                            "X-Forgejo-Signature": digest})
    elif provider == "gitlab":
        headers.update({"X-Gitlab-Event": event or "Push Hook", "X-Gitlab-Token": secret,
                        "X-Gitlab-Event-UUID": delivery, "Idempotency-Key": delivery})
    else:
        raise ValueError(provider)
    return headers


def wait_for(check: Callable[[], T | None], timeout: float = 30.0, step: float = 0.02) -> T:
    """``check()``'s first truthy answer; fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        answer = check()
        if answer:
            return answer
        assert time.monotonic() < deadline, f"gave up after {timeout} s"
        time.sleep(step)
