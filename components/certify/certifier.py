"""Certification of one candidate: the four program checks in order → a :class:`Certificate`.

Statuses (docs/certification.md):

* ``hard_failure`` — the quizzer itself failed the candidate (``quizzer_failure``), or the first
  check that *fails* (in the order format/provenance/safety → schema/static → re-execution →
  grounding); its reason is the certificate's only reason and later checks are not run.
* ``strict`` — all four checks pass: the supporting program recomputes the stated answer from its
  ``cypher()`` results, the marked evidence is exactly what it marks, and the evidence *is* the
  answer — directly grounded (:mod:`components.certify.grounding`): a cell of a single-row
  result, the complete column of a complete result, its row count, or its emptiness, of a single
  query the deriver can read whose rows are reproducible (no arbitrary ``LIMIT``).
* ``partial`` — checks 1–3 pass (re-execution included), check 4 finds no fault but is
  ``undetermined`` for allow-listed reasons only (:data:`~components.certify.checks.UNDETERMINED`:
  multi-query composition, an answer Python selected from broader evidence or derived from it,
  an arbitrary subset, a count of repeated rows, a query the deriver cannot read, an entity /
  boolean read off a truncated result); ``reasons`` lists them.

Every certificate records the rule version it was made under (:data:`RULES_VERSION`), so a
certificate made under other rules is never reused by incremental re-certification.

Hard failures never reach the judge. A check that raises is a bug, recorded as
``internal_error`` (a hard failure), never propagated.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from components.certify.checks import (
    UNDETERMINED,
    CheckResult,
    ReplayQueryPath,
    check_format_provenance_safety,
    check_grounding,
    check_reexecution,
    check_schema_static,
)
from components.graph.schema import GraphSchema
from components.tools.sandbox import SandboxLimits, SandboxServer

__all__ = ["REASONS", "RULES_VERSION", "STATUSES", "Certificate", "certify", "certify_many"]

STATUSES: Final = ("strict", "partial", "hard_failure")
#: The certification rules a certificate was made under (bump when a check's meaning changes).
RULES_VERSION: Final = "rules-2"

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
    "hard_coded_answer": "the final program's answer does not come from its cypher() results (a literal)",
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
    #: queries check 4's supporting program ran beyond its evidence (their reads count for
    #: incremental re-certification); not part of :meth:`to_json`
    forwarded: list[str] = field(default_factory=list, compare=False)
    rules: str = RULES_VERSION

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")

    @property
    def certified(self) -> bool:
        return self.status != "hard_failure"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "reasons": list(self.reasons),
            "rules": self.rules,
            "checks": [c.to_json() for c in self.checks],
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Certificate:
        return cls(
            raw["status"],
            list(raw.get("reasons") or ()),
            [CheckResult.from_json(c) for c in raw.get("checks") or ()],
            rules=str(raw.get("rules") or "rules-1"),
        )


def _run(steps: Sequence[Callable[[], CheckResult]], offset: int, checks: list[CheckResult]) -> Certificate | None:
    """Run ``steps`` (checks ``offset + 1`` …) appending to ``checks``; the hard failure, or
    ``None`` when all of them pass or are allowed to be undetermined."""
    for i, step in enumerate(steps, offset):
        try:
            result = step()
        except Exception as exc:  # noqa: BLE001 - a bug is a recorded hard failure
            result = CheckResult(f"check_{i + 1}", "fail", "internal_error", f"{type(exc).__name__}: {exc}")
        checks.append(result)
        if result.failed:
            return Certificate("hard_failure", [result.reason or "internal_error"], checks)
        if result.verdict == "undetermined" and (i < 3 or not set(result.undetermined) <= set(UNDETERMINED)):
            return Certificate("hard_failure", ["internal_error" if i < 3 else "incomplete_evidence"], checks)
    return None


def _outcome(checks: list[CheckResult]) -> Certificate:
    notes = [n for c in checks for n in c.undetermined]
    if notes:
        return Certificate("partial", list(dict.fromkeys(notes)), checks)
    return Certificate("strict", [], checks)


@dataclass
class _Context:
    schema: GraphSchema
    query_path: Any
    current_fingerprint: str | None
    limits: SandboxLimits | None = None
    server: SandboxServer | None = None
    lock: Any = None
    static_cache: dict[str, Any] | None = None


def _checks_1_to_3(
    candidate: Any, ctx: _Context, snapshot_fingerprint: str | None, results: dict
) -> tuple[Certificate | None, list[CheckResult]]:
    checks: list[CheckResult] = []
    path = ctx.query_path if ctx.lock is None else ReplayQueryPath(ctx.query_path, {}, ctx.lock)
    steps = (
        lambda: check_format_provenance_safety(candidate),
        lambda: check_schema_static(candidate, ctx.schema, cache=ctx.static_cache),
        lambda: check_reexecution(candidate, path, snapshot_fingerprint, ctx.current_fingerprint, results=results),
    )
    return _run(steps, 0, checks), checks


def _check_4(candidate: Any, ctx: _Context, results: dict, checks: list[CheckResult]) -> Certificate:
    replay = ReplayQueryPath(ctx.query_path, results, ctx.lock)
    step = lambda: check_grounding(candidate, replay, ctx.schema, limits=ctx.limits, server=ctx.server)  # noqa: E731
    cert = _run((step,), 3, checks) or _outcome(checks)
    cert.forwarded = list(dict.fromkeys(replay.forwarded_queries))
    return cert


def certify(
    candidate: Any,
    *,
    schema: GraphSchema,
    query_path: Any,
    snapshot_fingerprint: str | None,
    current_fingerprint: str | None,
    limits: SandboxLimits | None = None,
    server: SandboxServer | None = None,
) -> Certificate:
    """Run the four checks in order on ``candidate`` (a
    :class:`~components.quizzer.candidate.QACandidate`); see the module docstring. The supporting
    program of check 4 runs in a fresh sandbox (a child of ``server`` when given) and its
    evidence queries are answered from check 3's re-execution (:class:`ReplayQueryPath`)."""
    if getattr(candidate, "failure_reason", None):
        return Certificate("hard_failure", ["quizzer_failure"])
    ctx = _Context(schema, query_path, current_fingerprint, limits, server)
    results: dict = {}
    failed, checks = _checks_1_to_3(candidate, ctx, snapshot_fingerprint, results)
    return failed or _check_4(candidate, ctx, results, checks)


