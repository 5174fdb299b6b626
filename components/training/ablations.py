"""Ablations of GraphCert's training data and reward, as configs: the comparisons the sources did
not run cleanly (docs/methods.md, "Known limits"; the configs: docs/evaluation.md).

Each :class:`Ablation` names a **data selection** from the certified dataset and a **reward**;
:func:`select_rows` builds its training rows and :func:`run_ablation` trains GraphCert GRPO from
the shared warm start exactly as the main ``graphcert_grpo`` stage does — only the data or the
reward differ, so the evaluation rows compare like with like.

Data selections (all restricted to items that cannot leak into evaluation: admitted items of the
training split, or — for ``uncertified`` — candidates none of whose grounded entities occur in the
validation / test splits):

* ``strict`` — admitted, certified strict;
* ``strict_partial`` — admitted, strict or partial (what the main stage trains on);
* ``uncertified`` — **certification removed, generation controls kept**: every candidate the
  same Quizzer produced (same axes, same prompts, the run succeeded), whatever its certificate,
  judge verdict or leakage flag. The GraphCert paper's "w/o certification" ablation removed the
  generation controls too; this one isolates certification.

``budget: matched`` caps every matched ablation at the size of the smallest matched selection
(a seeded sample), so e.g. strict-only vs strict + partial differ in composition, not in size.

Rewards: ``graphcert`` (answer F1 + 0.1·(1 − a)·S_evidence) or ``answer_only`` (GraphCert
without the evidence reward: the answer's F1 alone).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final

from components.options import checked_options
from components.store.artifact import Artifact, BuildContext, Layer
from components.store.fingerprint import read_parquet

__all__ = [
    "ABLATIONS",
    "DATA",
    "REWARD_KINDS",
    "Ablation",
    "AblationPlan",
    "answer_only_reward",
    "ablations_from",
    "build_ablations",
    "run_ablation",
    "select_rows",
]

DATA: Final = ("strict", "strict_partial", "uncertified")
REWARD_KINDS: Final = ("graphcert", "answer_only")


@dataclass(frozen=True)
class Ablation:
    name: str
    data: str = "strict_partial"
    reward: str = "graphcert"
    budget: str = "all"  # "all" | "matched"

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("-", "").replace("_", "").replace("+", "").isalnum():
            raise ValueError(f"ablation name {self.name!r}: letters, digits, -, _ and + only")
        if self.data not in DATA:
            raise ValueError(f"ablation {self.name}: unknown data {self.data!r}; known: {DATA}")
        if self.reward not in REWARD_KINDS:
            raise ValueError(f"ablation {self.name}: unknown reward {self.reward!r}; known: {REWARD_KINDS}")
        if self.budget not in ("all", "matched"):
            raise ValueError(f"ablation {self.name}: budget is 'all' or 'matched'")


def ablations_from(raw: Sequence[Mapping[str, Any]] | None) -> tuple[Ablation, ...]:
    """A domain YAML's ``ablations:`` list; names must be unique."""
    out = []
    for item in raw or ():
        out.append(Ablation(**checked_options(Ablation, item, "ablation")))
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate ablation names in {names}")
    return tuple(out)


def answer_only_reward(completions: Sequence[Any], **kwargs: Any) -> list[float | None]:
    """GraphCert's reward without its evidence term: R = a (token F1 of the answer)."""
    from components.rubric.rewards import graphcert_reward

    kwargs.pop("pred_evidence", None)
    return graphcert_reward(completions, **kwargs)


def _selection(
    rows: Sequence[Mapping[str, Any]], data: str, train_ids: set[str], held_out: set[str]
) -> list[Mapping[str, Any]]:
    from components.curriculum.build import grounded_entities

    if data == "uncertified":
        return [r for r in rows if r.get("ok") and not set(grounded_entities(r)) & held_out]
    statuses = {"strict"} if data == "strict" else {"strict", "partial"}
    return [r for r in rows if r.get("admitted") and r["id"] in train_ids and r.get("status") in statuses]


def _entities(row: Mapping[str, Any]) -> list[str]:
    value = row.get("entities")
    if isinstance(value, str):
        return list(json.loads(value))
    return [str(e) for e in value] if value is not None else []


