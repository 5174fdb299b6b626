"""Teacher trajectories from certified items, for the supervised warm-start.

A certified item already holds what a good solver does in the Python + Cypher environment: run
the supporting program, then answer. :func:`certified_teacher_records` plays exactly that
through the real environment — step 1 is the program in one ```` ```python ```` block (executed
for real in a fresh sandbox; the environment's ``<information>`` reply is recorded), step 2 is
``<answer>…</answer>`` — with a backend that emits those two texts through the model's own
tokenizer, via the same :class:`~components.rollout.runner.RolloutRunner` as sampled rollouts.
So teacher and policy trajectories share one format and one loss mask (the environment's reply
is masked out of the SFT loss), and a teacher whose program no longer runs is dropped, not
trained on.

The same replay serves the other environments: :func:`graph_cot_teacher_steps` gives a curriculum
item's Graph-CoT teacher trajectory (:mod:`components.curriculum.trajectories`) as its steps —
one ``<think>…</think><graph>call</graph>`` per round, then the answer — for GraphDancer's warm
start in its own environment, and :func:`grain_teacher_steps` GRAIN's graph-IR steps.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from components.llm.base import Generation, SamplingParams
from components.rollout.runner import CODE_STOPS, RolloutConfig, RolloutRecord, RolloutRunner
from components.tools.env import ToolEnvironment

__all__ = [
    "TeacherBackend",
    "certified_teacher_records",
    "decision_spans",
    "decision_token_share",
    "last_call",
    "printed_answer",
    "relationship_uses",
    "teacher_coverage",
    "grain_teacher_steps",
    "graph_cot_teacher_steps",
    "teacher_records",
    "teacher_steps",
    "worked_examples",
]


class TeacherBackend:
    """Emits fixed step texts (one per call), tokenised by the real tokenizer."""

    def __init__(self, tokenizer: Any, steps: Sequence[str], stops: Sequence[str] = CODE_STOPS) -> None:
        self.tokenizer, self.steps, self.stops = tokenizer, list(steps), tuple(stops)

    def generate_ids(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[list[Generation]]:
        out = []
        for p in prompts:
            text = self.steps.pop(0) if self.steps else ""
            stop = next((s for s in self.stops if text.endswith(s)), None)
            ids = list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            if not ids:
                ids = [self.tokenizer.eos_token_id]
            out.append(
                [
                    Generation(
                        text[: -len(stop)] if stop else text, len(p), len(ids), stop or "eos", token_ids=tuple(ids)
                    )
                ]
            )
        return out


def teacher_steps(row: Mapping[str, Any]) -> list[str]:
    """The two steps of a certified row: its program, then its answer."""
    return [f"```python\n{row['final_program'].rstrip()}\n```", f"<answer>{row['answer']}</answer>"]


def graph_cot_teacher_steps(item: Mapping[str, Any]) -> list[str]:
    """The steps of a curriculum item's Graph-CoT teacher trajectory (``trajectory_json``,
    :mod:`components.curriculum.trajectories`): one ``<think>…</think><graph>call</graph>`` per
    round, then ``<think>…</think><answer>…</answer>`` with the answer the trajectory derived."""
    traj = json.loads(item["trajectory_json"])
    steps = [f"<think>{r['think']}</think><graph>{r['action']}</graph>" for r in traj["rounds"]]
    final = traj.get("final_think") or "The observations give the answer."
    return steps + [f"<think>{final}</think><answer>{traj['answer']}</answer>"]


def grain_teacher_steps(item: Mapping[str, Any]) -> list[str]:
    """The two steps of a GRIT item: its gold graph IR, then its answer."""
    return [f"<graph>{json.dumps(item['gold_ir'], ensure_ascii=False)}</graph>", f"<answer>{item['answer']}</answer>"]


def teacher_records(
    rows: Sequence[Mapping[str, Any]],
    steps_of: Callable[[Mapping[str, Any]], list[str]],
    make_env: Callable[[], ToolEnvironment],
    tokenizer: Any,
    *,
    stops: Sequence[str] = CODE_STOPS,
    system_prompt: str | None = None,
    failed_calls: bool = False,
) -> tuple[list[RolloutRecord], list[dict[str, Any]]]:
    """``(records, dropped)``: one teacher trajectory per row — the steps ``steps_of(row)`` (calls,
    then the answer) played through a fresh environment — kept when every call ran as a valid
    call and the answer came in a valid format; ``dropped`` lists the others with why. With
    ``failed_calls`` a call that failed is kept with its error observation (what a pipeline
    without a certifier trains on): only an answer in a valid format is required."""
    records, dropped = [], []
    for row in rows:
        steps = steps_of(row)
        config = RolloutConfig(
            max_turns=len(steps),
            max_new_tokens=4096,
            max_total_tokens=1 << 20,
            system_prompt=system_prompt,
            stops=tuple(stops),
        )
        episode_row = {"question": row["question"], "answer": row["answer"], "answer_type": row.get("answer_type")}
        runner = RolloutRunner(TeacherBackend(tokenizer, steps, stops), make_env, config)
        (rec,) = runner.run([episode_row])
        s = rec.stats
        if not (s.answered and s.valid_format and (failed_calls or s.valid_calls == len(steps) - 1)):
            dropped.append(
                {
                    "id": row.get("id"),
                    "reason": "the teacher's calls did not run cleanly in the environment",
                    "trace": json.dumps(rec.trace, default=str)[:2000],
                }
            )
            continue
        rec.row = {**episode_row, "id": row.get("id")}
        records.append(rec)
    return records, dropped


def last_call(record: RolloutRecord) -> dict[str, Any] | None:
    """The record of a Python + Cypher episode's last executed code step (its final program:
    ``code``, ``stdout``, ``traced`` …), or ``None`` when no code ran."""
    for rnd in reversed(record.trace.get("rounds") or []):
        call = rnd.get("call") or {}
        if rnd.get("executed") and call.get("code"):
            return call
    return None


def printed_answer(record: RolloutRecord) -> str | None:
    """What the episode's last executed program printed (its observation's answer), or ``None``."""
    call = last_call(record)
    return None if call is None else str(call.get("stdout") or "").strip()


def certified_teacher_records(
    rows: Sequence[Mapping[str, Any]],
    make_env: Callable[[], ToolEnvironment],
    tokenizer: Any,
    *,
    system_prompt: str | None = None,
) -> tuple[list[RolloutRecord], list[dict[str, Any]]]:
    """Teacher trajectories of certified rows in the Python + Cypher environment (module
    docstring). A teacher answers only what its program printed: a trajectory whose answer is not
    the printed value (typed comparison) is dropped with that reason."""
    from components.quizzer.answers import AnswerParseError, parse_printed
    from components.quizzer.candidate import format_answer
    from components.rubric.metrics import answers_equal

    records, dropped = teacher_records(
        rows, teacher_steps, make_env, tokenizer, stops=CODE_STOPS, system_prompt=system_prompt
    )
    kept = []
    for rec in records:
        printed = printed_answer(rec)
        kind = str(rec.row.get("answer_type"))
        try:
            value = format_answer(parse_printed((printed or "").splitlines()[-1] if printed else None, kind))
        except (AnswerParseError, ValueError, TypeError):
            value = None
        if value is not None and answers_equal(rec.row["answer"], value, kind):
            kept.append(rec)
        else:
            reason = "the teacher's answer is not the value its program printed"
            dropped.append({"id": rec.row.get("id"), "reason": reason, "trace": f"printed {printed!r}"[:2000]})
    return kept, dropped


_REL = re.compile(r"(<)?-\[[^\]]*?:\s*`?([A-Za-z_][A-Za-z0-9_]*)`?[^\]]*\]-(>)?")


def relationship_uses(program: str) -> list[str]:
    """The relationship patterns a program's Cypher uses, as ``TYPE>`` (left to right), ``<TYPE``
    or ``TYPE`` (either direction).

    >>> relationship_uses("MATCH (a)-[:`WROTE`]->(p)<-[r:CITES]-(q), (p)-[:IN]-(v)")
    ['WROTE>', '<CITES', 'IN']
    """
    out = []
    for back, rel, fwd in _REL.findall(program):
        out.append(f"<{rel}" if back and not fwd else f"{rel}>" if fwd and not back else rel)
    return out


#: what a program decides (the rest is boilerplate the model copies): backticked schema names
#: (labels, relationship types, properties), relationship arrows, string literals (the entity)
#: and the answer between its tags
_DECISION = re.compile(r"`[^`\n]+`|<-|->|'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"|(?<=<answer>).+?(?=</answer>)")


def decision_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of ``text`` that carry a decision (:data:`_DECISION`).

    >>> t = "cypher('MATCH (s:`Author`)-[:`WROTE`]->(p)', start='Ann')"
    >>> [t[a:b] for a, b in decision_spans(t)]
    ["'MATCH (s:`Author`)-[:`WROTE`]->(p)'", "'Ann'"]
    """
    return [m.span() for m in _DECISION.finditer(text)]


