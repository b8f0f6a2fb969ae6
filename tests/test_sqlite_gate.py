"""Opening and closing connections from several threads at once never hangs.

SQLite 3.51.0 and 3.51.1 deadlock in their unix VFS when one thread opens a database file while
another closes the last connection to it in the same process (see builder.core.index.connection).
A server running sync jobs does exactly that: request threads open the index, the job's build closes
it. Four threads open, read, write and close one file for a few seconds in a child process; without
the lock around opens and closes, that child hung in one run of three (a detector, not a proof).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from builder.core.index import connect

    path = Path(sys.argv[1])
    setup = connect(path, vec=False)
    setup.execute("CREATE TABLE t (x)")
    setup.close()
    stop = time.monotonic() + float(sys.argv[2])
    rounds = [0] * 4

    def work(n: int) -> None:
        while time.monotonic() < stop:
            conn = connect(path, vec=False, readonly=n % 2 == 0)
            conn.execute("SELECT count(*) FROM t").fetchone()
            if n % 2:
                conn.execute("INSERT INTO t VALUES (1)")
            conn.close()
            rounds[n] += 1

    threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    print(min(rounds))
""")


@pytest.mark.slow
def test_threads_opening_and_closing_one_file_never_deadlock(tmp_path):
    proc = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "gate.sqlite"), "4"], cwd=PROJECT,
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) > 100  # every thread went round many times
