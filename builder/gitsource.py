"""Git sources: every git subprocess call, with a timeout, non-interactive, credentials redacted.

Our clone of a source lives in ``remote/<source_id>/`` (a non-bare repository
with a detached working tree, so grep can read it). A first clone is built in
``remote/.<source_id>.partial/`` and renamed into place when complete, and
only a complete clone carries the marker file ``.git/notes-portal-clone``: a
clone left half-done by a crash is therefore either a ``.partial`` directory
or a directory without the marker, and both are removed and cloned again.
No remote is configured in the clone; the URL is passed on each fetch, so a
URL with a password in it is never written to disk.

The every-minute check is one ``git ls-remote`` per source plus two small
file reads (the marker and ``.git/HEAD``); everything else runs only when the
remote head moved.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from builder.core.redact import redact

MARKER = "notes-portal-clone"
FETCHED_REF = "refs/notes-portal/head"
REGULAR_FILE_MODES = ("100644", "100755")  # symlinks (120000) and submodules (160000) are never read
_GIT_CONFIG = ("-c", "core.hooksPath=/dev/null", "-c", "color.ui=false", "-c", "log.showSignature=false",
            "-c", "advice.detachedHead=false")
_REPOSITORY_VARIABLES = frozenset((
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE", "GIT_GRAFT_FILE",
    "GIT_SHALLOW_FILE", "GIT_QUARANTINE_PATH", "GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE"))
_SHA = re.compile(r"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


class GitError(Exception):
    """A git call failed or timed out; ``str()`` is one redacted line: ``git <command> failed (<reason>)``."""

    def __init__(self, command: str, reason: str) -> None:
        super().__init__(f"git {command} failed ({reason})")
        self.command, self.reason = command, reason


@dataclass(frozen=True)
class Change:
    """The last commit that touched a file: author time (ns since the epoch) and author name."""

    at_ns: int
    author: str


@dataclass(frozen=True)
class TreeDiff:
    """Regular files added or modified between two commits (a rename's new path included) and paths
    gone; ``undecodable``: names that are not UTF-8 (shown escaped), which no note can have."""

    changed: tuple[str, ...]
    deleted: tuple[str, ...]
    undecodable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Checkout:
    """Where our clone stands after :func:`ensure_checkout`."""

    rev: str
    repaired: str | None  # what was wrong with the clone, when it had to be redone


# ---------------------------------------------------------------- running git


def _uses_ssh(url: str | None) -> bool:
    url = url or ""
    return bool(re.match(r"^[\w.-]+@[\w.-]+:", url)) or url.lower().startswith(("ssh://", "git+ssh://", "ssh+git://"))


def git_env(url: str | None = None) -> dict[str, str]:
    """The environment of a git call: never a prompt, for a password, a passphrase or a host key."""
    # A build started from a git hook inherits GIT_DIR & co., which would point our commands at the
    # user's repository instead of our clone.
    env = {key: value for key, value in os.environ.items() if key not in _REPOSITORY_VARIABLES}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_ASKPASS="", SSH_ASKPASS="", GCM_INTERACTIVE="never", LC_ALL="C")
    if _uses_ssh(url) and not ("GIT_SSH" in os.environ and "GIT_SSH_COMMAND" not in os.environ):
        env["GIT_SSH_COMMAND"] = f"{os.environ.get('GIT_SSH_COMMAND') or 'ssh'} -o BatchMode=yes"
    return env


def _reason(stderr: bytes, returncode: int, url: str | None) -> str:
    for line in stderr.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if line and not line.startswith(("warning:", "hint:")):
            line = re.sub(r"^(fatal|error): ", "", line)
            return redact(line, url)[:300]
    return f"exit code {returncode}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    # git's helpers (ssh, git-remote-https) share its process group: end them all.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()  # a descendant that left the group may hold the pipes; don't wait for it


def run_git(args: Sequence[str], *, timeout: float, cwd: Path | None = None, url: str | None = None,
            ok: tuple[int, ...] = (0,)) -> tuple[int, bytes]:
    """Run ``git ARGS``; return (exit code, stdout) or raise :class:`GitError` (redacted, one line).

    The call gets no stdin and its own session, so it cannot prompt; after ``timeout`` seconds its
    whole process group is killed.
    """
    command = args[0]
    try:
        proc = subprocess.Popen(["git", *_GIT_CONFIG, *args], cwd=cwd, env=git_env(url), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise GitError(command, f"cannot run git: {exc.strerror or exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise GitError(command, f"no answer within {timeout:g} s") from None
    except BaseException:  # Ctrl-C does not reach git in its own session: end it here
        _kill_group(proc)
        raise
    if proc.returncode not in ok:
        raise GitError(command, _reason(err, proc.returncode, url))
    return proc.returncode, out


# ---------------------------------------------------------------- the remote


def _ref(branch: str | None) -> str:
    if not branch:
        return "HEAD"
    return branch if branch.startswith("refs/") else f"refs/heads/{branch}"


def remote_head(url: str, branch: str | None, timeout: float) -> str:
    """The commit the remote's branch (or HEAD) points at: one ``git ls-remote``, no fetch."""
    ref = _ref(branch)
    _, out = run_git(["ls-remote", "--", url, ref], timeout=timeout, url=url)
    for line in out.decode("utf-8", errors="replace").splitlines():
        sha, _, name = line.partition("\t")
        if name == ref and _SHA.match(sha):
            return sha
    raise GitError("ls-remote", f"branch {branch!r} not found on the remote" if branch
                   else "the remote has no HEAD (an empty repository?)")


def remote_heads(remotes: Sequence[tuple[str, str | None]], timeout: float) -> list[str | GitError]:
    """:func:`remote_head` for several remotes at once, so hanging hosts cost one timeout, not one each."""
    results: list[str | GitError] = [GitError("ls-remote", "not run")] * len(remotes)

    def one(i: int, url: str, branch: str | None) -> None:
        try:
            results[i] = remote_head(url, branch, timeout)
        except GitError as exc:
            results[i] = exc
        except Exception as exc:  # a bug here must still end as one WARN line, not a thread traceback
            results[i] = GitError("ls-remote", f"{type(exc).__name__}: {redact(str(exc), url)}")

    if len(remotes) == 1:
        one(0, *remotes[0])
        return results
    threads = [threading.Thread(target=one, args=(i, url, branch), daemon=True)
               for i, (url, branch) in enumerate(remotes)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


# ---------------------------------------------------------------- our clone


def clone_state(root: Path) -> str | None:
    """The commit checked out in our complete clone at ``root``; None when missing or half-done."""
    try:
        if not (root / ".git" / MARKER).is_file():
            return None
        head = (root / ".git" / "HEAD").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return head if _SHA.match(head) else None


def _fetch_and_checkout(repo: Path, url: str, branch: str | None, timeout: float) -> str:
    run_git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", url,
             f"+{_ref(branch)}:{FETCHED_REF}"], cwd=repo, timeout=timeout, url=url)
    _, out = run_git(["rev-parse", "--verify", "--quiet", f"{FETCHED_REF}^{{commit}}"], cwd=repo, timeout=timeout)
    rev = out.decode("ascii").strip()
    run_git(["checkout", "--quiet", "--force", "--detach", rev], cwd=repo, timeout=timeout)
    run_git(["clean", "-ffdxq"], cwd=repo, timeout=timeout)  # our clone: nothing untracked survives
    return rev


