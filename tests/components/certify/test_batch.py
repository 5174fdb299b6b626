"""Malformed candidate lines: one clear error line each, never a crash, the rest certified."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.certify.batch import (
    FILE_ERRORS,
    LINE_ERRORS,
    MAX_LINE_BYTES,
    CandidateFileError,
    read_candidate_lines,
)

GOOD = {
    "id": "c1",
    "question": "q?",
    "answer": "x",
    "answer_type": "entity",
    "final_program": "print(1)",
    "evidence": [],
}

BAD = {
    "non_json": (b"{not json", "bad_json"),
    "not_utf8": (b'{"id": "\xff"}', "bad_json"),
    "deep": (b"[" * 100_000 + b"]" * 100_000, "bad_json"),
    "nan": (b'{"id": "n", "x": NaN}', "bad_json"),
    "duplicate_key": (b'{"id": "a", "id": "b"}', "bad_json"),
    "array": (b"[1, 2]", "not_an_object"),
    "string": (b'"a candidate"', "not_an_object"),
    "number": (b"42", "not_an_object"),
    "null": (b"null", "not_an_object"),
    "no_id": (json.dumps({k: v for k, v in GOOD.items() if k != "id"}).encode(), "missing_field"),
    "no_program": (json.dumps({k: v for k, v in GOOD.items() if k != "final_program"}).encode(), "missing_field"),
    "no_answer": (json.dumps({k: v for k, v in GOOD.items() if k != "answer"}).encode(), "missing_field"),
    "id_int": (json.dumps({**GOOD, "id": 7}).encode(), "bad_field"),
    "seed_str": (json.dumps({**GOOD, "seed": "0"}).encode(), "bad_field"),
    "seed_bool": (json.dumps({**GOOD, "seed": True}).encode(), "bad_field"),
    "evidence_dict": (json.dumps({**GOOD, "evidence": {"id": 1}}).encode(), "bad_field"),
    "evidence_item_str": (json.dumps({**GOOD, "evidence": ["q1"]}).encode(), "bad_field"),
    "question_list": (json.dumps({**GOOD, "question": ["q"]}).encode(), "bad_field"),
    "trace_json_object": (json.dumps({**GOOD, "trace_json": json.dumps({"kind": "x"})}).encode(), "bad_json_field"),
    "meta_json_list": (json.dumps({**GOOD, "meta_json": "[1, 2]"}).encode(), "bad_json_field"),
    "evidence_json_garbage": (
        json.dumps({**{k: v for k, v in GOOD.items() if k != "evidence"}, "evidence_json": "{oops"}).encode(),
        "bad_json_field",
    ),
    "meta_json_number": (json.dumps({**GOOD, "meta_json": 5}).encode(), "bad_json_field"),
    "unknown_failure": (json.dumps({"id": "c", "failure_reason": "gremlins"}).encode(), "bad_field"),
    "unknown_quizzer": (json.dumps({**GOOD, "quizzer": "oracle"}).encode(), "bad_field"),
    "answer_value_map": (json.dumps({**GOOD, "answer_value": {"a": 1}}).encode(), "bad_field"),
}


def test_every_malformed_line_gets_its_documented_code(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_bytes(
        b"\n".join(
            [json.dumps(GOOD).encode()]
            + [raw for raw, _ in BAD.values()]
            + [json.dumps({"id": "failed", "failure_reason": "code_error"}).encode()]
        )
        + b"\n"
    )
    lines = read_candidate_lines(f)
    assert len(lines) == len(BAD) + 2
    assert lines[0].ok and lines[-1].ok and lines[-1].candidate.failure_reason == "code_error"
    for (name, (_, code)), ln in zip(BAD.items(), lines[1:-1], strict=True):
        assert not ln.ok and ln.error["code"] == code, (name, ln.error)
        assert ln.error["code"] in LINE_ERRORS and ln.error["message"].startswith(f"line {ln.line}:")
    assert lines[BAD_INDEX("id_int")].id is None and lines[BAD_INDEX("seed_str")].id == "c1"


def BAD_INDEX(name: str) -> int:  # noqa: N802 - a test helper read like a constant
    return 1 + list(BAD).index(name)


def test_an_oversize_line_is_refused_without_holding_it(tmp_path: Path) -> None:
    f = tmp_path / "big.jsonl"
    with f.open("wb") as fh:
        fh.write(b'{"id": "big", "question": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n')
        fh.write(json.dumps(GOOD).encode() + b"\n")
    lines = read_candidate_lines(f)
    assert [ln.error["code"] if ln.error else "ok" for ln in lines] == ["line_too_long", "ok"]
    assert lines[1].line == 2


def test_missing_unreadable_and_empty_files(tmp_path: Path) -> None:
    with pytest.raises(CandidateFileError) as err:
        read_candidate_lines(tmp_path / "nope.jsonl")
    assert err.value.code == "file_not_found" and err.value.code in FILE_ERRORS
    with pytest.raises(CandidateFileError) as err:
        read_candidate_lines(tmp_path)
    assert err.value.code == "file_unreadable"
    (tmp_path / "empty.jsonl").write_text("\n  \n")
    with pytest.raises(CandidateFileError) as err:
        read_candidate_lines(tmp_path / "empty.jsonl")
    assert err.value.code == "empty_file" and err.value.code in FILE_ERRORS


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=6), st.integers()),
        "question": _JSON,
        "answer": _JSON,
        "answer_type": st.sampled_from(["entity", "set", "number", "boolean", "colour"]) | _JSON,
        "final_program": st.sampled_from(["print(1)", "import json\nprint(json.dumps([1]))"]) | _JSON,
        "evidence": st.lists(
            st.dictionaries(st.sampled_from(["id", "query", "rows", "columns", "params"]), _JSON, max_size=5),
            max_size=2,
        )
        | _JSON,
        "evidence_json": st.text(max_size=30) | _JSON,
        "trace_json": st.text(max_size=30) | _JSON,
        "meta_json": st.text(max_size=20) | _JSON,
        "answer_value": _JSON,
        "seed": _JSON,
        "failure_reason": st.sampled_from([None, "code_error", "boom"]) | _JSON,
    },
)
_LINE = st.one_of(
    _FIELDS.map(lambda d: json.dumps(d).encode()),
    _JSON.map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=40).filter(lambda b: b"\n" not in b and b"\r" not in b),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, min_size=1, max_size=6))
def test_fuzzed_certify_cli_never_crashes(lines: list[bytes], contract_db: Path, tmp_path: Path, capsys) -> None:
    """Arbitrary records and bytes through ``graphdojo certify``: no traceback, exactly one JSON
    output line per non-blank input line, errors only with documented codes."""
    from orchestration.cli import main

    f = tmp_path / "fuzz.jsonl"
    f.write_bytes(b"\n".join(lines) + b"\n")
    text = b"\n".join(lines) + b"\n"
    text = text[3:] if text.startswith(b"\xef\xbb\xbf") else text  # a byte-order mark is not a line
    expected = sum(1 for ln in text.split(b"\n") if ln.strip())
    capsys.readouterr()
    code = main(["certify", "--db", str(contract_db), "--candidates", str(f)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if expected == 0:  # nothing but blank lines: one error line, the empty-file code
        assert code == 1 and out == "" and json.loads(err)["error"]["code"] == "empty_file"
        return
    assert err == ""
    rows = [json.loads(x) for x in out.splitlines()]
    assert len(rows) == expected
    for row in rows:
        if row["ok"]:
            assert row["status"] in ("strict", "partial", "hard_failure")
        else:
            assert row["error"]["code"] in LINE_ERRORS
    assert code == (1 if any(not r["ok"] for r in rows) else 0)
