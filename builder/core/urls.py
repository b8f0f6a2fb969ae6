"""Where things live in the rendered site: one place, no heavy imports.

Every URL here is relative to the site root, has no leading slash and is
percent-encoded (it is a URL, not a file name): a page at depth ``d`` prefixes
it with ``"../" * d``, so the site also opens from ``file://``. Directory pages
are always addressed as ``…/index.html`` for the same reason.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from functools import lru_cache
from urllib.parse import quote, unquote

from builder.core.slug import slugify

HOME_URL = "index.html"
SEARCH_URL = "search.html"
NOT_FOUND_URL = "404.html"
SITEMAP_URL = "sitemap.xml"
SITEMAP_PART = re.compile(r"sitemap-[1-9][0-9]*\.xml")  # a big site's sitemap files, listed by its index
BROKEN_LINKS_URL = "broken-links.html"  # every broken link of every source (no source id has a dot)
STATIC_DIR = "static"
TREE_DIR = "static/tree"  # each source's folder tree in parts, for the navigation on every page
FOLDER_TOC = "index.toc.html"  # where a top-level folder's table of contents was; a note keeps off this name


_URL_SAFE = re.compile(r"^[A-Za-z0-9_.~/-]*$")


def _q(path: str) -> str:
    return path if _URL_SAFE.match(path) else quote(path, safe="/")


def quote_path(path: str) -> str:
    """A path as it appears in the site's URLs (percent-encoded exactly as every page URL here)."""
    return _q(path)


NAME_MAX = 255  # bytes in one file name (ext4, xfs, btrfs, tmpfs): a longer page name cannot exist
_RESERVED_STEMS = ("index", "index.toc")  # by depth: the source's table of contents; a top folder's, once


def page_name(name: str, depth: int) -> str:
    """The page file of the note file ``name``, ``depth`` folders below its source's root (not encoded).

    One rule keeps every note's page its own: ``x.md`` → ``x.html``, unless that stem could also be
    read as another name's: it ends in ``.md`` or ``~``, or it is a reserved page (``index`` at the
    root, ``index.toc`` one folder down); such a ``.md`` name keeps its whole name (``index.md.html``).
    Any other name (``x.markdown``, ``x.MD``, ``x``) gains ``~.html``. The three kinds end differently
    (``.html`` after no ``.md`` or ``~``; ``.md.html``; ``~.html``), so no two names share a page."""
    if name.endswith(".md"):
        stem = name[:-3]
        reserved = _RESERVED_STEMS[depth] if depth < len(_RESERVED_STEMS) else None
        if stem and not stem.endswith((".md", "~")) and stem.lower() != reserved:
            return f"{stem}.html"
        return f"{name}.html"
    return f"{name}~.html"


def note_url(source_id: str, path: str) -> str:
    """The page of a note: ``recepty/teh-tarik.md`` in source ``notes`` → ``notes/recepty/teh-tarik.html``
    (see :func:`page_name`)."""
    folder, _, name = path.rpartition("/")
    # encoded a character at a time, so the folder's part (shared by its notes) is encoded once
    return _folder_part(source_id, folder) + _q(page_name(name, path.count("/")))


@lru_cache(maxsize=1 << 16)
def _folder_part(source_id: str, folder: str) -> str:
    """The encoded start of the URLs of a folder's pages: ``source/folder/``."""
    return _q(f"{source_id}/{folder}/" if folder else f"{source_id}/")


def name_problem(path: str) -> str | None:
    """Why the page of the note at ``path`` cannot be a file (its name too long), or None. Its folders
    are the note's own, which exist."""
    name = path.rpartition("/")[2]
    size = len(page_name(name, path.count("/")).encode("utf-8", "surrogateescape"))
    if size <= NAME_MAX:
        return None
    return f"its page's file name would be {size} bytes, over the {NAME_MAX} a file name may have"


def hit_url(source_id: str, path: str, anchor: str) -> str:
    """Where a search hit lands: the note page plus the chunk's section anchor (if any)."""
    return note_url(source_id, path) + (f"#{anchor}" if anchor else "")


