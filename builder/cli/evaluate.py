"""``notes-portal eval``: retrieval quality over a file of judged queries.

The queries file holds one JSON object per line (the format of ../shared/eval/README.md): ``id``,
``corpus``, ``query``, ``type``, ``relevant`` (``[{path, heading}]``, empty for a query the corpus
cannot answer) and ``also_relevant_paths`` (copies that answer at file level). Each corpus is a
folder under ``--corpora`` named like the ``corpus`` field; the command indexes them as sources of
the same names, with the embedding provider of the config, in a folder of its own beside the index
(rebuilt incrementally, so a second run reuses it), and asks every query in each mode.

Scoring: a hit at *file* level is a chunk from a relevant path (or a copy); at *section* level a
chunk of the relevant path that holds the relevant heading — in its breadcrumb, or within its lines
(small sibling sections share a chunk; H4–H6 stay inside theirs) — or any chunk of it when the
heading is ``null`` (the whole file answers).
Per mode and query type: Hit@1/3/5, MRR@10 and Recall@5 (the share of the ``relevant`` entries found
in the top 5); for queries without an answer, how often the answer was marked weak, and how often
an answerable query wrongly was.

Folds (:func:`folds`): the queries split in two halves by query, *tune* (where rules and weights are
chosen) and *held-out* (where a change must not hurt), stratified by type and corpus. Within each
(type, corpus) stratum, strata in sorted order, the queries are sorted by the SHA-1 of their id and
dealt alternately to the two folds, the alternation running on across strata: each stratum splits
as evenly as it can, so does each type (its corpora are adjacent strata), the folds differ by at
most one query, and the split depends on nothing but the queries' ids, types and corpora (a query
added later moves only those after it in its own stratum and the strata after it).
The report gives the whole set and both folds side by side.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder.core.config import Config, load_config
from builder.core.errors import UserError

EVAL_MODES = ("bm25", "vector", "hybrid")  # the search modes the eval measures, in its report's order
DEPTH = 10  # ranks beyond this count as not found (MRR@10)
TYPE_ORDER = ("exact", "paraphrase", "inflected", "nodiacritics", "crosslang", "short")
FOLDS = ("tune", "held-out")  # where rules are chosen, where they are checked


@dataclass(frozen=True)
class Relevant:
    path: str
    heading: str | None  # None: the whole file answers


@dataclass(frozen=True)
class Query:
    id: str
    corpus: str
    text: str
    type: str
    relevant: tuple[Relevant, ...]
    also: tuple[str, ...]

    @property
    def answerable(self) -> bool:
        return bool(self.relevant)


@dataclass(frozen=True)
class HitRef:
    """What scoring needs of one search hit (``copies``: the same text elsewhere, shown as one hit)."""

    source: str
    path: str
    breadcrumb: str
    line_start: int
    line_end: int
    copies: tuple[HitRef, ...] = ()

    def places(self) -> tuple[HitRef, ...]:
        return (self, *self.copies)


Headings = Callable[[str, str], "tuple[tuple[str, int], ...]"]  # (source, path) → (heading text, line)


@dataclass(frozen=True)
class QueryRanks:
    """Where one query's answers came in one mode (1-based ranks; None: not in the top ``DEPTH``)."""

    query: Query
    file_rank: int | None
    section_rank: int | None
    found_in_5: tuple[float, float]  # Recall@5 at file and section level
    weak: bool | None  # None: the engine does not say


def load_queries(path: Path) -> list[Query]:
    """The judged queries of a file, or of every ``*.jsonl`` file in a folder (in name order); a
    malformed line, or an id given twice, is a one-line error naming it."""
    if path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise UserError(f"{path}: no *.jsonl queries files in the folder")
        queries = [q for file in files for q in _load_file(file)]
    else:
        queries = _load_file(path)
    seen: set[str] = set()
    for q in queries:
        if q.id in seen:
            raise UserError(f"{path}: query id {q.id!r} given twice")
        seen.add(q.id)
    return queries


