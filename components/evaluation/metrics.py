"""Evaluation metrics over per-question records, with bootstrap confidence intervals
over seeds (the metrics: docs/methods.md, "Evaluation metrics").

A record (:class:`EvalRecord`) is one question answered by one system under one seed: the
answer, the gold answer, the trajectory statistics (VF, valid calls, halt, truncation, EH), the
judge's verdict, tokens and latency. :func:`summarize` turns records into

* answer metrics: token **F1**, **EM** (normalised), **raw EM** (strings as given), **ROUGE-L**,
  the **judge** score (fraction judged correct);
* behaviour: **EH**, **P(EM | EH)**, **P(EM | ¬EH)** (``None`` when the condition never holds),
  **VF**, **VC** (valid calls per question), tokens and latency per question;
* the **outcome decomposition** (GraphDancer §5): ``correct`` (EM), ``loop_timeout`` (halted by
  the loop limit or cut by the token / turn budget), ``invalid_format`` (a malformed step or no
  answer), ``premature_stop`` (a well-formed episode that ended with a wrong answer) — exactly
  one per record;
* **confidence intervals**: for every metric, the mean over seeds and a two-level percentile
  bootstrap (resample seeds, then questions within each drawn seed; 95 %, 1000 draws, fixed
  generator seed), so the interval reflects both sampling noise and the question sample.

:func:`breakdown` groups the same summary by a field (difficulty level, question type).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from components.rubric.metrics import answer_metrics

__all__ = [
    "CI_METRICS",
    "OUTCOMES",
    "EvalRecord",
    "bootstrap_ci",
    "breakdown",
    "outcome",
    "paired_difference",
    "summarize",
]

OUTCOMES: Final = ("correct", "invalid_format", "loop_timeout", "premature_stop")
CI_METRICS: Final = ("f1", "em", "raw_em", "rouge_l", "judge", "eh", "vf", "vc")


@dataclass
class EvalRecord:
    system: str
    seed: int
    question_id: str
    question: str
    gold: Any
    answer: str | None
    answer_type: str | None = None
    level: str | None = None
    qtype: str | None = None
    valid_format: bool = False
    valid_calls: int = 0
    halted: bool = False
    truncated: bool = False
    evidence_hit: bool | None = None
    judge: bool | None = None
    tokens: int = 0
    latency_s: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.metrics:
            self.metrics = (
                answer_metrics(self.answer, self.gold, self.answer_type)
                if self.answer is not None
                else {"f1": 0.0, "em": 0.0, "raw_em": 0.0, "rouge_l": 0.0}
            )

    @property
    def outcome(self) -> str:
        return outcome(self)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "outcome": self.outcome}


def outcome(r: EvalRecord) -> str:
    """The record's one outcome (module docstring)."""
    if r.metrics["em"] == 1.0:
        return "correct"
    if r.halted or r.truncated:
        return "loop_timeout"
    if not r.valid_format or r.answer is None:
        return "invalid_format"
    return "premature_stop"


def _value(r: EvalRecord, metric: str) -> float | None:
    if metric in r.metrics:
        return r.metrics[metric]
    if metric == "judge":
        return None if r.judge is None else float(r.judge)
    if metric == "eh":
        return None if r.evidence_hit is None else float(r.evidence_hit)
    if metric == "vf":
        return float(r.valid_format)
    if metric == "vc":
        return float(r.valid_calls)
    raise KeyError(metric)


