"""What the installed package says about itself."""

from __future__ import annotations


def version() -> str:
    """The installed ``notes-portal`` package's version (``0+unknown`` in a checkout never installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("notes-portal")
    except PackageNotFoundError:
        return "0+unknown"
