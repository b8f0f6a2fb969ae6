"""No hidden state (issue 46): no module of builder/ or server/ keeps state that a function assigns after
import and another reads back later, except the few named below, each with its reason.

The check reads the source (:mod:`ast`): a ``global`` statement anywhere, and a module-level container or
object (a dict, list or set display, ``dict()``, ``list()``, ``set()``, or an instance of a class of the
module) that a function of the module changes: a container's mutating method (``append``, ``update``,
``clear`` …) or any method of such an instance, an item assigned or deleted, a slice assigned. A memo of a
pure function is ``functools.cache`` (what it keeps is the function's, not a module global), a render's or
a build's state is passed as an argument (the render's :class:`builder.render.notepages.Context`, a build's
:class:`builder.ingest.Limits`), and what forked workers share is given to :class:`builder.core.forkpool.Pool`,
whose one global is assigned in a forked worker only.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTATORS = {"append", "extend", "insert", "pop", "popitem", "remove", "clear", "update", "setdefault", "add",
            "discard", "appendleft", "move_to_end", "sort", "reverse"}
_CONTAINERS = {"dict", "list", "set", "OrderedDict", "defaultdict", "deque"}
ALLOWED = {
    # forked-worker state: assigned in a forked worker only (what the pool's jobs share)
    "builder/core/forkpool.py": {"_WORKER"},
    # this process's reading connection to the kept bodies, by pid: a forked worker opens its own, and a
    # connection is never used across a fork
    "builder/core/index/bodystore.py": {"_READERS"},
    # the lock descriptors this process holds: a fact about the process, which a forked child forgets
    "builder/lock.py": {"_HELD"},
    # the server's memos, read once per process (the dictionary from its file) or once per index content
    # (the words of each first letter, the word keys' counts): the same answer whatever the caller, kept
    # to answer queries fast (docs/BENCHMARKS.md, "Kept: the search path")
    "server/translate.py": {"_LOADED"},
    "server/spelling.py": {"_CANDIDATES", "_KNOWN_COUNTS"},
}


def module_state(source: str) -> set[str]:
    """The module-level names of ``source`` that its functions assign after import (see the module)."""
    tree = ast.parse(source)
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    kept: set[str] = set()
    objects: set[str] = set()  # instances of the module's classes: any method may change them
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = node.value
            called = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
            if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)) or \
                    called in _CONTAINERS or called in classes:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                kept.update(names)
                if called in classes:
                    objects.update(names)
    found: set[str] = set()
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Global):
                found.update(node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    isinstance(node.func.value, ast.Name) and node.func.value.id in kept and \
                    (node.func.attr in MUTATORS or node.func.value.id in objects):
                found.add(node.func.value.id)
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                found.update(t.value.id for t in targets if isinstance(t, ast.Subscript)
                             and isinstance(t.value, ast.Name) and t.value.id in kept)
    return found


def project_state() -> dict[str, set[str]]:
    found = {}
    for path in sorted([*(ROOT / "builder").rglob("*.py"), *(ROOT / "server").rglob("*.py")]):
        names = module_state(path.read_text(encoding="utf-8"))
        if names:
            found[path.relative_to(ROOT).as_posix()] = names
    return found


def test_the_check_finds_state_assigned_after_import():
    assert module_state(textwrap.dedent("""
        _CTX = []
        _MEMO: dict[str, str] = {}
        _ONE = None
        _SEEN = set()
        _FINE = {"a": 1}
        class Box:
            pass
        _BOX = Box()

        def set_context(ctx):
            _CTX[:] = [ctx]

        def remember(key, value):
            _MEMO[key] = value

        def make():
            global _ONE
            _ONE = 1

        def see(x):
            _SEEN.add(x)
            return _FINE.get(x)

        def fill():
            return _BOX.of(1)
    """)) == {"_CTX", "_MEMO", "_ONE", "_SEEN", "_BOX"}


def test_no_module_keeps_state_but_the_named():
    assert project_state() == ALLOWED
