"""Running and checking a quizzer's **final program** — the code that recomputes the answer,
prints it and marks its evidence — and parsing answers by answer type.

The final program always runs in a **fresh** sandbox episode, so it must be self-contained (no
variables from exploration) and the evidence is exactly what it marks. The last non-empty line of
its output is the *printed answer*; it must parse as the answer type and agree with the stated
answer after type-specific normalisation.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from components.cypher.parse import parse_query
from components.cypher.schema_check import used_triples
from components.graph.schema import GraphSchema
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


class AnswerParseError(ValueError):
    """A text does not parse as the requested answer type."""


def _literal(text: str) -> Any:
    for loader in (json.loads, ast.literal_eval):
        try:
            return loader(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
    return text


def _strip(text: str) -> str:
    return text.strip().strip("\"'` ").strip()


def _parse_boolean(text: Any) -> bool:
    if isinstance(text, bool):
        return text
    word = _strip(str(text)).rstrip(".!").lower()
    if word in {"yes", "true", "y"}:
        return True
    if word in {"no", "false", "n"}:
        return False
    raise AnswerParseError(f"not a yes/no answer: {str(text)[:80]!r}")


def _parse_number(text: Any) -> int | float:
    if isinstance(text, bool):
        raise AnswerParseError("a boolean is not a number")
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        cleaned = _strip(str(text)).replace(",", "").rstrip(".")
        match = re.fullmatch(r"[-+]?\d+(\.\d+)?([eE][-+]?\d+)?", cleaned)
        if not match:
            raise AnswerParseError(f"not a number: {str(text)[:80]!r}")
        value = float(cleaned)
    if not math.isfinite(value):
        raise AnswerParseError("not a finite number")
    return int(value) if value.is_integer() else value


def _parse_set(text: Any) -> list[str]:
    value = text if isinstance(text, (list, tuple, set)) else _literal(_strip(str(text)) if str(text).strip().startswith(("[", "(", "{")) else str(text))
    if isinstance(value, (list, tuple, set)):
        items = [str(v).strip() for v in value if v is not None and str(v).strip()]
    else:
        raw = str(value)
        items = [p.strip().strip("\"'") for p in (raw.split(";") if ";" in raw else raw.split(","))]
        items = [p for p in items if p]
    if not items:
        raise AnswerParseError("an empty set")
    return sorted(set(items))


def _parse_entity(text: Any) -> str:
    value = text
    if isinstance(value, str) and value.strip().startswith(("[", "(")):
        value = _literal(value.strip())
    if isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise AnswerParseError(f"expected one entity, got {len(value)}")
        value = value[0]
    if value is None or isinstance(value, (dict, bool)):
        raise AnswerParseError(f"not an entity: {str(text)[:80]!r}")
    out = _strip(str(value))
    if not out:
        raise AnswerParseError("an empty entity")
    return out


#: answer type -> parser (text or already-typed value -> typed value).
ANSWER_PARSERS: Final[Mapping[str, Callable[[Any], Any]]] = {
    "boolean": _parse_boolean,
    "number": _parse_number,
    "set": _parse_set,
    "entity": _parse_entity,
}


def parse_answer(text: Any, answer_type: str) -> Any:
    """Parse ``text`` (a string, or a typed value) as ``answer_type``.

    >>> parse_answer("Yes.", "boolean"), parse_answer("1,204", "number"), parse_answer("b; a", "set")
    (True, 1204, ['a', 'b'])
    """
    parser = ANSWER_PARSERS.get(answer_type)
    if parser is None:
        raise AnswerParseError(f"unknown answer type {answer_type!r}")
    if isinstance(text, str) and answer_type != "set" and text.strip().startswith(("[", "\"")):
        text = _literal(text.strip())
    return parser(text)


def normalise_answer(value: Any, answer_type: str) -> Any:
    """Comparable form: case-folded, whitespace-collapsed strings; numbers rounded to 6 digits;
    sets as sorted tuples."""
    def s(x: Any) -> str:
        return re.sub(r"\s+", " ", str(x)).strip().casefold()

    if answer_type == "number":
        return round(float(value), 6)
    if answer_type == "set":
        return tuple(sorted({s(v) for v in value}))
    if answer_type == "boolean":
        return bool(value)
    return s(value)


def answers_agree(a: Any, b: Any, answer_type: str) -> bool:
    """True when two typed answers are equal after normalisation (numbers within 1e-6 relative)."""
    na, nb = normalise_answer(a, answer_type), normalise_answer(b, answer_type)
    if answer_type == "number":
        return math.isclose(na, nb, rel_tol=1e-6, abs_tol=1e-6)
    return na == nb


def answer_in_rows(value: Any, answer_type: str, evidence: list[TracedResult] | list[dict[str, Any]]) -> bool:
    """True when every atom of the answer (the entity, each set member, the number) occurs as a
    cell (or a list element of a cell) of some evidence row. Booleans: some evidence row exists."""
    cells: list[Any] = []
    for ev in evidence:
        rows = ev.rows if isinstance(ev, TracedResult) else ev.get("rows", [])
        for row in rows:
            for cell in row:
                cells.extend(cell if isinstance(cell, list) else [cell])
    if answer_type == "boolean":
        return bool(cells) or any((ev.rows if isinstance(ev, TracedResult) else ev.get("rows")) for ev in evidence)
    atoms = value if answer_type == "set" else [value]
    if answer_type == "number":
        nums = [float(c) for c in cells if isinstance(c, (int, float)) and not isinstance(c, bool)]
        return all(any(math.isclose(float(a), n, rel_tol=1e-6, abs_tol=1e-6) for n in nums) for a in atoms)
    texts = {normalise_answer(c, "entity") for c in cells if c is not None and not isinstance(c, (dict, list))}
    return all(normalise_answer(a, "entity") in texts for a in atoms)


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
    except Exception:  # noqa: BLE001 - unparseable queries are judged elsewhere
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
            "ok": self.ok, "stdout": self.stdout, "printed": self.printed, "error": self.error,
            "traced": [t.to_json() for t in self.traced], "evidence": [t.id for t in self.evidence],
            "calls": self.calls, "failure_reason": self.failure_reason,
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
        episode = SandboxEpisode(query_path, schema=schema, limits=limits or SandboxLimits(),
                                 episode_id=episode_id, server=server)
    except Exception as exc:  # noqa: BLE001 - recorded, never raised
        return FinalRun(False, failure_reason="sandbox_error", failure_detail=str(exc))
    with episode:
        cell = episode.run(code)
        evidence = episode.evidence_results()
        calls = list(episode.calls)
    lines = [ln.strip() for ln in cell.stdout.splitlines() if ln.strip()]
    run = FinalRun(
        ok=cell.ok, stdout=cell.stdout, printed=lines[-1] if lines else None, evidence=evidence,
        traced=list(cell.traced), calls=calls, error=cell.error, elapsed_s=cell.elapsed_s,
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
