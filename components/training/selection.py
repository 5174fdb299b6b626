"""Which questions an RL stage trains on, and how its policy does on held-out ones.

GRPO learns only from a group whose rewards differ: a question the policy never solves or always
solves gives every rollout the same group-normalised advantage, 0, and the weights do not move.
:func:`probe` plays each candidate question ``samples`` times with the starting checkpoint and
:func:`sometimes_solved` keeps the questions whose probe signal varies (closest to a 50 % solve
rate first), filling up with the others only when too few vary; its report counts never /
sometimes / always solved. The signal is, by default, whether each episode's **answer is
correct** (:func:`answers_correct`, the evaluation's typed comparison): with the GraphCert
reward a group of wrong answers still has rewards that differ by the evidence term's 0.01–0.03,
and counting any reward variance as "sometimes solved" picked questions the policy never
answered (46 of 48 probed questions looked "sometimes solved" on the learning table); ``by
"reward"`` keeps that older rule.

:func:`score` is the reward of played episodes as the trainer computes it (the reward function
sees the dataset's columns and the rollout's statistics, see :mod:`components.training.grpo`);
the validation curve (:class:`~components.training.grpo.Validation`) uses it on a fixed set of
validation-split questions — never the training groups, whose selection would pin their reward
near 0.5 by construction.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from statistics import fmean
from typing import Any

from components.rollout.runner import RolloutConfig, RolloutRecord, RolloutRunner
from components.tools.env import ToolEnvironment

__all__ = [
    "answers_correct",
    "play",
    "probe",
    "reward_terms",
    "rollout_columns",
    "score",
    "sometimes_solved",
    "summarize",
]

#: what makes a probed question "sometimes solved": its answers' correctness varies, or its reward
PROBE_SIGNALS = ("answer", "reward")


def rollout_columns(records: Sequence[RolloutRecord]) -> dict[str, list[Any]]:
    """The per-episode columns a rollout hands the reward functions, besides the completion."""
    stats = [r.stats for r in records]
    return {
        "valid_format": [s.valid_format for s in stats],
        "rounds": [s.rounds for s in stats],
        "invalid_calls": [s.invalid_calls for s in stats],
        "halted": [s.halted for s in stats],
        "evidence_hit": [s.evidence_hit for s in stats],
        "level": [s.level for s in stats],
        "pred_evidence": [r.evidence for r in records],
        # the answer the environment parsed (None: the episode never answered): what the rewards
        # score, as evaluation does, instead of re-reading the completion's text
        "parsed_answer": [s.answer if s.answered else None for s in stats],
    }


def answers_correct(records: Sequence[RolloutRecord], rows: Sequence[Mapping[str, Any]]) -> list[float]:
    """1.0 where the episode's parsed answer equals the row's gold ``answer`` (typed by its
    ``answer_type``: :func:`~components.rubric.metrics.exact_match`, the evaluation's EM), else 0.0;
    a row without a gold answer counts 0."""
    from components.rubric.metrics import exact_match

    if len(records) != len(rows):
        raise ValueError(f"{len(records)} records but {len(rows)} rows")
    out = []
    for rec, row in zip(records, rows, strict=True):
        gold, stats = row.get("answer"), rec.stats
        ok = gold is not None and stats is not None and stats.answered and stats.answer is not None
        out.append(exact_match(stats.answer, gold, row.get("answer_type")) if ok else 0.0)
    return out


def score(
    reward: Callable[..., Sequence[float | None]], records: Sequence[RolloutRecord], rows: Sequence[Mapping[str, Any]]
) -> list[float]:
    """``reward`` of each record; ``rows`` holds the dataset row of each record (same order).
    A reward of ``None`` (no gold answer) counts as 0."""
    if not records:
        return []
    values = reward(completions=[r.completion_text for r in records], **_columns(records, rows))
    return [float(v or 0.0) for v in values]


def _columns(records: Sequence[RolloutRecord], rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The reward functions' keyword columns: the rows' fields, then the rollout's (a rollout
    column wins, as in TRL's trainer)."""
    keys = sorted({k for row in rows for k in row if k != "prompt"})
    return {k: [row.get(k) for row in rows] for k in keys} | rollout_columns(records)


def reward_terms(records: Sequence[RolloutRecord], rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """The reward's components, averaged over episodes with a gold answer: ``answer_f1`` (the
    answer term, token F1 of the parsed answer) and ``evidence`` (S_evidence of the marked queries
    against the row's gold evidence; 0 where a row carries none) —
    :func:`~components.rubric.rewards.graphcert_terms`; the format term is ``valid_format``."""
    from components.rubric.rewards import graphcert_terms

    if not records:
        return {"answer_f1": 0.0, "evidence": 0.0}
    terms = [t for t in graphcert_terms([r.completion_text for r in records], **_columns(records, rows)) if t]
    return {
        "answer_f1": fmean(t[0] for t in terms) if terms else 0.0,
        "evidence": fmean(t[1] for t in terms) if terms else 0.0,
    }


def play(
    backend: Any,
    rows: Sequence[Mapping[str, Any]],
    make_env: Callable[[], ToolEnvironment],
    rollout: RolloutConfig,
    samples: int,
) -> list[RolloutRecord]:
    """``samples`` episodes of each row (``prompt`` is the question), row after row."""
    episodes = [{"question": str(r["prompt"])} for r in rows]
    return RolloutRunner(backend, make_env, rollout).run(episodes, n=samples) if episodes else []


def _mean_se(values: Sequence[float]) -> tuple[float, float]:
    n = len(values)
    mean = fmean(values) if n else 0.0
    return mean, ((sum((x - mean) ** 2 for x in values) / (n - 1) / n) ** 0.5 if n > 1 else 0.0)


def summarize(
    records: Sequence[RolloutRecord], rewards: Sequence[float], rows: Sequence[Mapping[str, Any]] | None = None
) -> dict[str, float]:
    """Mean reward (with its standard error), tool-call and valid-format rates of played episodes;
    with ``rows`` (each record's dataset row) also the answers' EM (with its standard error) and
    the reward's answer and evidence terms (:func:`reward_terms`) and EM on the non-boolean rows
    (``em_nonbool``; 0.0 when there are none)."""
    mean, se = _mean_se(rewards)
    out = {
        "reward": mean,
        "reward_se": se,
        "tool_call_rate": sum(r.stats.valid_calls > 0 for r in records) / max(1, len(records)),
        "valid_format": sum(bool(r.stats.valid_format) for r in records) / max(1, len(records)),
        "episodes": len(records),
    }
    if rows is not None:
        correct = answers_correct(records, rows)
        out["em"], out["em_se"] = _mean_se(correct)
        # the questions an answer prior cannot pass by saying "yes" (docs/evaluation.md)
        nonbool = [c for c, row in zip(correct, rows, strict=True) if row.get("answer_type") != "boolean"]
        out["em_nonbool"], out["em_nonbool_se"] = _mean_se(nonbool)
        out |= reward_terms(records, rows)
    return out


def probe(
    backend: Any,
    rows: Sequence[Mapping[str, Any]],
    make_env: Callable[[], ToolEnvironment],
    rollout: RolloutConfig,
    reward: Callable[..., Sequence[float | None]],
    samples: int,
    by: str = "answer",
) -> list[list[float]]:
    """Per row, the probe signal of ``samples`` episodes played by ``backend``: whether each
    answer is correct (``by="answer"``: 1.0 / 0.0) or its reward (``by="reward"``)."""
    if by not in PROBE_SIGNALS:
        raise ValueError(f"probe by {by!r}: one of {PROBE_SIGNALS}")
    records = play(backend, rows, make_env, rollout, samples)
    repeated = [row for row in rows for _ in range(samples)]
    values = answers_correct(records, repeated) if by == "answer" else score(reward, records, repeated)
    return [values[i * samples : (i + 1) * samples] for i in range(len(rows))]


def sometimes_solved(
    rows: Sequence[Mapping[str, Any]], groups: Sequence[Sequence[float]], want: int, *, seed: int = 0
) -> tuple[list[Mapping[str, Any]], dict[str, Any]]:
    """Up to ``want`` rows: those whose probe values (:func:`probe`) vary, closest to a mean of 0.5
    first (ties in a seeded order), then the others; and the report (``probed``, ``never``,
    ``sometimes``, ``always``, ``selected``, ``selected_sometimes``, ``probe_reward``: the mean
    probe value — a solve rate when probed by answer)."""
    if len(rows) != len(groups):
        raise ValueError(f"{len(rows)} rows but {len(groups)} probe groups")
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    varies = [i for i in order if groups[i] and max(groups[i]) > min(groups[i])]
    varies.sort(key=lambda i: abs(fmean(groups[i]) - 0.5))
    rest = [i for i in order if i not in set(varies)]
    chosen = (varies + rest)[:want]
    flat = [x for g in groups for x in g]
    report = {
        "probed": len(rows),
        "samples": max((len(g) for g in groups), default=0),
        "never": sum(1 for g in groups if g and max(g) <= 0.0),
        "sometimes": len(varies),
        "always": sum(1 for g in groups if g and min(g) >= 1.0),
        "selected": len(chosen),
        "selected_sometimes": min(len(varies), len(chosen)),
        "probe_reward": fmean(flat) if flat else 0.0,
    }
    return [rows[i] for i in chosen], report


def paired_points(a: Mapping[str, Any], b: Mapping[str, Any], metric: str = "em") -> dict[str, Any]:
    """``a − b`` of two validation points of one curve (``metric``: ``em`` or ``em_nonbool``), with
    the evaluation's paired bootstrap over questions (:func:`~components.evaluation.metrics.
    paired_difference`): both points played the same rows with the same seeds, so their episodes
    pair by position (the point's ``samples`` episodes per row make one question). A point without
    per-episode results (older logs) gives no difference (``value`` None)."""
    from types import SimpleNamespace

    from components.evaluation.metrics import paired_difference

    def records(point: Mapping[str, Any]) -> list[Any]:
        correct, types, samples = point.get("correct") or [], point.get("answer_types") or [], point.get("samples", 1)
        return [
            SimpleNamespace(question_id=str(i // samples), answer_type=t, metrics={"em": float(c)})
            for i, (c, t) in enumerate(zip(correct, types, strict=True))
        ]

    if len(a.get("correct") or []) != len(b.get("correct") or []) or a.get("samples") != b.get("samples"):
        raise ValueError("the two validation points played different numbers of episodes")
    return paired_difference(records(a), records(b), metric)