def certify_many(
    candidates: Sequence[Any],
    *,
    schema: GraphSchema,
    query_path: Any,
    current_fingerprint: str | None,
    snapshot_fingerprint: str | None = None,
    limits: SandboxLimits | None = None,
    progress: Callable[[int], None] | None = None,
    workers: int | None = None,
    window: int = 16,
) -> list[Certificate]:
    """Certify a batch, in input order, exactly as :func:`certify` would one by one — but fast:

    * sandbox servers (:class:`~components.tools.sandbox.SandboxServer`) fork each supporting
      program's sandbox from a prepared spare instead of starting an interpreter;
    * check 2's per-query analysis is computed once per distinct query text;
    * check 4 runs on ``workers`` threads (default: one per spare core), each with its own server, overlapping the next
      candidates' checks 1–3 (a sandbox round trip is mostly waiting, and the children compute
      on the other core); the database connection is shared under a lock.

    ``snapshot_fingerprint`` is the fingerprint the candidates claim; ``None`` reads each
    candidate's ``meta["snapshot_fingerprint"]`` (missing: ``snapshot_drift``).
    ``progress(n)`` is called as candidates finish.
    """
    limits = limits or SandboxLimits()
    if workers is None:  # one sandbox worker per spare core (the children need CPU too)
        workers = max(1, min(4, (os.cpu_count() or 2) - 1))
    out: list[Certificate | None] = [None] * len(candidates)
    lock = threading.Lock()
    servers: queue.SimpleQueue[SandboxServer] = queue.SimpleQueue()
    made = [SandboxServer(limits) for _ in range(max(1, workers))]
    for srv in made:
        servers.put(srv)
    static_cache: dict[str, Any] = {}

    def ground(cand: Any, results: dict, checks: list[CheckResult]) -> Certificate:
        srv = servers.get()
        try:
            ctx = _Context(schema, query_path, current_fingerprint, limits, srv, lock, static_cache)
            return _check_4(cand, ctx, results, checks)
        finally:
            servers.put(srv)

    ctx = _Context(schema, query_path, current_fingerprint, limits, None, lock, static_cache)
    pending: deque[tuple[int, Future[Certificate]]] = deque()
    try:
        with ThreadPoolExecutor(len(made), thread_name_prefix="certify-ground") as pool:

            def finish_one() -> None:
                i, fut = pending.popleft()
                out[i] = fut.result()
                if progress:
                    progress(1)

            for i, cand in enumerate(candidates):
                if getattr(cand, "failure_reason", None):
                    out[i] = Certificate("hard_failure", ["quizzer_failure"])
                else:
                    claimed = snapshot_fingerprint
                    if claimed is None:
                        claimed = (getattr(cand, "meta", None) or {}).get("snapshot_fingerprint")
                    results: dict = {}
                    failed, checks = _checks_1_to_3(cand, ctx, claimed, results)
                    if failed is None:
                        pending.append((i, pool.submit(ground, cand, results, checks)))
                        while len(pending) > window:
                            finish_one()
                        continue
                    out[i] = failed
                if progress:
                    progress(1)
            while pending:
                finish_one()
    finally:
        for srv in made:
            srv.stop()
    return [c for c in out if c is not None]
