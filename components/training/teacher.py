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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from components.llm.base import Generation, SamplingParams
from components.rollout.runner import CODE_STOPS, RolloutConfig, RolloutRecord, RolloutRunner
from components.tools.env import ToolEnvironment

__all__ = [
    "TeacherBackend",
    "certified_teacher_records",
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
) -> tuple[list[RolloutRecord], list[dict[str, Any]]]:
    """``(records, dropped)``: one teacher trajectory per row — the steps ``steps_of(row)`` (calls,
    then the answer) played through a fresh environment — kept when every call ran as a valid
    call and the answer came in a valid format; ``dropped`` lists the others with why."""
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
        if not (s.answered and s.valid_format and s.valid_calls == len(steps) - 1):
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


def certified_teacher_records(
    rows: Sequence[Mapping[str, Any]],
    make_env: Callable[[], ToolEnvironment],
    tokenizer: Any,
    *,
    system_prompt: str | None = None,
) -> tuple[list[RolloutRecord], list[dict[str, Any]]]:
    """Teacher trajectories of certified rows in the Python + Cypher environment (module docstring)."""
    return teacher_records(rows, teacher_steps, make_env, tokenizer, stops=CODE_STOPS, system_prompt=system_prompt)


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
