"""The code type-checks: mypy over builder/, server/ and bench/ with the settings in pyproject.toml (which
modules ship no type information is written there, not here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_mypy_finds_no_errors():
    require_module("mypy", "the dev extra: pip install -e '.[dev]'")
    checked = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--cache-dir", "/dev/null"],
                             cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert checked.stdout == "" and checked.returncode == 0, checked.stdout + checked.stderr
