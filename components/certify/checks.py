"""The certifier's four program checks, as pure functions over a candidate.

Each check returns a :class:`CheckResult` — ``pass``, ``fail`` with a reason code from
:data:`components.certify.certifier.REASONS`, or ``undetermined`` with an allow-listed sub-reason
from :data:`UNDETERMINED` (only the grounding check is ever undetermined). They run in this order
and the first failure is the candidate's hard failure:

1. :func:`check_format_provenance_safety` — needs only the candidate;
2. :func:`check_schema_static` — candidate + schema, no graph access;
3. :func:`check_reexecution` — re-runs every evidence query on a read-only query path;
4. :func:`check_grounding` — re-runs the supporting (final) program in a fresh sandbox.

Rules, check by check
---------------------
**1. Format, provenance, safety.** The candidate has a parseable final program, a known answer
type and at least one evidence item (none: ``incomplete_evidence``). Every evidence item has
``id`` (str), ``query`` (str), ``params`` (dict), ``columns`` (list of str), ``rows`` (list of
rows, each as long as ``columns``), ``truncated`` (bool) and ``result_hash`` (str), else
``format_error``. Every query passes :func:`~components.cypher.safety.check_read_only`
(``unsafe_query``; unparseable: ``format_error``; a dialect refusal is left to check 2). The
hash recomputes from the rows with :func:`~components.tools.traced.result_hash` (ordered exactly
when :func:`~components.tools.traced.query_orders`), and ``ordered`` / ``row_count`` when present
agree, else ``forged_evidence``. Ids are unique and, when of the sandbox form
``<episode>:q<n>``, all from one episode that belongs to this candidate (episode == candidate id
or ``<candidate id>-…``), else ``forged_evidence``. When the trace holds the final program's run
(the template's ``{"kind": "final_program", …}`` record or the LLM quizzer's ``final_run``), the
evidence must be exactly what that run traced and marked: an unknown or unmarked id, or an item
that differs from the traced result → ``forged_evidence``; a marked id missing from the evidence
→ ``incomplete_evidence``; a recorded program text different from ``final_program`` →
``forged_evidence``.

**2. Schema and static analysis.** Per evidence query: unknown labels / types / properties
(:func:`~components.cypher.schema_check.check_schema`) → ``schema_error``; each typed
relationship pattern as the triple ``(source label, type, target label)``
(:func:`~components.cypher.schema_check.used_triples`): a directed triple that is not in the
schema but whose reverse is → ``direction_error``; one with no schema triple either way (wrong
endpoints), or an undirected one with no triple in either orientation → ``schema_error``. A
construct the query path refuses as answering differently between engines (``DialectError`` from
the safety layer, :func:`~components.cypher.compat.to_ladybug` or
:func:`~components.cypher.compat.to_neo4j`) → ``dialect_divergence``. Finally the static claim
rule, which needs no graph: evidence marked ``truncated`` under a ``set`` or ``number`` answer (a
full set, an exact count or value) → ``truncation_misuse``.

**3. Independent re-execution.** A snapshot fingerprint different from the current graph's →
``snapshot_drift`` (nothing is re-run). Every evidence query is run again with its parameters and
``limit=MAX_ROWS`` (200); an error → ``execution_failure``; a different column list, normalised
result hash (ordered vs multiset as :func:`result_hash` decides) or truncation flag →
``result_mismatch``. A query with a ``LIMIT`` / ``SKIP`` cut is re-executed through its
tie-check probe (:func:`~components.certify.grounding.probe_query`) when the probe's rows at the
cut reproduce the claimed result — one execution for the result and for check 4's tie check.

**4. Grounding and completeness** (the rules, with examples, in ``docs/certification.md``). The
stated answer (``answer_value`` — authoritative — else ``answer``) must parse as the answer
type; a display ``answer`` that says something else than the value → ``answer_evidence_mismatch``
(it is compared, never split apart). The final program re-runs in a fresh sandbox
(:func:`~components.quizzer.final.run_final_program`, same episode id so ids are reproduced, on a
:class:`ReplayQueryPath` that answers its evidence queries from check 3's fresh results): a
failing program → ``execution_failure`` (``no_evidence``: ``incomplete_evidence``); its printed
answer must agree with the stated one after type-specific normalisation →
``answer_evidence_mismatch``; the evidence it marks, compared as ``(query, params, result
hash)``: submitted but not marked → ``forged_evidence``, marked but not submitted →
``incomplete_evidence``. Then:

* the answer must come from the evidence: the static data flow of the program
  (:mod:`components.certify.dataflow`) finds no ``cypher()`` result reaching the printed value →
  ``hard_coded_answer``; where it is inconclusive, a replay on perturbed rows
  (:func:`~components.certify.grounding.perturbation_changes`) that never changes the answer →
  ``hard_coded_answer``;
* a truncated result under a set / number answer → ``truncation_misuse``;
* an entity, and every member of a set, must occur in the evidence (node / relationship / path
  cells read as their properties, internal keys never; :mod:`components.tools.cells`) →
  ``incomplete_evidence``;
* **direct grounding** (:func:`~components.certify.grounding.directness`) decides strict: the
  answer is a cell of a single-row result, the complete column of a complete result or a single
  ``collect()`` cell, the row count of a complete result of distinct rows, or the emptiness test
  of a result — read off by a program that only moves values.

What holds but is not direct makes the check ``undetermined`` (→ a *partial* candidate) with
these sub-reasons (:data:`UNDETERMINED`): ``multi_query_composition``,
``selected_from_broader_evidence``, ``derived_value``, ``counted_duplicate_rows``,
``arbitrary_subset`` (a cut the ``ORDER BY`` does not decide:
:func:`~components.certify.grounding.cut_state`), ``derivation_unsupported``,
``truncated_observation``. Not attempted: proving that a Python computation over the rows is
*correct* (only that it reproduces the stated answer on the live graph), and the shared-variable
ambiguity analysis (the deriver's ties are not inspected).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from components.certify.dataflow import answer_flow
from components.certify.grounding import cut_state, directness, perturbation_changes, probe_query
from components.cypher.compat import to_ladybug, to_neo4j
from components.cypher.features import derive
from components.cypher.safety import check_read_only
from components.cypher.schema_check import check_schema, used_triples
from components.graph.backend import QueryResult
from components.graph.errors import (
    DialectError,
    GraphError,
    SchemaError,
    UnsafeQueryError,
)
from components.graph.schema import GraphSchema
from components.graph.values import canonical_json
from components.quizzer.answers import normalise_text, parse_printed
from components.quizzer.candidate import format_answer
from components.quizzer.final import (
    ANSWER_PARSERS,
    AnswerParseError,
    answer_in_rows,
    answers_agree,
    parse_answer,
    run_final_program,
)
from components.tools.sandbox import SandboxLimits, SandboxServer
from components.tools.traced import MAX_ROWS, query_orders, result_hash

__all__ = [
    "CHECK_NAMES",
    "UNDETERMINED",
    "VERDICTS",
    "CheckResult",
    "ReplayQueryPath",
    "check_format_provenance_safety",
    "check_grounding",
    "check_reexecution",
    "check_schema_static",
    "replay_key",
    "triple_fault",
]

VERDICTS: Final = ("pass", "fail", "undetermined")
CHECK_NAMES: Final = ("format_provenance_safety", "schema_static", "reexecution", "grounding")

#: Allow-listed reasons a dependency could not be proven statically (→ status *partial*).
UNDETERMINED: Final[Mapping[str, str]] = {
    "multi_query_composition": "the answer combines several query results in Python",
    "selected_from_broader_evidence": "Python picks the answer out of a broader result (a listing, a row chosen "
    "by a Python comparison, a Python max), the query does not select it",
    "derived_value": "Python computes the answer from the rows (arithmetic, a comparison), it is not a cell",
    "counted_duplicate_rows": "the answer counts the rows of a result whose rows repeat",
    "arbitrary_subset": "a LIMIT / SKIP without an ORDER BY that decides the cut: an arbitrary subset",
    "derivation_unsupported": "the Cypher deriver cannot read an evidence query's structure",
    "truncated_observation": "an entity / boolean answer read off a truncated result",
}

_EPISODE_ID: Final = re.compile(r"^(?P<episode>.+):q\d+$")
_SET_LIKE: Final = frozenset({"set", "number"})


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome; ``reason`` is a failure reason or, for ``undetermined``, the first
    sub-reason (all of them in ``undetermined``)."""

    name: str
    verdict: str  # "pass" | "fail" | "undetermined"
    reason: str | None = None
    detail: str = ""
    undetermined: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    @property
    def passed(self) -> bool:
        return self.verdict == "pass"

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> CheckResult:
        return cls(
            raw["name"],
            raw["verdict"],
            raw.get("reason"),
            raw.get("detail") or "",
            tuple(raw.get("undetermined") or ()),
        )

    @property
    def failed(self) -> bool:
        return self.verdict == "fail"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict,
            "reason": self.reason,
            "detail": self.detail,
            "undetermined": list(self.undetermined),
        }


