"""GraphDancer's preference pairs: rank a question's sampled trajectories, keep the best
and the worst.

Each trajectory is scored by the key ``(EM, EH, VF, −L, −I, −N)`` — exact match of the final
answer, evidence hit (the gold answer occurs in some observation), valid format of the whole
trace, and the negated counts of loop-limit halts, invalid calls and rounds — compared
lexicographically (strict tie-break priority, left to right; higher is better). The best
trajectory is *chosen*, the worst *rejected*. A question is dropped when its pool is uniformly
perfect (every trajectory has EM = 1) or uniformly failed (every one has EM = 0 and VF = 0), or
when best and worst tie on the whole key (nothing to prefer). Equal keys are broken by sample
order — the earliest for *chosen*, the latest for *rejected* — so the outcome is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from components.rubric.metrics import exact_match

__all__ = ["PairOutcome", "build_pair", "rank_key"]


def rank_key(stats: Any, gold: Any, answer_type: str | None = None) -> tuple[float, float, float, int, int, int]:
    """``(EM, EH, VF, −L, −I, −N)`` for one trajectory's :class:`~components.rollout.runner.TrajectoryStats`.

    >>> from types import SimpleNamespace as S
    >>> rank_key(S(answer="Paris", evidence_hit=True, valid_format=True, halted=False, invalid_calls=0, rounds=2),
    ...          "paris")
    (1.0, 1.0, 1.0, 0, 0, -2)
    """
    em = exact_match(stats.answer, gold, answer_type) if stats.answer is not None else 0.0
    return (
        em,
        float(bool(stats.evidence_hit)),
        float(bool(stats.valid_format)),
        -int(bool(stats.halted)),
        -int(stats.invalid_calls),
        -int(stats.rounds),
    )


@dataclass(frozen=True)
class PairOutcome:
    """``chosen`` / ``rejected`` are indices into the pool; ``dropped`` names why there is no
    pair (``uniformly_perfect``, ``uniformly_failed``, ``tied``, ``too_few``)."""

    chosen: int | None
    rejected: int | None
    dropped: str | None
    keys: tuple[tuple[float, ...], ...]


def build_pair(pool: Sequence[Any], gold: Any, answer_type: str | None = None) -> PairOutcome:
    """Rank a question's trajectories (their stats) and pick best vs worst (module docstring)."""
    keys = tuple(rank_key(s, gold, answer_type) for s in pool)
    if len(keys) < 2:
        return PairOutcome(None, None, "too_few", keys)
    if all(k[0] == 1.0 for k in keys):
        return PairOutcome(None, None, "uniformly_perfect", keys)
    if all(k[0] == 0.0 and k[2] == 0.0 for k in keys):
        return PairOutcome(None, None, "uniformly_failed", keys)
    order = sorted(range(len(keys)), key=lambda i: (keys[i], -i), reverse=True)
    best, worst = order[0], order[-1]
    if keys[best] == keys[worst]:
        return PairOutcome(None, None, "tied", keys)
    return PairOutcome(best, worst, None, keys)
