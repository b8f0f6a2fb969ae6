"""The read commands as data: what ``--json`` prints and what the MCP tools return, made in one place.

Each function takes a :class:`ReadPath` (how to reach the index and the query
embedder) and returns a JSON-able dict in the versioned shape of
``docs/CLI-JSON.md``: ``{"schema": "notes-portal/1", "command": …, …}``. The
CLI prints it (or its text form), the MCP server returns it as a tool's
structured result, so the two cannot drift apart. Everything here only reads:
the index through read-only connections, the sources' files from disk.

It lives on the read side, so the CLI and the MCP server (:mod:`server.mcp`) only call it; ``status``'s data,
which also counts the last render's broken links, is :mod:`server.status`.

The three layers: ``search`` asks the index (words and meaning, as of the last
build), ``toc`` lists what the index holds, ``grep`` and ``read_note`` read the
files as they are on disk now (within each source's scope, never an
unpublished note).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core import urls
from builder.core.config import Config
from builder.core.errors import IndexMissing, UserError

if TYPE_CHECKING:
    from sqlite3 import Connection

    from builder.core.embedding import Embedder
    from server.answer import Asker
    from server.search import SearchResult
    from server.engine import Searcher

SCHEMA_VERSION = "notes-portal/1"
TOC_HEADING_LEVELS = 3  # the table of contents lists headings down to ###
READ_LINES = 400  # read_note: lines returned by default …
MAX_READ_LINES = 2000  # … and at most
MAX_READ_CHARS = 60_000  # and never more text than this at once

Embed = Callable[[str], "tuple[bytes | None, str | None]"]  # the query's vector, or None and why


@dataclass(frozen=True)
class ReadPath:
    """How the read commands reach the index and the query embedder: a command opens them once
    (:func:`for_command`), a long-lived server keeps them (:func:`for_server`)."""

    config: Config
    connection: Callable[[], AbstractContextManager[Connection]]  # a read-only connection to the index
    embed: Embed
    searcher: Searcher | None = None  # a server's: the query embedded while its words are read
    asker: Asker | None = None  # a server's: its answer slots shared with /api/answer; a command makes its own


def for_command(config: Config) -> ReadPath:
    """One CLI command: a connection of its own, the provider made when a query needs it."""

    @contextmanager
    def connection() -> Iterator[Connection]:
        conn = db.open_index(config.index)
        try:
            yield conn
        finally:
            conn.close()

    def embed(text: str) -> tuple[bytes | None, str | None]:
        from server.search import query_vector_of

        embedder, error = query_embedder(config)
        return query_vector_of(embedder, text) if embedder is not None else (None, error)

    return ReadPath(config, connection, embed)


def query_embedder(config: Config) -> tuple[Embedder | None, str | None]:
    """The configured provider for queries, or None and why not (None, None: embeddings are off)."""
    from builder.core.embedding import make_embedder

    if not config.embedding.enabled:
        return None, None
    try:
        made = make_embedder(config.embedding, for_queries=True)
    except Exception as exc:  # a broken local install degrades to FTS-only, loudly
        return None, f"{type(exc).__name__}: {exc}"
    return made, None if made is not None else "no embedder for this provider"


def for_server(searcher: Searcher, asker: Asker | None = None) -> ReadPath:
    """A long-lived server (the MCP server, the web app): its searcher, and the read path's pooled
    connections, which follow a ``--full`` swap and stop a query at the reader's time limit."""

    @contextmanager
    def connection() -> Iterator[Connection]:
        with searcher.reader.connection() as lease:
            yield lease.conn

    return ReadPath(searcher.config, connection, searcher.embedder.embed, searcher, asker)


