"""The leakage filter: explicit ids, names in text, evidence-only overlap, whole-word matching,
the report, and the lexicon built from a real demo graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.certify.leakage import (
    EvalItem,
    LeakageFilter,
    build_lexicon,
    load_eval_questions,
)
from components.quizzer.candidate import QACandidate

LEXICON = {
    "Anne Carter": "author_1",
    "Bob Stone": "author_2",
    "Graph Mining": "paper_9",
    "Ann": "author_3",
    "Quantum Foo": "paper_7",
}


def cand(
    i: int,
    question: str,
    answer: str = "",
    *,
    answer_type: str = "number",
    value=None,
    start: dict | None = None,
    rows=(),
    params=None,
) -> QACandidate:
    return QACandidate(
        id=f"c{i}",
        quizzer="template",
        seed=0,
        index=i,
        question=question,
        answer=answer,
        answer_value=value,
        answer_type=answer_type,
        start_node=start or {},
        evidence=[
            {
                "id": f"c{i}:q1",
                "query": "MATCH (n) RETURN n.name",
                "params": params or {},
                "columns": ["x"],
                "rows": [list(r) for r in rows],
                "row_count": len(rows),
                "truncated": False,
            }
        ],
    )


def test_load_eval_questions(tmp_path: Path) -> None:
    p = tmp_path / "eval.jsonl"
    p.write_text(
        json.dumps({"question": "Who wrote X?", "answer": ["A", "B"], "entities": ["e1"], "qid": "q1"})
        + "\n\n"
        + json.dumps({"question": "How many?", "answer": 3})
        + "\n"
    )
    items = load_eval_questions(p)
    assert items == [EvalItem("q1", "Who wrote X?", "A; B", ("e1",)), EvalItem("line-3", "How many?", "3", ())]
    p.write_text('{"answer": 1}\n')
    with pytest.raises(ValueError, match="eval.jsonl:1"):
        load_eval_questions(p)


def test_explicit_entity_id_matches_start_node() -> None:
    f = LeakageFilter([EvalItem("e1", "Some unrelated question?", "", ("AUTHOR_14",))])
    c = cand(
        0,
        "How many papers did Zed Q write?",
        "3",
        start={"id": "author_14", "name": "Zed Q"},
        params={"start": "author_14"},
    )
    res = f.check(c)
    assert res.dropped
    assert {(w, q) for _, q, w in res.matches} == {("question", "e1"), ("evidence", "e1")}
    other = cand(1, "How many papers did Y write?", "3", start={"id": "author_15", "name": "Yolanda"})
    assert not f.check(other).dropped


def test_names_in_text_via_lexicon_and_directly() -> None:
    items = [
        EvalItem("e1", "Which venue published Graph Mining?", "KDD"),
        EvalItem("e2", "Who is bob stone's coauthor?", ""),
    ]
    f = LeakageFilter(items, lexicon=LEXICON)
    # a candidate mentioning the paper by name in its question
    r = f.check(cand(0, "In which year was Graph Mining published?", "2019"))
    assert r.dropped and r.matches == [("graph mining", "e1", "question")]
    # answer mentions Bob Stone (case-insensitive), an entity answer value
    r = f.check(cand(1, "Who wrote Quantum Foo?", "Bob Stone", answer_type="entity", value="Bob Stone"))
    assert r.dropped and {(q, w) for _, q, w in r.matches} == {("e2", "answer")}
    # explicit eval id matched through the lexicon: eval item grounded on paper_7
    f2 = LeakageFilter([EvalItem("e3", "What is about?", "", ("paper_7",))], lexicon=LEXICON)
    r = f2.check(cand(2, "Who wrote Quantum Foo?", "Bob Stone"))
    assert r.dropped and r.matches == [("quantum foo", "e3", "question")]


def test_evidence_only_overlap() -> None:
    f = LeakageFilter([EvalItem("e1", "Which papers did Anne Carter write?", "")], lexicon=LEXICON)
    c = cand(0, "How many authors wrote more than two papers?", "4", rows=[["Anne Carter", 3], ["Zed", 4]])
    r = f.check(c)
    assert r.dropped and r.matches == [("Anne Carter", "e1", "evidence")]
    # without a lexicon arbitrary row values are not entities
    assert not LeakageFilter([EvalItem("e1", "Which papers did Anne Carter write?", "")]).check(c).dropped


def test_no_false_drop_on_substrings() -> None:
    f = LeakageFilter(
        [EvalItem("e1", "What did Anne write?", "Annex"), EvalItem("e2", "Count papers in 2019", "12")], lexicon=LEXICON
    )
    c = cand(
        0,
        "Which papers did Ann write?",
        "Joanna; Ann-Marie",
        answer_type="set",
        value=["Joanna"],
        start={"id": "author_3", "name": "Ann"},
        params={"start": "author_3"},
    )
    assert f.check(c).matches == []
    # numbers are never matched as text
    assert not f.check(cand(1, "How many papers in 2019?", "12", value=12)).dropped
    # while the whole word does match
    assert f.check(cand(2, "What did Anne write?", "")).dropped is False  # "Anne" is no lexicon name
    f3 = LeakageFilter([EvalItem("e3", "Where does Ann work?", "")], lexicon=LEXICON)
    assert f3.check(c).dropped


def test_filter_report() -> None:
    items = [EvalItem("e1", "Which venue published Graph Mining?", "", ("author_2",))]
    f = LeakageFilter(items, lexicon=LEXICON)
    cs = [
        cand(0, "Year of Graph Mining?", "2019"),  # question
        cand(1, "Who wrote Quantum Foo?", "Bob Stone", answer_type="entity", value="Bob Stone"),  # answer
        cand(2, "How many?", "2", rows=[["author_2"]]),  # evidence
        cand(3, "How many authors?", "82"),
    ]  # kept
    kept, dropped, report = f.filter(cs)
    assert [c.id for c in kept] == ["c3"] and [c.id for c, _ in dropped] == ["c0", "c1", "c2"]
    assert report["candidates"] == 4 and report["dropped"] == 3 and report["kept"] == 1
    assert report["by_where"] == {"question": 1, "answer": 1, "evidence": 1}
    assert report["by_eval"] == {"e1": 3}
    assert dropped[0][1].to_json()["matches"][0]["where"] == "question"


def test_real_candidates_and_lexicon(certify_env) -> None:
    env = certify_env["academic"]
    lex = build_lexicon(env["qp"], env["schema"])
    assert len(lex) > 100
    cs = [c for c in env["candidates"] if c.ok]
    target = cs[0]
    items = [
        EvalItem("leak", f"Tell me about {target.start_node['name']}.", ""),
        EvalItem("clean", "What is the capital of Atlantis?", ""),
    ]
    _kept, dropped, report = LeakageFilter(items, lexicon=lex).filter(cs)
    assert target in [c for c, _ in dropped] and report["dropped"] >= 1
    assert report["by_eval"].get("clean") is None
    assert not LeakageFilter([items[1]], lexicon=lex).filter(cs)[1]
