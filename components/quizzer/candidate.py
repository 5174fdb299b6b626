"""The Quizzer's output record: one question/answer candidate with everything that made it.

A :class:`QACandidate` is what the ``qa_candidates`` asset stores, one row per candidate. It is
recorded whether the quizzer succeeded or not: a failed candidate has ``failure_reason`` set to
one of :data:`FAILURE_REASONS` (stable codes) and a free-text ``failure_detail``.

:meth:`QACandidate.to_record` flattens it for Parquet — scalars stay columns, nested parts
(axes, start node, neighbourhood, trace, evidence, answer value, meta) become JSON strings in
``*_json`` columns — and :meth:`QACandidate.from_record` reverses it exactly.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Final

__all__ = [
    "FAILURE_REASONS",
    "QUIZZER_KINDS",
    "QACandidate",
    "candidate_id",
    "format_answer",
]

QUIZZER_KINDS: Final = ("template", "llm", "external")

#: Stable failure codes (``failure_reason``); ``None`` means the candidate is complete.
FAILURE_REASONS: Final[Mapping[str, str]] = {
    "empty_output": "the model produced no text",
    "no_code": "no ```python block in a turn that needed one",
    "multiple_code_blocks": "a turn held more than one ```python block",
    "no_final_code": "the final turn had no code block recomputing the answer",
    "missing_tags": "no <question>…</question><answer>…</answer> in the final turn",
    "loop_limit": "the turn budget ran out before a final answer",
    "code_error": "the final program raised an error",
    "timeout": "the final program exceeded its time or CPU limit",
    "unsafe_query": "a query was refused as not read-only",
    "schema_error": "a query used an unknown label, type, property or direction",
    "query_error": "a query failed to parse or execute",
    "no_evidence": "the final program marked no evidence",
    "forged_evidence": "the final program tried to mark results not produced by cypher()",
    "unparseable_answer": "the answer does not parse as its answer type",
    "answer_mismatch": "the answer printed by the final program differs from the stated answer",
    "empty_answer": "the answer is empty",
    "copied_example": "the final turn repeats a worked example (same query structure and entities)",
    "ungrounded_question": "the question names an entity its evidence neither anchors on nor returns",
    "question_form": "the question asks for another kind of answer than its answer type",
    "answer_in_question": "the question names its own answer",
    "degenerate_answer": "the answer is trivial (too large a set, a tie under ranking, …)",
    "truncated_evidence": "the evidence hit the row limit, so it cannot certify the answer",
    "no_start_node": "no start node could be sampled",
    "no_template": "no template fits the requested axes on this node",
    "sandbox_error": "the sandbox could not run the program",
    "backend_error": "the generation backend failed",
    "internal_error": "a bug in the quizzer, recorded on the candidate instead of raised",
}


def candidate_id(seed: int, index: int, kind: str) -> str:
    """Deterministic id from ``(seed, index, kind)``: ``"template-0007-<8 hex>"``."""
    digest = hashlib.blake2b(f"{kind}:{seed}:{index}".encode(), digest_size=4).hexdigest()
    return f"{kind}-{index:04d}-{digest}"


def format_answer(value: Any) -> str:
    """The canonical string form of a typed answer value.

    >>> format_answer(True), format_answer(3.0), format_answer(["b", "a"])
    ('yes', '3', 'a; b')
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, float):
        return repr(round(value, 6))
    if isinstance(value, (list, tuple, set, frozenset)):
        return "; ".join(sorted(format_answer(v) for v in value))
    return "" if value is None else str(value)


_JSON_FIELDS: Final = (
    "axes",
    "start_node",
    "neighbourhood",
    "trace",
    "evidence",
    "answer_value",
    "meta",
)


@dataclass
class QACandidate:
    """One Quizzer candidate (see the module docstring)."""

    id: str
    quizzer: str  # "template" | "llm"
    seed: int
    index: int
    question: str = ""
    answer: str = ""
    answer_value: Any = None  # str | bool | int | float | list[str]
    answer_type: str = ""
    axes: dict[str, str] = field(default_factory=dict)  # requested axes
    start_node: dict[str, Any] = field(default_factory=dict)  # {"label", "id", "name"}
    neighbourhood: dict[str, Any] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)  # rounds / cells, plain dicts
    evidence: list[dict[str, Any]] = field(default_factory=list)  # TracedResult.to_json()
    final_program: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    repaired: bool = False
    failure_reason: str | None = None
    failure_detail: str | None = None
    model: str = ""
    meta: dict[str, Any] = field(default_factory=dict)  # quizzer-specific (template name, …)

    def __post_init__(self) -> None:
        if self.quizzer not in QUIZZER_KINDS:
            raise ValueError(f"unknown quizzer kind {self.quizzer!r}")
        if self.failure_reason is not None and self.failure_reason not in FAILURE_REASONS:
            raise ValueError(f"unknown failure reason {self.failure_reason!r}")

    @property
    def ok(self) -> bool:
        return self.failure_reason is None

    def fail(self, reason: str, detail: str | None = None) -> QACandidate:
        """Mark the candidate failed (``reason`` must be one of :data:`FAILURE_REASONS`)."""
        if reason not in FAILURE_REASONS:
            raise ValueError(f"unknown failure reason {reason!r}")
        self.failure_reason = reason
        self.failure_detail = (detail or FAILURE_REASONS[reason])[:2000]
        return self

    def to_record(self) -> dict[str, Any]:
        """A flat, JSON-serialisable dict (nested parts as JSON strings in ``*_json`` keys)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _JSON_FIELDS:
                out[f"{f.name}_json"] = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
            else:
                out[f.name] = value
        out["ok"] = self.ok
        return out

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> QACandidate:
        kwargs: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in _JSON_FIELDS:
                raw = record.get(f"{f.name}_json")
                kwargs[f.name] = json.loads(raw) if isinstance(raw, str) else raw
            elif f.name in record:
                kwargs[f.name] = record[f.name]
        for key in ("seed", "index", "prompt_tokens", "completion_tokens"):
            kwargs[key] = int(kwargs.get(key) or 0)
        kwargs["latency_s"] = float(kwargs.get("latency_s") or 0.0)
        kwargs["repaired"] = bool(kwargs.get("repaired"))
        for key in ("axes", "start_node", "neighbourhood", "meta"):
            if kwargs.get(key) is None:
                kwargs[key] = {}
        for key in ("trace", "evidence"):
            if kwargs.get(key) is None:
                kwargs[key] = []
        # external QA sets (certified with ``graphdojo certify``) need not name a quizzer; the id
        # is required: evidence ids are ``<id>:q<n>`` from the sandbox episode that made them
        kwargs.setdefault("quizzer", "external")
        if not kwargs.get("id"):
            raise ValueError("a candidate record needs an 'id'")
        return cls(**kwargs)