def _pass(name: str, detail: str = "") -> CheckResult:
    return CheckResult(name, "pass", None, detail)


def _fail(name: str, reason: str, detail: str) -> CheckResult:
    return CheckResult(name, "fail", reason, detail[:2000])


def _evidence(candidate: Any) -> list[dict[str, Any]]:
    return list(getattr(candidate, "evidence", None) or [])


def _key(item: Mapping[str, Any]) -> tuple[str, str, str]:
    return (str(item.get("query")), canonical_json(item.get("params") or {}), str(item.get("result_hash")))


def _final_run_record(trace: Sequence[Any]) -> dict[str, Any] | None:
    """The trace's record of the final program's run (the last one), or ``None``."""
    for record in reversed(list(trace or [])):
        if not isinstance(record, Mapping):
            continue
        run = record.get("final_run")
        if isinstance(run, Mapping) and "traced" in run:
            return {**run, "code": record.get("code", run.get("code"))}
        if record.get("kind") == "final_program" and "traced" in record:
            return dict(record)
    return None


def _episode_of(candidate: Any) -> str:
    """The episode the evidence ids name (all the same), else the candidate id."""
    episodes = {
        m.group("episode")
        for e in _evidence(candidate)
        if isinstance(e.get("id"), str) and (m := _EPISODE_ID.match(e["id"]))
    }
    return episodes.pop() if len(episodes) == 1 else str(getattr(candidate, "id", "") or "")


