"""How the portal starts Python children that run its own code: this checkout's, never the working folder's.

``python -m builder.cli`` puts the folder it is started from first on ``sys.path``, so a ``builder.py``,
``builder/``, ``server/`` or ``yaml.py`` in the folder a user runs the portal from would be imported
instead of the portal's (and run: a ``builder/__init__.py`` there executes). Every child the portal
starts (the background backfill, the builds of ``serve`` and ``watch``, grep's Python engine) is this
interpreter in safe-path mode (``-P``, Python 3.11 on: nothing of the working folder or the script's
folder goes on the path), with this checkout first on ``PYTHONPATH`` (an editable install of another
checkout must not win) and every empty entry of the caller's ``PYTHONPATH`` dropped (an empty entry
means the working folder, ``-P`` or not). Not ``-I``: it would drop ``PYTHONPATH``, which is how the
child finds this checkout, and the user site where ``pip install --user`` puts the dependencies.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

PROJECT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the folder holding builder/ and server/


def python_command(*arguments: str) -> list[str]:
    """This interpreter in safe-path mode with ``arguments`` (``"-m", "builder.cli", …`` or ``"-c", code, …``)."""
    return [sys.executable, "-P", *arguments]


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``environ`` (the process's own by default) with ``PYTHONPATH`` = this checkout, then the caller's
    non-empty entries."""
    env = dict(os.environ if environ is None else environ)
    entries = [entry for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
    env["PYTHONPATH"] = os.pathsep.join([PROJECT, *(entry for entry in entries if entry != PROJECT)])
    return env
