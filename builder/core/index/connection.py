"""Opening the index: the right sqlite3 module, sqlite-vec, WAL, explicit transactions."""

from __future__ import annotations

import os
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from builder.core.errors import IndexMissing

# The statements are constants: each is dedented once (every SQL module of the index uses this).
dedent = cache(textwrap.dedent)

if TYPE_CHECKING:
    # pysqlite3's Connection has the same API; the standard class names the type.
    from sqlite3 import Connection


# SQLite 3.51.0 and 3.51.1 (the pysqlite3-binary wheel bundles 3.51.1) can deadlock in their unix VFS when
# one thread opens a database file while another closes the last connection to the same file in this
# process: sqlite3WalClose → unixLock → unixIsSharingShmNode holds the file's inode mutex and waits for
# the VFS's global one, unixOpen → findReusableFd holds them the other way round (fixed in 3.51.2). A
# server that runs sync jobs opens and closes the index in several threads, so every open (with its
# first statements) and every close of a connection made here takes this process-wide lock: both are
# rare and short. tests/test_sqlite_gate.py reproduces the deadlock without it.
OPEN_CLOSE = threading.RLock()
@cache
def _gated_class(sqlite3: ModuleType) -> type:
    """``sqlite3.Connection`` whose ``close()`` takes :data:`OPEN_CLOSE` (one class per sqlite3 module)."""

    class GatedConnection(sqlite3.Connection):  # type: ignore[name-defined]
        batch: Any = None  # the open batch.WriteBatch that each transaction() joins

        def close(self) -> None:
            with OPEN_CLOSE:
                super().close()

    return GatedConnection


def sqlite_module() -> ModuleType:
    """The standard sqlite3 when it can load extensions, else pysqlite3 (same API)."""
    import sqlite3

    if hasattr(sqlite3.Connection, "enable_load_extension"):
        return sqlite3
    import pysqlite3.dbapi2 as pysqlite3

    return pysqlite3


def connect(path: Path, *, readonly: bool = False, vec: bool = True, timeout: float = 10.0,
            check_same_thread: bool = True, snapshot: bool = False) -> Connection:
    """Open a database file (autocommit, explicit transactions); load sqlite-vec when ``vec``.

    ``check_same_thread=False`` is for a pool that hands a read-only connection to one thread at a time.
    ``snapshot`` opens it read-only as an immutable file, without the WAL index (see :func:`snapshot_only`).
    """
    sqlite3 = sqlite_module()
    with OPEN_CLOSE:
        conn = _open(sqlite3, path, readonly, snapshot, timeout, check_same_thread)
        try:
            return _configure(conn, sqlite3, vec=vec, readonly=readonly or snapshot)
        except BaseException:
            conn.close()
            raise


def _open(sqlite3: ModuleType, path: Path, readonly: bool, snapshot: bool, timeout: float,
          check_same_thread: bool) -> Connection:
    factory = _gated_class(sqlite3)
    if readonly or snapshot:
        mode = "ro&immutable=1" if snapshot else "ro"
        return sqlite3.connect(f"file:{path}?mode={mode}", uri=True, isolation_level=None, timeout=timeout,
                               check_same_thread=check_same_thread, factory=factory)
    return sqlite3.connect(str(path), isolation_level=None, timeout=timeout, factory=factory)


def _configure(conn: Connection, sqlite3: ModuleType, *, vec: bool, readonly: bool) -> Connection:
    conn.row_factory = sqlite3.Row
    # SQLite's lower() folds ASCII only; tags are Czech and Slovak.
    conn.create_function("casefold", 1, lambda v: v.casefold() if isinstance(v, str) else v, deterministic=True)
    if vec:
        load_vec(conn)
    if not readonly:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        # Keep the WAL small (checkpoint every ~1 MB, and shrink it back to that): a build on a nearly full
        # disk must not need 4 MB of WAL more than the index itself takes.
        conn.execute("PRAGMA wal_autocheckpoint=256")
        conn.execute("PRAGMA journal_size_limit=1048576")
    conn.execute("PRAGMA foreign_keys=ON")
    return conn


def snapshot_only(path: Path) -> bool:
    """Can ``path`` be read only as an immutable snapshot? So when a reader cannot create the WAL index
    (``-shm``, on a full disk) while the file holds everything (no WAL beside it, as after the last
    connection closed cleanly): reading the main file alone is then exact."""
    def size(companion: Path) -> int:
        try:
            return companion.stat().st_size
        except FileNotFoundError:
            return 0

    # A WAL index in use is at least 32 KiB; a failed open may leave a few bytes of one behind.
    return size(Path(f"{path}-shm")) < 32768 and size(Path(f"{path}-wal")) == 0


def open_index(index: Path, *, vec: bool = True) -> Connection:
    """A read-only connection to the generation the configured ``index`` path points at now.
    Raises :class:`IndexMissing` when no build has made one yet."""
    if not index.exists():
        raise IndexMissing(index)
    return connect(Path(os.path.realpath(index)), readonly=True, vec=vec)


def load_vec(conn: Connection) -> None:
    """Load the sqlite-vec extension into an open connection."""
    conn.enable_load_extension(True)
    conn.load_extension(_vec_extension())
    conn.enable_load_extension(False)


@cache
def _vec_extension() -> str:
    """The path of the ``vec0`` library in the sqlite-vec package, found without importing the package
    (it imports numpy: 70 ms the every-minute build does not need)."""
    import importlib.util

    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        import sqlite_vec  # an unusual install: let the package say where its library is

        return str(sqlite_vec.loadable_path())
    return os.path.join(next(iter(spec.submodule_search_locations)), "vec0")


def vec_version(conn: Connection) -> str:
    """The sqlite-vec version loaded into ``conn``."""
    return str(conn.execute("SELECT vec_version()").fetchone()[0])


def checkpoint(conn: Connection) -> None:
    """Move the WAL into the database file and empty it (before a generation is swapped in)."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@contextmanager
def read_snapshot(conn: Connection) -> Iterator[Connection]:
    """BEGIN … COMMIT around reads that must all see the index as it was at the first of them."""
    conn.execute("BEGIN")
    try:
        yield conn
    finally:
        conn.execute("COMMIT")


@contextmanager
def transaction(conn: Connection) -> Iterator[Connection]:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any exception: all or nothing. Within a
    :class:`builder.core.index.batch.WriteBatch` it is a step of the batch's transaction (all or
    nothing still, see there)."""
    batch = getattr(conn, "batch", None)
    if batch is not None:
        with batch.step():
            yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