# ---------------------------------------------------------------------------------------------
# 1. format, provenance, safety
# ---------------------------------------------------------------------------------------------

_FIELDS: Final = (
    ("id", str),
    ("query", str),
    ("params", dict),
    ("columns", list),
    ("rows", list),
    ("truncated", bool),
    ("result_hash", str),
)


def check_format_provenance_safety(candidate: Any) -> CheckResult:
    """Check 1 (see the module docstring): ``format_error``, ``unsafe_query``,
    ``forged_evidence``, ``incomplete_evidence``."""
    name = CHECK_NAMES[0]
    program = getattr(candidate, "final_program", "") or ""
    if not program.strip():
        return _fail(name, "format_error", "no final (supporting) program")
    try:
        ast.parse(program)
    except (SyntaxError, ValueError) as exc:
        return _fail(name, "format_error", f"the final program does not parse: {exc}")
    if getattr(candidate, "answer_type", None) not in ANSWER_PARSERS:
        return _fail(name, "format_error", f"unknown answer type {getattr(candidate, 'answer_type', None)!r}")
    evidence = _evidence(candidate)
    if not evidence:
        return _fail(name, "incomplete_evidence", "the candidate marks no evidence")
    seen: set[str] = set()
    episodes: set[str] = set()
    for i, item in enumerate(evidence):
        if not isinstance(item, Mapping):
            return _fail(name, "format_error", f"evidence[{i}] is not an object")
        for key, typ in _FIELDS:
            if not isinstance(item.get(key), typ):
                return _fail(name, "format_error", f"evidence[{i}].{key} missing or not {typ.__name__}")
        columns, rows = item["columns"], item["rows"]
        if not all(isinstance(c, str) for c in columns):
            return _fail(name, "format_error", f"evidence[{i}].columns are not strings")
        if not all(isinstance(r, (list, tuple)) and len(r) == len(columns) for r in rows):
            return _fail(name, "format_error", f"evidence[{i}].rows do not match its {len(columns)} columns")
        rid = item["id"]
        if rid in seen:
            return _fail(name, "forged_evidence", f"duplicate evidence id {rid!r}")
        seen.add(rid)
        m = _EPISODE_ID.match(rid)
        if m:
            episodes.add(m.group("episode"))
        try:
            check_read_only(item["query"])
        except UnsafeQueryError as exc:
            return _fail(name, "unsafe_query", f"evidence {rid}: {exc}")
        except DialectError:
            pass  # read-only but outside the portable subset: check 2 reports it
        except GraphError as exc:
            return _fail(name, "format_error", f"evidence {rid}: the query does not parse ({exc})")
        ordered = query_orders(item["query"])
        if "ordered" in item and item["ordered"] is not ordered:
            return _fail(name, "forged_evidence", f"evidence {rid}: 'ordered' disagrees with the query")
        if "row_count" in item and item["row_count"] != len(rows):
            return _fail(name, "forged_evidence", f"evidence {rid}: row_count {item['row_count']} != {len(rows)} rows")
        try:
            recomputed = result_hash(columns, rows, ordered)
        except (TypeError, ValueError) as exc:
            return _fail(name, "format_error", f"evidence {rid}: rows are not JSON-like ({exc})")
        if recomputed != item["result_hash"]:
            return _fail(name, "forged_evidence", f"evidence {rid}: the result hash does not match its rows")
    cid = str(getattr(candidate, "id", "") or "")
    if len(episodes) > 1:
        return _fail(name, "forged_evidence", f"evidence from several episodes: {sorted(episodes)}")
    if episodes and cid:
        (ep,) = episodes
        if ep != cid and not ep.startswith(cid + "-"):
            return _fail(name, "forged_evidence", f"evidence from episode {ep!r}, not from candidate {cid!r}")
    record = _final_run_record(getattr(candidate, "trace", None) or [])
    if record is not None:
        code = record.get("code")
        if isinstance(code, str) and code != program:
            return _fail(name, "forged_evidence", "the final program differs from the one whose run is traced")
        traced = {t.get("id"): t for t in record.get("traced") or [] if isinstance(t, Mapping)}
        marked = [m for m in record.get("evidence") or [] if isinstance(m, str)]
        for item in evidence:
            rid = item["id"]
            original = traced.get(rid)
            if original is None:
                return _fail(name, "forged_evidence", f"evidence {rid} was not produced by the traced final run")
            if rid not in marked:
                return _fail(name, "forged_evidence", f"evidence {rid} was not marked by the final program")
            for key in ("query", "params", "columns", "rows", "truncated", "result_hash"):
                if canonical_json(original.get(key)) != canonical_json(item.get(key)):
                    return _fail(name, "forged_evidence", f"evidence {rid}: {key} differs from the traced result")
        missing = [m for m in marked if m not in seen]
        if missing:
            return _fail(name, "incomplete_evidence", f"marked evidence missing from the candidate: {missing}")
    return _pass(name, f"{len(evidence)} evidence item(s)" + ("" if record else "; no traced final run to compare"))


