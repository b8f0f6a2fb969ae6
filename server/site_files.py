"""The built site under ``/``: pages, static assets, the sitemap and the published attachments.

Every file is opened first and described from the open file (``fstat``): a build that
replaces it with ``os.replace`` meanwhile cannot make the declared size and the bytes
disagree. Pages (``*.html``), ``static/*`` and the sitemap (``sitemap.xml``, ``sitemap-<n>.xml``) are the
renderer's own; every other file is an attachment, served only when its suffix is on the allowlist of
:mod:`builder.core.filetypes`, with the type and headers it prescribes (never a guess
from ``mimetypes``). A folder URL serves the folder's ``index.html``, else redirects to
the table of contents that lists the folder. Dot-paths (the renderer's manifest, stamp
and temp files, a ``.git``) are never served.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
from collections.abc import AsyncIterator, Collection
from email.utils import formatdate, parsedate
from pathlib import Path
from urllib.parse import quote

import anyio
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.types import Receive, Scope, Send

from builder.core import filetypes, templates, urls

CHUNK = 64 * 1024
PAGE_TYPE = "text/html; charset=utf-8"
STATIC_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
SITEMAP_TYPE = "application/xml"


class RangeNotSatisfiable(Exception):
    """The requested byte range starts beyond the end of the file."""


def site_parts(path: str) -> list[str] | None:
    """The segments of a decoded URL path inside the site, or None when it must not be served
    (a dot-segment or dot-file, a backslash, a NUL)."""
    parts = [part for part in path.split("/") if part]
    if any(part.startswith(".") or "\\" in part or "\x00" in part for part in parts):
        return None
    return parts


def served_as(rel: str) -> tuple[str, dict[str, str]] | None:
    """(Content-Type, extra headers) of the site file ``rel``, or None when it is not served."""
    if rel.endswith(".html"):
        return PAGE_TYPE, {}
    if rel == urls.SITEMAP_URL or urls.SITEMAP_PART.fullmatch(rel):
        return SITEMAP_TYPE, {}
    suffix = filetypes.suffix_of(rel)
    if rel.startswith(urls.STATIC_DIR + "/") and suffix in STATIC_TYPES:
        return STATIC_TYPES[suffix], {}
    if filetypes.published(rel):
        return filetypes.attachment_served_as(rel)
    return None


_DIAGRAM_MARK_BYTES = templates.DIAGRAM_MARK.encode()
_HEAD = 256  # bytes of a page that hold its mark: the template writes it right after <meta charset>


def draws_diagrams(file: io.FileIO) -> bool:
    """Is this page one that draws diagrams (see :data:`builder.core.templates.DIAGRAM_MARK`)? A page's first
    bytes are its template's, and the only text of a note before them is its title, escaped: no note writes the
    mark's ``<``."""
    return _DIAGRAM_MARK_BYTES in os.pread(file.fileno(), _HEAD, 0)


_DIGITS = re.compile(r"[0-9]*")  # str.isdigit() also takes "²", which int() refuses


def requested_range(value: str, size: int) -> tuple[int, int] | None:
    """(start, end exclusive) of a single ``bytes=`` range, or None to send the whole file
    (no range, several ranges, or one we do not understand: the standard lets a server ignore it)."""
    unit, _, spec = value.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    if not dash or not _DIGITS.fullmatch(first) or not _DIGITS.fullmatch(last) or first == last == "":
        return None
    if first == "":  # the last N bytes
        return (max(size - int(last), 0), size) if int(last) > 0 and size > 0 else None
    start = int(first)
    if start >= size:
        raise RangeNotSatisfiable
    end = min(int(last) + 1, size) if last else size
    return (start, end) if start < end else None


class OpenFileResponse(StreamingResponse):
    """Streams ``length`` bytes from ``start`` of a file that is already open, then closes it."""

    def __init__(self, file: io.FileIO, start: int, length: int, status_code: int, headers: dict[str, str]) -> None:
        self.file = file
        super().__init__(self._chunks(start, length), status_code=status_code, headers=headers)

    async def _chunks(self, start: int, length: int) -> AsyncIterator[bytes]:
        fd = self.file.fileno()
        while length > 0:
            chunk = await anyio.to_thread.run_sync(os.pread, fd, min(CHUNK, length), start)
            if not chunk:  # truncated in place (never by our builds): fail rather than send short
                raise OSError(f"{self.file.name} became shorter while it was sent")
            start += len(chunk)
            length -= len(chunk)
            yield chunk

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.file.close()


def _validators(st: os.stat_result) -> dict[str, str]:
    etag = hashlib.md5(f"{st.st_mtime}-{st.st_size}".encode(), usedforsecurity=False).hexdigest()
    return {"ETag": f'"{etag}"', "Last-Modified": formatdate(st.st_mtime, usegmt=True)}


