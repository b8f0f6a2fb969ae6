"""Crash anywhere: SIGKILL ``notes-portal build`` at many moments and check that the next build converges.

    python tests/crash_harness.py --moments 60 --seed 1 [--corpus naucse] [--vectors] [--json out.json]

A real corpus from ``../shared/corpora`` is copied into a temporary folder source. Each moment:

1. the notes change (seeded): a note is added, edited (body and a heading), deleted, unpublished
   (``published: false``) or published again; a ``first`` moment also starts from an empty data
   dir and site;
2. a dry run of the build (``build``, or ``build --full`` for a ``full`` moment) on a snapshot of the
   state numbers every call of a ``builder/`` function and labels it with its phase (see
   ``tests/crash_child.py``); the kill point N is picked inside the phase the schedule targets;
3. the same build runs again from the same state and SIGKILLs itself at event N;
4. one normal recovery build (``build``) runs, then the checks: the recovery build exits 0;
   ``PRAGMA integrity_check`` and FTS5 ``integrity-check`` pass; every ``vec_chunks`` rowid is a
   chunk and every chunk has a vector (``--vectors``); no leftover ``*.tmp``/``*.swap`` files or
   dead ``index-*.sqlite*`` generations (with their ``-wal``/``-shm``); the index holds the same
   notes and chunks as a clean build, and the site equals the clean build's site (same files, same
   bytes once the ``YYYY-MM-DD HH:MM`` build times are masked; the renderer's own top-level
   dot-files and ``.render-cache/`` are not compared). The clean build runs on the same notes into
   a fresh data dir and site, meanwhile.

After a failed moment the state is reset to the clean build's, so that each moment is judged on
its own. ``--vectors`` configures ``provider: ollama`` against a stand-in Ollama server in this
process (``tests.conftest.FakeOllama``). Exit code 0 only when every moment passed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.crash_notes import OPS, Mutator  # noqa: E402  (after the path is set)

CHILD = ROOT / "tests" / "crash_child.py"
CORPORA = {"naucse": ROOT.parent / "shared" / "corpora" / "naucse" / "lessons",
           "kemt-wiki": ROOT.parent / "shared" / "corpora" / "kemt-wiki" / "pages"}
BUILD_TIME = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d|\d{1,2}(?:\. \d{1,2}\.| [A-Z][a-z]{2}) \d{4} \d\d:\d\d")
FULL_TARGETS = ("startup", "startup-tx", "scan", "index", "index-tx", "between", "swap", "render", "swap", "render",
                "end", "any")
INCR_TARGETS = ("scan", "index-tx", "index", "between", "render", "render", "end", "any")
VECTOR_TARGETS = ("embed", "embed-tx")


@dataclass
class Moment:
    """One kill and its verdict; ``reasons`` is empty when every check passed."""

    number: int
    kind: str  # first (empty state, build), incr (build), full (build --full)
    target: str  # the phase the kill point was picked in ("any": the whole build)
    n: int = 0
    events: int = 0
    phase: str = ""
    function: str = ""
    mutations: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # harness remarks (not write-path verdicts)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.reasons


@dataclass(frozen=True)
class Portal:
    """A config file with its data dir and site; the notes folder is shared by path."""

    dir: Path

    @property
    def config(self) -> Path:
        return self.dir / "portal.yaml"

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def site(self) -> Path:
        return self.dir / "site"

    def write_config(self, notes: Path, embedding_yaml: str) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.config.write_text(f"site:\n  title: Crash anywhere\n  output: site\nindex: data/index.sqlite\n"
                               f"{embedding_yaml}sources:\n  notes:\n    folder: {notes}\n", encoding="utf-8")

    def wipe(self) -> None:
        for path in (self.data, self.site):
            shutil.rmtree(path, ignore_errors=True)

    def copy_state(self, other: Portal) -> None:
        """Make this portal's data dir and site copies of ``other``'s (symlinks and mtimes kept)."""
        self.wipe()
        for name in ("data", "site"):
            if (other.dir / name).exists():
                shutil.copytree(other.dir / name, self.dir / name, symlinks=True)


def child(portal: Portal, mode: str, report: Path | None = None, full: bool = False) -> list[str]:
    """The command line of one build through ``tests/crash_child.py`` (mode: plain, count or N)."""
    return [sys.executable, str(CHILD), str(ROOT), mode, str(report or os.devnull), "build", "--vectors", "now",
            "--config", str(portal.config), *(["--full"] if full else [])]


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}  # same set order in the dry run and the kill run
    return subprocess.run(command, env=env, capture_output=True, text=True, check=False)


def start(command: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


# ---------------------------------------------------------------- the checks


def check(work: Portal, clean: Portal, vectors: bool) -> list[str]:
    """Why ``work`` (after its recovery build) is not what the clean build made; empty when it is."""
    from builder.core import index as db

    reasons: list[str] = []
    current = Path(os.path.realpath(work.data / "index.sqlite"))
    if not (work.data / "index.sqlite").exists():
        return ["no index after the recovery build"]
    conn = db.connect(current)
    try:
        result = conn.execute("PRAGMA integrity_check").fetchone()[0]
        if result != "ok":
            reasons.append(f"integrity_check: {result}")
        try:
            conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES ('integrity-check', 1)")
        except db.sqlite_module().DatabaseError as exc:
            reasons.append(f"fts5 integrity-check: {exc}")
        chunks = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        vecs = {r[0] for r in conn.execute("SELECT rowid FROM vec_chunks")} if db.has_vec_table(conn) else set()
        if vecs - chunks:
            reasons.append(f"orphan vectors: {len(vecs - chunks)} vec_chunks rows without a chunk")
        if vectors and chunks - vecs:
            reasons.append(f"missing vectors: {len(chunks - vecs)} of {len(chunks)} chunks have none")
        ours = _index_rows(conn)
    finally:
        conn.close()
    leftovers = [str(p.relative_to(work.dir)) for p in sorted(work.data.iterdir())
                 if (p.name.startswith("index-") and ".sqlite" in p.name
                     and p.name not in {current.name + s for s in ("", "-wal", "-shm")})
                 or p.name.endswith((".tmp", ".swap"))]
    leftovers += [str(p.relative_to(work.dir)) for p in sorted(work.site.rglob("*")) if p.name.endswith(".tmp")]
    if leftovers:
        reasons.append(f"{len(leftovers)} leftover files: {', '.join(leftovers[:3])}")
    conn = db.connect(Path(os.path.realpath(clean.data / "index.sqlite")), readonly=True, vec=False)
    try:
        theirs = _index_rows(conn)
    finally:
        conn.close()
    for table, mine, other in zip(("notes", "chunks"), ours, theirs, strict=True):
        if mine != other:
            reasons.append(f"index {table} differ from the clean build: {len(mine - other)} extra, "
                           f"{len(other - mine)} missing (e.g. {min(mine ^ other)[:2]})")
    diff = site_diff(work.site, clean.site)
    if diff:
        reasons.append(f"site differs from the clean build: {diff}")
    return reasons


def _index_rows(conn: object) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    files = {tuple(r) for r in conn.execute("SELECT path, status, sha256, title FROM files")}  # type: ignore[attr-defined]
    chunks = {tuple(r) for r in conn.execute("SELECT path, chunk_idx, anchor, text FROM chunks")}  # type: ignore[attr-defined]
    return files, chunks


def site_files(site: Path) -> dict[str, bytes]:
    """Relative path → bytes with build times masked. The renderer's own state, the top-level
    dot-files and dot-folders (manifest, stamp, journal, ``.render-cache/``, the site marker), is
    left out; temporary files (``*.tmp``) never are."""
    found: dict[str, bytes] = {}
    for path in sorted(site.rglob("*")) if site.is_dir() else ():
        rel = path.relative_to(site).as_posix()
        if path.is_file() and (not rel.startswith(".") or rel.endswith(".tmp")):
            found[rel] = BUILD_TIME.sub(b"YYYY-MM-DD HH:MM", path.read_bytes())
    return found


def site_diff(site: Path, clean: Path) -> str:
    """'' when both sites hold the same files with the same (masked) bytes, else a summary."""
    ours, theirs = site_files(site), site_files(clean)
    extra, missing = sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours))
    changed = sorted(p for p in set(ours) & set(theirs) if ours[p] != theirs[p])
    parts = [f"{len(paths)} {what} ({paths[0]})" for what, paths in
             (("extra", extra), ("missing", missing), ("changed", changed)) if paths]
    return ", ".join(parts)


# ---------------------------------------------------------------- one moment


@dataclass(frozen=True)
class Trace:
    """A dry run's events: ``phases[i]`` and ``functions[i]`` belong to event number ``i + 1``."""

    phases: list[str]
    functions: list[str]

    @classmethod
    def load(cls, path: Path) -> Trace:
        data = json.loads(path.read_text(encoding="utf-8"))
        return cls([data["phases"][p] for p, _ in data["trace"]], [data["functions"][f] for _, f in data["trace"]])

    def pick(self, target: str, j: int, rng: random.Random) -> int:
        """An event number inside ``target`` (a phase; "any": anywhere; "fn:module.function": the
        ``j``-th call of that function): the ``j``-th point of a van der Corput sequence over its
        events, slightly jittered, so that repeats spread out."""
        if target.startswith("fn:"):
            calls = [i for i, f in enumerate(self.functions) if f == target[3:]]
            return calls[min(j, len(calls) - 1)] + 1 if calls else len(self.functions) // 2
        events = [i for i, p in enumerate(self.phases) if target in ("any", p)] or list(range(len(self.phases)))
        q, base, k = 0.0, 0.5, j + 1
        while k:
            q, k, base = q + base * (k & 1), k >> 1, base / 2
        return events[int((q + rng.random() * 0.1) % 1.0 * len(events))] + 1