def _load_file(path: Path) -> list[Query]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise UserError(f"{path}: cannot read the queries file ({exc.strerror or exc})") from None
    queries = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            relevant = tuple(Relevant(str(r["path"]), r.get("heading")) for r in raw["relevant"])
            queries.append(Query(str(raw["id"]), str(raw["corpus"]), str(raw["query"]), str(raw["type"]),
                                 relevant, tuple(str(p) for p in raw.get("also_relevant_paths", ()))))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise UserError(f"{path}:{number}: not a judged query ({type(exc).__name__}: {exc})") from None
    if not queries:
        raise UserError(f"{path}: no queries in the file")
    return queries


def folds(queries: Sequence[Query]) -> dict[str, str]:
    """Each query's fold (:data:`FOLDS`) by its id: see the module."""
    strata: dict[tuple[str, str], list[Query]] = {}
    for q in queries:
        strata.setdefault((q.type, q.corpus), []).append(q)
    fold: dict[str, str] = {}
    dealt = 0
    for key in sorted(strata):
        for q in sorted(strata[key], key=lambda q: (hashlib.sha1(q.id.encode("utf-8")).hexdigest(), q.id)):
            fold[q.id] = FOLDS[dealt % 2]
            dealt += 1
    return fold


def _plain_heading(text: str) -> str:
    """A heading as the index and the judges may spell it: no markup, spaces folded, case ignored."""
    text = unicodedata.normalize("NFC", text).replace("`", "").replace("*", "")
    return " ".join(text.split()).casefold()


def _file_match(query: Query, hit: HitRef) -> bool:
    return any(place.source == query.corpus and (place.path in query.also
                                                 or any(r.path == place.path for r in query.relevant))
               for place in hit.places())


def _section_match(relevant: Relevant, hit: HitRef, corpus: str, headings: Headings) -> bool:
    return any(_place_holds_section(relevant, place, corpus, headings) for place in hit.places())


def _place_holds_section(relevant: Relevant, hit: HitRef, corpus: str, headings: Headings) -> bool:
    if hit.source != corpus or hit.path != relevant.path:
        return False
    if relevant.heading is None:
        return True
    wanted = _plain_heading(relevant.heading)
    if wanted in {_plain_heading(part) for part in hit.breadcrumb.split(" > ")}:
        return True
    return any(_plain_heading(text) == wanted and hit.line_start <= line <= hit.line_end
               for text, line in headings(hit.source, hit.path))


def rank(query: Query, hits: Sequence[HitRef], weak: bool | None, headings: Headings) -> QueryRanks:
    """Score one ranked list of hits against the query's judgement."""
    top = list(hits)[:DEPTH]
    file_rank = next((i for i, hit in enumerate(top, 1) if _file_match(query, hit)), None)
    section_rank = next((i for i, hit in enumerate(top, 1)
                         if any(_section_match(r, hit, query.corpus, headings) for r in query.relevant)), None)
    first5 = top[:5]
    if query.relevant:
        by_file = sum(any(p.source == query.corpus and (p.path == r.path or p.path in query.also)
                          for h in first5 for p in h.places()) for r in query.relevant) / len(query.relevant)
        by_section = sum(any(_section_match(r, h, query.corpus, headings) for h in first5)
                         for r in query.relevant) / len(query.relevant)
    else:
        by_file = by_section = 0.0
    return QueryRanks(query, file_rank, section_rank, (by_file, by_section), weak)


def metrics(ranked: Sequence[QueryRanks], level: str) -> dict[str, float | int]:
    """Hit@1/3/5, MRR@10 and Recall@5 of answerable queries at ``level`` (``file`` or ``section``)."""
    ranks = [r.file_rank if level == "file" else r.section_rank for r in ranked]
    recalls = [r.found_in_5[0 if level == "file" else 1] for r in ranked]
    n = len(ranks)
    if not n:
        return {"n": 0}

    def hit(k: int) -> float:
        return sum(1 for x in ranks if x is not None and x <= k) / n

    return {"n": n, "hit@1": hit(1), "hit@3": hit(3), "hit@5": hit(5),
            "mrr@10": sum(1 / x for x in ranks if x is not None) / n, "recall@5": sum(recalls) / n}