# ---------------------------------------------------------------------------------------------
# 2. schema and static analysis
# ---------------------------------------------------------------------------------------------


def _triple(s: str | None, t: str, d: str | None) -> str:
    return f"(:{s or ''})-[:{t}]->(:{d or ''})"


def triple_fault(parsed: Any, schema: GraphSchema) -> tuple[str, str] | None:
    """``(reason, detail)`` for the first relationship pattern of a parsed query that no schema
    triple can match (``direction_error`` when the schema has it the other way round,
    ``schema_error`` otherwise): such a pattern matches nothing on this graph, or ``None``."""
    for t in used_triples(parsed):
        if t.type is None:
            continue
        forward = schema.has_triple(t.source, t.type, t.target)
        backward = schema.has_triple(t.target, t.type, t.source)
        if t.directed and not forward:
            if backward:
                return "direction_error", (
                    f"{_triple(t.source, t.type, t.target)} is not a schema triple; "
                    f"the schema has {_triple(t.target, t.type, t.source)}"
                )
            return "schema_error", f"no schema triple for {_triple(t.source, t.type, t.target)}"
        if not t.directed and not (forward or backward):
            return "schema_error", (
                f"no schema triple for (:{t.source or ''})-[:{t.type}]-(:{t.target or ''}) in either direction"
            )
    return None