class Harness:
    """A notes folder, the portal under test (``work``) and the clean reference (``clean``)."""

    def __init__(self, tmp: Path, rng: random.Random, embedding_yaml: str, vectors: bool) -> None:
        self.tmp, self.rng, self.vectors = tmp, rng, vectors
        self.notes = tmp / "notes"
        self.work, self.clean, self.snapshot = Portal(tmp / "work"), Portal(tmp / "clean"), Portal(tmp / "snap")
        for portal in (self.work, self.clean):
            portal.write_config(self.notes, embedding_yaml)
        self.mutator = Mutator(self.notes, rng)
        self.picks: Counter[tuple[str, str]] = Counter()

    def build(self, full: bool = False) -> None:
        """A plain build of ``work`` (to prepare a state)."""
        done = run(child(self.work, "plain", full=full))
        if done.returncode != 0:
            raise RuntimeError(f"build failed ({done.returncode}): {last_line(done.stderr)}")

    def moment(self, number: int, kind: str, target: str, ops: tuple[str, ...], after: tuple[str, ...] = ()) -> Moment:
        """Mutate (``ops``), dry-run, kill at the picked event, mutate again (``after``), recover,
        check (see the module docstring)."""
        started = time.perf_counter()
        m = Moment(number, kind, target)
        if kind == "first":
            self.work.wipe()
        m.mutations = [self.mutator.apply(op, number) for op in ops]
        self.clean.wipe()
        reference = None if after else start(child(self.clean, "plain"))  # it builds the final notes
        full, report = kind == "full", self.tmp / "report.txt"
        self.snapshot.copy_state(self.work)
        dry = run(child(self.work, "count", self.tmp / "trace.json", full=full))
        self.work.copy_state(self.snapshot)
        trace = Trace.load(self.tmp / "trace.json")
        m.events = len(trace.phases)
        if dry.returncode != 0:
            m.notes.append(f"dry run exited {dry.returncode}: {last_line(dry.stderr)}")
        if target == "none":  # the control: the build runs to its end
            m.n, m.phase, m.function = m.events + 1, "none", "-"
        else:
            m.n = trace.pick(target, self.picks[(kind, target)], self.rng)
            self.picks[(kind, target)] += 1
            m.phase, m.function = trace.phases[m.n - 1], trace.functions[m.n - 1]
        report.unlink(missing_ok=True)
        killed = run(child(self.work, "0" if target == "none" else str(m.n), report, full=full))  # 0: never
        if target == "none":
            if killed.returncode != 0:
                m.reasons.append(f"the build exited {killed.returncode}: {last_line(killed.stderr)}")
        elif killed.returncode != -signal.SIGKILL:
            m.reasons.append(f"not killed: the build exited {killed.returncode} before event {m.n}")
        elif report.read_text().split("\t")[1].strip() != m.function:
            m.notes.append(f"trace drift: killed in {report.read_text().split(chr(9))[1].strip()}")
        m.mutations += [f"after the kill: {self.mutator.apply(op, number)}" for op in after]
        reference = reference or start(child(self.clean, "plain"))
        recovery = run(child(self.work, "plain"))
        _, err = reference.communicate()
        if reference.returncode != 0:
            raise RuntimeError(f"clean build failed ({reference.returncode}): {last_line(err)}")
        if recovery.returncode != 0:
            m.reasons.append(f"recovery build exited {recovery.returncode}: {last_line(recovery.stderr)}")
        m.reasons += check(self.work, self.clean, self.vectors)
        if m.reasons:
            self.work.copy_state(self.clean)  # judge the next moment on its own
        m.seconds = time.perf_counter() - started
        return m


