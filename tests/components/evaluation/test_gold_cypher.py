"""Question files with gold Cypher: answers computed on the real library graph through the read-only
query path, types inferred from the result's shape, and every query that cannot give a scorable
answer reported with its reason — JSONL and CSV alike, through `graphdojo eval` too."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from components.evaluation.gold_cypher import load_question_file, resolve_gold
from components.evaluation.questions import QuestionFileError
from components.graph.load import load_graph
from tests.components.tools.test_graph_cot import library_graph

CASES = [
    # (id, question, cypher, params, expected answer, expected type) — or a skip reason instead
    ("name", "What is the title of p2?", "MATCH (p:Paper {id: $p}) RETURN p.title AS t", {"p": "p2"},
     "Attention Is All You Need", "entity"),
    ("count", "How many papers did Bob write?",
     "MATCH (:Author {name: 'Bob Stone'})-[:WROTE]->(p:Paper) RETURN count(p)", {}, "2", "number"),
    ("bool", "Did Ann write p3?",
     "RETURN EXISTS { MATCH (:Author {id: 'ann'})-[:WROTE]->(:Paper {id: 'p3'}) } AS b", {}, "no", "boolean"),
    ("set", "Who wrote p2?", "MATCH (a:Author)-[:WROTE]->(:Paper {id: 'p2'}) RETURN a.name", {},
     "Ann Lee; Bob Stone", "set"),
    ("node", "Which venue published p3?", "MATCH (:Paper {id: 'p3'})-[:PUBLISHED_IN]->(v:Venue) RETURN v", {},
     "Proceedings One", "entity"),
    ("two_cols", "Which papers and years?", "MATCH (p:Paper) RETURN p.title, p.year", {}, "not_scorable", None),
    ("empty", "Who wrote p9?", "MATCH (a:Author)-[:WROTE]->(:Paper {id: 'p9'}) RETURN a.name", {},
     "returned_nothing", None),
    ("syntax", "Broken?", "MATCH (a:Author RETURN a", {}, "query_failed", None),
    ("write", "Delete?", "MATCH (a:Author) DETACH DELETE a", {}, "query_failed", None),
    ("label", "Unknown?", "MATCH (w:Writer) RETURN w.name", {}, "query_failed", None),
]  # fmt: skip


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("gold") / "db"
    load_graph(library_graph(), path)
    return path


def _jsonl(tmp_path: Path) -> Path:
    f = tmp_path / "gold.jsonl"
    f.write_text(
        "\n".join(json.dumps({"id": i, "question": q, "cypher": c, "params": p}) for i, q, c, p, *_ in CASES)
        + "\n"
        + json.dumps({"id": "given", "question": "Who is Ann?", "answer": "Ann Lee"})
    )
    return f


def _check(resolution) -> None:
    by_id = {r["id"]: r for r in resolution.rows}
    skipped = {s["id"]: s for s in resolution.skipped}
    for i, _q, _c, _p, expected, kind in CASES:
        if kind is None:
            assert skipped[i]["reason"] == expected and i not in by_id, i
        else:
            assert (by_id[i]["answer"], by_id[i]["answer_type"]) == (expected, kind), i
    assert by_id["given"]["answer"] == "Ann Lee"  # a row with its own answer passes through
    assert "Writer" in skipped["label"]["detail"] and skipped["two_cols"]["detail"].endswith("2 column(s)")
    assert resolution.summary() == {
        "scorable": 6,
        "skipped": 5,
        "skipped_by_reason": {"not_scorable": 1, "returned_nothing": 1, "query_failed": 3},
    }


def test_gold_answers_come_from_running_the_cypher(db: Path, tmp_path: Path) -> None:
    rows = load_question_file(_jsonl(tmp_path))
    assert rows[0]["line"] == 1 and rows[0]["cypher"].startswith("MATCH")
    _check(resolve_gold(rows, str(db)))
    # the refused write left the graph intact
    again = resolve_gold([r for r in rows if r["id"] == "set"], str(db))
    assert again.rows[0]["answer"] == "Ann Lee; Bob Stone"


def test_csv_files_work_the_same(db: Path, tmp_path: Path) -> None:
    f = tmp_path / "gold.csv"
    with open(f, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "question", "cypher", "params", "answer"])
        for i, q, c, p, *_ in CASES:
            w.writerow([i, q, c, json.dumps(p) if p else "", ""])
        w.writerow(["given", "Who is Ann?", "", "", "Ann Lee"])
    rows = load_question_file(f)
    assert rows[0]["line"] == 2  # the header is line 1
    _check(resolve_gold(rows, str(db)))


def test_malformed_question_files_are_refused_naming_their_lines(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"id": "a", "question": "ok?", "cypher": "RETURN 1"}\n'
        '{"id": "a", "question": "again?", "cypher": "RETURN 2"}\n'
        '{"question": "no gold?"}\n'
        '{"question": "bad params", "cypher": "RETURN 1", "params": [1]}\n'
    )
    with pytest.raises(QuestionFileError, match=r"3 bad line\(s\): line 2: duplicate.*line 3: needs.*line 4: 'params'"):
        load_question_file(bad)
    headless = tmp_path / "x.csv"
    headless.write_text("q,c\nwhat,RETURN 1\n")
    with pytest.raises(QuestionFileError, match="needs a 'question' header"):
        load_question_file(headless)
    with pytest.raises(QuestionFileError, match="no such file"):
        load_question_file(tmp_path / "missing.jsonl")


def test_eval_command_reports_the_skipped_questions(db: Path, tmp_path: Path, capsys) -> None:
    from components.llm.models import tiny_random_model
    from orchestration.cli import main

    model = tiny_random_model(tmp_path / "tiny", seed=0)
    rc = main(
        ["eval", "--checkpoint", str(model), "--domain", "lib", "--db", str(db), "--questions", str(_jsonl(tmp_path)),
         "--samples", "1", "--max-turns", "1", "--max-new-tokens", "2", "--judge", str(model),
         "--out", str(tmp_path / "out")]
    )  # fmt: skip
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and out["questions"] == 6
    assert {s["id"]: s["reason"] for s in out["questions_skipped"]} == {
        "two_cols": "not_scorable",
        "empty": "returned_nothing",
        "syntax": "query_failed",
        "write": "query_failed",
        "label": "query_failed",
    }
    report = (tmp_path / "out" / "report.md").read_text()
    assert "## Questions skipped" in report and "returned_nothing" in report


def test_a_domain_yaml_evaluates_its_own_question_file(db: Path, tmp_path: Path) -> None:
    """``eval.questions`` (relative to the YAML) replaces the test split in ``eval_reports``; a
    missing file is a configuration error, and the file's content enters the fingerprint."""
    from components.evaluation.run import EvalPlan, evaluation_rows
    from components.store.artifact import Artifact
    from orchestration.domains import DomainConfigError, load_domain_file

    (tmp_path / "sets").mkdir()
    questions = _jsonl(tmp_path / "sets")
    yaml = tmp_path / "lib.yaml"
    yaml.write_text(
        f"name: lib\nsource: {{format: generator, src: academic}}\neval: {{questions: sets/{questions.name}}}\n"
    )
    cfg = load_domain_file(yaml)
    assert cfg.evaluate.questions == str(questions.resolve())
    snapshot = Artifact("graph_snapshot", "lib", "f", str(db))
    rows, skipped = evaluation_rows(cfg.evaluate, {"snapshot": snapshot})
    assert len(rows) == 6 and len(skipped) == 5
    before = EvalPlan(cfg.evaluate, cfg.train).params()["questions_hash"]
    questions.write_text(questions.read_text() + '\n{"id": "more", "question": "More?", "cypher": "RETURN 1"}')
    assert EvalPlan(cfg.evaluate, cfg.train).params()["questions_hash"] != before
    yaml.write_text("name: lib\nsource: {format: generator, src: academic}\neval: {questions: nowhere.jsonl}\n")
    with pytest.raises(DomainConfigError, match="eval.questions: no such file"):
        load_domain_file(yaml)


def test_numbers_read_the_same_alone_and_in_a_set() -> None:
    from components.evaluation.gold_cypher import _answer

    assert _answer(["n"], [[2.0]], None) == ("2", "number")
    assert _answer(["n"], [[2.0], [3.5], [2]], None) == ("2; 3.5", "set")  # 2.0 and 2 are one member
    assert _answer(["n"], [[float("nan")]], None) == "not_scorable"
    assert _answer(["n"], [[1], [float("inf")]], None) == "not_scorable"
