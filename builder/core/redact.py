"""Secrets in repository URLs never reach the log, ``status``, ``/api/health`` or the index.

A password (``https://me:secret@host``), a token used as the user name
(``https://TOKEN@host``), every query-string value (``?private_token=…``) and
the secrets of the configured URL wherever they appear in a message are
replaced by ``***``.
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import parse_qsl, unquote, urlsplit

_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)(?P<user>[^/@:\s'\"]*)"
                       r"(?::(?P<password>[^/\s'\"]*))?@")  # a password runs to the last @ before the path


_QUERY_VALUE = re.compile(r"(?P<key>[?&;][^=&;#\s'\"]+=)[^&;#\s'\"]+")  # a URL's ?key=value (&key=value …)


def _url_secrets(url: str | None) -> list[str]:
    found = []
    match = _USERINFO.search(url or "")
    if match and match["password"]:
        found.append(match["password"])
    elif match and match["user"] and match["scheme"].lower().startswith("http"):
        found.append(match["user"])  # https://TOKEN@host: the user name is the secret
    with contextlib.suppress(ValueError):
        found += [value for _, value in parse_qsl(urlsplit(url or "").query, keep_blank_values=False)]
    return [s for secret in found for s in {secret, unquote(secret)} if len(s) >= 3]


def _mask(match: re.Match[str]) -> str:
    if match["password"] is not None:
        return f"{match['scheme']}{match['user']}:***@"
    if match["user"] and match["scheme"].lower().startswith("http"):
        return f"{match['scheme']}***@"
    return match[0]


def redact(text: str, url: str | None = None) -> str:
    """``text`` with every URL password (and the secrets of ``url`` wherever they appear) replaced by ***."""
    text = _QUERY_VALUE.sub(r"\g<key>***", _USERINFO.sub(_mask, text))
    for secret in sorted(_url_secrets(url), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def redact_url(url: str | None) -> str | None:
    """The URL as it may be printed, logged or stored: ``https://me:***@host/repo.git`` (None stays None)."""
    return None if url is None else redact(url, url)
