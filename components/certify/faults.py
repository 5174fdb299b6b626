"""Fault injection: turn a real candidate into a labelled faulty copy, to measure the certifier.

Each injector takes ``(candidate, others)`` (``others``: other real candidates, e.g. of the same
run) and returns a faulty deep copy, or ``None`` when the fault does not apply to that candidate
(no reversible pattern, no set/number claim, …). :data:`FAULTS` maps a fault type to its
injector and the hard-failure reason(s) the certifier must give.

Faults are injected the way a producer would make them: an edit to the evidence only (a forger),
or a *coherent* edit — evidence, final program and traced run changed together, so the
provenance check cannot catch it by comparison alone:

* ``reversed_direction`` — one directed relationship pattern of an evidence query reversed
  (only where the reversed triple is not a schema triple, i.e. a real direction error), coherently
  in evidence, program and trace, claimed rows kept → ``direction_error``;
* ``swapped_answer`` — the answer of another candidate of the same type (or a perturbed value)
  → ``answer_evidence_mismatch``;
* ``dropped_evidence`` — one evidence item removed → ``incomplete_evidence``;
  ``dropped_evidence_untraced`` — the same with the trace removed (an external candidate) →
  ``incomplete_evidence`` (found by re-running the program);
* ``tampered_rows`` — a cell edited, hash kept → ``forged_evidence``;
  ``tampered_rows_rehashed`` — a cell edited, hash recomputed, coherently in the trace →
  ``result_mismatch`` (found by re-execution);
* ``truncated_claim`` — evidence of a set / number answer marked truncated (coherently) →
  ``truncation_misuse``;
* ``foreign_evidence`` — evidence of another candidate (another episode) →
  ``forged_evidence``; ``foreign_evidence_relabelled`` — the same with ids renamed into this
  candidate's episode → ``forged_evidence``; ``foreign_evidence_untraced`` — relabelled, trace
  removed → ``forged_evidence`` (found by re-running the program);
* ``snapshot_changed`` — no edit to the candidate: certify it against a different snapshot
  fingerprint (handled by the caller: :data:`SNAPSHOT_FAULT`) → ``snapshot_drift``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from components.cypher.parse import parse_query
from components.cypher.schema_check import used_triples
from components.graph.schema import GraphSchema
from components.quizzer.candidate import QACandidate, format_answer
from components.quizzer.final import answers_agree, normalise_answer
from components.tools.traced import query_orders, result_hash

__all__ = ["FAULTS", "SNAPSHOT_FAULT", "Fault", "inject"]

SNAPSHOT_FAULT: Final = "snapshot_changed"

Injector = Callable[[QACandidate, Sequence[QACandidate], GraphSchema], QACandidate | None]


class Fault:
    def __init__(self, name: str, injector: Injector | None, expected: frozenset[str]) -> None:
        self.name, self.injector, self.expected = name, injector, expected


def _traced_records(c: QACandidate) -> list[dict[str, Any]]:
    out = []
    for record in c.trace:
        if isinstance(record, dict):
            if isinstance(record.get("final_run"), dict):
                out.append(record["final_run"])
            if "traced" in record:
                out.append(record)
    return out


def _replace_everywhere(c: QACandidate, rid: str, new_item: Mapping[str, Any]) -> None:
    """Replace evidence ``rid`` in the evidence and in every traced copy of it."""
    c.evidence = [dict(new_item) if e["id"] == rid else e for e in c.evidence]
    for rec in _traced_records(c):
        rec["traced"] = [dict(new_item) if t.get("id") == rid else t for t in rec.get("traced") or []]


_OUT = re.compile(r"(?<!<)-\[([^\]]*)\]->")
_IN = re.compile(r"<-\[([^\]]*)\]-(?!>)")


def _reversals(query: str) -> list[str]:
    out = []
    for m in _OUT.finditer(query):
        out.append(query[: m.start()] + f"<-[{m.group(1)}]-" + query[m.end():])
    for m in _IN.finditer(query):
        out.append(query[: m.start()] + f"-[{m.group(1)}]->" + query[m.end():])
    return out


def _direction_fault(query: str, schema: GraphSchema) -> bool:
    try:
        triples = used_triples(parse_query(query))
    except Exception:  # noqa: BLE001
        return False
    return any(t.directed and t.type and not schema.has_triple(t.source, t.type, t.target)
               and schema.has_triple(t.target, t.type, t.source) for t in triples)


def reversed_direction(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    for item in c.evidence:
        for new_query in _reversals(item["query"]):
            if not _direction_fault(new_query, schema):
                continue
            out = copy.deepcopy(c)
            old = item["query"]
            out.final_program = out.final_program.replace(repr(old), repr(new_query))
            for rec in out.trace:
                if isinstance(rec, dict) and isinstance(rec.get("code"), str):
                    rec["code"] = rec["code"].replace(repr(old), repr(new_query))
            new_item = {**item, "query": new_query, "ordered": query_orders(new_query)}
            new_item["result_hash"] = result_hash(new_item["columns"], new_item["rows"], new_item["ordered"])
            _replace_everywhere(out, item["id"], new_item)
            return out
    return None


def _perturbed(value: Any, answer_type: str) -> Any:
    if answer_type == "boolean":
        return not value
    if answer_type == "number":
        return value + 1
    if answer_type == "set":
        return sorted(set(value) | {"Nonexistent Member"})
    return f"{value} (other)"


def swapped_answer(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    value = None
    for o in others:
        if o.ok and o.id != c.id and o.answer_type == c.answer_type and o.answer_value is not None \
                and not answers_agree(o.answer_value, c.answer_value, c.answer_type):
            value = copy.deepcopy(o.answer_value)
            break
    if value is None:
        value = _perturbed(c.answer_value, c.answer_type)
    out = copy.deepcopy(c)
    out.answer_value, out.answer = value, format_answer(value)
    return out


def dropped_evidence(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    out = copy.deepcopy(c)
    out.evidence = out.evidence[:-1]
    return out


def dropped_evidence_untraced(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    out = dropped_evidence(c, others, schema)
    if out is not None:
        out.trace = []  # single-query candidates: nothing left, check 1 catches it
    return out


def _tamper(item: Mapping[str, Any]) -> dict[str, Any] | None:
    rows = copy.deepcopy(item["rows"])
    if not rows or not rows[0]:
        return None
    cell = rows[0][0]
    if isinstance(cell, bool):
        rows[0][0] = not cell
    elif isinstance(cell, (int, float)):
        rows[0][0] = cell + 1
    elif isinstance(cell, list):
        rows[0][0] = cell + ["Tampered"]
    else:
        rows[0][0] = f"{cell}-tampered"
    return {**item, "rows": rows}


def tampered_rows(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    item = _tamper(c.evidence[0])
    if item is None:
        return None
    out = copy.deepcopy(c)
    out.evidence = [item] + out.evidence[1:]
    return out


def tampered_rows_rehashed(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    item = _tamper(c.evidence[0])
    if item is None:
        return None
    item["result_hash"] = result_hash(item["columns"], item["rows"], query_orders(item["query"]))
    out = copy.deepcopy(c)
    _replace_everywhere(out, item["id"], item)
    return out


def truncated_claim(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    if c.answer_type not in ("set", "number"):
        return None
    out = copy.deepcopy(c)
    for item in list(out.evidence):
        _replace_everywhere(out, item["id"], {**item, "truncated": True})
    return out


def _foreign(c: QACandidate, others: Sequence[QACandidate]) -> list[dict[str, Any]] | None:
    mine = {normalise_answer(e["query"], "entity") + str(e["params"]) for e in c.evidence}
    for o in others:
        if o.ok and o.id != c.id and o.evidence and not mine & {
                normalise_answer(e["query"], "entity") + str(e["params"]) for e in o.evidence}:
            return copy.deepcopy(o.evidence)
    return None


def foreign_evidence(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    ev = _foreign(c, others)
    if ev is None:
        return None
    out = copy.deepcopy(c)
    out.evidence = ev
    return out


def foreign_evidence_relabelled(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    ev = _foreign(c, others)
    if ev is None:
        return None
    out = copy.deepcopy(c)
    ids = [e["id"] for e in c.evidence]
    for i, e in enumerate(ev):
        e["id"] = ids[i] if i < len(ids) else f"{c.id}:q{100 + i}"
    out.evidence = ev
    return out


def foreign_evidence_untraced(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    out = foreign_evidence_relabelled(c, others, schema)
    if out is not None:
        out.trace = []
    return out


FAULTS: Final[dict[str, Fault]] = {
    f.name: f for f in (
        Fault("reversed_direction", reversed_direction, frozenset({"direction_error"})),
        Fault("swapped_answer", swapped_answer, frozenset({"answer_evidence_mismatch"})),
        Fault("dropped_evidence", dropped_evidence, frozenset({"incomplete_evidence"})),
        Fault("dropped_evidence_untraced", dropped_evidence_untraced, frozenset({"incomplete_evidence"})),
        Fault("tampered_rows", tampered_rows, frozenset({"forged_evidence"})),
        Fault("tampered_rows_rehashed", tampered_rows_rehashed, frozenset({"result_mismatch"})),
        Fault("truncated_claim", truncated_claim, frozenset({"truncation_misuse"})),
        Fault("foreign_evidence", foreign_evidence, frozenset({"forged_evidence"})),
        Fault("foreign_evidence_relabelled", foreign_evidence_relabelled, frozenset({"forged_evidence"})),
        Fault("foreign_evidence_untraced", foreign_evidence_untraced, frozenset({"forged_evidence"})),
        Fault(SNAPSHOT_FAULT, None, frozenset({"snapshot_drift"})),
    )
}


def inject(fault: str, candidate: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    """A faulty copy of ``candidate`` (``None`` when the fault does not apply). The snapshot
    fault edits nothing: the copy is returned unchanged and the caller certifies it against a
    different fingerprint."""
    spec = FAULTS[fault]
    if spec.injector is None:
        return copy.deepcopy(candidate)
    return spec.injector(candidate, others, schema)
