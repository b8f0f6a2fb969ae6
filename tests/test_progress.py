"""A long first build shows a progress bar (rate and time left) when a person watches it in a
terminal, and prints no bar under cron. The real CLI runs with its stderr on a pseudo-terminal (or a
pipe), against a stand-in Ollama that takes 30 ms per batch."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import FakeOllama, ollama_yaml, write_config, write_note

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
WORDS = "čaj voda vlak hory záloha server síť projekt kniha recept trasa výlet python funkce".split()
# tqdm's bar: "embedding:  41%|████      | 112/272 [00:00<00:01, 143.27chunk/s]"
BAR = re.compile(r"embedding: +(\d+)%\|[^|]*\| (\d+)/(\d+) \[(\d\d:\d\d)<(\d\d:\d\d), +([\d.]+)chunk/s\]")


@pytest.fixture
def portal(tmp_path: Path):
    for i in range(60):
        sections = "".join(f"\n## Oddíl {s}\n\n" + " ".join(WORDS[(i + s + w) % len(WORDS)] for w in range(150))
                           + "\n\n" for s in range(6))
        write_note(tmp_path / "notes", f"n{i}.md", f"# Poznámka {i}\n{sections}")
    with FakeOllama() as ollama:
        handler = ollama.server.RequestHandlerClass
        answer = handler.do_POST

        def slowly(self: object) -> None:
            time.sleep(0.03)
            answer(self)

        handler.do_POST = slowly
        config = write_config(tmp_path, "index: data/index.sqlite\nsite:\n  output: site\n" + ollama_yaml(ollama.url)
                              + "sources:\n  notes:\n    folder: notes\n")
        yield config


def run_build(config: Path, *, terminal: bool, columns: int = 100, command: tuple[str, ...] = ("build",)
              ) -> tuple[int, str]:
    """``notes-portal COMMAND`` with stderr on a pseudo-terminal ``columns`` wide (``terminal``) or a
    pipe; (exit code, what it printed)."""
    cli = [sys.executable, "-m", "builder.cli", *command, "--config", str(config)]
    if not terminal:
        proc = subprocess.run(cli, cwd=ROOT, capture_output=True, text=True, timeout=120)
        return proc.returncode, proc.stderr
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, columns, 0, 0))
    proc = subprocess.Popen(cli, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=follower)
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    return proc.wait(timeout=60), seen.decode("utf-8", errors="replace")


@pytest.mark.parametrize("columns", [100, 0])  # 0: a pseudo-terminal that reports no size
def test_embedding_in_a_terminal_shows_progress_with_rate_and_time_left(portal, columns):
    assert run_build(portal, terminal=False, command=("build", "--vectors", "later")) == (0, "")
    code, shown = run_build(portal, terminal=True, columns=columns, command=("embed",))
    assert code == 0
    bars = [m.groups() for m in BAR.finditer(shown)]
    total = int(bars[0][2])
    assert total >= 160 and {int(b[2]) for b in bars} == {total}
    done = [int(b[1]) for b in bars]
    assert f"| 0/{total} [00:00<?, ?chunk/s]" in shown  # drawn as soon as the work is known
    assert done == sorted(done) and 0 < done[0] < total and len(bars) >= 3  # it moved through the run
    assert all(float(b[5]) > 0 for b in bars)  # each update says how fast …
    assert any(b[4] != "00:00" for b in bars[:-1])  # … and how long is left
    assert shown.count("\rembedding:") == len(bars) + 1  # redrawn in place
    assert f"INFO embedded {total} chunks ({total} computed, 0 from the cache)" in shown


def test_a_build_in_a_terminal_says_the_vectors_come_in_the_background(portal):
    code, shown = run_build(portal, terminal=True)
    assert code == 0 and "embedding:" not in shown  # the build itself embeds nothing
    assert re.search(r"notes-portal: the site and search by words are ready; 3\d\d sections wait for their "
                     r"vectors, embedded in the background \(`notes-portal status` shows how far\)", shown)
    wait_for_vectors(portal)


def test_under_cron_the_same_build_prints_nothing(portal):
    code, shown = run_build(portal, terminal=False)
    assert (code, shown) == (0, "")  # no bar, and INFO lines only go to the log
    log = wait_for_vectors(portal)
    assert re.search(r"INFO embedded (\d+) chunks \(\1 computed, 0 from the cache\)", log)


def wait_for_vectors(config: Path) -> str:
    """The log once the backfill a build started has embedded every chunk."""
    log = config.parent / "data/log/sync.log"
    deadline = time.monotonic() + 60
    while "INFO embedded" not in log.read_text(encoding="utf-8"):
        assert time.monotonic() < deadline, "the backfill never finished"
        time.sleep(0.1)
    return log.read_text(encoding="utf-8")
