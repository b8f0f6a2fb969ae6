"""A stand-in answer provider on 127.0.0.1 for the tests of asking the notes (no model runs here: see the
README's "Asking your notes" for why no real one is tested).

:class:`FakeChat` is a real HTTP server that speaks each protocol of ``answer.provider`` as its
documentation describes it, requests checked and answers shaped exactly so:

- OpenAI chat completions: ``POST /v1/chat/completions``; ``choices[0].message.content``,
  ``finish_reason``; errors ``{"error": {"message", "type", "param", "code"}}``;
- Ollama: ``POST /api/chat``; without ``"stream": false`` it streams NDJSON lines, as Ollama does;
  ``{"message": {"role", "content"}, "done": true, "done_reason"}``; errors ``{"error": "…"}``;
- Anthropic messages: ``POST /v1/messages`` with ``x-api-key`` and ``anthropic-version`` (else 401
  ``authentication_error`` / 400), ``max_tokens`` required, ``system`` apart; ``{"type": "message",
  "content": [{"type": "text", "text"}], "stop_reason"}``; errors ``{"type": "error", "error": {"type",
  "message"}}``, 429 ``rate_limit_error``.

What the "model" writes is a plain function of the system prompt and the conversation (``reply``);
``fail`` makes it misbehave the way real servers do: ``429``, ``500``, ``nonjson``, ``slow``, ``cut`` (the
answer stopped at the token limit: ``finish_reason: length``, ``done_reason: length``,
``stop_reason: max_tokens``), and the way a broken or hostile one does: ``drip`` (its whole answer, one
byte every 0.1 s after the headers), ``drip_headers`` (the status line and headers themselves that way),
``huge`` (a 1 MB body that is valid JSON) and ``hang`` (never answers, until :meth:`release`).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[str, list[dict[str, str]]], str]  # (system, messages) → the model's text
PATHS = {"openai": "/v1/chat/completions", "ollama": "/api/chat", "anthropic": "/v1/messages"}
ANTHROPIC_KEY = "sk-test-anthropic-0123456789"


def passages_of(messages: list[dict[str, str]]) -> dict[int, str]:
    """The numbered passages of the first user message (the prompt of server.answer), by number."""
    text = messages[0]["content"].split("\n\nQuestion: ")[0].removeprefix("Passages:\n\n")
    blocks = re.split(r"\n\n(?=\[\d+\] )", text)
    return {int(m.group(1)): m.group(2) for b in blocks if (m := re.match(r"\[(\d+)\] [^\n]*\n(.*)", b, re.S))}


def question_of(messages: list[dict[str, str]]) -> str:
    return messages[0]["content"].rsplit("\n\nQuestion: ", 1)[-1]


def quotable(text: str, words: int = 8) -> str | None:
    """The first line of a passage that is prose (no heading, table, fence or quotation mark), its first
    ``words`` words: what a model copying from the passage would quote; None when there is none."""
    for line in text.splitlines():
        line = line.strip().lstrip("-*+> ").strip()
        if len(line.split()) >= 4 and not re.search(r"[#|`\"„“”«»\[\]()<>_*]", line):
            return " ".join(line.split()[:words]).rstrip(".,;:")
    return None


def quoting(system: str, messages: list[dict[str, str]]) -> str:
    """A model that does its job: quotes the first two passages that have a line of prose, word for word,
    each sentence citing its passage."""
    found = [(n, quote) for n, text in sorted(passages_of(messages).items()) if (quote := quotable(text))]
    if not found:
        return "NOT_IN_NOTES"
    (n, quote), *rest = found
    answer = f"Podle poznámek: „{quote}“ [{n}]."
    if rest:
        answer += f" Také: „{rest[0][1]}“ [{rest[0][0]}]."
    return answer


def inventing(system: str, messages: list[dict[str, str]]) -> str:
    """A model that invents a quotation (and does so again when asked to repair it)."""
    return "Podle poznámek: „toto v žádné poznámce není napsáno“ [1]."


class FakeChat:
    """Stand-in chat server for ``protocol`` (openai, ollama or anthropic) on 127.0.0.1."""

    def __init__(self, protocol: str, reply: Reply = quoting) -> None:
        self.protocol = protocol
        self.reply = reply
        self.fail: str | None = None
        self.requests: list[dict[str, Any]] = []  # each: path, headers (lower-cased names), body
        self.hanging = threading.Event()  # set: "hang" lets its requests go
        self.sent = 0  # bytes of answers written (what a client that stops reading took, at most)
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                outer.requests.append({"path": self.path, "headers": headers, "body": body})
                if outer.fail == "hang":
                    outer.hanging.wait(60)
                    return
                status, content_type, data = outer._answer(self.path, headers, body)
                if outer.fail == "huge":
                    data = json.dumps({"padding": "x" * 1_000_000}).encode()
                if outer.fail in ("drip", "drip_headers"):
                    head = (f"HTTP/1.1 {status} OK\r\nContent-Type: {content_type}\r\n"
                            f"Content-Length: {len(data)}\r\n\r\n").encode()
                    dripped = head + data if outer.fail == "drip_headers" else data
                    try:
                        if outer.fail == "drip":
                            self.wfile.write(head)
                        for byte in dripped:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                            outer.sent += 1
                            time.sleep(0.1)
                    except OSError:
                        pass  # the client gave up
                    return
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(data)))
                    if status == 429:
                        self.send_header("Retry-After", "20")
                    self.end_headers()
                    for at in range(0, len(data), 64 * 1024):
                        self.wfile.write(data[at:at + 64 * 1024])
                        outer.sent += len(data[at:at + 64 * 1024])
                except OSError:
                    pass  # the client gave up (a timeout)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeChat:
        self.thread.start()
        return self

    def release(self) -> None:
        """Let the requests a ``hang`` holds go (they end without an answer)."""
        self.hanging.set()

    def __exit__(self, *exc: object) -> None:
        self.hanging.set()
        self.server.shutdown()
        self.server.server_close()

    def yaml(self, model: str = "test-chat:1", extra: str = "", timeout_s: float = 2) -> str:
        """The config's ``answer:`` section for this server."""
        key = "  api_key_env: TEST_ANSWER_KEY\n" if self.protocol == "anthropic" else ""
        return (f"answer:\n  provider: {self.protocol}\n  url: {self.url}\n  model: {model}\n{key}"
                f"  timeout_s: {timeout_s:g}\n{extra}")

    # ------------------------------------------------------------------ the protocols

    def _answer(self, path: str, headers: dict[str, str], body: Any) -> tuple[int, str, bytes]:
        if self.fail == "slow":
            time.sleep(1.5)  # past the timeout_s of a test that sends this
        if self.fail == "nonjson":
            return 200, "text/html", b"<html><body>502 Bad Gateway</body></html>"
        if path != PATHS[self.protocol]:
            return self._error(404, "not_found_error", f"no route {path}")
        if not isinstance(body, dict):
            return self._error(400, "invalid_request_error", "the body is not JSON")
        problem = {"openai": self._check_openai, "ollama": self._check_ollama,
                   "anthropic": self._check_anthropic}[self.protocol](headers, body)
        if problem is not None:
            return problem
        if self.fail == "429":
            return self._error(429, "rate_limit_error", "Rate limit reached; try again in 20s")
        if self.fail == "500":
            return self._error(500, "api_error", "Internal server error")
        messages = body["messages"]
        system = body["system"] if self.protocol == "anthropic" else messages[0]["content"]
        conversation = messages if self.protocol == "anthropic" else messages[1:]
        text = self.reply(system, conversation)
        cut = self.fail == "cut"
        if self.protocol == "openai":
            choice = {"index": 0, "message": {"role": "assistant", "content": text},
                      "finish_reason": "length" if cut else "stop"}
            return self._json(200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 1764892800,
                                    "model": body["model"], "choices": [choice],
                                    "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}})
        if self.protocol == "ollama":
            return self._json(200, {"model": body["model"], "created_at": "2026-12-04T23:00:00Z",
                                    "message": {"role": "assistant", "content": text}, "done": True,
                                    "done_reason": "length" if cut else "stop", "total_duration": 1000,
                                    "eval_count": 20})
        return self._json(200, {"id": "msg_01", "type": "message", "role": "assistant", "model": body["model"],
                                "content": [{"type": "text", "text": text}],
                                "stop_reason": "max_tokens" if cut else "end_turn",
                                "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20}})

    def _check_openai(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        if "model" not in body or not isinstance(body.get("messages"), list) or not body["messages"]:
            return self._error(400, "invalid_request_error", "model and messages are required")
        if body["messages"][0]["role"] != "system":
            return self._error(400, "invalid_request_error", "expected the system message first")
        return None

    def _check_ollama(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        if "model" not in body or not isinstance(body.get("messages"), list):
            return self._error(400, "", "model is required")
        if body.get("stream", True) is not False:  # Ollama streams by default: NDJSON, one object per line
            lines = [{"model": body["model"], "message": {"role": "assistant", "content": "Part"}, "done": False},
                     {"model": body["model"], "message": {"role": "assistant", "content": ""}, "done": True}]
            return 200, "application/x-ndjson", "".join(json.dumps(x) + "\n" for x in lines).encode()
        return None

    def _check_anthropic(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        if headers.get("x-api-key") != ANTHROPIC_KEY:  # as some servers do, the error quotes the key
            return self._error(401, "authentication_error", f"invalid x-api-key: {headers.get('x-api-key')}")
        if headers.get("anthropic-version") != "2023-06-01":
            return self._error(400, "invalid_request_error", "anthropic-version: header is required")
        if not isinstance(body.get("max_tokens"), int) or "model" not in body:
            return self._error(400, "invalid_request_error", "max_tokens: Field required")
        if any(m.get("role") not in ("user", "assistant") for m in body.get("messages", [])):
            return self._error(400, "invalid_request_error", "messages: roles must be user or assistant")
        return None

    def _error(self, status: int, kind: str, message: str) -> tuple[int, str, bytes]:
        if self.protocol == "ollama":
            return self._json(status, {"error": message})
        if self.protocol == "anthropic":
            return self._json(status, {"type": "error", "error": {"type": kind, "message": message}})
        return self._json(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    @staticmethod
    def _json(status: int, payload: dict[str, Any]) -> tuple[int, str, bytes]:
        return status, "application/json", json.dumps(payload, ensure_ascii=False).encode()
