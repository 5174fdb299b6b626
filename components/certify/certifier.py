"""Certification of one candidate: the four program checks in order → a :class:`Certificate`.

Statuses (SPEC §4):

* ``hard_failure`` — the quizzer itself failed the candidate (``quizzer_failure``), or the first
  check that *fails* (in the order format/provenance/safety → schema/static → re-execution →
  grounding); its reason is the certificate's only reason and later checks are not run.
* ``strict`` — all four checks pass: the supporting program recomputes the stated answer, the
  marked evidence is exactly what it marks, and the answer is read directly off complete,
  untruncated evidence of a single query the deriver can read.
* ``partial`` — checks 1–3 pass (re-execution included), check 4 finds no fault but is
  ``undetermined`` for allow-listed reasons only (:data:`~components.certify.checks.UNDETERMINED`:
  multi-query composition, a derived value, set completeness, a query the deriver cannot read,
  an entity / boolean read off a truncated result); ``reasons`` lists them.

Hard failures never reach the judge. A check that raises is a bug, recorded as
``internal_error`` (a hard failure), never propagated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from components.certify.checks import (
    UNDETERMINED,
    CheckResult,
    check_format_provenance_safety,
    check_grounding,
    check_reexecution,
    check_schema_static,
)
from components.graph.schema import GraphSchema
from components.tools.sandbox import SandboxLimits

__all__ = ["REASONS", "STATUSES", "Certificate", "certify"]

STATUSES: Final = ("strict", "partial", "hard_failure")

#: Hard-failure reason codes (stable) → meaning.
REASONS: Final[Mapping[str, str]] = {
    "quizzer_failure": "the quizzer could not complete the candidate (failure_reason set)",
    "format_error": "a missing or malformed field: program, answer type, evidence item",
    "unsafe_query": "an evidence query is not a pure read (write, CALL / APOC, file access)",
    "forged_evidence": "evidence not produced, or altered after being produced, by this candidate's program",
    "schema_error": "an unknown label, relationship type, property or endpoint",
    "direction_error": "a relationship used against its schema direction (source, type, target)",
    "dialect_divergence": "a construct the engines would answer differently",
    "snapshot_drift": "the graph changed since the candidate was made",
    "execution_failure": "an evidence query or the supporting program failed to run",
    "result_mismatch": "re-executing an evidence query gives a different result or truncation state",
    "answer_evidence_mismatch": "the supporting program's answer differs from the stated one",
    "incomplete_evidence": "the marked evidence does not contain what the answer needs",
    "truncation_misuse": "a full set, exact count or value claimed from a truncated result",
    "internal_error": "a certifier bug, recorded instead of raised",
}


@dataclass
class Certificate:
    """The outcome: status, reasons (one hard-failure reason, or the partial sub-reasons) and
    the checks that ran."""

    status: str
    reasons: list[str] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")

    @property
    def certified(self) -> bool:
        return self.status != "hard_failure"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "reasons": list(self.reasons),
                "checks": [c.to_json() for c in self.checks]}


def certify(
    candidate: Any,
    *,
    schema: GraphSchema,
    query_path: Any,
    snapshot_fingerprint: str | None,
    current_fingerprint: str | None,
    limits: SandboxLimits | None = None,
) -> Certificate:
    """Run the four checks in order on ``candidate`` (a
    :class:`~components.quizzer.candidate.QACandidate`); see the module docstring."""
    if getattr(candidate, "failure_reason", None):
        return Certificate("hard_failure", ["quizzer_failure"])
    steps = (
        lambda: check_format_provenance_safety(candidate),
        lambda: check_schema_static(candidate, schema),
        lambda: check_reexecution(candidate, query_path, snapshot_fingerprint, current_fingerprint),
        lambda: check_grounding(candidate, query_path, schema, limits=limits),
    )
    checks: list[CheckResult] = []
    for i, step in enumerate(steps):
        try:
            result = step()
        except Exception as exc:  # noqa: BLE001 - a bug is a recorded hard failure
            result = CheckResult(f"check_{i + 1}", "fail", "internal_error", f"{type(exc).__name__}: {exc}")
        checks.append(result)
        if result.failed:
            return Certificate("hard_failure", [result.reason or "internal_error"], checks)
        if result.verdict == "undetermined" and (i < 3 or not set(result.undetermined) <= set(UNDETERMINED)):
            reason = "internal_error" if i < 3 else "incomplete_evidence"
            return Certificate("hard_failure", [reason], checks)
    notes = [n for c in checks for n in c.undetermined]
    if notes:
        return Certificate("partial", list(dict.fromkeys(notes)), checks)
    return Certificate("strict", [], checks)
