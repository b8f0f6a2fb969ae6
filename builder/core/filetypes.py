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


def svg_is_inert(data: bytes) -> bool:
    """Can this SVG run nothing? Parsed as XML (namespaces and entities resolved as a browser does):
    no script-like element in any namespace, no ``on…`` attribute, no link to ``javascript:`` or
    ``data:``. Anything that does not parse is not inert."""
    import xml.etree.ElementTree as ElementTree

    if b"<!ENTITY" in data:  # entity tricks hide "javascript:"; real drawings do not declare entities
        return False
    try:
        root = ElementTree.fromstring(data)
    except (ElementTree.ParseError, ValueError):
        return False
    for element in root.iter():
        if not isinstance(element.tag, str) or element.tag.rpartition("}")[2].lower() in _ACTIVE_ELEMENTS:
            return False
        for name, value in element.attrib.items():
            local = name.rpartition("}")[2].lower()
            target = "".join(value.split()).lower()
            if local.startswith("on") or target.startswith(("javascript:", "data:", "vbscript:")):
                return False
    return True


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
