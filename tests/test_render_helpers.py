"""Helpers for the renderer tests: build an index, render it, parse and check the produced pages.

(Named test_render_*.py so that it sits with the renderer's tests; it holds no tests itself.)
"""

from __future__ import annotations

import os
import posixpath
import textwrap
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import html5lib

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.render.site import RenderReport, render_site
from builder.render.stamp import site_is_stale
from builder.sync import build
from builder.synclog import SyncLog

SHARED = Path(__file__).resolve().parents[2] / "shared"
KEMT = SHARED / "corpora" / "kemt-wiki" / "pages"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "notes"


def write(root: Path, rel: str, text: str, mtime: float | None = None) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def make_config(tmp_path: Path, sources: dict[str, Path], *, extra: str = "", title: str = "Poznámky",
                embedding: str = "embedding:\n  provider: none\n") -> Config:
    """A portal.yaml in ``tmp_path`` over the given folders (site in ``tmp_path/site``)."""
    lines = [f"site:\n  title: {title}\n  output: site\n", "index: data/index.sqlite\n", embedding, "sources:\n"]
    lines += [f"  {sid}:\n    folder: {folder}\n" for sid, folder in sources.items()]
    (tmp_path / "portal.yaml").write_text("".join(lines) + extra, encoding="utf-8")
    return load_config(tmp_path / "portal.yaml")


@dataclass
class Run:
    report: RenderReport
    log: SyncLog

    @property
    def warnings(self) -> list[str]:
        return [line.split(" WARN ", 1)[1] for line in self.log.lines if " WARN " in line]


def build_and_render(config: Config, *, full: bool = False, workers: int = 1, embedder_factory=None) -> Run:
    """Refresh the index (as ``notes-portal build`` does), then render the site from it."""
    log = SyncLog(config.log_path, echo_info=False)
    assert build(config, log=log, embedder_factory=embedder_factory, render=False) == 0
    conn = db.connect(indexfile.resolve(config.index))
    try:
        return Run(render_site(config, conn, full=full, log=log, workers=workers), log)
    finally:
        conn.close()


def open_index(config: Config):
    return db.connect(indexfile.resolve(config.index), vec=False)


def stale(config: Config) -> bool:
    """What the every-minute build asks: is the site behind the index, the renderer or the settings?"""
    conn = open_index(config)
    try:
        return site_is_stale(config, db.content_token(conn))
    finally:
        conn.close()


def parse_page(path: Path):
    """Parse with html5lib in strict mode: any HTML5 parse error raises html5lib's ParseError."""
    parser = html5lib.HTMLParser(strict=True, namespaceHTMLElements=False)
    return parser.parse(path.read_bytes(), transport_encoding="utf-8")


def site_files(site: Path) -> dict[str, int]:
    """Every file of the site (relative path → mtime_ns), the renderer's bookkeeping (dot-files and
    dot-folders, which the server never serves) excluded."""
    files = {p.relative_to(site).as_posix(): p for p in site.rglob("*") if p.is_file()}
    return {rel: p.stat().st_mtime_ns for rel, p in files.items()
            if not any(part.startswith(".") for part in rel.split("/"))}


@dataclass
class SiteCheck:
    pages: int
    links: int
    broken_marked: int
    ids: dict[str, set[str]]  # page (relative path) → ids on it


def check_site(site: Path) -> SiteCheck:
    """Parse every page strictly; every internal link must reach a produced file (or be marked broken).
    Returns the ids of each page for anchor checks. Raises AssertionError listing the bad links."""
    bad: list[str] = []
    ids: dict[str, set[str]] = {}
    links = broken = 0
    for page in sorted(site.rglob("*.html")):
        rel = page.relative_to(site).as_posix()
        doc = parse_page(page)
        ids[rel] = {el.get("id") for el in doc.iter() if el.get("id")}
        for el in doc.iter():
            if "broken-link" in (el.get("class") or "").split() or el.get("data-broken-link"):
                broken += 1
            for attr in ("href", "src"):
                value = el.get(attr)
                if value is None or el.tag == "form":
                    continue
                target = _internal_target(rel, value)
                if target is None:
                    continue
                links += 1
                if not (site / target).is_file():
                    bad.append(f"{rel}: <{el.tag} {attr}={value!r}> → {target} does not exist")
    assert not bad, "\n".join(bad[:30])
    return SiteCheck(len(ids), links, broken, ids)


def _internal_target(page: str, value: str) -> str | None:
    parts = urlsplit(value)
    if parts.scheme or parts.netloc or not parts.path:
        return None  # external, or a fragment of the same page
    path = unquote(parts.path)
    base = "" if path.startswith("/") else posixpath.dirname(page)
    target = posixpath.normpath(posixpath.join(base, path.lstrip("/")))
    assert not target.startswith(".."), f"{page}: {value!r} leaves the site"
    return posixpath.join(target, "index.html") if value.endswith("/") else target