def attachment_url(source_id: str, path: str) -> str:
    """A file next to the notes (image, PDF, …) keeps its place relative to the note pages."""
    return _q(f"{source_id}/{path}")


def toc_url(source_id: str) -> str:
    """The source's table of contents: every folder and note of the source, with the notes' headings."""
    return _q(f"{source_id}/index.html")


def top_folder(path: str) -> str:
    """The top-level folder of a note path (``""`` for a note at the source root)."""
    return path.partition("/")[0] if "/" in path else ""


def folder_toc_url(source_id: str, folder: str) -> str:
    """The page that lists a folder: the source's one table of contents (the folder is at its
    :func:`dir_anchor` there)."""
    return toc_url(source_id)


@lru_cache(maxsize=4096)  # a render asks for every folder of every note's breadcrumbs
def dir_anchor(folder: str) -> str:
    """The anchor of a folder (a path within its source; ``""``: the root) on its table of contents."""
    return "dir-" + slugify(folder, fallback="root") if folder else "dir-root"


def dir_toc_url(source_id: str, folder: str, anchor: str) -> str:
    """Where a folder (at any depth) is listed: the source's table of contents at the folder's anchor."""
    return f"{toc_url(source_id)}#{anchor}"


def toc_dir(source_id: str) -> str:
    """The folder of the pieces of a big source's table of contents (builder/render/toc.py)."""
    return f"{STATIC_DIR}/toc/{source_id}/"


def toc_part_url(source_id: str, part: str) -> str:
    """A piece of a big source's table of contents, loaded when its folder is opened (builder/render/toc.py)."""
    return f"{toc_dir(source_id)}{part}.js"


def graph_url(source_id: str) -> str:
    """The source's link graph (at the site root: any name inside the source's folder could be a note's)."""
    return f"graph-{source_id}.html"


def sitemap_part_url(number: int) -> str:
    """One file of a big site's sitemap (``sitemap.xml`` is then their index)."""
    return f"sitemap-{number}.xml"


def tree_url(source_id: str) -> str:
    """The script that holds the source's folder tree (notes' titles and URLs) for the navigation."""
    return f"{TREE_DIR}/{source_id}.js"


def tree_dir(source_id: str) -> str:
    """The folder of the source's tree parts but its root (see :mod:`builder.render.tree`)."""
    return f"{TREE_DIR}/{source_id}/"


def tree_part_url(source_id: str, part: str) -> str:
    """A part of the source's tree loaded when its folder is opened (see :mod:`builder.render.tree`)."""
    return f"{tree_dir(source_id)}{part}.js"


@lru_cache(maxsize=8192)
def tag_slug(tag: str) -> str:
    """Readable and stable: ``Čaj`` → ``caj``; a tag with no letters of the Latin script → ``tag-<hash>``."""
    return slugify(tag, fallback="") or "tag-" + hashlib.sha1(tag.encode("utf-8")).hexdigest()[:8]


def tag_url(tag: str) -> str:
    return f"tags/{tag_slug(tag)}/index.html"


def tags_url() -> str:
    return "tags/index.html"


def static_url(name: str) -> str:
    return f"{STATIC_DIR}/{name}"


def root_of(url: str) -> str:
    """The prefix that leads from the page at ``url`` back to the site root (``""``, ``"../"``, …)."""
    return "../" * url.count("/")


def relative(from_url: str, to_url: str) -> str:
    """``to_url`` (with an optional ``#fragment``) as seen from the page at ``from_url``."""
    target, _, fragment = to_url.partition("#")
    rel = posixpath.relpath(target, posixpath.dirname(from_url) or ".") if target else ""
    return rel + (f"#{fragment}" if fragment else "")


@lru_cache(maxsize=1 << 20)  # a render asks for every page's file several times: the cache must hold them all
def site_file(url: str) -> str:
    """The file (relative to the site folder) that serves ``url``."""
    return unquote(url.partition("#")[0])
