"""The API key (``server.api_key``): it guards the API, ``/api/*``.

A program sends the key in ``X-API-Key`` or ``Authorization: Bearer``.
"""

from __future__ import annotations

import hmac

from starlette.requests import Request


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

    def allows(self, request: Request) -> bool:
        """Does the request carry the key (header or Bearer)?"""
        if not self.required:
            return True
        offered = request.headers.get("x-api-key")
        auth = request.headers.get("authorization", "")
        if offered is None and auth[:7].lower() == "bearer ":
            offered = auth[7:].strip()
        return self.matches(offered)
