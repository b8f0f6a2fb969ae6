"""What the render remembers between builds: ``<site>/.render-state``, a small SQLite file of its own.

It holds the render manifest (:mod:`builder.render.manifest` says what is in it; :func:`read_manifest`
reads it, or an older renderer's file, for the render and for ``status``): a dict whose big
maps (every note's entry, every page's fingerprint: 10,000 of each for 10,000 notes; the caller
names them) are split by key into :data:`SHARDS` rows of ``shards``, each a marshal blob, and
whose other values are rows of ``meta``. A one-note build changes one entry and a few page
fingerprints, so a save rewrites only the shards that changed, in one transaction, instead of the
whole manifest (docs/BENCHMARKS.md has what that saves); a render still reads every shard, as fast
as one file (big blobs, one query). A reader sees the last complete save or the one before (SQLite's
rollback journal), never half of one. Like :mod:`builder.core.index.jobqueue` it is its own database,
with its SQL in this package.
"""

from __future__ import annotations

import json
import marshal
import zlib
from collections.abc import Callable, Collection, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from textwrap import dedent
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from builder.core.index.connection import OPEN_CLOSE, sqlite_module

if TYPE_CHECKING:
    from sqlite3 import Connection

STATE_FILE = ".render-state"
JOURNAL_FILE = f"{STATE_FILE}-journal"  # SQLite's rollback journal, there while a save runs
FORMAT = 2  # PRAGMA user_version: the layout below (1: 64 shards a map); a file of another layout is not read
SHARDS = 256  # rows per map: ~40 entries (~28 kB of notes' entries) each at 10,000 notes
# read_state also reads these layouts, for the pages an older renderer wrote (the next save makes the file anew)
_READ_WHOLE = frozenset({1, FORMAT})
# Renderers before this file kept the manifest in one marshal file, and before that in JSON: either is read
# (:func:`read_manifest`) once when there is no state yet, then removed by the render's next save.
MARSHAL_MANIFEST = ".render-manifest"
MANIFEST_MAGIC = b"notes-portal manifest\n"  # then marshal data (a dict of str, int, list and dict only)
JSON_MANIFEST = ".render-manifest.json"
# the manifest's own layout: 2: entry keys spelled out; 3: dates, broken links with lines; 4: the delta render's
# titles and file links kept by shards (builder.render.output.MAPS); 5: the links between notes kept by shards,
# both ways (a one-note render reads those two hops around it)
MANIFEST_VERSION = 5

_SCHEMA = dedent("""
    CREATE TABLE IF NOT EXISTS meta (
      key TEXT PRIMARY KEY,
      value BLOB NOT NULL           -- marshal
    ) WITHOUT ROWID;
    CREATE TABLE IF NOT EXISTS shards (
      map TEXT NOT NULL,            -- the manifest's key of a dict ("notes", "pages")
      shard INTEGER NOT NULL,       -- see shard_of
      data BLOB NOT NULL,           -- marshal: the part of that dict whose keys fall in this shard
      PRIMARY KEY (map, shard)
    ) WITHOUT ROWID;
""")
_UNREADABLE = (ValueError, EOFError, TypeError)  # what marshal raises on bytes that are not its own


def shard_of(key: str) -> int:
    """The shard a key of a map is kept in (the same in every process, unlike ``hash``)."""
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % SHARDS


class StoredMap(dict[str, Any]):
    """A map as :func:`read_state` found it, with the keys of each shard: a save that rewrites a
    few shards looks only at their keys, not at every key's shard."""

    shards: dict[int, list[str]]


def read_state(path: Path, unread: Collection[str] = (), only: Collection[str] | None = None) -> dict[str, Any]:
    """The manifest the last complete save stored at ``path``, or ``{}`` when there is none or it
    cannot be read (damaged, a layout not in :data:`_READ_WHOLE`): the render then starts afresh. The keys
    ``unread`` are left out (a render that will not use them; :func:`write_state` then writes them whole), and
    all but the keys ``only`` when given."""
    if not path.is_file():
        return {}
    sqlite3 = sqlite_module()
    try:
        with _connection(path, create=False) as conn:
            if conn.execute("PRAGMA user_version").fetchone()[0] not in _READ_WHOLE:
                return {}
            skipped = {"unread": json.dumps(sorted(unread)), "only": None if only is None else json.dumps(sorted(only))}
            found: dict[str, Any] = {key: marshal.loads(value) for key, value in conn.execute(dedent("""
                SELECT key, value FROM meta WHERE key NOT IN (SELECT value FROM json_each(:unread))
                AND (:only IS NULL OR key IN (SELECT value FROM json_each(:only)))"""), skipped)}
            for name, shard, data in conn.execute(dedent("""
                SELECT map, shard, data FROM shards WHERE map NOT IN (SELECT value FROM json_each(:unread))
                AND (:only IS NULL OR map IN (SELECT value FROM json_each(:only)))
                ORDER BY map, shard"""), skipped):
                part = marshal.loads(data)
                if name in found and not isinstance(found[name], StoredMap):
                    return {}  # a key kept both whole and by shards (by two renderers): start afresh
                if name not in found:
                    found[name] = StoredMap()
                    found[name].shards = {}
                found[name].update(part)
                found[name].shards[shard] = list(part)
    except (sqlite3.DatabaseError, *_UNREADABLE):
        return {}
    return found


