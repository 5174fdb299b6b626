"""Running and checking a quizzer's **final program** — the code that recomputes the answer,
prints it and marks its evidence — and parsing answers by answer type.

The final program always runs in a **fresh** sandbox episode, so it must be self-contained (no
variables from exploration) and the evidence is exactly what it marks. The last non-empty line of
its output is the *printed answer*; it must parse as the answer type and agree with the stated
answer after type-specific normalisation.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from components.cypher.parse import parse_query
from components.cypher.schema_check import used_triples
from components.graph.errors import GraphError
from components.graph.schema import GraphSchema
from components.quizzer.answers import (
    ANSWER_PARSERS,
    AnswerParseError,
    answers_agree,
    normalise_answer,
    normalise_member,
    parse_answer,
)
from components.tools.cells import cell_items
from components.tools.sandbox import SandboxEpisode, SandboxLimits, SandboxServer
from components.tools.traced import TracedResult

__all__ = [
    "ANSWER_PARSERS",
    "AnswerParseError",
    "FinalRun",
    "answer_in_rows",
    "answers_agree",
    "direction_errors",
    "normalise_answer",
    "parse_answer",
    "run_final_program",
]

log = logging.getLogger(__name__)


def answer_in_rows(value: Any, answer_type: str, evidence: list[TracedResult] | list[dict[str, Any]]) -> bool:
    """True when every atom of the answer (the entity, each set member, the number) occurs in
    some evidence row — as a cell, a list element, or a property of a returned node,
    relationship or path (internal keys never count; :mod:`components.tools.cells`).
    Booleans: some evidence row exists."""

    def rows_of(ev: Any) -> Any:
        return ev.rows if isinstance(ev, TracedResult) else (ev.get("rows") or [])

    if answer_type == "boolean":
        return any(rows_of(ev) for ev in evidence)
    values = [
        v for ev in evidence for row in rows_of(ev) for _, v, _ in (item for cell in row for item in cell_items(cell))
    ]
    atoms = value if answer_type == "set" else [value]
    if answer_type == "number":
        nums = [float(c) for c in values if isinstance(c, (int, float)) and not isinstance(c, bool)]
        return all(any(math.isclose(float(a), n, rel_tol=1e-6, abs_tol=1e-6) for n in nums) for a in atoms)
    texts = {normalise_member(c) for c in values}
    return all(normalise_member(a) in texts for a in atoms)


def direction_errors(query: str, schema: GraphSchema) -> list[str]:
    """Relationship patterns of ``query`` whose stated ``(source, type, target)`` (endpoints
    known, directed) is not a schema triple — a wrong direction returns nothing on every
    engine instead of an error.

    >>> from components.graph.schema import GraphSchema, NodeLabel, RelType, Triple
    >>> s = GraphSchema.build([NodeLabel("A", {"id": "STRING"}), NodeLabel("B", {"id": "STRING"})],
    ...                       [RelType("R", (Triple("A", "R", "B"),))])
    >>> direction_errors("MATCH (b:B)-[:R]->(a:A) RETURN a", s)
    ['(:B)-[:R]->(:A)']
    """
    try:
        triples = used_triples(parse_query(query))
    except GraphError as exc:  # unparseable queries are judged elsewhere
        log.debug("direction check skipped %r: %s", query, exc)
        return []
    bad = []
    for t in triples:
        if not t.directed or t.type is None:
            continue
        if not schema.has_triple(t.source, t.type, t.target):
            bad.append(f"(:{t.source or ''})-[:{t.type}]->(:{t.target or ''})")
    return bad


#: sandbox / query error code -> failure reason (anything else is ``code_error``).
ERROR_REASONS: Final[Mapping[str, str]] = {
    "timeout": "timeout",
    "cpu_limit": "timeout",
    "unsafe_query": "unsafe_query",
    "schema_error": "schema_error",
    "syntax_error": "query_error",
    "dialect_divergence": "query_error",
    "execution_error": "query_error",
    "query_limit": "query_error",
    "forged_evidence": "forged_evidence",
    "tampered_evidence": "forged_evidence",
    "isolation_unavailable": "sandbox_error",
}


@dataclass
class FinalRun:
    """Outcome of one final program in a fresh sandbox."""

    ok: bool
    stdout: str = ""
    printed: str | None = None  # last non-empty output line
    evidence: list[TracedResult] = field(default_factory=list)
    traced: list[TracedResult] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    error: dict[str, str] | None = None
    failure_reason: str | None = None
    failure_detail: str | None = None
    elapsed_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "stdout": self.stdout,
            "printed": self.printed,
            "error": self.error,
            "traced": [t.to_json() for t in self.traced],
            "evidence": [t.id for t in self.evidence],
            "calls": self.calls,
            "failure_reason": self.failure_reason,
            "elapsed_s": round(self.elapsed_s, 4),
        }


def _classify(error: dict[str, str] | None, calls: list[dict[str, Any]]) -> tuple[str, str]:
    failed = [c for c in calls if c.get("op") == "cypher" and not c.get("ok")]
    if failed:  # a refused or failing query explains the failure best, even if the code caught it
        err = failed[-1].get("error") or {}
        return ERROR_REASONS.get(str(err.get("code")), "query_error"), f"{err.get('code')}: {err.get('message')}"
    if error is not None:
        code = str(error.get("code"))
        return ERROR_REASONS.get(code, "code_error"), f"{code}: {error.get('message')}"
    return "code_error", "the program failed"


def run_final_program(
    query_path: Any,
    schema: GraphSchema | None,
    code: str,
    *,
    limits: SandboxLimits | None = None,
    episode_id: str | None = None,
    server: SandboxServer | None = None,
) -> FinalRun:
    """Run ``code`` in a fresh sandbox; failure reasons: a query refused or failing
    (``unsafe_query``, ``schema_error``, ``query_error``), ``timeout``, ``code_error``,
    ``forged_evidence``, ``no_evidence``, ``empty_output``, ``truncated_evidence``,
    ``sandbox_error``. Never raises for anything the code does. With ``server`` (a
    :class:`~components.tools.sandbox.SandboxServer`) the sandbox is a child forked by it."""
    try:
        episode = SandboxEpisode(
            query_path, schema=schema, limits=limits or SandboxLimits(), episode_id=episode_id, server=server
        )
    except Exception as exc:  # noqa: BLE001 - recorded, never raised
        return FinalRun(False, failure_reason="sandbox_error", failure_detail=str(exc))
    with episode:
        cell = episode.run(code)
        evidence = episode.evidence_results()
        calls = list(episode.calls)
    lines = [ln.strip() for ln in cell.stdout.splitlines() if ln.strip()]
    run = FinalRun(
        ok=cell.ok,
        stdout=cell.stdout,
        printed=lines[-1] if lines else None,
        evidence=evidence,
        traced=list(cell.traced),
        calls=calls,
        error=cell.error,
        elapsed_s=cell.elapsed_s,
    )
    failing_query = any(c.get("op") == "cypher" and not c.get("ok") for c in calls)
    if not cell.ok or (failing_query and not evidence):
        run.ok = False
        run.failure_reason, run.failure_detail = _classify(cell.error, calls)
    elif not evidence:
        run.ok, run.failure_reason = False, "no_evidence"
        run.failure_detail = "the final program did not call mark_evidence() on a cypher() result"
    elif run.printed is None:
        run.ok, run.failure_reason = False, "empty_output"
        run.failure_detail = "the final program printed nothing"
    elif any(t.truncated for t in evidence):
        run.ok, run.failure_reason = False, "truncated_evidence"
        run.failure_detail = "an evidence result hit the row limit"
    return run
