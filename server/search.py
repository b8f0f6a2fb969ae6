"""Hybrid search over chunks: BM25 (FTS5) and KNN (sqlite-vec), merged by Reciprocal Rank Fusion.

User text never becomes FTS5 syntax: it is cut into words, each word is quoted,
and words of 3+ characters get a prefix ``*`` (Czech and Slovak inflect word
endings). Chunks that match every word rank before chunks that match some.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from builder.core import index as db
from builder.core.config import Config
from builder.core.embedding import Embedder, EmbeddingError
from builder.core.errors import UserError
from builder.core.slug import fold
from builder.core.urls import hit_url

if TYPE_CHECKING:
    from sqlite3 import Connection

Nearest = Callable[[bytes, int], "list[int] | None"]

RRF_K = 60
MODES = ("hybrid", "bm25", "vector")
MAX_LIMIT = 100
MAX_TERMS = 24
MAX_QUERY_CHARS = 2000
_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # FTS5's unicode61 splits at "_" as well
# Function words of Czech, Slovak and English (folded). They still must match in the all-words
# phase; in the some-words phase they would only pull in most of the index and slow BM25 down.
STOPWORDS = frozenset("""
a aby aj ak ako ale alebo ani asi az bez bol bola bolo by byl byla bylo byt co coz do ho i jak jake
jako je jeho jej jen jeste ji jsem jsi jsme jsou jste k kam kde kdy kdyz ked keby kto ktera ktere
ktery ktora ktore ktory lebo len ma mam mate mi mu na nad nam nas nebo nej nie no o od po pod pre
pred pri pro proc preto s sa se si sme so su ta tak tam te tedy ten tiez tj to toho tom tu ty u uz
v vo vsak z za ze zo
about an and are as at be but by can do does for from how i if in into is it its of on or so that
the their then there these this to was what when where which who why will with you your
""".split())


@dataclass(frozen=True)
class Hit:
    source: str
    path: str
    title: str
    breadcrumb: str
    anchor: str
    line_start: int
    snippet: str  # HTML-escaped text with <mark> around matched words
    score: float
    ranks: dict[str, int | None]
    url: str  # the note page, site-relative, with the section anchor


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str
    hits: tuple[Hit, ...]
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "mode": self.mode, "notes": list(self.notes),
                "hits": [asdict(h) for h in self.hits]}


def check_mode(mode: str) -> str:
    """``mode`` when it is one of :data:`MODES`, else a :class:`UserError` naming the choices."""
    if mode not in MODES:
        raise UserError(f"mode must be one of {', '.join(MODES)}, got {mode[:20]!r}")
    return mode


def check_limit(limit: int | str) -> int:
    """``limit`` (an int, or its decimal digits as typed) when it is from 1 to :data:`MAX_LIMIT`."""
    text = str(limit)
    if not re.fullmatch(r"[0-9]{1,3}", text) or not 1 <= int(text) <= MAX_LIMIT:
        raise UserError(f"limit must be a whole number from 1 to {MAX_LIMIT}, got {text[:20]!r}")
    return int(text)


def query_terms(text: str) -> list[str]:
    """The words of the user's text, in order, without duplicates (at most MAX_TERMS)."""
    seen: dict[str, None] = {}
    for word in _WORD.findall(unicodedata.normalize("NFC", text[:MAX_QUERY_CHARS])):
        seen.setdefault(word.lower(), None)
    return list(seen)[:MAX_TERMS]


def fts_expression(terms: list[str], operator: str) -> str:
    """An FTS5 expression where every term is a quoted string: user text is never syntax."""
    quoted = [f'"{t}"*' if len(t) >= 3 else f'"{t}"' for t in terms]
    return f" {operator} ".join(quoted)


def _bm25_ids(conn: Connection, terms: list[str], k: int, source: str | None, tag: str | None) -> list[int]:
    if not terms:
        return []
    ids = db.fts_search(conn, fts_expression(terms, "AND"), k, source, tag)
    some = [t for t in terms if fold(t) not in STOPWORDS] or terms
    if len(ids) < k and len(some) > 1 or (len(terms) > 1 and len(some) == 1 and not ids):
        seen = set(ids)
        ids += [i for i in db.fts_search(conn, fts_expression(some, "OR"), k, source, tag) if i not in seen]
    return ids[:k]


_MARKUP = [
    (re.compile(r"!?\[([^\]\n]*)\]\([^)\n]*\)"), r"\1"),  # [text](url), ![alt](src) → text, alt
    (re.compile(r"\[\[(?:[^\]|\n]*\|)?([^\]\n]*)\]\]"), r"\1"),  # [[note|label]] → label
    (re.compile(r"^\s{0,3}(?:#{1,6}\s+|>\s?|[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)", re.M), ""),
    (re.compile(r"^\s*\|?(?:\s*:?-{3,}:?\s*\|)+\s*:?-*:?\s*$", re.M), ""),  # table rule rows
    (re.compile(r"^\s*(?:```|~~~).*$", re.M), ""),  # fence lines
    (re.compile(r"\*\*|`|\|"), " "),
]


def plain_text(markdown: str) -> str:
    """Chunk text without the markdown punctuation that makes snippets hard to read."""
    for pattern, replacement in _MARKUP:
        markdown = pattern.sub(replacement, markdown)
    return markdown


