"""Helpers for the renderer and server tests: build an index, render it, parse and check the produced
pages, compare whole sites; the notes the delta render's tests edit; the render state's writes."""

from __future__ import annotations

import os
import posixpath
import re
import sqlite3
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import html5lib

from builder import indexfile
from builder.core import index as db
from builder.core.config import Config, load_config
from builder.core.index import renderstate
from builder.render.links import SourceNotes
from builder.render.site import RenderReport, render_site
from builder.render.stamp import site_is_stale
from builder.sync import build
from builder.core.synclog import SyncLog

SHARED = Path(__file__).resolve().parents[2] / "shared"
KEMT = SHARED / "corpora" / "kemt-wiki" / "pages"
EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "notes"
UI_MESSAGES = re.compile(r'<script type="application/json" id="ui-messages">.*?</script>', re.S)
# the build time on the pages: ISO, or as the site's language writes it (6. 12. 2026 03:57, 6 Dec 2026 03:57)
TIME = re.compile(rb"\d{4}-\d\d-\d\d \d\d:\d\d|\d{1,2}(?:\. \d{1,2}\.| [A-Z][a-z]{2}) \d{4} \d\d:\d\d")


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
    """Refresh the index (as ``notes-portal build`` does), then render the site from it (the whole
    site with ``full``)."""
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


def site_snapshot(site: Path) -> dict[str, bytes]:
    """Every file a visitor can fetch, the build time on the pages blanked out (dot-files and
    dot-folders ignored)."""
    return {p.relative_to(site).as_posix(): TIME.sub(b"<time>", p.read_bytes())
            for p in sorted(site.rglob("*")) if p.is_file()
            and not any(part.startswith(".") for part in p.relative_to(site).parts)}


def manifest(site: Path) -> dict:
    """The site's manifest without the name of the index generation (each portal has its own), with the
    site's folders named but not timed (a folder's time is when it was written), and without the wikilink tables
    kept (those the renders happened to build), each of which must equal the table built anew from the titles kept."""
    found = renderstate.read_manifest(site)
    found.pop("content")
    if "folders" in found:
        found["folders"] = sorted(found["folders"])
    for key, table in found.pop("wiki", {}).items():
        source_id, _, name = key.rpartition(":")
        notes = [(path, title) for path, title, _ in found["titles"][source_id]]
        assert table == getattr(SourceNotes(source_id, site, None, notes, dict), name), key  # type: ignore[arg-type]
    return found


# ---------------------------------------------------------------- the notes of the delta render's tests

DAY = 86400.0
NOTES = {
    "a.md": "---\ntags: [čaj]\n---\n# Alfa\n\nOdkaz na [b](sub/b.md) a [[Gama]].\n\n## Oddíl\n\ntext\n",
    "sub/b.md": "---\ntags: [čaj, hory]\n---\n# Beta\n\nText a [alfa](../a.md#Oddíl).\n",
    "sub/c.md": "# Gama\n\n[[d]] a ![obrázek](img.png) a ![plán](plan.png)\n",
    "sub/d.md": "---\ntags: [hory]\nupdated: 2020-01-05\n---\n# Delta\n\nText.\n",
    "e.md": "# Epsilon\n\nNic, jen [chybí](nikde.md) a [stránka](stranka.html).\n\n## Poznámka\n\ny\n",
}
FILLER = 16  # more notes than the home page lists as recently changed
OTHER = {"x.md": "# Iks\n\n[[y]]\n\n## Část\n", "dir/y.md": "---\ntags: [čaj]\n---\n# Ypsilon\n\nText.\n"}


def make_notes(root: Path) -> None:
    """:data:`NOTES` and :data:`FILLER` older notes in ``root``, :data:`OTHER` in ``root/../other``,
    each with a date of its own in the past."""
    base = time.time() - 60 * DAY
    for i, (rel, text) in enumerate(NOTES.items()):
        write(root, rel, text, base + i * DAY)
    for i in range(FILLER):
        write(root, f"old/n{i:02}.md", f"# Stará {i}\n\nOdkaz na [Alfu](../a.md).\n", base - (i + 1) * DAY)
    (root / "sub/img.png").write_bytes(b"png-1")
    (root / "stranka.html").write_text("<p>HTML se nezveřejňuje</p>", encoding="utf-8")
    write(root, "koncept.md", "---\npublished: false\n---\n# Koncept\n", base)
    for i, (rel, text) in enumerate(OTHER.items()):
        write(root.parent / "other", rel, text, base - 30 * DAY + i * DAY)


# ---------------------------------------------------------------- the render state file's writes

def record_writes(path: Path) -> None:
    """From now on, note every row a save writes into the file (in a table of the test's own)."""
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE written (name TEXT, part);
            CREATE TRIGGER shard_written AFTER INSERT ON shards BEGIN
              INSERT INTO written VALUES (NEW.map, NEW.shard); END;
            CREATE TRIGGER meta_written AFTER INSERT ON meta BEGIN
              INSERT INTO written VALUES ('meta', NEW.key); END;
        """)
    conn.close()


def writes(path: Path) -> list[tuple[str, object]]:
    """The rows written since :func:`record_writes`, sorted."""
    with sqlite3.connect(path) as conn:
        found = sorted(conn.execute("SELECT name, part FROM written"))
    conn.close()
    return found


def shown(page: str) -> str:
    """A page without the JSON block its scripts read their words from (data, not shown)."""
    return UI_MESSAGES.sub("", page)
