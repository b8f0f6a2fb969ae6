"""The embedding cache: a second SQLite file beside the index, keyed by (model, sha256 of input).

It survives ``--full`` rebuilds and generation swaps, so a rename, an unchanged
chunk or a rebuild costs no model call. Its SQL lives here because it is its
own database; the index's SQL lives in :mod:`builder.core.index`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING

from builder.core.index import connect, transaction

if TYPE_CHECKING:
    from sqlite3 import Connection


class EmbeddingCache:
    """An open cache file; use as a context manager (closes the connection)."""

    def __init__(self, path: Path) -> None:
        self.conn: Connection = connect(path, vec=False)
        self.conn.execute(dedent("""
            CREATE TABLE IF NOT EXISTS embeddings (
              model TEXT NOT NULL, sha256 TEXT NOT NULL, vector BLOB NOT NULL,
              PRIMARY KEY (model, sha256)
            ) WITHOUT ROWID
        """))

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.conn.close()

    def get(self, model: str, shas: Sequence[str]) -> dict[str, bytes]:
        """The cached vectors of ``shas`` for ``model`` (missing ones are absent)."""
        rows = self.conn.execute(dedent("""
            SELECT sha256, vector FROM embeddings
            WHERE model = :model AND sha256 IN (SELECT value FROM json_each(:shas))
        """), {"model": model, "shas": json.dumps(list(shas))}).fetchall()
        return {row["sha256"]: bytes(row["vector"]) for row in rows}

    def put(self, model: str, vectors: dict[str, bytes]) -> None:
        """Store vectors by sha256 for ``model`` in one transaction."""
        with transaction(self.conn):
            self.conn.executemany(
                "INSERT OR REPLACE INTO embeddings (model, sha256, vector) VALUES (:model, :sha256, :vector)",
                [{"model": model, "sha256": sha, "vector": blob} for sha, blob in vectors.items()],
            )
