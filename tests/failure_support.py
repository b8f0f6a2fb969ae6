"""Bad input and the build helpers the failure tests share."""

from __future__ import annotations

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config
from builder.sync import build
from builder.core.synclog import SyncLog


def run(config: Config, *, full: bool = False) -> tuple[int, list[str]]:
    """One build: its exit code and its WARN lines."""
    log = SyncLog(config.log_path, echo_info=False)
    code = build(config, log=log, full=full)
    return code, [line.split(" WARN ", 1)[1] for line in log.lines if " WARN " in line]


def found(config: Config, word: str) -> int:
    """How many chunks of the index hold ``word`` (an FTS5 query)."""
    conn = db.connect(indexfile.resolve(config.index), readonly=True, vec=False)
    try:
        query = "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH :word"
        return conn.execute(query, {"word": word}).fetchone()[0]
    finally:
        conn.close()

# 362 bytes that a YAML loader expands to 9^9 strings (a "billion laughs")
ALIAS_BOMB = """---
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
---
# Tajné

Datamax smlouva
"""