def schedule(moments: int, vectors: bool) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """(kind, target phase, changes before, changes after the kill) per moment: per ten, 1 first,
    3 full and 6 incremental builds; targets rotate through each kind's phases; two changes to the
    notes before each kill and, every fourth moment, the note just added is deleted after it (a
    page a killed render wrote for it must not survive)."""
    extra = VECTOR_TARGETS if vectors else ()
    rotations = {"full": (*FULL_TARGETS, *extra), "incr": (*INCR_TARGETS, *extra)}
    seen: Counter[str] = Counter()
    plan: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]] = []
    for i in range(moments):
        kind = "first" if i % 10 == 0 else "full" if i % 10 in (3, 6, 9) else "incr"
        group = "incr" if kind == "incr" else "full"
        target = rotations[group][seen[group] % len(rotations[group])]
        seen[group] += 1
        ops = (OPS[(2 * i) % 5], OPS[(2 * i + 1) % 5])
        plan.append((kind, target, ops, ("delete-added",) if "add" in ops and i % 4 == 1 else ()))
    return plan


def summary(moments: list[Moment]) -> str:
    """Phases × kinds of the kill points, the distinct moments and the failures by first reason."""
    kinds = ("first", "incr", "full")
    counts = Counter((m.phase, m.kind) for m in moments)
    lines = [f"{'phase':<12}" + "".join(f"{k:>7}" for k in kinds) + f"{'all':>7}{'failed':>8}"]
    for phase in sorted({m.phase for m in moments}):
        failed = sum(1 for m in moments if m.phase == phase and not m.passed)
        lines.append(f"{phase:<12}" + "".join(f"{counts[(phase, k)]:>7}" for k in kinds)
                     + f"{sum(counts[(phase, k)] for k in kinds):>7}{failed:>8}")
    distinct = len({(m.kind, m.n, m.function) for m in moments})
    passed = sum(m.passed for m in moments)
    lines.append(f"{len(moments)} moments ({distinct} distinct kill points): {passed} passed, "
                 f"{len(moments) - passed} failed")
    for reason, n in Counter(re.sub(r"\d+", "#", m.reasons[0].split(":")[0]) for m in moments
                             if m.reasons).most_common():
        lines.append(f"  {n:>3} × {reason}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--moments", type=int, default=60)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--corpus", choices=sorted(CORPORA), default="naucse")
    parser.add_argument("--vectors", action="store_true", help="provider: ollama against a stand-in server")
    parser.add_argument("--json", metavar="FILE", help="write every moment and the summary here")
    args = parser.parse_args(argv)
    from tests.conftest import FakeOllama, ollama_yaml

    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="crash-anywhere-") as tmp, FakeOllama() as ollama:
        shutil.copytree(CORPORA[args.corpus], Path(tmp) / "notes")
        embedding = ollama_yaml(ollama.url) if args.vectors else "embedding:\n  provider: none\n"
        harness = Harness(Path(tmp), random.Random(args.seed), embedding, args.vectors)
        print(f"{'#':>3} {'kind':<5} {'target':<10} {'N':>7} {'of E':>7} {'phase':<10} {'function':<46} result")
        moments = []
        for i, (kind, target, ops, after) in enumerate(schedule(args.moments, args.vectors), start=1):
            m = harness.moment(i, kind, target, ops, after)
            moments.append(m)
            verdict = "pass" if m.passed else f"FAIL: {m.reasons[0]}"
            print(f"{i:>3} {kind:<5} {target:<10} {m.n:>7} {m.events:>7} {m.phase:<10} {m.function[-46:]:<46} "
                  f"{verdict}{'  [' + '; '.join(m.notes) + ']' if m.notes else ''}", flush=True)
    seconds = time.perf_counter() - started
    text = summary(moments)
    print(f"\n{text}\n{seconds:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"corpus": args.corpus, "seed": args.seed, "vectors": args.vectors,
                                               "seconds": round(seconds, 1), "summary": text,
                                               "moments": [asdict(m) for m in moments]},
                                              ensure_ascii=False, indent=1), encoding="utf-8")
    return 0 if all(m.passed for m in moments) else 1


if __name__ == "__main__":
    raise SystemExit(main())
