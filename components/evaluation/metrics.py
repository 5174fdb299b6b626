"""Evaluation metrics over per-question records, with cluster-bootstrap confidence intervals
(the metrics: docs/methods.md, "Evaluation metrics").

A record (:class:`EvalRecord`) is one question answered by one system in one sample (``seed``:
the sample index) of one trained model (``train_seed``): the answer, the gold answer and its
type, the section (``test`` split or ``external`` questions), the template family, the trajectory
statistics (VF, valid calls, halt, truncation, EH), ``grounded``, the judge's verdict, tokens and
latency. Answers are scored by type (:mod:`components.rubric.metrics`). :func:`summarize` turns
records into

* answer metrics: token **F1**, **EM** (typed), **raw EM** (strings as given), **ROUGE-L**, the
  **judge** score (fraction judged correct); **EM on non-boolean questions** (``em_nonbool``:
  yes/no questions excluded, so an answer prior on booleans cannot carry it) and **grounded EM**
  (``grounded``: correct *and* the typed answer equals a value one of the episode's own query
  results holds — a cell, one column's values as a set, or a row count;
  :func:`components.rollout.runner.answer_in_results`);
* behaviour: **EH** (the gold answer occurs in some observation, GraphDancer's definition),
  **P(EM | EH)**, **P(EM | ¬EH)** (``None`` when the condition never holds), **VF**, **VC**
  (valid calls per question), tokens and latency per question;
* the **outcome decomposition** (GraphDancer §5): ``correct`` (EM), ``loop_timeout`` (halted by
  the loop limit or cut by the token / turn budget), ``invalid_format`` (a malformed step or no
  answer), ``premature_stop`` (a well-formed episode that ended with a wrong answer) — exactly
  one per record;
* **confidence intervals**: for every metric, the mean and a 95 % percentile **cluster
  bootstrap** (1000 draws, fixed generator seed): question ids are resampled with replacement,
  each drawn question bringing *all* its samples (samples of one question are not independent);
  with several training seeds, the seeds are resampled first, then the questions, so the
  interval covers training-seed variance too.

:func:`breakdown` groups the same summary by a field (answer type, template family, difficulty
level); :func:`paired_difference` differences two systems on the same questions with the same
scheme and reports the sign of the difference per training seed.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final

from components.rubric.metrics import ANSWER_KINDS, answer_metrics, infer_answer_type

__all__ = [
    "BREAKDOWNS",
    "CI_METRICS",
    "OUTCOMES",
    "SECTIONS",
    "EvalRecord",
    "bootstrap_ci",
    "breakdown",
    "outcome",
    "paired_difference",
    "summarize",
]

OUTCOMES: Final = ("correct", "invalid_format", "loop_timeout", "premature_stop")
CI_METRICS: Final = ("f1", "em", "em_nonbool", "grounded", "raw_em", "rouge_l", "judge", "eh", "vf", "vc")
#: the sections of a report: the held-out test split and the domain's external questions
SECTIONS: Final = ("test", "external")


#: characters of an episode kept in its record (the start and the end, the middle cut)
TRANSCRIPT_CHARS: Final = 4000


def cut_transcript(text: str, limit: int = TRANSCRIPT_CHARS) -> str:
    """``text`` within ``limit`` characters: its start and its end, with what was cut said.

    >>> cut_transcript("a" * 10 + "b" * 10, 16)
    'aaaaaa\\n[… 4 characters cut …]\\nbbbbbbbbbb'
    """
    text = text or ""
    if len(text) <= limit:
        return text
    head = limit * 3 // 8
    tail = limit - head
    return f"{text[:head]}\n[… {len(text) - limit} characters cut …]\n{text[-tail:]}"


@dataclass
class EvalRecord:
    system: str
    seed: int  # the sample index
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
    #: ``test`` (the held-out split) or ``external`` (the domain's externally written questions)
    section: str = "test"
    #: the template family ``"<match family> × <return family>"`` of a test question, ``external``
    family: str | None = None
    #: the answer equals a value of one of the episode's own query results (before correctness)
    answer_in_results: bool = False
    #: the training seed of the model that answered (0 for untrained systems)
    train_seed: int = 0
    #: what the model wrote after the question, tool observations included (the episode as played;
    #: a one-prompt baseline's reply), cut at :data:`TRANSCRIPT_CHARS`; empty for the answer prior
    transcript: str = ""

    def __post_init__(self) -> None:
        if self.answer_type not in ANSWER_KINDS:
            self.answer_type = infer_answer_type(self.gold)
        if not self.metrics:
            self.metrics = (
                answer_metrics(self.answer, self.gold, self.answer_type)
                if self.answer is not None
                else {"f1": 0.0, "em": 0.0, "raw_em": 0.0, "rouge_l": 0.0}
            )

    @property
    def grounded(self) -> bool:
        """Correct and read off the graph (module docstring)."""
        return self.metrics.get("em") == 1.0 and self.answer_in_results

    @property
    def outcome(self) -> str:
        return outcome(self)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "outcome": self.outcome, "grounded": self.grounded}


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
    if metric == "em_nonbool":
        return None if r.answer_type == "boolean" else r.metrics["em"]
    if metric in r.metrics:
        return r.metrics[metric]
    if metric == "grounded":
        return float(r.grounded)
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


def _clusters(records: Sequence[Any]) -> dict[int, dict[str, list[Any]]]:
    """``{train seed: {question id: records}}`` — the bootstrap's two levels. Any record with a
    ``question_id`` (or a GRIT ``item_id``) works; no ``train_seed`` means one model."""
    out: dict[int, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for r in records:
        question = getattr(r, "question_id", None) or getattr(r, "item_id", None) or str(id(r))
        out[getattr(r, "train_seed", 0)][str(question)].append(r)
    return out


def _percentiles(values: list[float], level: float) -> tuple[float, float]:
    values.sort()
    return values[int((1 - level) / 2 * (len(values) - 1))], values[int((1 + level) / 2 * (len(values) - 1))]


def bootstrap_ci(
    records: Sequence[EvalRecord],
    stat: Callable[[Sequence[EvalRecord]], float | None],
    *,
    draws: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float | None, float | None]:
    """Percentile cluster bootstrap of ``stat`` (module docstring): training seeds resampled with
    replacement, then question ids, each drawn question with all its samples. ``(None, None)``
    when ``stat`` is undefined throughout."""
    clusters = _clusters(records)
    seeds = sorted(clusters)
    if not seeds:
        return None, None
    questions = sorted({q for by_q in clusters.values() for q in by_q})
    rng = random.Random(seed)
    values = []
    for _ in range(draws):
        drawn_q = rng.choices(questions, k=len(questions))
        sample: list[EvalRecord] = []
        for s in rng.choices(seeds, k=len(seeds)):
            by_q = clusters[s]
            for q in drawn_q:
                sample += by_q.get(q, ())
        v = stat(sample)
        if v is not None:
            values.append(v)
    if not values:
        return None, None
    return _percentiles(values, level)


def _per_question(records: Sequence[EvalRecord], metric: str) -> dict[int, dict[str, float]]:
    """``{train seed: {question id: mean of metric over the question's samples}}``."""
    out: dict[int, dict[str, float]] = {}
    for s, by_q in _clusters(records).items():
        means = {q: _mean([_value(r, metric) for r in rs]) for q, rs in by_q.items()}
        out[s] = {q: m for q, m in means.items() if m is not None}
    return out


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
    paired cluster bootstrap: questions (and, with several training seeds, seeds first) are
    resampled with replacement and each question's difference is that of its two systems'
    sample means — the same questions on both sides, so question difficulty cancels. Training
    seeds pair by value; a system with one seed (an untrained baseline) pairs with every seed of
    the other. ``n`` is the number of paired questions, ``per_seed`` the difference per training
    seed (its sign is what "every seed agrees" reads)."""
    qa, qb = _per_question(a, metric), _per_question(b, metric)
    seeds = sorted(set(qa) | set(qb))

    def side(per: dict[int, dict[str, float]], s: int) -> dict[str, float] | None:
        if s in per:
            return per[s]
        return next(iter(per.values())) if len(per) == 1 else None

    diffs: dict[int, dict[str, float]] = {}
    for s in seeds:
        pa, pb = side(qa, s), side(qb, s)
        if pa is None or pb is None:
            continue
        common = sorted(set(pa) & set(pb))
        if common:
            diffs[s] = {q: pa[q] - pb[q] for q in common}
    if not diffs:
        return {"metric": metric, "value": None, "ci": [None, None], "n": 0, "per_seed": {}}
    questions = sorted(set.intersection(*(set(d) for d in diffs.values())))
    if not questions:
        return {"metric": metric, "value": None, "ci": [None, None], "n": 0, "per_seed": {}}
    kept = sorted(diffs)

    def mean_over(ss: Sequence[int], qs: Sequence[str]) -> float:
        return sum(diffs[s][q] for s in ss for q in qs) / (len(ss) * len(qs))

    rng = random.Random(seed)
    means = [mean_over(rng.choices(kept, k=len(kept)), rng.choices(questions, k=len(questions))) for _ in range(draws)]
    lo, hi = _percentiles(means, level)
    return {
        "metric": metric,
        "value": mean_over(kept, questions),
        "ci": [lo, hi],
        "n": len(questions),
        "per_seed": {str(s): mean_over([s], questions) for s in kept},
    }


def _conditional(records: Sequence[EvalRecord], hit: bool) -> float | None:
    sel = [r.metrics["em"] for r in records if r.evidence_hit is hit]
    return sum(sel) / len(sel) if sel else None


def summarize(records: Sequence[EvalRecord], *, draws: int = 1000) -> dict[str, Any]:
    """Every metric of the module docstring for one system's records (all samples and seeds)."""
    n = len(records)
    seeds = sorted({r.seed for r in records})
    train_seeds = sorted({r.train_seed for r in records})
    out: dict[str, Any] = {
        "questions": len({r.question_id for r in records}),
        "nonbool_questions": len({r.question_id for r in records if r.answer_type != "boolean"}),
        "records": n,
        "seeds": seeds,
        "train_seeds": train_seeds,
    }
    for m in CI_METRICS:
        out[m] = _mean([_value(r, m) for r in records])
        out[f"{m}_per_seed"] = [_mean([_value(r, m) for r in records if r.train_seed == s]) for s in train_seeds]
        out[f"{m}_ci"] = bootstrap_ci(records, lambda rs, m=m: _mean([_value(r, m) for r in rs]), draws=draws)
    out["p_em_given_eh"] = _conditional(records, True)
    out["p_em_given_not_eh"] = _conditional(records, False)
    out["outcomes"] = {o: (sum(1 for r in records if r.outcome == o) / n if n else 0.0) for o in OUTCOMES}
    out["tokens_per_question"] = _mean([float(r.tokens) for r in records])
    out["latency_s_per_question"] = _mean([r.latency_s for r in records])
    return out


def breakdown(records: Sequence[EvalRecord], by: str, *, draws: int = 200) -> dict[str, dict[str, Any]]:
    """:func:`summarize` per value of ``by`` (``answer_type``, ``family``, ``level``, …; missing →
    ``"unknown"``)."""
    groups: dict[str, list[EvalRecord]] = defaultdict(list)
    for r in records:
        groups[str(getattr(r, by) or "unknown")].append(r)
    return {k: summarize(v, draws=draws) for k, v in sorted(groups.items())}


#: the report's breakdowns: ``by_<field>`` per system and section
BREAKDOWNS: Final = ("answer_type", "family", "level")


def records_from(rows: Sequence[Mapping[str, Any]]) -> list[EvalRecord]:
    """Records back from their :meth:`EvalRecord.to_dict` rows (the stored report)."""
    keys = set(EvalRecord.__dataclass_fields__)
    return [EvalRecord(**{k: v for k, v in r.items() if k in keys}) for r in rows]
