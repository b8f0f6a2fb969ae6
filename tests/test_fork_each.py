"""``forkpool.fork_each``: a few long jobs at once, each but the first in a process forked for it, and what
each returned or raised given back in order. The build walks its folder sources this way. ``forkpool.meanwhile``:
one job in a forked process while this one goes on (the delta render's proof that every page is on disk)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from builder.core.forkpool import fork_each, meanwhile
from tests.failure_support import found, run
from tests.render_support import make_config


HERE = os.getpid()  # the test process: a job "dies" only in a forked one


class Unpicklable(Exception):
    def __reduce__(self):
        raise TypeError("not this one")


def refuse() -> None:
    raise ValueError("cannot be made again here")


class LoadsBadly:
    """Pickled fine in the forked process; unpickling it in this one raises."""

    def __reduce__(self):
        return refuse, ()


def job(item: str) -> object:
    if item == "fails":
        raise ValueError("the job failed: fails")
    if item == "odd":
        raise Unpicklable("an odd one")
    if item == "dies" and os.getpid() != HERE:
        os._exit(3)
    if item == "loads badly":
        return LoadsBadly(), os.getpid()
    if item == "cannot be pickled":
        return (lambda: "a lambda"), os.getpid()
    return item.upper(), os.getpid()


def test_each_result_comes_back_in_order_the_first_made_here_the_others_in_processes_of_their_own():
    results = [call() for call in fork_each(job, ["a", "b", "c"])]
    assert [text for text, _ in results] == ["A", "B", "C"]
    pids = [pid for _, pid in results]
    assert pids[0] == os.getpid() and len(set(pids)) == 3


def test_what_a_job_raises_is_raised_by_its_call_and_the_others_still_return():
    calls = fork_each(job, ["a", "fails", "odd", "b"])
    assert calls[0]()[0] == "A" and calls[3]()[0] == "B"
    with pytest.raises(ValueError, match="^the job failed: fails$"):
        calls[1]()
    with pytest.raises(RuntimeError, match="^an odd one$"):  # cannot be pickled: its message
        calls[2]()


def test_a_job_whose_process_ends_without_its_result_runs_here():
    calls = fork_each(job, ["a", "dies", "loads badly", "cannot be pickled", "b"])
    assert calls[1]() == ("DIES", HERE)  # its process was killed
    result, pid = calls[2]()  # its result could not be unpickled
    assert isinstance(result, LoadsBadly) and pid == HERE
    made, pid = calls[3]()  # its result could not be pickled
    assert made() == "a lambda" and pid == HERE
    assert calls[4]()[0] == "B" and calls[4]()[1] != HERE


def test_one_job_runs_here():
    (call,) = fork_each(job, ["solo"])
    assert call() == ("SOLO", os.getpid())
    with pytest.raises(ValueError):
        fork_each(job, ["fails"])[0]()


def test_a_build_walks_its_folder_sources_each_in_a_process_of_its_own(tmp_path: Path, monkeypatch):
    import builder.sync

    roots = {name: tmp_path / name for name in ("prvy", "druhy", "treti")}
    for name, root in roots.items():
        root.mkdir()
        (root / f"{name}.md").write_text(f"# {name}\n\nslovo{name}.\n", encoding="utf-8")
    config = make_config(tmp_path, roots)
    pids = tmp_path / "pids"
    pids.mkdir()
    real = builder.sync.walk_folder

    def walk_folder(source, *args, **kwargs):
        (pids / source.id).write_text(str(os.getpid()), encoding="utf-8")
        return real(source, *args, **kwargs)

    monkeypatch.setattr(builder.sync, "walk_folder", walk_folder)
    assert run(config) == (0, [])
    walked = {path.name: int(path.read_text(encoding="utf-8")) for path in pids.iterdir()}
    assert sorted(walked) == ["druhy", "prvy", "treti"] and len(set(walked.values())) == 3
    assert os.getpid() in walked.values()
    assert [found(config, f"slovo{name}") for name in roots] == [1, 1, 1]
    (roots["treti"] / "treti.md").write_text("# treti\n\nzmena.\n", encoding="utf-8")
    assert run(config) == (0, []) and found(config, "zmena") == 1 and found(config, "slovotreti") == 0


def waits_for(path: Path) -> tuple[bool, int]:
    """Waits up to 10 s for ``path`` (written by the test process once the job has started): whether it came."""
    (path.parent / "started").write_text(str(os.getpid()), encoding="utf-8")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if path.exists():
            return True, os.getpid()
        time.sleep(0.01)
    return False, os.getpid()


def test_meanwhile_runs_its_job_in_a_process_of_its_own_while_this_one_goes_on(tmp_path: Path):
    with meanwhile(waits_for, tmp_path / "go") as result:
        (tmp_path / "go").write_text("", encoding="utf-8")  # only after the block began: the job waits for it
        came, pid = result()
    assert came and pid != HERE
    with meanwhile(job, "fails") as result, pytest.raises(ValueError, match="^the job failed: fails$"):
        result()
    with meanwhile(job, "dies") as result:  # its process ends without its result: the job runs here
        assert result() == ("DIES", HERE)


def test_meanwhile_left_without_asking_ends_its_process(tmp_path: Path):
    started = time.monotonic()
    with meanwhile(waits_for, tmp_path / "never"):
        while not (tmp_path / "started").exists():
            time.sleep(0.01)
    assert time.monotonic() - started < 5  # not the job's 10 s
    with pytest.raises(ProcessLookupError):  # ended and reaped
        os.kill(int((tmp_path / "started").read_text(encoding="utf-8")), 0)


class Interrupted(Exception):
    pass


def test_meanwhile_interrupted_while_waiting_raises_that_and_leaves_no_process(tmp_path: Path):
    """A signal while the result is awaited (Ctrl-C): what it raised comes out, not an error of the clean-up, and
    the job's process is ended and reaped."""
    import signal

    def interrupt(signum, frame):
        raise Interrupted

    before = signal.signal(signal.SIGALRM, interrupt)
    try:
        with pytest.raises(Interrupted), meanwhile(waits_for, tmp_path / "never") as result:
            while not (tmp_path / "started").exists():
                time.sleep(0.01)
            signal.setitimer(signal.ITIMER_REAL, 0.3)
            result()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    with pytest.raises(ProcessLookupError):
        os.kill(int((tmp_path / "started").read_text(encoding="utf-8")), 0)