def select_rows(
    ablations: Sequence[Ablation],
    certified: Sequence[Mapping[str, Any]],
    curriculum: Sequence[Mapping[str, Any]],
    *,
    seed: int = 0,
) -> dict[str, list[Mapping[str, Any]]]:
    """Training rows per ablation (module docstring), matched budgets applied."""
    train_ids = {str(r["id"]) for r in curriculum if r["split"] == "train" and not r.get("ood")}
    held_out = {e for r in curriculum if r["split"] in ("validation", "test") for e in _entities(r)}
    chosen = {a.name: _selection(certified, a.data, train_ids, held_out) for a in ablations}
    matched = [len(chosen[a.name]) for a in ablations if a.budget == "matched"]
    if matched:
        n = min(matched)
        for a in ablations:
            if a.budget == "matched" and len(chosen[a.name]) > n:
                chosen[a.name] = random.Random(f"{seed}:{a.name}").sample(chosen[a.name], n)
    return chosen


def run_ablation(
    ablation: Ablation,
    start_dir: str | Path,
    rows: Sequence[Mapping[str, Any]],
    db_location: str,
    config: Any,
    output_dir: str | Path,
    *,
    data_fingerprint: str,
    domain: str,
) -> Any:
    """GraphCert GRPO from ``start_dir`` on ``rows`` with the ablation's reward."""
    from components.rubric.rewards import graphcert_reward
    from components.training.stages import graphcert_grpo

    reward = answer_only_reward if ablation.reward == "answer_only" else graphcert_reward
    return graphcert_grpo(
        start_dir,
        rows,
        db_location,
        config,
        output_dir,
        data_fingerprint=data_fingerprint,
        domain=domain,
        reward=reward,
        ablation=asdict(ablation),
    )


@dataclass(frozen=True)
class AblationPlan:
    """The ``ablations`` layer's config: the domain's training config and its ablations."""

    train: Any  # TrainConfig
    ablations: tuple[Ablation, ...] = ()

    def params(self) -> dict[str, Any]:
        return {"train": self.train.resolved_without_dancer(), "ablations": [vars(a) for a in self.ablations]}


def build_ablations(inputs: Mapping[str, Artifact], plan: AblationPlan, out_dir: Path, ctx: BuildContext) -> Artifact:
    """The ``ablations`` layer: one GraphCert GRPO checkpoint per ablation, from the
    ``checkpoint`` input, in ``<out_dir>/<name>/``. The summary lists each ablation with its
    folder name, item count, last reward and time. Raises ``ValueError`` when an ablation
    selects no training rows."""
    certified = inputs["certified"]
    chosen = select_rows(
        plan.ablations,
        read_parquet(str(certified.path)),
        read_parquet(str(inputs["curriculum"].path)),
        seed=plan.train.seed,
    )
    from components.training.checkpoint import stage_start

    summary = []
    train = plan.train.for_stage("ablations")
    start = stage_start(plan.train, "ablations", inputs["checkpoint"].path, ctx.data_root)
    for a in plan.ablations:
        if not chosen[a.name]:
            raise ValueError(f"ablation {a.name} selects no training rows")
        result = run_ablation(
            a,
            str(start),
            chosen[a.name],  # GraphCert GRPO anchors the rows it uses
            str(inputs["snapshot"].path),
            train,
            out_dir / a.name,
            data_fingerprint=certified.fingerprint,
            domain=ctx.domain,
        )
        rewards = [c["reward"] for c in result.curves if c.get("reward") is not None]
        summary.append(
            {
                "name": a.name,
                "data": a.data,
                "reward": a.reward,
                "budget": a.budget,
                "items": len(chosen[a.name]),
                "folder": a.name,
                "last_reward": rewards[-1] if rewards else None,
                "wall_s": result.wall_s,
            }
        )
    return ABLATIONS.artifact(
        inputs, plan, ctx, path=out_dir, counts={"checkpoints": len(summary)}, summary={"ablations": summary}
    )


ABLATIONS: Final = Layer("ablations", build_ablations, AblationPlan.params)
