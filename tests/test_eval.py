"""``notes-portal eval`` computes its metrics right (a check of the arithmetic, not of quality)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from builder.cli import main
from builder.cli.evaluate import FOLDS, HitRef, Query, Relevant, folds, metrics, rank
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


def many_queries() -> list[Query]:
    kinds = [("wiki", "exact", 7), ("wiki", "paraphrase", 4), ("kurz", "exact", 3), ("kurz", "noanswer", 5),
             ("kurz", "short", 1)]
    return [Query(f"{corpus}-{kind}-{i}", corpus, "text", kind, (Relevant("a.md", None),) if kind != "noanswer" else (),
                  ()) for corpus, kind, n in kinds for i in range(n)]


def test_folds_are_stratified_deterministic_disjoint_and_cover_every_query():
    queries = many_queries()
    fold = folds(queries)
    assert set(fold) == {q.id for q in queries} and set(fold.values()) == set(FOLDS)  # every query, one fold each
    assert folds(list(reversed(queries))) == fold  # the order of the files does not matter
    sizes = Counter(fold.values())
    assert abs(sizes["tune"] - sizes["held-out"]) <= 1
    for kind in {q.type for q in queries}:  # each type splits as evenly as it can
        of_kind = Counter(fold[q.id] for q in queries if q.type == kind)
        assert abs(of_kind["tune"] - of_kind["held-out"]) <= 1, kind
    for corpus, kind in {(q.corpus, q.type) for q in queries}:  # and so does each (type, corpus) stratum
        of_stratum = Counter(fold[q.id] for q in queries if (q.corpus, q.type) == (corpus, kind))
        assert abs(of_stratum["tune"] - of_stratum["held-out"]) <= 1, (corpus, kind)
    # by the ids, not by their order in the file: a stratum's queries sorted by a hash of the id
    wiki_exact = [q.id for q in queries if q.id.startswith("wiki-exact")]
    assert [fold[i] for i in wiki_exact] != [FOLDS[n % 2] for n in range(len(wiki_exact))]


def test_eval_reads_a_folder_and_reports_the_folds(tmp_path, capsys):
    corpora = tmp_path / "corpora"
    write_note(corpora / "wiki", "pages/docker.md", "# Docker\n\n## Zostavenie obrazu\n\ndocker build -t app .\n")
    write_note(corpora / "wiki", "pages/git.md", "# Git\n\n## Větve\n\ngit branch a git merge\n")
    folder = tmp_path / "eval"
    folder.mkdir()
    records = [{"id": f"q{i}", "corpus": "wiki", "query": text, "type": "exact",
                "relevant": [{"path": path, "heading": None}], "also_relevant_paths": []}
               for i, (text, path) in enumerate([("docker build", "pages/docker.md"), ("git merge", "pages/git.md"),
                                                 ("docker", "pages/git.md"), ("git branch", "pages/git.md")])]
    (folder / "a.jsonl").write_text("\n".join(json.dumps(r) for r in records[:2]) + "\n", encoding="utf-8")
    (folder / "b.jsonl").write_text("\n".join(json.dumps(r) for r in records[2:]) + "\n", encoding="utf-8")
    (folder / "README.md").write_text("not queries\n", encoding="utf-8")
    config = write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                    "sources:\n  notes:\n    folder: corpora\n")
    assert main(["eval", "--config", str(config), "--queries", str(folder), "--modes", "bm25", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["queries"] == 4 and set(report["folds"]) == set(FOLDS)
    fold = {q["id"]: q["fold"] for q in report["per_query"]}
    assert Counter(fold.values()) == {"tune": 2, "held-out": 2}
    wrong = {q["id"] for q in report["per_query"] if q["file_rank"] != 1}
    assert wrong == {"q2"}  # `docker` is not in git.md
    for name in FOLDS:
        mrr = report["folds"][name]["modes"]["bm25"]["file"]["all"]["mrr@10"]
        assert mrr == (0.5 if fold["q2"] == name else 1.0)
    held_out = next(name for name in FOLDS if fold["q2"] != name)
    assert main(["eval", "--config", str(config), "--queries", str(folder), "--modes", "bm25", "--json",
                 "--fold", held_out]) == 0
    report = json.loads(capsys.readouterr().out)  # one fold alone: its queries, no side-by-side folds
    assert report["queries"] == 2 and "folds" not in report
    assert {q["id"] for q in report["per_query"]} == {i for i, f in fold.items() if f == held_out}
    assert report["modes"]["bm25"]["file"]["all"]["mrr@10"] == 1.0
    assert main(["eval", "--config", str(config), "--queries", str(folder), "--modes", "bm25"]) == 0
    table = capsys.readouterr().out
    assert "whole" in table and "held-out" in table
    assert "bm25                     4  0.750 0.75  0.75       2  " in table


def test_eval_options_fail_in_one_line(tmp_path, capsys):
    folder = tmp_path / "eval"
    folder.mkdir()
    config = write_config(tmp_path, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                    "sources:\n  notes:\n    folder: .\n")
    assert main(["eval", "--config", str(config), "--queries", str(folder)]) == 2
    assert capsys.readouterr().err == f"notes-portal: {folder}: no *.jsonl queries files in the folder\n"
    record = {"id": "1", "corpus": "wiki", "query": "x", "type": "exact", "relevant": []}
    (folder / "a.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    (folder / "b.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert main(["eval", "--config", str(config), "--queries", str(folder)]) == 2
    assert capsys.readouterr().err == f"notes-portal: {folder}: query id '1' given twice\n"
    with pytest.raises(SystemExit) as stop:
        main(["eval", "--config", str(config), "--queries", str(folder), "--fold", "tuning"])
    assert stop.value.code == 2
    assert "--fold: invalid choice: 'tuning'" in capsys.readouterr().err
