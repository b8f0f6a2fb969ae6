"""The server on real sockets: uvicorn in a thread on 127.0.0.1, several client threads at once.

What TestClient cannot show: a response whose declared Content-Length disagrees with the
bytes sent is cut off by the HTTP layer, and requests really run in parallel with a build.
"""

from __future__ import annotations

import http.client
import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from builder.core.config import Config
from builder.sync import build
from builder.core.synclog import SyncLog
from server.app import create_app
from tests.conftest import HashEmbedder, ollama_yaml
from tests.render_support import build_and_render
from tests.server_support import fetch, live_server


def test_a_page_replaced_while_it_is_fetched_arrives_whole(config_for):
    """A build replaces pages with os.replace; each response is one version, whole, with its own length
    (Starlette's FileResponse took the size from one file and the bytes from the next)."""
    config = config_for()
    config.site.output.mkdir(parents=True)
    page = config.site.output / "page.html"
    versions = [b"<p>" + b"a" * 300_000 + b"</p>", b"<p>" + b"b" * 3_000 + b"</p>"]
    page.write_bytes(versions[0])
    stop = threading.Event()

    def replace_forever() -> None:
        temp = config.site.output / ".page.html.tmp"
        n = 0
        while not stop.is_set():
            n += 1
            temp.write_bytes(versions[n % 2])
            os.replace(temp, page)

    outcomes: list[str] = []

    def client() -> None:
        for _ in range(40):
            try:
                got = fetch(address, "/page.html")
            except (OSError, http.client.HTTPException) as exc:
                outcomes.append(f"broken: {type(exc).__name__}")
                continue
            whole = got.status == 200 and got.body in versions and got.declared == len(got.body)
            outcomes.append("ok" if whole else f"wrong: {got.status} {got.declared} {len(got.body)}")

    with live_server(create_app(config)) as address:
        writer = threading.Thread(target=replace_forever)
        writer.start()
        clients = [threading.Thread(target=client) for _ in range(8)]
        try:
            for thread in clients:
                thread.start()
            for thread in clients:
                thread.join()
        finally:
            stop.set()
            writer.join()
    assert len(outcomes) == 320
    assert [o for o in outcomes if o != "ok"] == []


QUERIES = ["rajčata", "čaj", "powerbanka", "převodník", "sklizeň", "mléko", "okurky", "sluchátka"]


def _search_and_open_hits(address: tuple[str, int], query: str) -> tuple[list[str], list[str], list[str]]:
    """Search, then fetch every hit's page: (failures, hits whose page is missing, hits whose anchor is missing)."""
    failures, missing, no_anchor = [], [], []
    try:
        found = fetch(address, f"/api/search?q={quote(query)}&limit=5")
    except (OSError, http.client.HTTPException) as exc:
        return [f"search {query}: {type(exc).__name__}: {exc}"], [], []
    if found.status != 200 or found.declared != len(found.body):
        return [f"search {query}: {found.status} {found.body[:200]!r}"], [], []
    for hit in json.loads(found.body)["hits"]:
        page, _, anchor = hit["url"].partition("#")
        try:
            got = fetch(address, "/" + page)
        except (OSError, http.client.HTTPException) as exc:
            failures.append(f"page {page}: {type(exc).__name__}: {exc}")
            continue
        if got.status == 404:
            missing.append(unquote(page))
        elif got.status != 200 or got.declared != len(got.body):
            failures.append(f"page {page}: {got.status}, {got.declared} declared, {len(got.body)} sent")
        elif anchor and f'id="{anchor}"' not in got.body.decode("utf-8"):
            no_anchor.append(hit["url"])
    return failures, missing, no_anchor


