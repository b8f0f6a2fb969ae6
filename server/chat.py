"""The answer providers: one chat request to a model, in each protocol ``answer.provider`` names.

- ``openai``: ``POST {url}/v1/chat/completions`` (OpenAI, llama.cpp's server, vLLM, LM Studio, Ollama's
  compatible endpoint); the key, if any, as ``Authorization: Bearer``;
- ``ollama``: ``POST {url}/api/chat`` with ``"stream": false`` (one JSON object, not NDJSON lines);
- ``anthropic``: ``POST {url}/v1/messages`` with ``x-api-key`` and ``anthropic-version``; the system
  prompt is its own field.

Whatever goes wrong — refused connection, timeout, 429, a 5xx, a body that is not the protocol's JSON, an
answer cut off at the token limit, a body larger than :data:`MAX_BODY` — raises :class:`ChatUnavailable`
with one line that never holds the key.

``answer.timeout_s`` is a deadline for the whole call: connecting, sending, the headers and the body. A
provider that sends one byte a second is given up at the deadline (each read's own time limit would never
fire), by shutting its socket from a timer: hence :mod:`http.client`, whose socket is ours, rather than
``requests``. HTTP(S) proxies from the environment are honoured (``https_proxy``, ``no_proxy``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from builder.core.config import AnswerConfig

ANTHROPIC_VERSION = "2023-06-01"
ANSWER_TOKENS = 1024  # an answer of a few sentences; one cut off at this limit is not used
MAX_BODY = 256 * 1024  # bytes of a provider's response read at most: past it, nothing more is read


class ChatUnavailable(Exception):
    """The provider gave no usable answer; ``str()`` says why in one line."""


@dataclass(frozen=True)
class Message:
    role: str  # user | assistant
    content: str


Chat = Callable[[str, tuple[Message, ...]], str]  # (system prompt, conversation) → the model's text


def make_chat(config: AnswerConfig) -> Chat:
    """The configured provider as one function; the key is read from the environment on each call."""
    send = {"openai": _openai, "ollama": _ollama, "anthropic": _anthropic}[config.provider]

    def chat(system: str, messages: tuple[Message, ...]) -> str:
        return send(config, system, messages)

    return chat


def _api_key(config: AnswerConfig) -> str | None:
    if config.api_key_env is None:
        return None
    key = os.environ.get(config.api_key_env)
    if not key:
        raise ChatUnavailable(f"{config.provider}: environment variable {config.api_key_env} is not set")
    return key


def _post(config: AnswerConfig, path: str, payload: dict[str, Any], headers: dict[str, str],
          key: str | None) -> Any:
    """POST ``payload`` as JSON; the decoded JSON object of a 2xx answer, else :class:`ChatUnavailable`
    (whose message never holds ``key``, even where the provider's error message quotes it)."""
    who = f"{config.provider} at {config.url}"
    try:
        status, body = _exchange(config.url + path, json.dumps(payload).encode(), headers, config.timeout_s)
    except _Deadline:
        raise ChatUnavailable(f"{who} did not answer within {config.timeout_s:g} s") from None
    except _TooLarge:
        raise ChatUnavailable(f"{who} answered with more than {MAX_BODY // 1024} KB; nothing past it was read") \
            from None
    except (OSError, http.client.HTTPException) as exc:
        reason = "connection refused" if isinstance(exc, ConnectionRefusedError) else type(exc).__name__
        raise ChatUnavailable(f"{who} cannot be reached ({reason})") from None
    if status == 429:
        raise ChatUnavailable(f"{who} is busy (429 Too Many Requests); try again later")
    if not 200 <= status < 300:
        message = _error_text(body)
        if key:
            message = message.replace(key, "[key]")
        raise ChatUnavailable(f"{who} answered HTTP {status}: {message}")
    try:
        decoded = json.loads(body)
    except ValueError:
        raise ChatUnavailable(f"{who} answered with a body that is not JSON") from None
    if not isinstance(decoded, dict):
        raise ChatUnavailable(f"{who} answered with JSON that is not an object")
    return decoded


def _open_connection(url: str, timeout_s: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection for ``url`` (through the environment's proxy, unless ``no_proxy`` names its host: a
    tunnel for https) and the request target to send on it."""
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host, port = parts.hostname or "", parts.port or (443 if secure else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxy = None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(parts.scheme)
    if proxy is None:
        if secure:
            return http.client.HTTPSConnection(host, port, timeout=timeout_s,
                                               context=ssl.create_default_context()), path
        return http.client.HTTPConnection(host, port, timeout=timeout_s), path
    via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if not secure:
        return http.client.HTTPConnection(via.hostname or "", via.port or 80, timeout=timeout_s), url
    tunnel = http.client.HTTPSConnection(via.hostname or "", via.port or 80, timeout=timeout_s,
                                         context=ssl.create_default_context())
    tunnel.set_tunnel(host, port)
    return tunnel, path


class _Deadline(Exception):
    """The call's deadline passed."""


class _TooLarge(Exception):
    """The response passed :data:`MAX_BODY`."""


def _exchange(url: str, body: bytes, headers: dict[str, str], timeout_s: float) -> tuple[int, bytes]:
    """POST ``body`` to ``url`` within ``timeout_s`` in all: the status and at most :data:`MAX_BODY` bytes
    of the response. A timer shuts the socket at the deadline, so no read outlives it."""
    conn, target = _open_connection(url, timeout_s)
    started = time.monotonic()
    passed = threading.Event()

    def stop() -> None:
        passed.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(timeout_s, stop)
    timer.daemon = True
    timer.start()
    try:
        conn.request("POST", target, body=body, headers={"Content-Type": "application/json", **headers})
        response = conn.getresponse()
        data = b""
        while len(data) <= MAX_BODY:
            chunk = response.read1(64 * 1024)
            if not chunk:
                break
            data += chunk
        if passed.is_set() or time.monotonic() - started > timeout_s:
            raise _Deadline
        if len(data) > MAX_BODY:
            raise _TooLarge
        return response.status, data
    except (OSError, http.client.HTTPException) as exc:
        if passed.is_set() or isinstance(exc, TimeoutError):  # the timer, or a read's own limit (the same)
            raise _Deadline from None
        raise
    finally:
        timer.cancel()
        conn.close()


def _error_text(body: bytes) -> str:
    """The provider's own error message (OpenAI's and Anthropic's ``error.message``, Ollama's ``error``)."""
    try:
        decoded = json.loads(body)
    except ValueError:
        return "(no JSON error message)"
    error = decoded.get("error") if isinstance(decoded, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return str(message)[:200] if message else "(no error message)"


def _shape(config: AnswerConfig, what: str) -> ChatUnavailable:
    return ChatUnavailable(f"{config.provider} at {config.url} answered without {what}")


def _openai(config: AnswerConfig, system: str, messages: tuple[Message, ...]) -> str:
    key = _api_key(config)
    path = "/chat/completions" if config.url.endswith("/v1") else "/v1/chat/completions"
    payload = {"model": config.model, "temperature": 0, "max_tokens": ANSWER_TOKENS, "stream": False,
               "messages": [{"role": "system", "content": system},
                            *({"role": m.role, "content": m.content} for m in messages)]}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    body = _post(config, path, payload, headers, key)
    try:
        choice = body["choices"][0]
        content = choice["message"]["content"]
    except (KeyError, IndexError, TypeError):
        raise _shape(config, "choices[0].message.content") from None
    if choice.get("finish_reason") == "length":
        raise ChatUnavailable(f"{config.provider}: the answer was cut off at {ANSWER_TOKENS} tokens")
    return _content(config, content)


def _ollama(config: AnswerConfig, system: str, messages: tuple[Message, ...]) -> str:
    key = _api_key(config)
    payload = {"model": config.model, "stream": False, "options": {"temperature": 0, "num_predict": ANSWER_TOKENS},
               "messages": [{"role": "system", "content": system},
                            *({"role": m.role, "content": m.content} for m in messages)]}
    body = _post(config, "/api/chat", payload, {"Authorization": f"Bearer {key}"} if key else {}, key)
    try:
        content = body["message"]["content"]
    except (KeyError, TypeError):
        raise _shape(config, "message.content") from None
    if body.get("done_reason") == "length":
        raise ChatUnavailable(f"{config.provider}: the answer was cut off at {ANSWER_TOKENS} tokens")
    return _content(config, content)


def _anthropic(config: AnswerConfig, system: str, messages: tuple[Message, ...]) -> str:
    key = _api_key(config) or ""
    payload = {"model": config.model, "max_tokens": ANSWER_TOKENS, "temperature": 0, "system": system,
               "messages": [{"role": m.role, "content": m.content} for m in messages]}
    headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    body = _post(config, "/v1/messages", payload, headers, key)
    blocks = body.get("content")
    if not isinstance(blocks, list):
        raise _shape(config, "content")
    if body.get("stop_reason") == "max_tokens":
        raise ChatUnavailable(f"{config.provider}: the answer was cut off at {ANSWER_TOKENS} tokens")
    texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
    return _content(config, "".join(texts))


def _content(config: AnswerConfig, content: Any) -> str:
    if not isinstance(content, str) or not content.strip():
        raise _shape(config, "any text")
    return content.strip()
