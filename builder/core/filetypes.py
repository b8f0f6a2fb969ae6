"""Which attachments are published, and how the server serves them: an allowlist, not a denylist.

A file next to the notes is copied into the site only when its suffix is listed
here. Files a browser displays without running anything (pictures, PDF, audio,
video, plain text) are served inline with their type; every other listed file
(archives, office documents, source code, data) is served as a download
(``application/octet-stream``, ``Content-Disposition: attachment``). SVG is shown
inline only under a ``sandbox`` policy, and only when an XML parser finds no
script, event handler or ``javascript:`` link in it (the site also opens from
``file://`` or behind another web server, where no policy protects it). Markup
and script types (HTML, XHTML, XML, JavaScript in any spelling) are never
published: inside the portal they would run with its origin.
"""

from __future__ import annotations

import posixpath
from typing import BinaryIO
from urllib.parse import quote

INLINE: dict[str, str] = {  # suffix → the Content-Type it is served with
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".avif": "image/avif", ".bmp": "image/bmp", ".ico": "image/x-icon",
    ".svg": "image/svg+xml",
    ".pdf": "application/pdf",
    ".mp3": "audio/mpeg", ".ogg": "audio/ogg", ".oga": "audio/ogg", ".wav": "audio/wav", ".flac": "audio/flac",
    ".m4a": "audio/mp4", ".mp4": "video/mp4", ".webm": "video/webm", ".mov": "video/quicktime",
    ".txt": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8", ".csv": "text/plain; charset=utf-8",
}
DOWNLOAD: frozenset[str] = frozenset({
    # archives and documents
    ".zip", ".gz", ".tgz", ".tar", ".bz2", ".xz", ".7z", ".rar", ".zst",
    ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".odp", ".odg", ".rtf", ".epub",
    ".drawio", ".excalidraw", ".fig", ".psd", ".xcf", ".kra", ".dwg", ".dxf", ".stl", ".step", ".kicad_pcb",
    ".ics", ".vcf", ".gpx", ".kml", ".mkv", ".avi", ".heic", ".tif", ".tiff", ".raw", ".dng",
    # data and configuration
    ".json", ".yaml", ".yml", ".toml", ".ini", ".conf", ".cfg", ".env.example", ".sql", ".db", ".sqlite",
    ".ipynb", ".tex", ".bib", ".patch", ".diff", ".pcap", ".pcapng", ".bin", ".hex", ".uf2",
    # source code (never run by the browser when served as a download)
    ".py", ".sh", ".bash", ".zsh", ".fish", ".ps1", ".bat", ".c", ".h", ".cc", ".cpp", ".hpp", ".ino",
    ".rs", ".go", ".java", ".kt", ".rb", ".pl", ".php", ".lua", ".r", ".m", ".swift", ".cs", ".ts",
    ".tsx", ".jsx", ".vue", ".scss", ".less", ".css", ".dockerfile", ".mk", ".cmake", ".gradle",
})
NEVER: frozenset[str] = frozenset({  # would run inside the portal (for the "not published" message)
    ".html", ".htm", ".xhtml", ".xht", ".shtml", ".xml", ".xsl", ".xslt", ".svgz",
    ".js", ".mjs", ".cjs", ".es", ".es6", ".wasm", ".swf", ".hta", ".jar",
})
SANDBOX_CSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; media-src 'self'"


def suffix_of(path: str) -> str:
    """The lowercased suffix that decides a file's type (``a/b.Tar.GZ`` → ``.gz``)."""
    return posixpath.splitext(path.lower())[1]


def published(path: str) -> bool:
    """May this attachment be copied into the site?"""
    suffix = suffix_of(path)
    return suffix in INLINE or suffix in DOWNLOAD


_ACTIVE_ELEMENTS = frozenset({"script", "foreignobject", "iframe", "embed", "object", "handler", "listener",
                              "animate", "set", "animatemotion", "animatetransform"})


class _Active(Exception):
    """Raised inside the XML parser at the first thing that could run."""


def svg_is_inert(file: BinaryIO) -> bool:
    """Can this SVG (an open file, read in pieces: any size in bounded memory) run nothing? Parsed as
    XML (namespaces and character references resolved as a browser does): no script-like element in
    any namespace, no ``on…`` attribute, no link to ``javascript:``, ``data:`` or ``vbscript:``, no
    entity declaration. Anything that does not parse is not inert."""
    from xml.parsers import expat

    def start(name: str, attributes: dict[str, str]) -> None:
        if name.rpartition("}")[2].lower() in _ACTIVE_ELEMENTS:
            raise _Active
        for attribute, value in attributes.items():
            target = "".join(value.split()).lower()
            if attribute.rpartition("}")[2].lower().startswith("on") or target.startswith(
                    ("javascript:", "data:", "vbscript:")):
                raise _Active

    def declared(*_: object) -> None:  # entity tricks hide "javascript:"; real drawings declare none
        raise _Active

    parser = expat.ParserCreate(namespace_separator="}")
    parser.StartElementHandler = start
    parser.EntityDeclHandler = declared
    parser.UnparsedEntityDeclHandler = declared
    tail = b""
    try:
        while chunk := file.read(_SVG_PIECE):
            if b"<!ENTITY" in tail + chunk:
                return False
            parser.Parse(chunk, False)
            tail = (tail + chunk)[-7:]
        parser.Parse(b"", True)
    except (_Active, expat.ExpatError, ValueError, RecursionError):
        return False
    return True


_SVG_PIECE = 1 << 20


def why_not_published(path: str) -> str:
    """The reason a linked file stays out of the site (shown on the page and in the log)."""
    suffix = suffix_of(path) or "(none)"
    if suffix in NEVER:
        return f"type {suffix} could run scripts inside the portal, so it is not published"
    return f"type {suffix} is not on the list of published attachment types"


def attachment_served_as(path: str) -> tuple[str, dict[str, str]]:
    """(Content-Type, extra headers) for a file of the site that the renderer did not write as a page."""
    suffix = suffix_of(path)
    if suffix in INLINE:
        headers = {"Content-Security-Policy": SANDBOX_CSP} if suffix == ".svg" else {}
        return INLINE[suffix], headers
    name = posixpath.basename(path)
    return "application/octet-stream", {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}"}
