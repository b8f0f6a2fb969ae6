"""``notes-portal eval`` computes its metrics right (a check of the arithmetic, not of quality)."""

from __future__ import annotations

import json

import pytest

from builder.cli import main
from builder.cli.evaluate import HitRef, Query, Relevant, metrics, rank
from tests.conftest import write_config, write_note

NO_HEADINGS = lambda source, path: ()  # noqa: E731


def query(relevant: list[tuple[str, str | None]], also: tuple[str, ...] = (), kind: str = "exact") -> Query:
    return Query("q", "wiki", "text", kind, tuple(Relevant(p, h) for p, h in relevant), also)


def hit(path: str, breadcrumb: str = "T", source: str = "wiki", lines: tuple[int, int] = (1, 5)) -> HitRef:
    return HitRef(source, path, breadcrumb, *lines)


def test_file_and_section_ranks():
    q = query([("a.md", "Zostavenie `obrazu`")], also=("copy/a.md",))
    hits = [hit("b.md"), hit("copy/a.md", "T > Zostavenie obrazu"), hit("a.md", "T > Iné"),
            hit("a.md", "T > Zostavenie  obrazu"), hit("a.md", source="other")]
    ranked = rank(q, hits, None, NO_HEADINGS)
    assert (ranked.file_rank, ranked.section_rank) == (2, 4)  # a copy counts for the file only
    assert ranked.found_in_5 == (1.0, 1.0)


def test_a_heading_inside_a_chunk_without_being_in_its_breadcrumb_counts():
    q = query([("a.md", "Load Factor")])
    headings = {("wiki", "a.md"): (("Slot", 10), ("Load factor", 14))}
    ranked = rank(q, [hit("a.md", "T > Slot", lines=(10, 20))], None, lambda s, p: headings[(s, p)])
    assert ranked.section_rank == 1
    ranked = rank(q, [hit("a.md", "T > Slot", lines=(10, 13))], None, lambda s, p: headings[(s, p)])
    assert (ranked.file_rank, ranked.section_rank) == (1, None)


def test_metrics_by_hand():
    answers = [query([("a.md", None)]) for _ in range(4)]
    lists = [[hit("a.md")], [hit("x.md"), hit("y.md"), hit("a.md")], [hit("x.md")] * 5 + [hit("a.md")],
             [hit("x.md")] * 12 + [hit("a.md")]]
    ranked = [rank(q, hits, None, NO_HEADINGS) for q, hits in zip(answers, lists, strict=True)]
    assert [r.file_rank for r in ranked] == [1, 3, 6, None]  # rank 13 is beyond MRR@10
    m = metrics(ranked, "file")
    assert m == {"n": 4, "hit@1": 0.25, "hit@3": 0.5, "hit@5": 0.5, "mrr@10": pytest.approx((1 + 1 / 3 + 1 / 6) / 4),
                 "recall@5": 0.5}


def test_eval_end_to_end_on_a_small_corpus(tmp_path, capsys):
    corpora = tmp_path / "corpora"
    write_note(corpora / "wiki", "pages/docker.md", "# Docker\n\n## Zostavenie obrazu\n\ndocker build -t app .\n")
    write_note(corpora / "wiki", "pages/kube.md", "# Kubernetes\n\n## Pody\n\nkubectl get pods\n")
    write_note(corpora / "kurz", "lessons/git.md", "# Git\n\n## Větve\n\ngit branch a git merge\n")
    queries = tmp_path / "eval" / "dev.jsonl"
    queries.parent.mkdir()
    lines = [
        {"id": "1", "corpus": "wiki", "query": "docker build", "type": "exact",
         "relevant": [{"path": "pages/docker.md", "heading": "Zostavenie obrazu"}], "also_relevant_paths": []},
        {"id": "2", "corpus": "kurz", "query": "git merge", "type": "exact",
         "relevant": [{"path": "lessons/git.md", "heading": "Větve"}], "also_relevant_paths": []},
        {"id": "3", "corpus": "wiki", "query": "kubectl", "type": "short",
         "relevant": [{"path": "pages/docker.md", "heading": None}], "also_relevant_paths": []},
        {"id": "4", "corpus": "wiki", "query": "pandas groupby", "type": "noanswer", "relevant": [],
         "also_relevant_paths": []},
    ]
    queries.write_text("\n".join(json.dumps(q) for q in lines) + "\n", encoding="utf-8")
    config = write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                    "sources:\n  notes:\n    folder: corpora\n")
    assert main(["eval", "--config", str(config), "--queries", str(queries), "--modes", "bm25", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    ranks = {q["id"]: (q["file_rank"], q["section_rank"]) for q in report["per_query"]}
    assert ranks == {"1": (1, 1), "2": (1, 1), "3": (None, None), "4": (None, None)}
    file_level = report["modes"]["bm25"]["file"]
    assert file_level["all"] == {"n": 3, "hit@1": 2 / 3, "hit@3": 2 / 3, "hit@5": 2 / 3, "mrr@10": 2 / 3,
                                 "recall@5": 2 / 3}
    assert file_level["short"]["hit@1"] == 0.0 and report["modes"]["bm25"]["weak"]["noanswer"] == 1
    assert main(["eval", "--config", str(config), "--queries", str(queries), "--modes", "bm25"]) == 0
    table = capsys.readouterr().out
    assert "bm25                   3  0.667  0.667  0.667  0.667  0.667" in table


def test_a_bad_queries_file_is_one_line(tmp_path, capsys):
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "1"}\n', encoding="utf-8")
    config = write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                    "sources:\n  notes:\n    folder: .\n")
    assert main(["eval", "--config", str(config), "--queries", str(queries)]) == 2
    assert capsys.readouterr().err == f"notes-portal: {queries}:1: not a judged query (KeyError: 'relevant')\n"