def read_manifest(site: Path, unread: Collection[str] = ()) -> dict[str, Any]:
    """The last saved manifest of the render of ``site``, whatever its version (the state file's, else an
    older renderer's file), or ``{}`` when there is none (or it is unreadable), without the keys ``unread``.
    See :func:`current_manifest`."""
    if (site / STATE_FILE).is_file():
        return read_state(site / STATE_FILE, unread)
    found = _marshal_manifest(site)
    for key in unread:
        found.pop(key, None)
    return found


def _marshal_manifest(site: Path) -> dict[str, Any]:
    try:
        raw = (site / MARSHAL_MANIFEST).read_bytes()
    except FileNotFoundError:
        return _json_manifest(site)
    except OSError:
        return {}
    try:
        data = marshal.loads(raw[len(MANIFEST_MAGIC):]) if raw.startswith(MANIFEST_MAGIC) else None
    except _UNREADABLE:  # cut short or not ours: as if there were none
        return {}
    return data if isinstance(data, dict) else {}


def _json_manifest(site: Path) -> dict[str, Any]:
    try:
        data = json.loads((site / JSON_MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def current_manifest(saved: dict[str, Any]) -> dict[str, Any]:
    """``saved`` (see :func:`read_manifest`) if this version's renderer wrote it, else ``{}``."""
    return saved if saved.get("version") == MANIFEST_VERSION else {}


def load_manifest(site: Path) -> dict[str, Any]:
    """The previous render's manifest, or ``{}`` when there is none (or it is unreadable, or an older
    version's)."""
    return current_manifest(read_manifest(site))


def read_meta(path: Path, keys: Collection[str] | None = None) -> dict[str, Any] | None:
    """The stored manifest's values but its maps (of ``keys`` only, those it holds, when given); None when there
    is none or it cannot be read."""
    if keys is None:
        return _read(path, "SELECT key, value FROM meta", {}, _decoded)
    return _read(path, "SELECT key, value FROM meta WHERE key IN (SELECT value FROM json_each(:keys))",
                 {"keys": json.dumps(sorted(keys))}, _decoded)


def _decoded(rows: Iterable[tuple[str, bytes]]) -> dict[str, Any]:
    return {key: marshal.loads(value) for key, value in rows}


def read_keys(path: Path, name: str, keys: Iterable[str]) -> dict[str, Any] | None:
    """The values of ``keys`` in map ``name`` (those it holds), reading only their shards; None
    when they cannot be read."""
    wanted = set(keys)
    shards = json.dumps(sorted({shard_of(key) for key in wanted}))

    def pick(rows: Iterable[tuple[bytes]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for (data,) in rows:
            found.update((key, value) for key, value in marshal.loads(data).items() if key in wanted)
        return found

    return _read(path, "SELECT data FROM shards WHERE map = :map AND shard IN (SELECT value FROM json_each(:shards))",
                 {"map": name, "shards": shards}, pick)


def read_map(path: Path, name: str) -> dict[str, Any] | None:
    """All of map ``name``; None when it cannot be read."""
    def merge(rows: Iterable[tuple[bytes]]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        for (data,) in rows:
            found.update(marshal.loads(data))
        return found

    return _read(path, "SELECT data FROM shards WHERE map = :map", {"map": name}, merge)


def _read(path: Path, sql: str, params: dict[str, Any],
          decode: Callable[[Any], dict[str, Any]]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    sqlite3 = sqlite_module()
    try:
        with _connection(path, create=False) as conn:
            if conn.execute("PRAGMA user_version").fetchone()[0] != FORMAT:
                return None
            return decode(conn.execute(sql, params))
    except (sqlite3.DatabaseError, *_UNREADABLE):
        return None


def patch_state(path: Path, meta: dict[str, Any], maps: dict[str, dict[str, Any]]) -> bool:
    """Change the stored manifest in place: set these plain values, and these keys of these maps (a
    value of None removes the key). Only the shards holding those keys are read and written, in one
    transaction. False when the file turns out damaged: it is then removed (the next render starts
    afresh, as without one)."""
    sqlite3 = sqlite_module()
    try:
        with _connection(path, create=False) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for key, value in meta.items():
                    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (:key, :value)",
                                 {"key": key, "value": marshal.dumps(value)})
                for name, changes in maps.items():
                    for shard in sorted({shard_of(key) for key in changes}):
                        _patch_shard(conn, name, shard, {k: v for k, v in changes.items() if shard_of(k) == shard})
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
    except (sqlite3.DatabaseError, *_UNREADABLE):
        _remove(path)
        return False
    return True


def _patch_shard(conn: Connection, name: str, shard: int, changes: dict[str, Any]) -> None:
    row = conn.execute("SELECT data FROM shards WHERE map = :map AND shard = :shard",
                       {"map": name, "shard": shard}).fetchone()
    part = marshal.loads(row[0]) if row else {}
    for key, value in changes.items():
        if value is None:
            part.pop(key, None)
        else:
            part[key] = value
    _put_shard(conn, name, shard, part)


def write_state(path: Path, manifest: dict[str, Any], stored: dict[str, Any], *, maps: Collection[str]) -> None:
    """Store ``manifest`` at ``path``, its keys ``maps`` (dicts) by shards, where ``stored`` is what
    :func:`read_state` read there before (``{}``: nothing usable; then the file is made anew).
    Writes only the rows that differ; a key ``stored`` lacks (not read) is written whole."""
    sqlite3 = sqlite_module()
    if not stored or _layout(path) != FORMAT:
        _remove(path)
        stored = {}
    try:
        _save(path, manifest, stored, maps)
    except sqlite3.DatabaseError:  # damaged since it was read: make it anew
        _remove(path)
        _save(path, manifest, {}, maps)


def _save(path: Path, manifest: dict[str, Any], stored: dict[str, Any], maps: Collection[str]) -> None:
    with _connection(path, create=True) as conn:
        if not stored:
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {FORMAT}")  # an int constant: PRAGMA takes no parameters
        conn.execute("BEGIN IMMEDIATE")
        try:
            for key, value in manifest.items():
                was = stored.get(key)
                if key in maps:
                    if not isinstance(was, StoredMap):  # a value a renderer before kept whole, or one not read
                        conn.execute("DELETE FROM meta WHERE key = :key", {"key": key})
                    _save_map(conn, key, value, was)
                elif isinstance(was, StoredMap) or key not in stored:  # a map a renderer before kept by shards
                    conn.execute("DELETE FROM shards WHERE map = :key", {"key": key})  # (or one not read)
                    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (:key, :value)",
                                 {"key": key, "value": marshal.dumps(value)})
                elif was != value:
                    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (:key, :value)",
                                 {"key": key, "value": marshal.dumps(value)})
            for key, value in stored.items():
                if key in manifest:
                    continue
                if isinstance(value, StoredMap):
                    conn.execute("DELETE FROM shards WHERE map = :key", {"key": key})
                else:
                    conn.execute("DELETE FROM meta WHERE key = :key", {"key": key})
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")


def _save_map(conn: Connection, name: str, new: dict[str, Any], old: Any) -> None:
    """Rewrite the shards of map ``name`` in which ``new`` differs from ``old`` (a
    :class:`StoredMap`; anything else: rewrite them all)."""
    if not isinstance(old, StoredMap):
        conn.execute("DELETE FROM shards WHERE map = :map", {"map": name})
        parts: dict[int, dict[str, Any]] = {}
        for key, value in new.items():
            parts.setdefault(shard_of(key), {})[key] = value
    else:
        missing = object()
        changed = [key for key, value in new.items() if (was := old.get(key, missing)) is not value and was != value]
        added = [key for key in changed if key not in old]
        dirty = {shard_of(key) for key in changed}
        if len(old) > len(new) - len(added):  # some key is gone
            dirty.update(shard_of(key) for key in old.keys() - new.keys())
        parts = {shard: {key: new[key] for key in old.shards.get(shard, ()) if key in new} for shard in dirty}
        for key in added:
            parts[shard_of(key)][key] = new[key]
    for shard, part in parts.items():
        _put_shard(conn, name, shard, part)


def _put_shard(conn: Connection, name: str, shard: int, part: dict[str, Any]) -> None:
    if part:
        conn.execute("INSERT OR REPLACE INTO shards (map, shard, data) VALUES (:map, :shard, :data)",
                     {"map": name, "shard": shard, "data": marshal.dumps(part)})
    else:
        conn.execute("DELETE FROM shards WHERE map = :map AND shard = :shard", {"map": name, "shard": shard})


@contextmanager
def _connection(path: Path, *, create: bool) -> Iterator[Connection]:
    """A connection; a reader's too may write (it rolls back what a killed save left half done)."""
    sqlite3 = sqlite_module()
    with OPEN_CLOSE:
        conn = sqlite3.connect(f"file:{quote(str(path))}?mode={'rwc' if create else 'rw'}", uri=True,
                               isolation_level=None, timeout=10.0)
    try:
        # the rollback journal: no -wal/-shm files stay in the site folder; NORMAL: synced where it
        # keeps a save all-or-nothing (the pages it describes are not synced either)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("PRAGMA synchronous=NORMAL")
        yield conn
    finally:
        with OPEN_CLOSE:
            conn.close()


def _layout(path: Path) -> int | None:
    """The layout (``PRAGMA user_version``) of the state file at ``path``; None when there is none or it cannot
    be read."""
    if not path.is_file():
        return None
    try:
        with _connection(path, create=False) as conn:
            found: int = conn.execute("PRAGMA user_version").fetchone()[0]
            return found
    except sqlite_module().DatabaseError:
        return None


def _remove(path: Path) -> None:
    for name in (path, path.with_name(path.name + "-journal")):
        name.unlink(missing_ok=True)
