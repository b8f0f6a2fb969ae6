"""The API key (``server.api_key``): it guards every query endpoint, ``/api/*`` and ``/search``.

A program sends the key in ``X-API-Key`` or ``Authorization: Bearer``. A browser
signs in once at ``/auth``: the form posts the key, and the answer sets an
HttpOnly, SameSite=Strict cookie holding an HMAC of the key (never the key
itself), which the search box's requests then carry. The static pages stay
readable without a key: private notes belong behind the reverse proxy's own
authentication.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import parse_qs

from starlette.requests import Request

COOKIE = "notes_portal_auth"
COOKIE_MAX_AGE_S = 90 * 24 * 3600
MAX_FORM_BYTES = 8192
_COOKIE_LABEL = b"notes-portal browser sign-in v1"
# Where a sign-in may send the browser back to: a path on this server, nothing else.
_LOCAL_PATH = re.compile(r"/(?![/\\])[\x21-\x7e]*")


def back_to(value: str | None) -> str:
    """``value`` when it is a path on this server (so a sign-in link cannot lead elsewhere), else the home page."""
    if value and _LOCAL_PATH.fullmatch(value) and "\\" not in value:
        return value
    return "./"


class ApiKey:
    """Checks a request against the configured key (in constant time)."""

    def __init__(self, key: str | None) -> None:
        self.key = key

    @property
    def required(self) -> bool:
        return bool(self.key)

    def matches(self, offered: str | None) -> bool:
        """Is ``offered`` the key?"""
        return bool(self.key) and offered is not None and hmac.compare_digest(
            offered.encode(), (self.key or "").encode())

    def cookie_value(self) -> str:
        """What the sign-in cookie holds: an HMAC of the key, useless for anything but this cookie."""
        return hmac.new((self.key or "").encode(), _COOKIE_LABEL, hashlib.sha256).hexdigest()

    def allows(self, request: Request) -> bool:
        """Does the request carry the key (header or Bearer) or the sign-in cookie?"""
        if not self.required:
            return True
        offered = request.headers.get("x-api-key")
        auth = request.headers.get("authorization", "")
        if offered is None and auth[:7].lower() == "bearer ":
            offered = auth[7:].strip()
        if offered is not None:
            return self.matches(offered)
        cookie = request.cookies.get(COOKIE)
        return cookie is not None and hmac.compare_digest(cookie.encode(), self.cookie_value().encode())


async def read_form(request: Request) -> dict[str, str] | None:
    """The fields of a small urlencoded form (first value of each), or None when the body is too large."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            return None
    fields = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return {name: values[0] for name, values in fields.items()}