def _static_query_fault(query: str, schema: GraphSchema) -> tuple[str, str] | None:
    """Check 2 for one query text: ``(reason, detail)`` of its first fault, or ``None``."""
    try:
        parsed = check_read_only(query)
    except DialectError as exc:
        return "dialect_divergence", str(exc)
    except GraphError as exc:  # cannot happen after check 1; never let it pass silently
        return "format_error", str(exc)
    try:
        check_schema(parsed, schema)
    except SchemaError as exc:
        return "schema_error", str(exc)
    fault = triple_fault(parsed, schema)
    if fault is not None:
        return fault
    for rewrite in (to_ladybug, to_neo4j):
        try:
            rewrite(parsed)
        except GraphError as exc:  # DialectError and any other refusal of the rewrite
            return "dialect_divergence", str(exc)
        except Exception as exc:  # noqa: BLE001 - the query path refuses these as DialectError too
            return "dialect_divergence", f"cannot be prepared ({type(exc).__name__}: {exc})"
    return None


def check_schema_static(
    candidate: Any,
    schema: GraphSchema,
    *,
    cache: dict[str, tuple[str, str] | None] | None = None,
) -> CheckResult:
    """Check 2 (see the module docstring): ``schema_error``, ``direction_error``,
    ``dialect_divergence``, ``truncation_misuse``. The per-query part depends only on the query
    text and the schema: pass a ``cache`` dict (one per schema) to analyse each text once."""
    name = CHECK_NAMES[1]
    evidence = _evidence(candidate)
    for item in evidence:
        query = item.get("query", "")
        if cache is not None and query in cache:
            fault = cache[query]
        else:
            fault = _static_query_fault(query, schema)
            if cache is not None:
                cache[query] = fault
        if fault is not None:
            return _fail(name, fault[0], f"evidence {item.get('id')}: {fault[1]}")
    answer_type = getattr(candidate, "answer_type", "")
    truncated = [e.get("id") for e in evidence if e.get("truncated")]
    if truncated and answer_type in _SET_LIKE:
        return _fail(name, "truncation_misuse", f"a {answer_type} answer rests on truncated evidence {truncated}")
    return _pass(name, f"{len(evidence)} query(ies) schema-valid and portable")


# ---------------------------------------------------------------------------------------------
# 3. independent re-execution
# ---------------------------------------------------------------------------------------------


def check_reexecution(
    candidate: Any,
    query_path: Any,
    snapshot_fingerprint: str | None,
    current_fingerprint: str | None,
    *,
    results: dict[tuple[str, str, int], Any] | None = None,
) -> CheckResult:
    """Check 3 (see the module docstring): ``snapshot_drift``, ``execution_failure``,
    ``result_mismatch``. ``query_path`` should be a fresh read-only
    :class:`~components.cypher.query_path.ReadOnlyQueryPath`. When ``results`` is a dict, every
    re-executed result is stored in it under :func:`replay_key` (see :class:`ReplayQueryPath`)."""
    name = CHECK_NAMES[2]
    if not snapshot_fingerprint or not current_fingerprint:
        return _fail(name, "snapshot_drift", "the snapshot fingerprint is unknown, so the graph cannot be matched")
    if snapshot_fingerprint != current_fingerprint:
        return _fail(
            name,
            "snapshot_drift",
            f"the graph changed: snapshot {snapshot_fingerprint} != current {current_fingerprint}",
        )
    evidence = _evidence(candidate)
    for item in evidence:
        rid, query = item.get("id"), item["query"]
        res = _via_probe(item, query_path, results)
        if res is None:
            try:
                res = query_path.run(query, dict(item.get("params") or {}), limit=MAX_ROWS)
            except GraphError as exc:
                return _fail(name, "execution_failure", f"evidence {rid}: {exc.code}: {exc}")
        if results is not None:
            results[replay_key(query, item.get("params"), MAX_ROWS)] = res
        if list(res.columns) != list(item["columns"]):
            return _fail(name, "result_mismatch", f"evidence {rid}: columns {list(res.columns)} != {item['columns']}")
        h = result_hash(res.columns, res.rows, query_orders(query))
        if h != item["result_hash"]:
            return _fail(
                name,
                "result_mismatch",
                f"evidence {rid}: re-executed result differs ({len(res.rows)} rows now, {len(item['rows'])} claimed)",
            )
        if bool(res.truncated) != bool(item["truncated"]):
            return _fail(
                name, "result_mismatch", f"evidence {rid}: truncation {res.truncated} now, {item['truncated']} claimed"
            )
    return _pass(name, f"{len(evidence)} query(ies) reproduced")