@dataclass
class EvalReport:
    queries: int
    modes: dict[str, list[QueryRanks]] = field(default_factory=dict)
    fold: dict[str, str] = field(default_factory=dict)  # query id → fold; empty: no folds reported

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"queries": self.queries, "modes": _summary(self.modes)}
        present = [f for f in FOLDS if f in self.fold.values()]
        if len(present) > 1:  # the whole set and each fold (one fold alone: "modes" is that fold)
            out["folds"] = {f: {"queries": sum(1 for v in self.fold.values() if v == f),
                                "modes": _summary({mode: [r for r in ranked if self.fold.get(r.query.id) == f]
                                                   for mode, ranked in self.modes.items()})}
                            for f in present}
        return out

    def to_json(self) -> dict[str, Any]:
        data = self.summary()
        data["per_query"] = [{"id": r.query.id, "mode": mode, "type": r.query.type, "corpus": r.query.corpus,
                              "fold": self.fold.get(r.query.id), "file_rank": r.file_rank,
                              "section_rank": r.section_rank, "weak": r.weak}
                             for mode, ranked in self.modes.items() for r in ranked]
        return data


def _summary(modes: dict[str, list[QueryRanks]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for mode, ranked in modes.items():
        answerable = [r for r in ranked if r.query.answerable]
        types = [t for t in TYPE_ORDER if any(r.query.type == t for r in answerable)]
        types += sorted({r.query.type for r in answerable} - set(types))
        entry: dict[str, Any] = {}
        for level in ("file", "section"):
            entry[level] = {"all": metrics(answerable, level)}
            entry[level].update({t: metrics([r for r in answerable if r.query.type == t], level) for t in types})
        unanswerable = [r for r in ranked if not r.query.answerable]
        entry["weak"] = _weak_figures(unanswerable, answerable)
        out[mode] = entry
    return out


def _weak_figures(unanswerable: list[QueryRanks], answerable: list[QueryRanks]) -> dict[str, Any]:
    def share(items: list[QueryRanks]) -> float | None:
        said = [r.weak for r in items if r.weak is not None]
        return sum(said) / len(said) if said else None

    return {"noanswer": len(unanswerable), "noanswer_marked_weak": share(unanswerable),
            "answerable_marked_weak": share(answerable)}


def format_report(summary: dict[str, Any]) -> str:
    """The summary as readable tables: one per level, a row per mode and query type; with folds, the
    whole set and each fold side by side (MRR@10, Hit@1, Hit@5, and the weak marks)."""
    lines = [f"{summary['queries']} queries"]
    for level in ("file", "section"):
        lines += ["", f"{level + ' level':<20}   n  Hit@1  Hit@3  Hit@5  MRR@10  R@5"]
        for mode, entry in summary["modes"].items():
            for name, m in entry[level].items():
                if not m.get("n"):
                    continue
                label = f"{mode} {name}" if name != "all" else f"{mode}"
                lines.append(f"{label:<20}{m['n']:>4}  {m['hit@1']:.3f}  {m['hit@3']:.3f}  {m['hit@5']:.3f}  "
                             f"{m['mrr@10']:.3f}  {m['recall@5']:.3f}")
    lines += ["", "weak answers   noanswer marked weak   answerable marked weak"]
    for mode, entry in summary["modes"].items():
        weak = entry["weak"]
        lines.append(f"{mode:<15}{_pct(weak['noanswer_marked_weak']):>8} of {weak['noanswer']:<12}"
                     f"{_pct(weak['answerable_marked_weak']):>10}")
    if "folds" in summary:
        lines += _fold_tables(summary)
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f} %"


def _fold_tables(summary: dict[str, Any]) -> list[str]:
    views = {"whole": summary["modes"], **{f: v["modes"] for f, v in summary["folds"].items()}}
    head = "".join(f"  {name:<24}" for name in views)
    lines: list[str] = []
    for level in ("file", "section"):
        lines += ["", f"{level + ' level':<20}{head}", f"{'':<20}" + "     n    MRR   H@1   H@5  " * len(views)]
        for mode, entry in summary["modes"].items():
            for name in entry[level]:
                label = f"{mode} {name}" if name != "all" else f"{mode}"
                cells = []
                for view in views.values():
                    m = view[mode][level].get(name, {"n": 0})
                    cells.append(f"  {m['n']:>4}  {m['mrr@10']:.3f} {m['hit@1']:.2f}  {m['hit@5']:.2f}  "
                                 if m.get("n") else f"  {0:>4}  {'':<19}")
                lines.append(f"{label:<20}{''.join(cells)}")
    lines += ["", f"{'weak: noanswer, answerable':<28}" + "".join(f"{name:<26}" for name in views)]
    for mode in summary["modes"]:
        cells = [f"{_pct(v[mode]['weak']['noanswer_marked_weak'])} of {v[mode]['weak']['noanswer']}, "
                 f"{_pct(v[mode]['weak']['answerable_marked_weak'])}" for v in views.values()]
        lines.append(f"{mode:<28}" + "".join(f"{c:<26}" for c in cells))
    return lines


# ---------------------------------------------------------------- running it


def eval_config(config: Config, corpora: Path, names: Sequence[str]) -> Config:
    """A config indexing each corpus folder as a source, with ``config``'s embedding provider and
    dictionary, in a folder of its own beside ``config``'s index (one per provider and model, kept
    between runs)."""
    for name in names:
        if not (corpora / name).is_dir():
            raise UserError(f"corpus {name!r} not found: no folder {corpora / name} (use --corpora DIR)")
    emb = config.embedding
    slug = re.sub(r"[^a-z0-9]+", "-", f"{emb.provider}-{emb.model}".lower()).strip("-")
    work = config.data_dir / "eval" / slug
    work.mkdir(parents=True, exist_ok=True)
    embedding = {key: value for key, value in {
        "provider": emb.provider, "model": emb.model, "dims": emb.dims, "endpoint": emb.endpoint or None,
        "batch": emb.batch, "timeout": emb.timeout, "query_prefix": emb.query_prefix,
        "passage_prefix": emb.passage_prefix, "api_key_env": emb.api_key_env}.items() if value is not None}
    if emb.provider in ("local", "none"):
        embedding = {"provider": emb.provider}
    body = {"site": {"title": "eval", "output": "site"}, "index": "index.sqlite", "embedding": embedding,
            "sources": {name: {"folder": str(corpora / name)} for name in sorted(set(names))},
            "search": {"dictionary": str(config.dictionary) if config.dictionary is not None else False}}
    path = work / "eval-portal.yaml"
    path.write_text(json.dumps(body, ensure_ascii=False, indent=1), encoding="utf-8")  # JSON is valid YAML
    return load_config(path)


def evaluate(queries: list[Query], ask: Callable[[Query, str], tuple[list[HitRef], bool | None]],
             headings: Headings, modes: Sequence[str] = EVAL_MODES, fold: dict[str, str] | None = None) -> EvalReport:
    """Ask every query in every mode; ``ask`` returns the ranked hits and the engine's weak flag,
    ``headings`` a note's headings with their lines; ``fold``: each query's fold, reported apart."""
    report = EvalReport(len(queries), fold={q.id: (fold or {})[q.id] for q in queries if q.id in (fold or {})})
    for mode in modes:
        report.modes[mode] = [rank(q, *ask(q, mode), headings) for q in queries]
    return report
