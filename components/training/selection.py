"""Which questions an RL stage trains on, and how its policy does on held-out ones.

GRPO learns only from a group whose rewards differ: a question the policy never solves or always
solves gives every rollout the same group-normalised advantage, 0, and the weights do not move.
:func:`probe` plays each candidate question ``samples`` times with the starting checkpoint and
:func:`sometimes_solved` keeps the questions whose rewards vary (closest to a 50 % solve rate
first), filling up with the others only when too few vary; its report counts never / sometimes /
always solved.

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

__all__ = ["play", "probe", "rollout_columns", "score", "sometimes_solved", "summarize"]


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
    }


def score(
    reward: Callable[..., Sequence[float | None]], records: Sequence[RolloutRecord], rows: Sequence[Mapping[str, Any]]
) -> list[float]:
    """``reward`` of each record; ``rows`` holds the dataset row of each record (same order).
    A reward of ``None`` (no gold answer) counts as 0."""
    if not records:
        return []
    keys = sorted({k for row in rows for k in row if k != "prompt"})
    data = {k: [row.get(k) for row in rows] for k in keys}
    columns = data | rollout_columns(records)  # a rollout column wins, as in TRL's trainer
    values = reward(completions=[r.completion_text for r in records], **columns)
    return [float(v or 0.0) for v in values]


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


def summarize(records: Sequence[RolloutRecord], rewards: Sequence[float]) -> dict[str, float]:
    """Mean reward (with its standard error), tool-call and valid-format rates of played episodes."""
    n = len(rewards)
    mean = fmean(rewards) if n else 0.0
    se = (sum((x - mean) ** 2 for x in rewards) / (n - 1) / n) ** 0.5 if n > 1 else 0.0
    return {
        "reward": mean,
        "reward_se": se,
        "tool_call_rate": sum(r.stats.valid_calls > 0 for r in records) / max(1, len(records)),
        "valid_format": sum(bool(r.stats.valid_format) for r in records) / max(1, len(records)),
        "episodes": len(records),
    }


def probe(
    backend: Any,
    rows: Sequence[Mapping[str, Any]],
    make_env: Callable[[], ToolEnvironment],
    rollout: RolloutConfig,
    reward: Callable[..., Sequence[float | None]],
    samples: int,
) -> list[list[float]]:
    """The rewards of ``samples`` episodes of each row, played by ``backend``."""
    records = play(backend, rows, make_env, rollout, samples)
    rewards = score(reward, records, [row for row in rows for _ in range(samples)])
    return [rewards[i * samples : (i + 1) * samples] for i in range(len(rows))]


def sometimes_solved(
    rows: Sequence[Mapping[str, Any]], groups: Sequence[Sequence[float]], want: int, *, seed: int = 0
) -> tuple[list[Mapping[str, Any]], dict[str, Any]]:
    """Up to ``want`` rows: those whose probe rewards vary, closest to a mean of 0.5 first (ties in
    a seeded order), then the others; and the report (``probed``, ``never``, ``sometimes``,
    ``always``, ``selected``, ``selected_sometimes``, ``probe_reward``)."""
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