def _via_probe(item: Mapping[str, Any], query_path: Any, results: dict | None) -> Any:
    """Re-execute a query with a ``LIMIT`` / ``SKIP`` cut through its tie-check probe
    (:func:`~components.certify.grounding.probe_query`): one execution gives both the result —
    the probe's rows at the cut, when they reproduce the claimed hash — and the rows beyond the cut
    that check 4 needs to judge it. ``None``: re-execute the query itself."""
    params = dict(item.get("params") or {})
    probe = probe_query(item["query"], params)
    if probe is None or probe[1] > MAX_ROWS or item.get("truncated"):
        return None
    text, fetch, skip, limit, width = probe
    try:
        wide = query_path.run(text, params, limit=fetch)
    except GraphError:
        return None
    rows = tuple(tuple(r[:width]) for r in wide.rows[skip : None if limit is None else skip + limit])
    res = QueryResult(tuple(wide.columns[:width]), rows, False)
    if list(res.columns) != list(item.get("columns") or []) or result_hash(
        res.columns, rows, query_orders(item["query"])
    ) != item.get("result_hash"):
        return None  # not reproduced through the probe (a tie the engine broke otherwise): run the query
    if results is not None:
        results[probe_key(item["query"], params)] = wide.rows
    return res


def probe_key(query: str, params: Mapping[str, Any] | None) -> tuple[str, str, str]:
    return ("probe", query, canonical_json(dict(params or {})))


def replay_key(query: str, params: Mapping[str, Any] | None, limit: int | None) -> tuple[str, str, int]:
    return (query, canonical_json(dict(params or {})), -1 if limit is None else int(limit))


