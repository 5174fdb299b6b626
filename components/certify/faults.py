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

The kinds below are made by **running a modified final program in the sandbox** (a
:class:`Runner`), so their traces and evidence are genuine and only the intended property is
wrong; each has an expected *outcome* — a hard failure with its reason, *partial* with its
reason, or *strict* for a variant that is valid and must not be rejected:

* ``hard_coded_literal`` — the program runs and marks its queries but prints the right answer
  as a literal → hard ``hard_coded_answer``; ``hard_coded_wrong`` — the same with a wrong
  literal, stated coherently → hard ``hard_coded_answer``;
* ``broader_evidence`` — the query loses its start-node constraint and returns every start
  node's answer keyed by id; Python picks the start node's row → partial
  ``selected_from_broader_evidence`` (``derived_value`` for a boolean);
* ``arbitrary_limit`` — a set answer's query gets ``LIMIT n - 1`` without ``ORDER BY``; the
  subset becomes the (coherent) answer → partial ``arbitrary_subset``;
* ``node_valued`` — ``RETURN x.prop`` becomes ``RETURN x`` and the program reads the property
  of the returned node → strict, like the original (the false rejects of node-valued answers);
* ``internal_key`` — the program answers with a returned node's internal ``_label`` → hard
  ``incomplete_evidence`` (internal keys never ground an answer).
