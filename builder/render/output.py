"""The site folder: atomic writes, the manifest of what was written, copies, removals."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from builder.core import urls

MANIFEST = ".render-manifest.json"
MANIFEST_VERSION = 2  # 2: entry keys spelled out


def load_manifest(site: Path) -> dict[str, Any]:
    """The previous render's manifest, or ``{}`` when there is none (or it is unreadable)."""
    try:
        data = json.loads((site / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("version") == MANIFEST_VERSION else {}


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write via a temp file and ``os.replace``: a reader sees the old file or the new one."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    try:
        handle = open(temp, "wb")
    except FileNotFoundError:  # first file of a new folder: cheaper than a mkdir before every write
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(temp, "wb")
    with handle:
        handle.write(raw)
    os.replace(temp, path)


class Output:
    """Decides which files need writing (by fingerprint) and records the new manifest's page table."""

    def __init__(self, site: Path, old_pages: dict[str, str]) -> None:
        self.site = site
        self.old = old_pages
        self.pages: dict[str, str] = {}
        self.written: list[str] = []
        self.unchanged = 0

    def wants(self, url: str, fingerprint: str) -> bool:
        """Record ``url``'s fingerprint; True when the file must be (re)written."""
        self.pages[url] = fingerprint
        if self.old.get(url) == fingerprint:
            self.unchanged += 1
            return False
        return True

    def kept(self, url: str, may_differ: bool) -> bool:
        """Keep ``url`` as it is without fingerprinting it (its inputs are known to be unchanged)."""
        if may_differ or url not in self.old:
            return False
        self.pages[url] = self.old[url]
        self.unchanged += 1
        return True

    def write(self, url: str, data: str | bytes) -> None:
        write_atomic(self.site / urls.site_file(url), data)
        self.written.append(urls.site_file(url))

    def keep(self, page_urls: Iterable[str]) -> None:
        """Pages whose note could not be read this time keep their previous version."""
        for url in page_urls:
            if url in self.old:
                self.pages[url] = self.old[url]

    def remove_stale(self, listed: dict[str, str]) -> list[str]:
        """Delete what the old manifest lists and this render did not produce (never anything else)."""
        removed = []
        for url in sorted(set(listed) - set(self.pages)):
            path = self.site / urls.site_file(url)
            path.unlink(missing_ok=True)
            removed.append(urls.site_file(url))
            _prune_dirs(path.parent, self.site)
        return removed

    def save_manifest(self, manifest: dict[str, Any], previous: dict[str, Any]) -> None:
        if manifest != previous:
            write_atomic(self.site / MANIFEST, json.dumps(manifest, ensure_ascii=False, separators=(",", ":")))


def _prune_dirs(directory: Path, site: Path) -> None:
    while directory != site and site in directory.parents:
        try:
            directory.rmdir()
        except OSError:
            return
        directory = directory.parent


def copy_static(out: Output, static_dir: Path) -> None:
    """``templates/static/*`` → ``<site>/static/``."""
    for path in sorted(static_dir.iterdir()):
        if path.is_file() and not path.name.startswith("."):
            data = path.read_bytes()
            url = urls.static_url(path.name)
            if out.wants(url, hashlib.sha256(data).hexdigest()):
                out.write(url, data)


def copy_attachments(out: Output, wanted: dict[str, Path]) -> None:
    """Files next to the notes that some page links to (url → source file), copied when new or
    changed (size, mtime)."""
    for url, source in sorted(wanted.items()):
        try:
            st = source.stat()
            if out.wants(url, f"{st.st_size}:{st.st_mtime_ns}"):
                out.write(url, source.read_bytes())
        except OSError:
            continue  # vanished since it was resolved: the next build reports the broken link
