"""The candidate record: flat, JSON/Parquet-serialisable, exact round trip."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from components.quizzer.candidate import (
    FAILURE_REASONS,
    QACandidate,
    candidate_id,
    format_answer,
)


def _candidate() -> QACandidate:
    c = QACandidate(
        id=candidate_id(3, 7, "llm"),
        quizzer="llm",
        seed=3,
        index=7,
        question="Which papers?",
        answer="A; B",
        answer_value=["A", "B"],
        answer_type="set",
        axes={
            "answer_type": "set",
            "question_pattern": "head_known",
            "difficulty": "simple",
            "match_family": "one_hop",
            "return_family": "distinct_set",
        },
        start_node={"label": "Author", "id": "author_1", "name": "Ann"},
        neighbourhood={"hops": [{"type": "WROTE", "direction": "out", "count": 2}]},
        trace=[{"turn": 1, "model_text": "```python\nprint(1)\n```", "cell": {"ok": True}}],
        evidence=[{"id": "e:q1", "rows": [["A"], ["B"]], "params": {"a": 1}}],
        final_program="print(1)",
        prompt_tokens=100,
        completion_tokens=20,
        latency_s=1.5,
        repaired=True,
        model="tiny",
        meta={"first_failure": "code_error"},
    )
    return c


def test_record_is_flat_json_and_round_trips() -> None:
    c = _candidate()
    rec = c.to_record()
    assert all(not isinstance(v, (dict, list)) for v in rec.values())
    assert json.loads(rec["evidence_json"])[0]["rows"] == [["A"], ["B"]]
    assert QACandidate.from_record(json.loads(json.dumps(rec))) == c
    failed = QACandidate(id="x", quizzer="template", seed=0, index=0).fail("timeout", "slow")
    assert QACandidate.from_record(failed.to_record()) == failed and not failed.ok


def test_records_go_through_parquet_types() -> None:
    recs = [
        _candidate().to_record(),
        QACandidate(id="y", quizzer="template", seed=0, index=1, answer_value=3).to_record(),
    ]
    table = pa.Table.from_pylist(recs)
    back = [QACandidate.from_record(r) for r in table.to_pylist()]
    assert back[0] == _candidate() and back[1].answer_value == 3


def test_ids_reasons_and_answer_strings() -> None:
    assert candidate_id(0, 1, "template") == candidate_id(0, 1, "template") != candidate_id(1, 1, "template")
    assert candidate_id(0, 1, "template") != candidate_id(0, 1, "llm")
    with pytest.raises(ValueError):
        QACandidate(id="x", quizzer="template", seed=0, index=0).fail("bogus")
    with pytest.raises(ValueError):
        QACandidate(id="x", quizzer="oracle", seed=0, index=0)
    assert {
        "no_final_code",
        "no_evidence",
        "code_error",
        "timeout",
        "empty_output",
        "unparseable_answer",
        "unsafe_query",
        "schema_error",
    } <= set(FAILURE_REASONS)
    assert (format_answer(False), format_answer(2.50), format_answer(209612.34)) == ("no", "2.5", "209612.34")


def test_every_failure_code_the_quizzers_use_is_declared() -> None:
    """A code missing from FAILURE_REASONS makes ``fail()`` raise inside the quizzer loop."""
    import re
    from pathlib import Path

    from components.quizzer.candidate import FAILURE_REASONS

    root = Path(__file__).resolve().parents[3] / "components" / "quizzer"
    src = "".join(p.read_text() for p in root.glob("*.py"))
    used = set(re.findall(r'\.fail\(\s*"([a-z_]+)"', src)) | set(re.findall(r'reason="([a-z_]+)"', src))
    assert used and used <= set(FAILURE_REASONS), sorted(used - set(FAILURE_REASONS))