"""

from __future__ import annotations

import ast
import copy
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from components.cypher.parse import parse_query
from components.cypher.schema_check import used_triples
from components.graph.errors import GraphError
from components.graph.schema import GraphSchema
from components.quizzer.candidate import QACandidate, format_answer
from components.quizzer.final import answers_agree, normalise_answer
from components.tools.traced import query_orders, result_hash

__all__ = [
    "FAULTS",
    "OUTCOMES",
    "SNAPSHOT_FAULT",
    "Fault",
    "Runner",
    "inject",
    "replace_print",
    "rerun_as",
    "sandbox_runner",
]

log = logging.getLogger(__name__)

SNAPSHOT_FAULT: Final = "snapshot_changed"
OUTCOMES: Final = ("hard_failure", "partial", "strict")

#: ``runner(program, episode_id)`` runs a final program in a fresh sandbox episode on the graph
#: (a :class:`~components.quizzer.final.FinalRun`).
Runner = Callable[[str, str], Any]
Injector = Callable[..., QACandidate | None]


class Fault:
    """A fault type: its injector, the expected ``outcome`` (:data:`OUTCOMES`) and the reasons
    that count (a hard failure's reason, or one of a partial's reasons). ``sandboxed``
    injectors take a :data:`Runner` as a fourth argument."""

    def __init__(
        self,
        name: str,
        injector: Injector | None,
        expected: frozenset[str],
        outcome: str = "hard_failure",
        *,
        sandboxed: bool = False,
    ) -> None:
        if outcome not in OUTCOMES:
            raise ValueError(f"unknown outcome {outcome!r}")
        self.name, self.injector, self.expected = name, injector, expected
        self.outcome, self.sandboxed = outcome, sandboxed

    def caught(self, status: str, reasons: Sequence[str]) -> bool:
        """Whether a certificate gives this fault its expected outcome (with the expected reason:
        a variant refused for another reason, by an earlier check, does not count)."""
        if status != self.outcome:
            return False
        if self.outcome == "hard_failure":
            return bool(reasons) and set(reasons) <= self.expected
        if self.outcome == "partial":
            return bool(set(reasons) & self.expected)
        return True


def sandbox_runner(query_path: Any, schema: GraphSchema, server: Any) -> Runner:
    """A :data:`Runner` whose sandboxes are children of ``server`` (a running
    :class:`~components.tools.sandbox.SandboxServer`)."""
    from components.quizzer.final import run_final_program

    def runner(program: str, episode: str) -> Any:
        return run_final_program(query_path, schema, program, limits=server.limits, episode_id=episode, server=server)

    return runner


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
        out.append(query[: m.start()] + f"<-[{m.group(1)}]-" + query[m.end() :])
    for m in _IN.finditer(query):
        out.append(query[: m.start()] + f"-[{m.group(1)}]->" + query[m.end() :])
    return out


def _direction_fault(query: str, schema: GraphSchema) -> bool:
    try:
        triples = used_triples(parse_query(query))
    except GraphError as exc:  # an unparseable reversal is no direction fault
        log.debug("direction fault check skipped %r: %s", query, exc)
        return False
    return any(
        t.directed
        and t.type
        and not schema.has_triple(t.source, t.type, t.target)
        and schema.has_triple(t.target, t.type, t.source)
        for t in triples
    )


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
        if (
            o.ok
            and o.id != c.id
            and o.answer_type == c.answer_type
            and o.answer_value is not None
            and not answers_agree(o.answer_value, c.answer_value, c.answer_type)
        ):
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
        if (
            o.ok
            and o.id != c.id
            and o.evidence
            and not mine & {normalise_answer(e["query"], "entity") + str(e["params"]) for e in o.evidence}
        ):
            return copy.deepcopy(o.evidence)
    return None


def foreign_evidence(c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema) -> QACandidate | None:
    ev = _foreign(c, others)
    if ev is None:
        return None
    out = copy.deepcopy(c)
    out.evidence = ev
    return out


def foreign_evidence_relabelled(
    c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema
) -> QACandidate | None:
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


# -- faults made by running a modified final program ----------------------------------------


def replace_print(program: str, expression: str) -> str | None:
    """``program`` with its last top-level ``print(...)`` replaced by ``print(<expression>)``."""
    try:
        tree = ast.parse(program)
    except SyntaxError:
        return None
    prints = [
        s
        for s in tree.body
        if isinstance(s, ast.Expr)
        and isinstance(s.value, ast.Call)
        and isinstance(s.value.func, ast.Name)
        and s.value.func.id == "print"
    ]
    if not prints or prints[-1].end_lineno is None:
        return None
    lines = program.splitlines()
    last = prints[-1]
    lines[last.lineno - 1 : last.end_lineno] = [f"print({expression})"]
    return "\n".join(lines) + "\n"


def rerun_as(c: QACandidate, program: str, runner: Runner, *, restate: bool) -> QACandidate | None:
    """A copy of ``c`` whose final program is ``program``, run for real: evidence and trace from
    that run. With ``restate`` the stated answer becomes what the program prints (a coherent
    candidate); without, the program must print the stated answer. ``None`` when the program does
    not run to such an answer."""
    from components.quizzer.answers import AnswerParseError, answers_agree, parse_printed

    run = runner(program, c.id)
    if not run.ok:
        return None
    try:
        value = parse_printed(run.printed, c.answer_type)
    except AnswerParseError:
        return None
    if not restate and not answers_agree(value, c.answer_value, c.answer_type):
        return None
    out = copy.deepcopy(c)
    out.final_program = program
    out.trace = [{"kind": "final_program", "code": program, **run.to_dict()}]
    out.evidence = [t.to_json() for t in run.evidence]
    if restate:
        out.answer_value, out.answer = value, format_answer(value)
    return out


def _literal_program(c: QACandidate, value: Any) -> str | None:
    """The program with its answer printed as a JSON literal (after its queries ran and were marked)."""
    return replace_print(c.final_program, repr(json.dumps(value, ensure_ascii=False)))


def hard_coded_literal(
    c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema, runner: Runner
) -> QACandidate | None:
    program = _literal_program(c, c.answer_value)
    return None if program is None else rerun_as(c, program, runner, restate=True)


def hard_coded_wrong(
    c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema, runner: Runner
) -> QACandidate | None:
    wrong = swapped_answer(c, others, schema)
    if wrong is None:
        return None
    program = _literal_program(c, wrong.answer_value)
    return None if program is None else rerun_as(c, program, runner, restate=True)


_ANCHOR = re.compile(r"\(s:(`[^`]+`) \{(`[^`]+`): \$start\}\)")
_READS = {
    "set": "sorted({str(row[1]) for row in mine if row[1] is not None})",
    "boolean": "mine[0][1] if mine else None",
}


def broader_evidence(
    c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema, runner: Runner
) -> QACandidate | None:
    """The start node's constraint dropped: every start node's answer, keyed by its id; Python
    picks this one's row (template queries anchored at ``(s:`L` {`pk`: $start})``)."""
    if len(c.evidence) != 1 or "start" not in (c.evidence[0].get("params") or {}):
        return None
    item = c.evidence[0]
    query, params = item["query"], dict(item["params"])
    m = _ANCHOR.search(query)
    if m is None or " LIMIT " in query or query.count(" RETURN ") != 1:
        return None
    head, _, tail = query.replace(m.group(0), f"(s:{m.group(1)})", 1).partition(" RETURN ")
    distinct = "DISTINCT " if tail.startswith("DISTINCT ") else ""
    broad = f"{head} RETURN {distinct}s.{m.group(2)} AS gd_key, {tail[len(distinct) :]}"
    read = _READS.get(c.answer_type, "mine[0][1] if mine else None")
    program = (
        f"import json\nr1 = cypher({broad!r}, **{params!r})\n"
        f"mine = [row for row in r1.rows if row[0] == {params['start']!r}]\n"
        f"answer = {read}\nmark_evidence(r1)\nprint(json.dumps(answer))\n"
    )
    out = rerun_as(c, program, runner, restate=False)
    if out is None or out.evidence[0].get("truncated"):
        return None
    return out