def ensure_checkout(root: Path, url: str, branch: str | None, want: str, timeout: float) -> Checkout:
    """Make ``root`` a complete clone with ``want`` (or newer) checked out; fetch only when needed."""
    partial = root.with_name(f".{root.name}.partial")
    repaired = None
    if partial.exists():
        shutil.rmtree(partial)
        repaired = f"removed a half-done clone ({partial.name})"
    if root.exists() and clone_state(root) is None:
        shutil.rmtree(root)
        repaired = f"our clone in {root.parent.name}/{root.name} was incomplete; cloned again"
    if root.exists():
        if clone_state(root) == want:
            return Checkout(want, repaired)
        return Checkout(_fetch_and_checkout(root, url, branch, timeout), repaired)
    partial.parent.mkdir(parents=True, exist_ok=True)
    try:
        run_git(["init", "--quiet", "--template=", str(partial)], timeout=timeout)
        rev = _fetch_and_checkout(partial, url, branch, timeout)
        (partial / ".git" / MARKER).write_text("a complete clone made by notes-portal\n", encoding="utf-8")
        os.rename(partial, root)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Checkout(rev, repaired)


# ---------------------------------------------------------------- what changed


def _path(raw: bytes) -> str | None:
    """A path from git's ``-z`` output, or None when it is not UTF-8 (it could never be a note's key)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _escaped(raw: bytes) -> str:
    return raw.decode("utf-8", errors="backslashreplace")


def is_ancestor(root: Path, old: str, new: str, timeout: float) -> bool:
    """Is ``old`` in ``new``'s history? False also when ``old`` is unknown here (rewritten, gc'd)."""
    code, _ = run_git(["merge-base", "--is-ancestor", old, new], cwd=root, timeout=timeout, ok=(0, 1, 128))
    return code == 0


def list_files(root: Path, rev: str, timeout: float) -> TreeDiff:
    """Every regular file in ``rev``'s tree (as a diff from nothing)."""
    _, out = run_git(["ls-tree", "-r", "-z", "--full-tree", rev], cwd=root, timeout=timeout)
    files, undecodable = [], []
    for entry in out.split(b"\0"):
        meta, _, raw = entry.partition(b"\t")
        if raw and meta.split(b" ")[0].decode() in REGULAR_FILE_MODES:
            path = _path(raw)
            if path is None:
                undecodable.append(_escaped(raw))
            else:
                files.append(path)
    return TreeDiff(tuple(files), (), tuple(undecodable))