def decision_token_share(records: Sequence[RolloutRecord], tokenizer: Any) -> dict[str, Any]:
    """The share of the SFT loss's weight (its model tokens, each weighted equally by the mean
    token loss) that falls on decision tokens: tokens overlapping a schema name, an arrow, an
    entity literal or the answer (:data:`_DECISION`, matched inside the query strings too).
    The model's steps are re-tokenised with offsets to locate the spans."""
    model_tokens = decision = 0
    for rec in records:
        for keep, ids in rec.segments():
            if not keep:
                continue
            text = tokenizer.decode(ids, skip_special_tokens=False)
            marked: list[tuple[int, int]] = []
            for a, b in decision_spans(text):
                if text[a] not in "'\"":  # a schema name, an arrow, the answer
                    marked.append((a, b))
                    continue
                inside = decision_spans(text[a + 1 : b - 1])  # a query string: its names and arrows
                marked += [(a + 1 + x, a + 1 + y) for x, y in inside] if inside else [(a, b)]  # else: an entity
            enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            for start, end in enc["offset_mapping"]:
                model_tokens += 1
                decision += any(start < b and a < end for a, b in marked)
    return {
        "model_tokens": model_tokens,
        "decision_tokens": decision,
        "share": decision / model_tokens if model_tokens else 0.0,
    }