def _mean(values: Sequence[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return sum(xs) / len(xs) if xs else None


def bootstrap_ci(
    records: Sequence[EvalRecord],
    stat: Callable[[Sequence[EvalRecord]], float | None],
    *,
    draws: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Two-level percentile bootstrap of ``stat``: resample seeds with replacement, then each drawn
    seed's questions with replacement. ``(None, None)`` when ``stat`` is undefined throughout."""
    by_seed: dict[int, list[EvalRecord]] = defaultdict(list)
    for r in records:
        by_seed[r.seed].append(r)
    seeds = sorted(by_seed)
    if not seeds:
        return None, None
    rng = random.Random(seed)
    values = []
    for _ in range(draws):
        sample: list[EvalRecord] = []
        for s in rng.choices(seeds, k=len(seeds)):
            group = by_seed[s]
            sample += rng.choices(group, k=len(group))
        v = stat(sample)
        if v is not None:
            values.append(v)
    if not values:
        return None, None
    values.sort()
    lo = values[int((1 - level) / 2 * (len(values) - 1))]
    hi = values[int((1 + level) / 2 * (len(values) - 1))]
    return lo, hi


def paired_difference(
    a: Sequence[EvalRecord],
    b: Sequence[EvalRecord],
    metric: str = "em",
    *,
    draws: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """``mean(a) − mean(b)`` of ``metric`` over the questions both systems answered, with a
    paired percentile bootstrap: questions are resampled with replacement and each question's
    difference is that of its two systems' sample means — the same questions on both sides, so
    question difficulty cancels. ``n`` is the number of paired questions."""

    def per_question(records: Sequence[EvalRecord]) -> dict[str, float]:
        by_q: dict[str, list[float]] = defaultdict(list)
        for r in records:
            v = _value(r, metric)
            if v is not None:
                by_q[r.question_id].append(v)
        return {q: sum(vs) / len(vs) for q, vs in by_q.items()}

    qa, qb = per_question(a), per_question(b)
    common = sorted(set(qa) & set(qb))
    if not common:
        return {"metric": metric, "value": None, "ci": [None, None], "n": 0}
    diffs = [qa[q] - qb[q] for q in common]
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(diffs, k=len(diffs))) / len(diffs) for _ in range(draws))
    lo, hi = means[int((1 - level) / 2 * (draws - 1))], means[int((1 + level) / 2 * (draws - 1))]
    return {"metric": metric, "value": sum(diffs) / len(diffs), "ci": [lo, hi], "n": len(common)}


def _conditional(records: Sequence[EvalRecord], hit: bool) -> float | None:
    sel = [r.metrics["em"] for r in records if r.evidence_hit is hit]
    return sum(sel) / len(sel) if sel else None


def summarize(records: Sequence[EvalRecord], *, draws: int = 1000) -> dict[str, Any]:
    """Every metric of the module docstring for one system's records (all seeds)."""
    n = len(records)
    seeds = sorted({r.seed for r in records})
    out: dict[str, Any] = {"questions": len({r.question_id for r in records}), "records": n, "seeds": seeds}
    for m in CI_METRICS:
        out[m] = _mean([_value(r, m) for r in records])
        per_seed = [_mean([_value(r, m) for r in records if r.seed == s]) for s in seeds]
        out[f"{m}_per_seed"] = per_seed
        out[f"{m}_ci"] = bootstrap_ci(records, lambda rs, m=m: _mean([_value(r, m) for r in rs]), draws=draws)
    out["p_em_given_eh"] = _conditional(records, True)
    out["p_em_given_not_eh"] = _conditional(records, False)
    out["outcomes"] = {o: (sum(1 for r in records if r.outcome == o) / n if n else 0.0) for o in OUTCOMES}
    out["tokens_per_question"] = _mean([float(r.tokens) for r in records])
    out["latency_s_per_question"] = _mean([r.latency_s for r in records])
    return out


def breakdown(records: Sequence[EvalRecord], by: str, *, draws: int = 200) -> dict[str, dict[str, Any]]:
    """:func:`summarize` per value of ``by`` (``level``, ``qtype``, …; missing → ``"unknown"``)."""
    groups: dict[str, list[EvalRecord]] = defaultdict(list)
    for r in records:
        groups[str(getattr(r, by) or "unknown")].append(r)
    return {k: summarize(v, draws=draws) for k, v in sorted(groups.items())}


def records_from(rows: Sequence[Mapping[str, Any]]) -> list[EvalRecord]:
    """Records back from their :meth:`EvalRecord.to_dict` rows (the stored report)."""
    keys = set(EvalRecord.__dataclass_fields__)
    return [EvalRecord(**{k: v for k, v in r.items() if k in keys}) for r in rows]