def diff_files(root: Path, old: str, new: str, timeout: float) -> TreeDiff:
    """What changed between two commits: ``git diff-tree`` (plumbing: immune to diff settings), renames too."""
    _, out = run_git(["diff-tree", "-r", "-z", "-M", "--no-commit-id", old, new], cwd=root, timeout=timeout)
    tokens = out.split(b"\0")
    changed: list[str] = []
    deleted: list[str] = []
    undecodable: list[str] = []
    i = 0
    while i < len(tokens) and tokens[i].startswith(b":"):
        _old_mode, new_mode, _old_sha, _new_sha, status = tokens[i][1:].decode().split(" ")
        raw = tokens[i + 1]
        i += 2
        if status[0] in "RC":  # rename or copy: source path, then destination path
            if status[0] == "R" and _path(raw) is not None:
                deleted.append(_path(raw) or "")
            raw = tokens[i]
            i += 1
        path = _path(raw)
        if path is None:
            if status[0] != "D":
                undecodable.append(_escaped(raw))
        elif status[0] != "D" and new_mode in REGULAR_FILE_MODES:
            changed.append(path)
        else:  # deleted, or now a symlink or submodule
            deleted.append(path)
    return TreeDiff(tuple(changed), tuple(deleted), tuple(undecodable))


def last_changes(root: Path, rev: str, since: str | None, timeout: float) -> tuple[Change, dict[str, Change]]:
    """One ``git log --name-only`` over ``since..rev`` (or all of ``rev``'s history): the head commit's
    change and, per path, the newest commit that touched it."""
    _, out = run_git(["log", "--no-renames", "--name-only", "-z", "--format=%x1e%at %an",
                      f"{since}..{rev}" if since else rev, "--"], cwd=root, timeout=timeout)
    head: Change | None = None
    changes: dict[str, Change] = {}
    for record in out.split(b"\x1e")[1:]:
        header, _, names = record.partition(b"\0")
        at, _, author = header.decode("utf-8", errors="replace").partition(" ")
        change = Change(int(at) * 1_000_000_000, author)
        head = head or change
        for raw in names.lstrip(b"\n").split(b"\0"):
            path = _path(raw) if raw else None
            if path is not None:
                changes.setdefault(path, change)
    if head is None:  # an empty range: the head commit itself
        _, out = run_git(["log", "-1", "--format=%at %an", rev, "--"], cwd=root, timeout=timeout)
        at, _, author = out.decode("utf-8", errors="replace").strip().partition(" ")
        head = Change(int(at) * 1_000_000_000, author)
    return head, changes