def _range(request: Headers, size: int, validators: dict[str, str]) -> tuple[int, int] | None:
    value = request.get("range")
    if_range = request.get("if-range")
    if value is None or (if_range is not None and if_range not in validators.values()):
        return None
    return requested_range(value, size)


def _not_modified(request: Headers, validators: dict[str, str]) -> bool:
    if_none_match = request.get("if-none-match")
    if if_none_match is not None:
        return validators["ETag"] in [tag.strip().removeprefix("W/") for tag in if_none_match.split(",")]
    since = parsedate(request.get("if-modified-since") or "")
    modified = parsedate(validators["Last-Modified"])
    return since is not None and modified is not None and since >= modified


class SiteFiles:
    """The request handler for every URL of the site (see the module docstring)."""

    def __init__(self, directory: Path, source_ids: Collection[str], diagram_csp: str | None = None) -> None:
        self.directory = directory
        self.source_ids = frozenset(source_ids)
        self.diagram_csp = diagram_csp  # the Content-Security-Policy of a page that draws diagrams

    def serve(self, request: Request) -> Response:
        """Answer ``GET``/``HEAD`` of the site path in the ``path`` route parameter."""
        path = request.path_params.get("path", "")
        parts = site_parts(path)
        if parts is None:
            return self.not_found()
        return self._serve(request, parts, trailing=path.endswith("/") or not parts)

    def _serve(self, request: Request, parts: list[str], trailing: bool) -> Response:
        rel = "/".join(parts)
        kind = served_as(rel)
        try:
            file = self._open(rel)
        except IsADirectoryError:
            return self._folder(request, parts, trailing)
        if file is None:
            return self.not_found()
        st = os.fstat(file.fileno())
        if kind is None or not stat.S_ISREG(st.st_mode):
            file.close()
            return self.not_found()
        if kind[0] == PAGE_TYPE and self.diagram_csp is not None and draws_diagrams(file):
            kind = (PAGE_TYPE, {**kind[1], "Content-Security-Policy": self.diagram_csp})
        return self._file_response(request, file, st, *kind)

    def _open(self, rel: str) -> io.FileIO | None:
        """The site file ``rel`` opened for reading; None when it is missing or outside the site.
        Raises IsADirectoryError for a folder."""
        root = os.path.realpath(self.directory)
        real = os.path.realpath(os.path.join(root, rel))
        if real != root and not real.startswith(root + os.sep):  # a symlink leading out of the site
            return None
        try:
            return io.FileIO(real, "r")
        except IsADirectoryError:
            raise
        except (OSError, ValueError):
            return None

    def _file_response(self, request: Request, file: io.FileIO, st: os.stat_result, media_type: str,
                       extra: dict[str, str]) -> Response:
        validators = _validators(st)
        if _not_modified(request.headers, validators):
            file.close()
            return Response(status_code=304, headers=validators)
        headers = {**extra, **validators, "Content-Type": media_type, "Accept-Ranges": "bytes"}
        try:
            span = _range(request.headers, st.st_size, validators)
        except RangeNotSatisfiable:
            file.close()
            return Response(status_code=416, headers={"Content-Range": f"bytes */{st.st_size}"})
        start, end = span or (0, st.st_size)
        headers["Content-Length"] = str(end - start)
        if span is not None:
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{st.st_size}"
        status = 200 if span is None else 206
        if request.method == "HEAD":
            file.close()
            return Response(status_code=status, headers=headers)
        return OpenFileResponse(file, start, end - start, status, headers)

    def _folder(self, request: Request, parts: list[str], trailing: bool) -> Response:
        """A folder: its ``index.html``; else a redirect to where its source's table of contents lists it."""
        if (self.directory.joinpath(*parts) / urls.HOME_URL).is_file():
            if trailing:
                return self._serve(request, [*parts, urls.HOME_URL], trailing=False)
            return RedirectResponse(quote(parts[-1]) + "/", status_code=307)
        target = self._folder_toc(parts)
        if target is None:
            return self.not_found()
        here = quote("/".join(parts)) + ("/" if trailing else "")
        return RedirectResponse(urls.relative(here, target), status_code=307)

    def _folder_toc(self, parts: list[str]) -> str | None:
        """The URL (site-relative, with the folder's anchor) of the page that lists the folder ``parts``."""
        if len(parts) < 2 or parts[0] not in self.source_ids:
            return None
        page = urls.folder_toc_url(parts[0], parts[1])
        if not (self.directory / urls.site_file(page)).is_file():
            return None
        return f"{page}#{urls.dir_anchor('/'.join(parts[1:]))}"

    def not_found(self) -> Response:
        """The portal's 404 page (a plain one when the site has not been built yet)."""
        try:
            page = (self.directory / urls.NOT_FOUND_URL).read_text(encoding="utf-8")
        except OSError:
            return PlainTextResponse("Not found", status_code=404)
        return HTMLResponse(page, status_code=404)
