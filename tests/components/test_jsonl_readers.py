"""Every JSONL reader of user input: arbitrary bytes and arbitrary JSON structures give clear
errors of the reader's documented kind, never another exception."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from components.certify.batch import CandidateFileError, read_candidate_lines
from components.certify.leakage import load_eval_questions
from components.evaluation.questions import QuestionFileError, load_questions
from components.graph.jsonl import JsonlFileError
from components.rubric.batch import read_marked

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "id",
                    "qid",
                    "question",
                    "answer",
                    "entities",
                    "queries",
                    "evidence",
                    "evidence_json",
                    "answer_type",
                    "level",
                    "x",
                ]
            ),
            kids,
            max_size=5,
        )
    ),
    max_leaves=14,
)
_LINE = st.one_of(_JSON.map(lambda v: json.dumps(v).encode()), st.binary(max_size=30).filter(lambda b: b"\n" not in b))

# reader -> the exceptions it may raise for bad input (anything else is a bug)
READERS = {
    "candidates": (read_candidate_lines, (CandidateFileError,)),
    "marked evidence": (lambda p: read_marked(p), (JsonlFileError,)),
    "evaluation questions": (load_questions, (QuestionFileError,)),
    "leakage questions": (load_eval_questions, (ValueError,)),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, max_size=5))
def test_readers_never_raise_anything_else(tmp_path: Path, reader: str, lines: list[bytes]) -> None:
    fn, allowed = READERS[reader]
    f = tmp_path / "in.jsonl"
    f.write_bytes(b"\n".join(lines))
    try:
        out = fn(f)
    except allowed:
        return
    assert isinstance(out, list)