def arbitrary_limit(
    c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema, runner: Runner
) -> QACandidate | None:
    """A set answer's query with ``LIMIT n - 1`` and no ORDER BY: the subset is the answer."""
    if c.answer_type != "set" or len(c.evidence) != 1:
        return None
    item = c.evidence[0]
    n = len(item.get("rows") or [])
    if n < 2 or " LIMIT " in item["query"] or " ORDER BY " in item["query"] or "collect(" in item["query"]:
        return None
    new = f"{item['query']} LIMIT {n - 1}"
    program = c.final_program.replace(repr(item["query"]), repr(new))
    return None if program == c.final_program else rerun_as(c, program, runner, restate=True)


_PROPERTY_RETURN = re.compile(r" RETURN (DISTINCT )?(\w+)\.(`[^`]+`) AS answer$")


def _node_program(c: QACandidate, read: Callable[[str], str]) -> str | None:
    if len(c.evidence) != 1:
        return None
    query = c.evidence[0]["query"]
    m = _PROPERTY_RETURN.search(query)
    if m is None:
        return None
    prop = m.group(3).strip("`")
    new = query[: m.start()] + f" RETURN {m.group(1) or ''}{m.group(2)} AS answer"
    program = c.final_program.replace(repr(query), repr(new))
    program = program.replace("r1.rows[0][0]", read("r1.rows[0][0]", prop)).replace("row[0]", read("row[0]", prop))
    return None if program == c.final_program else program


def node_valued(
    c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema, runner: Runner
) -> QACandidate | None:
    """``RETURN x.prop`` → ``RETURN x``, the program reads the node's property: still strict."""
    program = _node_program(c, lambda cell, prop: f"({cell} or {{}}).get({prop!r})")
    return None if program is None else rerun_as(c, program, runner, restate=False)


def internal_key(
    c: QACandidate, others: Sequence[QACandidate], schema: GraphSchema, runner: Runner
) -> QACandidate | None:
    """The answer read from a returned node's internal ``_label`` key (entity answers)."""
    if c.answer_type != "entity":
        return None
    program = _node_program(c, lambda cell, prop: f"{cell}['_label']")
    return None if program is None else rerun_as(c, program, runner, restate=True)


FAULTS: Final[dict[str, Fault]] = {
    f.name: f
    for f in (
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
        Fault("hard_coded_literal", hard_coded_literal, frozenset({"hard_coded_answer"}), sandboxed=True),
        Fault("hard_coded_wrong", hard_coded_wrong, frozenset({"hard_coded_answer"}), sandboxed=True),
        Fault(
            "broader_evidence",
            broader_evidence,
            frozenset({"selected_from_broader_evidence", "derived_value"}),
            "partial",
            sandboxed=True,
        ),
        Fault("arbitrary_limit", arbitrary_limit, frozenset({"arbitrary_subset"}), "partial", sandboxed=True),
        Fault("node_valued", node_valued, frozenset(), "strict", sandboxed=True),
        Fault("internal_key", internal_key, frozenset({"incomplete_evidence"}), sandboxed=True),
    )
}


def inject(
    fault: str, candidate: QACandidate, others: Sequence[QACandidate], schema: GraphSchema, runner: Runner | None = None
) -> QACandidate | None:
    """A faulty copy of ``candidate`` (``None`` when the fault does not apply, or when a
    sandboxed fault has no ``runner``). The snapshot fault edits nothing: the copy is returned
    unchanged and the caller certifies it against a different fingerprint."""
    spec = FAULTS[fault]
    if spec.injector is None:
        return copy.deepcopy(candidate)
    if spec.sandboxed:
        return None if runner is None else spec.injector(candidate, others, schema, runner)
    return spec.injector(candidate, others, schema)