class ReplayQueryPath:
    """A query path for check 4 that answers the queries check 3 has just re-executed (same
    text, parameters and row limit) from their fresh results instead of running them a second
    time; any other query goes to ``inner`` (under ``lock`` when given, for a connection shared
    between threads). Sound because the snapshot is pinned by check 3 and queries are
    deterministic (``rand()`` and other nondeterminism are refused by the query path)."""

    def __init__(self, inner: Any, results: Mapping[tuple[str, str, int], Any], lock: Any = None) -> None:
        self.inner, self.results, self.lock = inner, results, lock
        self.replayed = self.forwarded = 0
        self.forwarded_queries: list[str] = []  # what the program read beyond its evidence

    def probe_rows(self, query: str, params: Mapping[str, Any] | None) -> Any:
        """The rows of ``query``'s tie-check probe when check 3 re-executed it through the probe."""
        return self.results.get(probe_key(query, params))

    def run(
        self, query: str, params: Mapping[str, Any] | None = None, *, limit: int | None = None, **options: Any
    ) -> Any:
        hit = self.results.get(replay_key(query, params, limit))
        if hit is not None:
            self.replayed += 1
            return hit
        self.forwarded += 1
        self.forwarded_queries.append(query)
        if self.lock is None:
            return self.inner.run(query, params, limit=limit, **options)
        with self.lock:
            return self.inner.run(query, params, limit=limit, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


# ---------------------------------------------------------------------------------------------
# 4. grounding and completeness
# ---------------------------------------------------------------------------------------------


class _DisplayMismatch(ValueError):
    """The display text (``answer``) says something else than the typed value."""


def _stated(candidate: Any) -> Any:
    """The stated answer: ``answer_value`` when present (authoritative; the display is then
    checked against it without being split apart), else ``answer`` parsed. Raises
    :class:`AnswerParseError` or :class:`_DisplayMismatch`."""
    answer_type = candidate.answer_type
    if candidate.answer_value is None:
        return parse_answer(candidate.answer, answer_type)
    stated = parse_answer(candidate.answer_value, answer_type)
    display = candidate.answer
    if (
        isinstance(display, str)
        and display.strip()
        and normalise_text(display) != normalise_text(format_answer(stated))
    ):
        try:
            agree = answers_agree(parse_answer(display, answer_type), stated, answer_type)
        except AnswerParseError:
            agree = False
        if not agree:
            raise _DisplayMismatch("answer and answer_value disagree")
    return stated


def check_grounding(
    candidate: Any,
    query_path: Any,
    schema: GraphSchema | None,
    *,
    limits: SandboxLimits | None = None,
    server: SandboxServer | None = None,
) -> CheckResult:
    """Check 4 (see the module docstring): ``answer_evidence_mismatch``, ``hard_coded_answer``,
    ``incomplete_evidence``, ``truncation_misuse``, ``forged_evidence``, ``execution_failure``;
    ``undetermined`` with sub-reasons from :data:`UNDETERMINED`."""
    name = CHECK_NAMES[3]
    answer_type = candidate.answer_type
    try:
        stated = _stated(candidate)
    except _DisplayMismatch as exc:
        return _fail(name, "answer_evidence_mismatch", str(exc))
    except AnswerParseError as exc:
        return _fail(name, "answer_evidence_mismatch", f"the stated answer does not parse as {answer_type}: {exc}")

    episode = _episode_of(candidate)
    run = run_final_program(
        query_path, schema, candidate.final_program, limits=limits, episode_id=episode, server=server
    )
    if not run.ok and run.failure_reason != "truncated_evidence":
        reason = "incomplete_evidence" if run.failure_reason == "no_evidence" else "execution_failure"
        return _fail(
            name, reason, f"the supporting program failed on re-run: {run.failure_reason}: {run.failure_detail}"
        )
    recomputed = [t.to_json() for t in run.evidence]
    submitted = {_key(e) for e in _evidence(candidate)}
    produced = {_key(e) for e in recomputed}
    if submitted - produced:
        return _fail(
            name,
            "forged_evidence",
            f"{len(submitted - produced)} evidence item(s) are not produced by the supporting program",
        )
    if produced - submitted:
        return _fail(
            name,
            "incomplete_evidence",
            f"{len(produced - submitted)} result(s) the program marks are not in the evidence",
        )
    try:
        recomputed_answer = parse_printed(run.printed, answer_type)
    except AnswerParseError as exc:
        return _fail(name, "answer_evidence_mismatch", f"the program's printed answer does not parse: {exc}")
    if not answers_agree(recomputed_answer, stated, answer_type):
        return _fail(
            name,
            "answer_evidence_mismatch",
            f"the program computes {recomputed_answer!r}, the candidate states {stated!r}",
        )

    flow = answer_flow(candidate.final_program, answer_type)
    if flow.verdict == "independent":
        return _fail(name, "hard_coded_answer", f"{flow.detail}: the answer is written into the program")
    if flow.verdict == "inconclusive":
        changed, why = perturbation_changes(
            candidate.final_program,
            recomputed_answer,
            answer_type,
            query_path,
            schema,
            limits=limits,
            episode_id=episode,
            server=server,
        )
        if not changed:
            return _fail(name, "hard_coded_answer", f"{flow.detail}; replayed on perturbed rows, {why}")

    notes: list[str] = []
    if any(t.truncated for t in run.evidence):
        if answer_type in _SET_LIKE:
            return _fail(name, "truncation_misuse", f"a {answer_type} answer rests on a truncated result")
        notes.append("truncated_observation")
    if answer_type in ("entity", "set") and not answer_in_rows(stated, answer_type, recomputed):
        what = "the answer does not" if answer_type == "entity" else "some answer members do not"
        return _fail(name, "incomplete_evidence", f"{what} occur in the evidence rows")
    n_queries = sum(1 for c in run.calls if c.get("op") == "cypher" and c.get("ok"))
    if len(recomputed) > 1 or n_queries > 1:
        notes.append("multi_query_composition")
    if any(not derive(e["query"], schema).ok for e in recomputed):
        notes.append("derivation_unsupported")
    probes = getattr(query_path, "probe_rows", None)
    cuts = [
        cut_state(t.query, t.params, t.rows, query_path, probes(t.query, t.params) if probes else None)
        for t in run.evidence
    ]
    emptiness_only = answer_type == "boolean" and flow.emptiness
    if not emptiness_only and any(not c.exact for c in cuts):
        notes.append("arbitrary_subset")
    reason, why = directness(stated, answer_type, run.evidence, flow)
    if reason is not None:
        notes.append(reason)
    notes = list(dict.fromkeys(notes))
    if notes:
        details = [why if n == reason else UNDETERMINED[n] for n in notes]
        cut_details = [c.detail for c in cuts if not c.exact and c.detail]
        return CheckResult(name, "undetermined", notes[0], "; ".join(details + cut_details), tuple(notes))
    return _pass(name, f"direct: {why}")