def envelope(command: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` under the schema's version and the command's name."""
    return {"schema": SCHEMA_VERSION, "command": command, **body}


def error_body(command: str, exc: UserError) -> dict[str, Any]:
    """A failed command as data: its one-line message and the exit code the CLI ends with."""
    return envelope(command, {"error": str(exc), "exit_code": exc.exit_code})


def _source(config: Config, source: str | None) -> str | None:
    if source is not None:
        config.source(source)  # unknown → ConfigError naming the configured ones
    return source


def search_result(rp: ReadPath, query: str, *, limit: int = 10, source: str | None = None,
                  tag: str | None = None, mode: str = "hybrid", correct: bool = True) -> SearchResult:
    """The search as :mod:`server.search` answers it: a server's through its searcher, a command's
    with the query embedded first (unless BM25 only)."""
    from server.search import check_limit, check_mode, made_before, search

    check_mode(mode)
    check_limit(limit)
    _source(rp.config, source)
    if not rp.config.index.exists():  # before the query is embedded (a model may take seconds to load)
        raise IndexMissing(rp.config.index)
    if rp.searcher is not None:
        return rp.searcher.search(query, limit=limit, source=source, tag=tag, mode=mode, correct=correct)
    vector, error = rp.embed(query) if mode != "bm25" else (None, None)
    with rp.connection() as conn:
        return search(conn, rp.config, query, limit=limit, source=source, tag=tag, mode=mode,
                      max_per_note=rp.config.max_per_note, vector=made_before(vector, error), correct=correct)


def search_result_data(result: SearchResult) -> dict[str, Any]:
    """``/api/search``'s JSON (without ``took_ms``) plus each hit's ``provenance`` in words."""
    from server.search import provenance

    body = result.to_json()
    body["hits"] = [{**asdict(hit), "provenance": provenance(hit)} for hit in result.hits]
    return envelope("search", body)


def search_data(rp: ReadPath, query: str, *, limit: int = 10, source: str | None = None, tag: str | None = None,
                mode: str = "hybrid", as_typed: bool = False) -> dict[str, Any]:
    """``search``: hits by words and meaning from the index, grouped by note, with ``weak`` when
    nothing confident matched (``as_typed``: no word replaced by a close one)."""
    return search_result_data(search_result(rp, query, limit=limit, source=source, tag=tag, mode=mode,
                                            correct=not as_typed))


def answer_data(rp: ReadPath, question: str, *, source: str | None = None) -> dict[str, Any]:
    """``ask``: the answer to ``question`` written by the configured model from the search's sections,
    shown only when every sentence is checked against them (see :mod:`server.answer`); ``unavailable``
    when the provider cannot answer, with the search's hits under ``search``."""
    from server import answer
    from server.query import MAX_QUERY_CHARS

    if not rp.config.answer.enabled:
        raise UserError("no answer provider is configured: add an answer: section to the config "
                        "(see README, Asking your notes); search needs none")
    if not question.strip():
        raise UserError("the question is empty")
    if len(question) > MAX_QUERY_CHARS:
        raise UserError(f"the question is longer than {MAX_QUERY_CHARS} characters")
    asker = rp.asker or answer.make_asker(rp.config)
    with asker.slot() as free:
        if not free:
            return envelope("ask", answer.BUSY.to_json())
        result = search_result(rp, question, limit=answer.SEARCH_LIMIT, source=source)
        with rp.connection() as conn:
            sources = answer.passages(conn, result.hits)
        reply = answer.ask(question, result, sources, asker)
    body = reply.to_json()
    if reply.status == "unavailable":
        body["search"] = search_result_data(result)
    return envelope("ask", body)


def toc_data(rp: ReadPath, *, source: str | None = None, tag: str | None = None, folder: str | None = None,
             max_notes: int | None = None, max_chars: int | None = None) -> dict[str, Any]:
    """``toc``: the published notes the index holds (path, title, tags, headings to ###, page URL),
    by source and path; ``folder`` keeps one folder's notes (and its subfolders'). At most ``max_notes``
    notes and about ``max_chars`` characters of JSON (``truncated`` says when some were left out)."""
    import json

    from builder.notes.notefile import check_relative

    _source(rp.config, source)
    prefix = check_relative(folder.strip("/"), "folder") + "/" if folder and folder.strip("/") else ""
    with rp.connection() as conn:
        rows = [r for r in db.notes_for_toc(conn, source, tag) if r["path"].startswith(prefix)]
    notes: list[dict[str, Any]] = []
    size = 0
    for r in rows[:max_notes]:
        note = {"source": r["source_id"], "path": r["path"], "title": r["title"], "tags": json.loads(r["tags"]),
                "headings": [{"level": h["level"], "text": h["text"], "anchor": h["anchor"], "line": h["line"]}
                             for h in json.loads(r["headings"]) if h["level"] <= TOC_HEADING_LEVELS],
                "url": urls.note_url(r["source_id"], r["path"])}
        if max_chars is not None:
            size += len(json.dumps(note, ensure_ascii=False))
            if size > max_chars and notes:
                break
        notes.append(note)
    return envelope("toc", {"source": source, "tag": tag, "folder": prefix.rstrip("/") or None,
                            "total": len(rows), "truncated": len(notes) < len(rows), "notes": notes})


def grep_data(rp: ReadPath, pattern: str, *, source: str | None = None, ignore_case: bool = False,
              max_results: int | None = None) -> dict[str, Any]:
    """``grep``: lines of the sources' files on disk now (every file in ``paths`` and not ``exclude``d,
    markdown or not), never of an unpublished note; at most ``max_results`` of them."""
    from builder.notes.grep import MAX_LINE_CHARS, find

    config = rp.config
    sources = [config.source(source)] if source else list(config.sources)
    try:
        with rp.connection() as conn:
            code_pages = db.code_pages(conn)
    except (UserError, db.sqlite_module().Error):  # no index yet, or unreadable: every file as UTF-8
        code_pages = {}
    found = find(config, sources, pattern, ignore_case=ignore_case, max_results=max_results,
                 skip=_unpublished(rp), code_pages=code_pages)
    return envelope("grep", {"pattern": pattern, "ignore_case": ignore_case, "source": source,
                             "max_results": max_results, "max_line_chars": MAX_LINE_CHARS,
                             "count": len(found.matches), "truncated": found.truncated,
                             "warnings": list(found.warnings), "matches": [asdict(m) for m in found.matches]})


def _unpublished(rp: ReadPath) -> Callable[[str, str], bool]:
    """Is a file an unpublished note: so the index says, or its front matter on disk now (bytes the index
    holds published, by their digest, are published without being parsed again)."""
    from builder.notes.notefile import published_on_disk
    from builder.notes.sources import Scope

    try:
        with rp.connection() as conn:
            indexed = db.file_statuses(conn)
    except (UserError, db.sqlite_module().Error):  # no index yet, or unreadable: front matter decides
        indexed = {}
    seen: dict[tuple[str, str], bool] = {}

    def skip(source_id: str, path: str) -> bool:
        status, digest = indexed.get((source_id, path), ("", ""))
        if status == "unpublished":
            return True
        if (source_id, path) not in seen:
            source = rp.config.source(source_id)
            note = Scope.of(source).wants(path)
            seen[source_id, path] = note and not published_on_disk(
                rp.config, source, path, published_sha256=digest if status == "ok" else None)
        return seen[source_id, path]

    return skip


def read_data(rp: ReadPath, source: str, path: str, *, section: str | None = None, start_line: int = 1,
              max_lines: int = READ_LINES) -> dict[str, Any]:
    """``read``: the note as it is on disk now, with line numbers (``N: text``), whole or one section,
    at most ``max_lines`` lines and :data:`MAX_READ_CHARS` characters from ``start_line``; ``index``
    says whether the index has seen this version of it."""
    from builder.notes.notefile import find_section, read_note

    if not 1 <= max_lines <= MAX_READ_LINES:
        raise UserError(f"max_lines must be from 1 to {MAX_READ_LINES}, got {max_lines}")
    config = rp.config
    note = read_note(config, config.source(source), path)
    indexed = _indexed(rp, source, path)
    if indexed is not None and indexed[0] == "unpublished":
        raise UserError(f"{source}:{path} is not published (the index holds it as published: false)")
    first, last, heading, anchor = 1, len(note.lines), None, ""
    if section:
        found, first, last = find_section(note, section)
        heading, anchor = {"level": found.level, "text": found.text, "anchor": found.anchor}, found.anchor
    if start_line > max(last, first):
        raise UserError(f"start_line {start_line} is past the end of the "
                        f"{'section' if section else 'note'} (its last line is {last})")
    first = max(first, start_line)
    text, shown_to = _numbered(note.lines, first, last, max_lines)
    truncated = shown_to < last
    if truncated:
        text += f"\n[truncated: lines {shown_to + 1}–{last} not shown; continue from line {shown_to + 1}]"
    return envelope("read", {
        "source": source, "path": path, "url": urls.hit_url(source, path, anchor), "section": heading,
        "line_start": first, "line_end": shown_to, "total_lines": len(note.lines), "truncated": truncated,
        "next_line": shown_to + 1 if truncated else None, "index": _index_state(indexed, note.sha256),
        "text": text})


def _numbered(lines: tuple[str, ...], first: int, last: int, max_lines: int) -> tuple[str, int]:
    """Lines ``first``… (1-based) as ``N: text``, within ``max_lines`` and :data:`MAX_READ_CHARS`;
    returns the text and the number of the last line shown (``first - 1``: none)."""
    out: list[str] = []
    size = 0
    number = first - 1
    for number in range(first, min(last, first + max_lines - 1) + 1):
        line = f"{number}: {lines[number - 1]}"
        if size + len(line) + 1 > MAX_READ_CHARS:
            if not out:  # one huge line: show its start rather than nothing
                out.append(line[:MAX_READ_CHARS] + " […]")
                return "\n".join(out), number
            return "\n".join(out), number - 1
        out.append(line)
        size += len(line) + 1
    return "\n".join(out), number


def _indexed(rp: ReadPath, source: str, path: str) -> tuple[str, str] | None:
    """The index's (status, sha256) of the file, or None (not indexed, or no index to ask)."""
    try:
        with rp.connection() as conn:
            return db.file_status(conn, source, path)
    except (UserError, db.sqlite_module().Error):  # no index yet, or unreadable now: the disk still answers
        return None


def _index_state(indexed: tuple[str, str] | None, sha256: str) -> str:
    if indexed is None:
        return "not indexed yet"
    return "current" if indexed[1] == sha256 else "changed since the last build"


def status_data(rp: ReadPath) -> dict[str, Any]:
    """``status``: the index, the embedding model and, per source, notes, chunks, pending vectors, the last
    sync, the indexed revision and the last render's broken links (see :mod:`server.status`: it opens the
    index on its own, without sqlite-vec, and answers when there is none yet)."""
    from server.status import collect_status

    return envelope("status", collect_status(rp.config))