def snippet(text: str, terms: list[str], width: int = 36) -> str:
    """A window of ``width`` words around the densest matches, HTML-escaped, matches in <mark>."""
    text = plain_text(text)
    folded_terms = [fold(t) for t in terms]
    words = list(_WORD.finditer(text))

    def is_match(word: str) -> bool:
        w = fold(word)
        return any(w.startswith(t) if len(t) >= 3 else w == t for t in folded_terms)

    flags = [is_match(m.group()) for m in words]
    best, best_score = 0, -1
    for start in range(0, max(1, len(words) - width + 1), 4):
        score = sum(flags[start:start + width])
        if score > best_score:
            best, best_score = start, score
    window = words[best:best + width]
    if not window:
        return html.escape(text[:240])
    at_start, at_end = best == 0, best + width >= len(words)
    begin = 0 if at_start else window[0].start()
    end = len(text) if at_end else window[-1].end()
    out, pos = [], begin
    for m, flag in zip(window, flags[best:best + width]):
        out.append(html.escape(text[pos:m.start()]))
        out.append(f"<mark>{html.escape(m.group())}</mark>" if flag else html.escape(m.group()))
        pos = m.end()
    out.append(html.escape(text[pos:end]))
    body = " ".join("".join(out).split())
    return ("…" if begin > 0 else "") + body + ("…" if end < len(text) else "")


def search(conn: Connection, config: Config, query: str, *, limit: int = 10, source: str | None = None,
           tag: str | None = None, mode: str = "hybrid", embedder: Embedder | None = None,
           embedder_error: str | None = None, query_vector: bytes | None = None,
           nearest: Nearest | None = None) -> SearchResult:
    """Answer one query. Raises :class:`ReindexNeeded` when the index speaks another embedding space.

    The query's vector is ``query_vector`` when given (the server embeds before its SQL time
    limit starts), else ``embedder``'s; with neither, the results are BM25-only and a note says
    why (``embedder_error``). ``nearest`` (the server's in-memory vectors) may answer the KNN
    scan instead of sqlite-vec.
    """
    check_mode(mode)
    check_limit(limit)
    db.check_identity(conn, config)
    notes: list[str] = []
    terms = query_terms(query)
    if not terms:
        return SearchResult(query, mode, (), ("the query has no words to search for",))
    k = max(limit * 3, 30)
    bm25 = _bm25_ids(conn, terms, k, source, tag) if mode in ("hybrid", "bm25") else []
    vector: list[int] = []
    if mode in ("hybrid", "vector"):
        if query_vector is None and embedder is not None:
            query_vector, embedder_error = embed_query(embedder, query)
        vector, note = _vector_ids(conn, config, k, source, tag, query_vector, embedder_error, nearest)
        if note:
            notes.append(note)
    pending = db.count_pending(conn) if config.embedding.enabled else 0
    if pending and mode != "bm25":
        notes.append(f"{pending} chunks still awaiting vectors: they are found by words only")
    hits = _fuse(conn, terms, bm25, vector, limit)
    if not hits and not db.counts(conn)["chunks"]:
        notes.append("the index is empty: run `notes-portal build`")
    return SearchResult(query, mode, tuple(hits), tuple(notes))


def embed_query(embedder: Embedder, query: str) -> tuple[bytes | None, str | None]:
    """The query's vector, or None and the provider's error."""
    try:
        return embedder.embed_query(query[:MAX_QUERY_CHARS]), None
    except EmbeddingError as exc:
        return None, str(exc)


def _vector_ids(conn: Connection, config: Config, k: int, source: str | None, tag: str | None,
                vector: bytes | None, embedder_error: str | None,
                nearest: Nearest | None) -> tuple[list[int], str | None]:
    if not config.embedding.enabled:
        return [], "embeddings disabled (provider: none): FTS-only results"
    if vector is None:
        return [], f"embeddings unavailable ({embedder_error or 'no embedder'}): FTS-only results"
    ids = nearest(vector, db.vector_candidates(k, source is not None or tag is not None)) if nearest else None
    if ids is None:
        return db.knn_search(conn, vector, k, source, tag), None
    return db.filter_chunk_ids(conn, ids, source, tag)[:k], None


def fuse(*rankings: list[int]) -> list[tuple[int, float]]:
    """Reciprocal Rank Fusion: chunk ids with their summed ``1 / (RRF_K + rank)``, best first
    (ties: the smaller id)."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] = scores.get(chunk_id, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _fuse(conn: Connection, terms: list[str], bm25: list[int], vector: list[int], limit: int) -> list[Hit]:
    fused = fuse(bm25, vector)[:limit]
    scores = dict(fused)
    ordered = [chunk_id for chunk_id, _ in fused]
    bm25_rank = {cid: r for r, cid in enumerate(bm25, start=1)}
    vec_rank = {cid: r for r, cid in enumerate(vector, start=1)}
    rows = db.chunk_details(conn, ordered)
    hits = []
    for chunk_id in ordered:
        row = rows.get(chunk_id)
        if row is None:
            continue
        hits.append(Hit(source=row["source_id"], path=row["path"], title=row["title"],
                        breadcrumb=row["breadcrumb"], anchor=row["anchor"], line_start=row["line_start"],
                        snippet=snippet(row["text"], terms), score=round(scores[chunk_id], 6),
                        ranks={"bm25": bm25_rank.get(chunk_id), "vector": vec_rank.get(chunk_id)},
                        url=hit_url(row["source_id"], row["path"], row["anchor"])))
    return hits


def provenance(hit: Hit) -> str:
    """``bm25 #2, vec #1`` — which half found the hit, at which rank."""
    parts = []
    if hit.ranks.get("bm25"):
        parts.append(f"bm25 #{hit.ranks['bm25']}")
    if hit.ranks.get("vector"):
        parts.append(f"vec #{hit.ranks['vector']}")
    return ", ".join(parts)
