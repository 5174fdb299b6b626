"""Candidates from externally written questions: a question, its answer type and a final
program (Python that calls ``cypher()``, marks its evidence and prints the answer), run for real
in the sandbox so that the evidence and the trace are genuine.

This is how a team certifies a question set of its own: write (or generate) the programs, turn
them into candidate records with :func:`candidate_from_program`, then ``graphdojo certify``.
The answer is what the program prints; the candidate's quizzer kind is ``external``.
"""

from __future__ import annotations

import time
from typing import Any

from components.graph.schema import GraphSchema
from components.quizzer.answers import AnswerParseError, parse_printed
from components.quizzer.candidate import QACandidate, format_answer
from components.quizzer.final import run_final_program
from components.tools.sandbox import SandboxLimits, SandboxServer

__all__ = ["candidate_from_program"]


def candidate_from_program(
    query_path: Any,
    schema: GraphSchema | None,
    cid: str,
    question: str,
    answer_type: str,
    program: str,
    *,
    limits: SandboxLimits | None = None,
    server: SandboxServer | None = None,
    meta: dict[str, Any] | None = None,
) -> QACandidate:
    """Run ``program`` in a fresh sandbox episode (id ``cid``) and record it as a candidate:
    evidence = what it marked, trace = its run, answer = what it printed. A program that fails
    gives a failed candidate (``failure_reason`` set), never an exception."""
    t0 = time.perf_counter()
    run = run_final_program(query_path, schema, program, limits=limits, episode_id=cid, server=server)
    cand = QACandidate(
        id=cid,
        quizzer="external",
        seed=0,
        index=0,
        question=question,
        answer_type=answer_type,
        trace=[{"kind": "final_program", "code": program, **run.to_dict()}],
        evidence=[t.to_json() for t in run.evidence],
        final_program=program,
        latency_s=round(time.perf_counter() - t0, 4),
        model="external",
        meta=dict(meta or {}),
    )
    if not run.ok:
        return cand.fail(run.failure_reason or "code_error", run.failure_detail)
    try:
        value = parse_printed(run.printed, answer_type)
    except AnswerParseError as exc:
        return cand.fail("unparseable_answer", str(exc))
    cand.answer_value, cand.answer = value, format_answer(value)
    return cand