def teacher_coverage(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """How teacher data covers the schema: trajectories per template family
    (:func:`~components.evaluation.families.family_label`), per relationship type and direction
    (:func:`relationship_uses`), and per (family, relationship use); the smallest cell says how
    often the rarest combination is taught."""
    from components.evaluation.families import family_label

    by_family: Counter = Counter()
    by_rel: Counter = Counter()
    cells: Counter = Counter()
    for row in rows:
        family = family_label(row)
        by_family[family] += 1
        for use in set(relationship_uses(str(row.get("final_program") or ""))):
            by_rel[use] += 1
            cells[f"{family} × {use}"] += 1
    return {
        "trajectories": len(rows),
        "families": dict(by_family.most_common()),
        "relationships": dict(by_rel.most_common()),
        "cells": dict(cells.most_common()),
        "rarest_family": min(by_family.values(), default=0),
        "rarest_relationship": min(by_rel.values(), default=0),
    }


def worked_examples(rows: Sequence[Mapping[str, Any]], make_env: Callable[[], ToolEnvironment]) -> str:
    """A few-shot prompt: each row's teacher trajectory as the environment plays it — the
    question, the program, the environment's real reply, the answer. (The same steps the
    warm start is trained on, so a few-shot base model and a warm-started one see one format.)"""
    parts = ["Worked examples of the format (other questions, the same graph):"]
    for row in rows:
        env = make_env()
        try:
            env.reset(**dict(row))
            program, answer = teacher_steps(row)
            reply, _ = env.step(program)
        finally:
            close = getattr(env, "close", None)
            if callable(close):
                close()
        parts.append(f"Question: {row['question']}\n{program}{reply}{answer}")
    return "\n\n".join(parts)