def _edit(notes_dir: Path, round_no: int) -> set[str]:
    """What round ``round_no`` changes in the notes before its build (every sixth build is --full);
    returns the pages of the notes it deleted."""
    added = sorted(notes_dir.glob("zahrada-*.md"), key=lambda p: int(p.stem.split("-")[1]))
    step = round_no % 6
    if step in (0, 3) or not added:  # a new note
        (notes_dir / f"zahrada-{round_no}.md").write_text(
            f"# Zahrada {round_no}\n\nRajčata a okurky, sklizeň {round_no}.\n\n## Zálivka\n\nRáno.\n",
            encoding="utf-8")
    elif step in (1, 4):  # an edited note: its sections move
        (notes_dir / "cestovani" / "snezka.md").write_text(
            f"# Sněžka {round_no}\n\n## Výbava {round_no}\n\n- powerbanka\n- sluchátka\n", encoding="utf-8")
    elif step == 2:  # a deleted note
        added[0].unlink()
        return {f"notes/{added[0].stem}.html"}
    return set()


@pytest.mark.slow
def test_readers_during_writes_never_fail_and_hits_lead_to_pages(config_for, quiet_log, notes_dir):
    """24 rounds: a build (incremental edits, additions, deletions; every sixth --full) while 16 clients
    search and open the hits, then, with builds paused, 16 clients check that every hit's page exists."""
    config = config_for(ollama_yaml("http://127.0.0.1:9"))
    build_and_render(config, full=True, embedder_factory=HashEmbedder)
    outcome = Outcome()
    started = time.monotonic()
    with live_server(create_app(config, embedder_factory=HashEmbedder)) as address:
        for round_no in range(24):
            deleted = _edit(notes_dir, round_no)
            _read_during_a_build(address, config, quiet_log(config), round_no, outcome, deleted)
            _read_after_the_build(address, round_no, outcome)
            assert time.monotonic() - started < 240, "the test ran too long"
    assert outcome.failures == []
    assert outcome.broken == []


@dataclass
class Outcome:
    failures: list[str] = field(default_factory=list)  # failed requests, broken connections, failed builds
    broken: list[str] = field(default_factory=list)  # hits whose page or section is missing after a build


def _read_during_a_build(address: tuple[str, int], config: Config, log: SyncLog, round_no: int,
                         outcome: Outcome, deleted: set[str]) -> None:
    """16 clients search and open the hits until the round's build is done (every sixth one --full).
    A hit may lead to no page only when the note was deleted in this round (the search answered
    before the build removed it); a new note's hit must not come before its page."""
    done = threading.Event()

    def run_build() -> None:
        try:
            code = build(config, full=round_no % 6 == 5, embedder_factory=HashEmbedder, log=log)
            if code != 0:
                outcome.failures.append(f"round {round_no}: the build exited {code}")
        finally:
            done.set()

    def read(client_no: int) -> None:
        n = client_no
        while not done.is_set():
            failed, missing, _no_anchor = _search_and_open_hits(address, QUERIES[n % len(QUERIES)])
            outcome.failures.extend(f"round {round_no} (during the build): {f}" for f in failed)
            outcome.broken.extend(f"round {round_no} (during the build): missing page {p}" for p in missing
                                  if p not in deleted)
            n += 1

    _run_together([threading.Thread(target=run_build)]
                  + [threading.Thread(target=read, args=(i,)) for i in range(16)])


def _read_after_the_build(address: tuple[str, int], round_no: int, outcome: Outcome) -> None:
    """16 clients search while no build runs: every hit's page and section must be there."""

    def check(client_no: int) -> None:
        for query in (QUERIES[client_no % len(QUERIES)], QUERIES[(client_no + 3) % len(QUERIES)]):
            failed, missing, no_anchor = _search_and_open_hits(address, query)
            outcome.failures.extend(f"round {round_no}: {f}" for f in failed)
            outcome.broken.extend(f"round {round_no}: {query!r} → missing page {p}" for p in missing)
            outcome.broken.extend(f"round {round_no}: {query!r} → no section {u}" for u in no_anchor)

    _run_together([threading.Thread(target=check, args=(i,)) for i in range(16)])


def _run_together(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
        assert not thread.is_alive(), "a client or the build hung"
